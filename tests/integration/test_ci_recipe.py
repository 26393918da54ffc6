"""The CI recipe (docs/ci.md) as tested: the shell steps of docs/ci/github-workflow.yml and docs/ci/gitlab-ci.yml,
taken from the YAML and run as the CI systems run them (GitHub: each `run:` under `bash -eo pipefail`, the `if:` of
each step, GITHUB_ENV-free; GitLab: a job's before_script and script as one `set -eo pipefail` script, its rules),
with the GPU parts replaced by the CPU backend: TRAINSCOPE_CI_BACKEND=cpu and 2 ranks, as a CPU runner's settings
would say. A push to main (three runs: history add, the baseline, history check), then a pull or merge request (two
runs: compare with the gate's policy, history check on a copy of main's history) each end 0 and leave the summaries
and JUnit files the workflow hands on; a request whose build no longer runs a step of the suite fails the gate.
The jobs run the CPU suite timed too briefly for compare to judge a time (the fixture `suite`), so that what the gate
says of a request is known before it runs, whatever the machine's load: these tests check the recipe, not the speed
of the machine (compare's own tests judge times: tests/reports/test_compare*.py).
What the test cannot run is checked in the file instead: the build (scripts/setup.sh: this checkout's build stands
in for it; the test suite runs setup.sh itself) and the steps that call GitHub's actions (the cache's path)."""
import json
import re
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, base_env, trainscope_path
from reports.common.policy import Policy

GITHUB = ROOT / "docs" / "ci" / "github-workflow.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
BUILD = "scripts/setup.sh"
# A CPU runner's settings: what the workflows say for a GPU runner, replaced.
GPU = {"TRAINSCOPE_CI_BACKEND": "cuda", "TRAINSCOPE_CI_RANKS": "8"}
CPU = {"TRAINSCOPE_CI_BACKEND": "cpu", "TRAINSCOPE_CI_RANKS": "2"}
MAIN_SHA = "3f1c2a9e4b7d8c6f5a1e2d3c4b5a69788f7e6d5c"
PR_SHA = "8a2b4c6d1e3f5a7b9c0d2e4f6a8b0c1d3e5f7a9b"
TIMEOUT = 300
SUITE = ROOT / "bench" / "suites" / "ci-train.toml"  # what the workflows measure on the CPU
KERNELS_STEP = '[[step]]\nkind = "kernels"'


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def workspace(root: Path, cache: Path | None) -> Path:
    """A job's fresh checkout: the build and the suites of this one, and what the cache restored (perf/)."""
    root.mkdir()
    (root / "build").symlink_to(Path(trainscope_path()).parent)
    (root / "bench").symlink_to(ROOT / "bench")
    if cache is not None:
        shutil.copytree(cache, root / "perf")
    return root


def set_key(text: str, key: str, value: object) -> str:
    """The suite's one `key = ...` line set to `value` (a key the suite no longer has, or has twice, stops the test)."""
    out, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, flags=re.M)
    assert n == 1, f"{SUITE.name}: '{key} = ' on {n} lines"
    return out


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """ci-train.toml timed too briefly for compare to judge a time, for TRAINSCOPE_CI_SUITE (the recipe's own
    setting): the same 100 steps trained, all but min_samples - 1 of them untimed warm-up (no part of the record's
    identity: the record and its final loss are the suite's), each kernel timed min_samples - 1 times. Of one build
    against itself, every time row is then inconclusive ("too few samples") and the final loss, alike to the bit, a
    pass: the verdict is known before the runs. Real timings are not: the test once saw two runs of this build called a
    regression on the suite's own busy machine (other processes at 85% of the CPUs on both sides), as compare's policy
    says it must (a large slowdown under contention alike on both sides is one: tests/reports/test_compare_contention.py)."""
    few = Policy().min_samples - 1
    (train,) = [s for s in tomllib.loads(SUITE.read_text())["step"] if s["kind"] == "train"]
    text = set_key(SUITE.read_text(), "warmup_steps", train["steps"] - few)
    text = set_key(set_key(set_key(text, "iters", few), "trials", 1), "min_time_ms", 0)
    path = tmp_path_factory.mktemp("suite") / SUITE.name
    path.write_text(text)
    return path


def without_kernels(suite: Path, where: Path) -> Path:
    """The suite with its kernels step dropped: a request's build that no longer runs a step main measured."""
    text = suite.read_text()
    path = where / "no-kernels.toml"
    path.write_text(text[:text.index(KERNELS_STEP)])
    return path


def records(run: Path, kind: str) -> list[dict]:
    return [r for r in json.loads(run.read_text())["records"] if r["kind"] == kind]


def gate_said_inconclusive(out: str, ws: Path) -> None:
    """What the gate says of one build against itself on the test's suite: each time row inconclusive for too few
    samples, the final loss a pass; the verdict inconclusive, which --inconclusive pass lets through (exit 0), alike
    in the console, the comment and JUnit."""
    timed = len(records(ws / "results" / "run1.json", "train") + records(ws / "results" / "run1.json", "kernel"))
    assert timed > 1, "the suite's train and kernels records"
    baselines = sorted(str(p.relative_to(ws)) for p in (ws / "perf" / "baselines").glob("*/*.json"))  # main's runs
    assert f"# trainscope compare: {', '.join(baselines)} -> results/run1.json, results/run2.json\n" in out, out
    few = f"{Policy().min_samples - 1} < {Policy().min_samples}"
    assert out.count(f"(too few samples: {few})") == timed and re.search(r"^pass .* \[final_loss\]$", out, re.M), out
    assert re.search(rf"^verdict: inconclusive — (measured under contention: .*; )?{timed} record\(s\) too few samples "
                     r"\(see the rows above\) \(--inconclusive pass: exit 0\)$", out, re.M), out
    assert (ws / "results" / "comment.md").read_text().startswith("## trainscope compare: **inconclusive**\n")
    junit = ET.parse(ws / "results" / "compare.xml").getroot().find("testsuite")
    assert [junit.get(k) for k in ("tests", "failures", "skipped")] == [str(timed + 1), "0", str(timed)]


def missing_failed_the_gate(out: str, ws: Path, main: Path) -> None:
    """The gate of a request that no longer runs main's kernels step: exit 1 (the caller's), every kernel record a
    JUnit failure of type `missing`, said in the verdict line and the comment's headline."""
    kernels = len(records(main / "results" / "run1.json", "kernel"))
    assert "only in the baseline" in out and f"{kernels} record(s) only in the baseline (--missing fail: exit 1)" in out
    failures = [f.get("type") for f in ET.parse(ws / "results" / "compare.xml").getroot().iter("failure")]
    assert failures == ["missing"] * kernels
    assert (ws / "results" / "comment.md").read_text().startswith(
        f"## trainscope compare: **inconclusive** (fails the gate: {kernels} record(s) only in the baseline)")


def shell(script: str, cwd: Path, env: dict, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "--noprofile", "--norc", *options, "-c", script], cwd=cwd, env=base_env(env),
                          capture_output=True, text=True, timeout=TIMEOUT)


# ---- GitHub Actions ----

def github_if(expression: str | None, event: str, failed: bool) -> bool:
    """The `if:` forms the workflow uses: always(), github.event_name == '...', joined by &&; none: success()."""
    if expression is None:
        return not failed
    ok = True
    for term in (t.strip() for t in expression.split("&&")):
        m = re.fullmatch(r"github\.event_name == '(\w+)'", term)
        assert term == "always()" or m, f"an if: this test does not evaluate: {expression}"
        ok = ok and (m is None or m.group(1) == event)
    return ok and ("always()" in expression or not failed)


def github_value(text: str, context: dict) -> str:
    """A value with ${{ ... }} expressions: only plain context paths."""
    def lookup(m: re.Match) -> str:
        assert m.group(1) in context, f"an expression this test does not evaluate: {m.group(0)}"
        return context[m.group(1)]
    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lookup, str(text))


def run_github(ws: Path, event: str, sha: str, suite: Path) -> list[tuple[str, subprocess.CompletedProcess]]:
    flow = load(GITHUB)
    (job,) = flow["jobs"].values()
    context = {"github.event.pull_request.head.sha": PR_SHA}
    env = {k: str(v) for k, v in flow["env"].items()} | CPU | {"TRAINSCOPE_CI_SUITE": str(suite)}
    summary = ws / "step-summary.md"
    env |= {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": event, "GITHUB_SHA": sha,
            "GITHUB_WORKSPACE": str(ws), "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_REF_NAME": "main" if event == "push" else "17/merge"}
    if event == "pull_request":
        env |= {"GITHUB_HEAD_REF": "faster-sync", "GITHUB_BASE_REF": "main"}
    ran, failed = [], False
    for step in job["steps"]:
        if "run" not in step or step["run"].strip() == BUILD:
            continue
        if not github_if(step.get("if"), event, failed):
            continue
        step_env = env | {k: github_value(v, context) for k, v in step.get("env", {}).items()}
        assert "${{" not in step["run"], f"{step.get('name')}: an expression in a run: script"
        r = shell(step["run"], ws, step_env, "-eo", "pipefail")
        ran.append((step.get("name", ""), r))
        failed = failed or r.returncode != 0
    return ran


def test_the_github_workflow_is_what_docs_ci_md_shows_and_its_untested_parts_are_as_the_test_assumes():
    flow = load(GITHUB)
    assert all(flow["env"][k] == v or str(flow["env"][k]) == v for k, v in GPU.items())
    (job,) = flow["jobs"].values()
    runs = [s["run"].strip() for s in job["steps"] if "run" in s]
    assert runs.count(BUILD) == 1
    caches = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/cache/")]
    assert {s["with"]["path"] for s in caches} == {"perf"}  # the test keeps perf/ from main's job for the next
    assert flow["env"]["TRAINSCOPE_HISTORY"].startswith("perf/")
    docs = (ROOT / "docs" / "ci.md").read_text()
    assert GITHUB.read_text() in docs and GITLAB.read_text() in docs


def test_the_workflows_measure_suites_that_are_there_and_the_test_times_the_cpu_one_briefly_only(suite):
    """What the jobs below do not run (they are given `suite`): the suites the workflows name, and that `suite` is the
    CPU one but for how much of it is timed (keys no part of a record's identity)."""
    for flow in (GITHUB, GITLAB):
        named = set(re.findall(r"\bsuite=([^\s;]+)", flow.read_text()))
        assert named == {"bench/suites/ci-train-cuda.toml", str(SUITE.relative_to(ROOT))}, flow
        assert all((ROOT / name).is_file() for name in named), named
    timing = {"warmup_steps", "iters", "trials", "min_time_ms"}
    ours, theirs = (tomllib.loads(path.read_text()) for path in (suite, SUITE))
    assert ours["suite"] == theirs["suite"] and ours != theirs
    assert [{k: v for k, v in step.items() if k not in timing} for step in ours["step"]] == [
        {k: v for k, v in step.items() if k not in timing} for step in theirs["step"]]


@pytest.fixture(scope="module")
def github_main(tmp_path_factory, suite):
    ws = workspace(tmp_path_factory.mktemp("github") / "main", None)
    return ws, run_github(ws, "push", MAIN_SHA, suite)


def ok(ran):
    assert ran and all(r.returncode == 0 for _, r in ran), "\n".join(
        f"## {name}: exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}" for name, r in ran)


def test_github_main_files_three_runs_in_the_history_and_the_baseline(github_main):
    ws, ran = github_main
    ok(ran)
    names = [n for n, _ in ran]
    assert names == ["Measure", "File the runs (main)", "Summary"], names
    assert len(list((ws / "perf" / "baselines").glob("*/*.json"))) == 3
    out = dict(ran)["File the runs (main)"].stdout
    assert f"commit {MAIN_SHA[:10]} (main)" in out and "history check: " in out
    assert "trainscope history check" in (ws / "step-summary.md").read_text()
    assert ET.parse(ws / "results" / "check.xml").getroot().find("testsuite").get("failures") == "0"


def test_github_pull_request_is_compared_with_main_and_checked(github_main, suite, tmp_path):
    ws = workspace(tmp_path / "pr", github_main[0] / "perf")
    ran = run_github(ws, "pull_request", "c0ffee" * 6 + "c0ff", suite)
    ok(ran)
    assert [n for n, _ in ran] == ["Measure", "Compare with main (pull request)", "Summary"]
    out = dict(ran)["Compare with main (pull request)"].stdout
    assert f"commit {PR_SHA[:10]} (faster-sync)" in out  # the head of the branch, not GitHub's merge commit
    gate_said_inconclusive(out, ws)
    comment = (ws / "results" / "comment.md").read_text()
    assert comment.startswith("## trainscope compare: ") and "### trainscope history check" in comment
    assert comment in (ws / "step-summary.md").read_text()
    assert (ws / "perf" / "history.sqlite").stat().st_size == (github_main[0] / "perf" / "history.sqlite").stat().st_size


def test_github_pull_request_that_drops_a_step_fails_the_gate(github_main, suite, tmp_path):
    """--missing fail: the kernels main measured, this build's suite no longer runs."""
    ws = workspace(tmp_path / "pr", github_main[0] / "perf")
    ran = dict(run_github(ws, "pull_request", "d" * 40, without_kernels(suite, tmp_path)))
    gate = ran["Compare with main (pull request)"]
    assert gate.returncode == 1, gate.stdout + gate.stderr
    missing_failed_the_gate(gate.stdout, ws, github_main[0])
    assert ran["Summary"].returncode == 0 and "fails the gate" in (ws / "step-summary.md").read_text()


# ---- GitLab CI ----

def gitlab_rule(expression: str, variables: dict) -> bool:
    """The rules' forms: $A == $B and $A == "text"."""
    m = re.fullmatch(r'\$(\w+) == (?:\$(\w+)|"([^"]*)")', expression.strip())
    assert m, f"a rule this test does not evaluate: {expression}"
    return variables.get(m.group(1)) == (variables.get(m.group(2)) if m.group(2) else m.group(3))


def gitlab_jobs(pipeline: dict, variables: dict) -> dict:
    """The jobs a pipeline with these variables runs, each merged with the template it extends."""
    out = {}
    for name, job in pipeline.items():
        if name.startswith(".") or name in ("variables", "stages", "default", "include", "workflow"):
            continue
        job = pipeline[job["extends"]] | job if "extends" in job else job
        if any(gitlab_rule(r["if"], variables) for r in job.get("rules", [])):
            out[name] = job
    return out


def run_gitlab(ws: Path, source: str, sha: str, suite: Path) -> dict[str, subprocess.CompletedProcess]:
    pipeline = load(GITLAB)
    variables = {k: str(v) for k, v in pipeline["variables"].items()} | CPU | {"TRAINSCOPE_CI_SUITE": str(suite)}
    variables |= {"CI": "true", "GITLAB_CI": "true", "CI_COMMIT_SHA": sha, "CI_DEFAULT_BRANCH": "main",
                  "CI_PIPELINE_SOURCE": source, "CI_PROJECT_ID": "7", "CI_API_V4_URL": "https://gitlab.invalid/api/v4"}
    if source == "push":
        variables |= {"CI_COMMIT_BRANCH": "main", "CI_COMMIT_REF_NAME": "main"}
    else:
        variables |= {"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "faster-sync", "CI_MERGE_REQUEST_IID": "17",
                      "CI_COMMIT_REF_NAME": "faster-sync"}
    ran = {}
    for name, job in gitlab_jobs(pipeline, variables).items():
        lines = [line for line in job.get("before_script", []) + job["script"] if line.strip() != BUILD]
        assert len(lines) == len(job.get("before_script", []) + job["script"]) - 1, f"{name}: the build line"
        ran[name] = shell("\n".join(lines), ws, variables | {k: str(v) for k, v in job.get("variables", {}).items()},
                          "-eo", "pipefail")
    return ran


def test_the_gitlab_jobs_cache_what_the_test_keeps():
    pipeline = load(GITLAB)
    assert all(str(pipeline["variables"][k]) == v for k, v in GPU.items())
    main = gitlab_jobs(pipeline, {"CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main", "CI_PIPELINE_SOURCE": "push"})
    mr = gitlab_jobs(pipeline, {"CI_DEFAULT_BRANCH": "main", "CI_PIPELINE_SOURCE": "merge_request_event"})
    assert list(main) == ["performance:main"] and list(mr) == ["performance:merge-request"]
    (m,), (r,) = main.values(), mr.values()
    assert m["cache"]["paths"] == r["cache"]["paths"] == ["perf/"] and m["cache"]["key"] == r["cache"]["key"]
    assert m["cache"]["policy"] == "pull-push" and r["cache"]["policy"] == "pull"
    assert m["artifacts"]["reports"]["junit"] == "results/*.xml"


@pytest.fixture(scope="module")
def gitlab_main(tmp_path_factory, suite):
    ws = workspace(tmp_path_factory.mktemp("gitlab") / "main", None)
    ran = run_gitlab(ws, "push", MAIN_SHA, suite)
    assert list(ran) == ["performance:main"]
    return ws, ran["performance:main"]


def merge_request(main: Path, where: Path, suite: Path) -> tuple[Path, subprocess.CompletedProcess]:
    ws = workspace(where, main / "perf")
    ran = run_gitlab(ws, "merge_request_event", PR_SHA, suite)
    assert list(ran) == ["performance:merge-request"]
    return ws, ran["performance:merge-request"]


def request_checked_against_main(ws: Path, r: subprocess.CompletedProcess) -> None:
    """After the gate, whatever it said: main's history exported and imported into the request's copy, the request's
    runs added under its commit, history check run on the copy and its summary in the comment."""
    assert f"commit {PR_SHA[:10]} (faster-sync)" in r.stdout
    assert json.loads((ws / "results" / "main-history.json").read_text())  # main's history, exported
    assert re.search(r"^history: results/pr-history\.sqlite: 5 run\(s\) of 2 commit\(s\)$", r.stdout, re.M), r.stdout
    # Of two commits, whatever their times: history check judges no series shorter than detect.MIN_COMMITS.
    assert ET.parse(ws / "results" / "check.xml").getroot().find("testsuite").get("failures") == "0"
    comment = (ws / "results" / "comment.md").read_text()
    assert comment.startswith("## trainscope compare: ") and "### trainscope history check" in comment


def test_gitlab_main_then_a_merge_request(gitlab_main, suite, tmp_path):
    main, r = gitlab_main
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"commit {MAIN_SHA[:10]} (main)" in r.stdout
    assert len(list((main / "perf" / "baselines").glob("*/*.json"))) == 3

    mr, r = merge_request(main, tmp_path / "mr", suite)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    gate_said_inconclusive(r.stdout, mr)
    request_checked_against_main(mr, r)


def test_gitlab_merge_request_that_drops_a_step_fails_the_gate(gitlab_main, suite, tmp_path):
    """The job fails (exit 1) and still does the rest: the history check and the comment."""
    mr, r = merge_request(gitlab_main[0], tmp_path / "mr", without_kernels(suite, tmp_path))
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    missing_failed_the_gate(r.stdout, mr, gitlab_main[0])
    request_checked_against_main(mr, r)


def test_docs_name_no_environment_this_test_does_not_set():
    """The variables the scripts read are the CI's own, the workflow's, or set here (a typo would read empty)."""
    read = set(re.findall(r"\$\{?(\w+)", GITHUB.read_text() + GITLAB.read_text()))
    known = set(CPU) | {"TRAINSCOPE_HISTORY", "TRAINSCOPE_CI_SUITE", "GITHUB_EVENT_NAME", "GITHUB_STEP_SUMMARY", "HEAD_SHA",
                        "CI_COMMIT_BRANCH", "CI_DEFAULT_BRANCH", "CI_PIPELINE_SOURCE", "PERF_BOT_TOKEN", "CI_API_V4_URL",
                        "CI_PROJECT_ID", "CI_MERGE_REQUEST_IID", "suite", "runs", "i", "f", "status"}
    assert read <= known, read - known
