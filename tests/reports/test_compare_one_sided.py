"""compare and the records one side lacks: a changed identity option (the old name in the baseline, the new one in
the candidate), a size the candidate no longer runs, a new collective. They are said where a gate reads them (the
table's count per side and kind, the verdict line, markdown, JUnit as skipped cases, JSON), and `--missing pass|fail`
(or `missing = ...` in a policy file) decides whether those only in the baseline fail the gate; new records fail none.
The runs are the committed real `ci.toml` run against itself, edited."""
import copy
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from synthetic import ROOT

from reports.common.load import load_result
from reports.common.policy import Missing, Policy
from reports.compare.compare import compare

REAL = Path(__file__).resolve().parent / "data" / "ci-quiet-1.json"
# The same samples on both sides: a record passes, or (its own noise) is inconclusive, which these tests let pass so
# that what decides the exit code is the one-sided records.
LET_PASS = ["--inconclusive", "pass"]
DROPPED = "broadcast mpi float32 root 0 4194304 B 2 ranks out-of-place"
RENAMED_OLD = "all_reduce mpi float32 sum 1024 B 2 ranks out-of-place"
RENAMED_NEW = "all_reduce mpi float32 sum 1024 B 2 ranks in-place"


def edited(drop: bool = True, rename: bool = True) -> dict:
    """The real run with broadcast 4 MiB not run and all_reduce 1 KiB in place (an identity option changed)."""
    doc = json.loads(REAL.read_text())
    out = []
    for rec in doc["records"]:
        if drop and rec.get("op") == "broadcast" and rec.get("bytes") == 4 << 20:
            continue
        if rename and rec.get("op") == "all_reduce" and rec.get("bytes") == 1024:
            rec = copy.deepcopy(rec) | {"in_place": True}
        out.append(rec)
    return dict(doc, records=out)


def run_compare(tmp_path, cand_doc, *options):
    cand = tmp_path / "cand.json"
    cand.write_text(json.dumps(cand_doc))
    outs = {"json": tmp_path / "cmp.json", "junit": tmp_path / "cmp.xml", "markdown": tmp_path / "cmp.md"}
    r = subprocess.run([sys.executable, "-m", "reports", "compare", str(REAL), str(cand), *map(str, options),
                        *(x for k, p in outs.items() for x in (f"--{k}", str(p)))],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    return r, outs


def junit_cases(path):
    return {c.get("name"): c for c in ET.parse(path).getroot().iter("testcase")}


def test_the_records_one_side_lacks_are_listed_by_side(tmp_path):
    cmp = compare(load_result(REAL), load_result(_write(tmp_path, edited())))
    assert cmp.only_in_baseline == sorted([DROPPED, RENAMED_OLD])
    assert cmp.only_in_candidate == [RENAMED_NEW]
    assert not cmp.missing_fails  # the default policy lists them only


def test_by_default_they_are_said_and_do_not_fail_the_gate(tmp_path):
    r, outs = run_compare(tmp_path, edited(), *LET_PASS)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert ("# 2 record(s) only in the baseline (all_reduce 1, broadcast 1): the candidate did not measure them: listed, "
            "they do not fail the gate (--missing pass)") in lines
    assert "# 1 record(s) only in the candidate (all_reduce 1): new, no baseline to compare them with: listed, they fail " \
           "no gate" in lines
    verdict = lines[-1]
    assert verdict.startswith("verdict: ") and "2 record(s) only in the baseline and 1 record(s) only in the candidate, " \
        "not compared; they do not fail the gate (--missing fail fails on those only in the baseline)" in verdict, verdict
    doc = json.loads(outs["json"].read_text())
    assert doc["policy"]["missing"] == "pass" and doc["missing_fails"] is False and doc["exit_code"] == 0
    assert doc["only_in_baseline"] == sorted([DROPPED, RENAMED_OLD]) and doc["only_in_candidate"] == [RENAMED_NEW]


def test_junit_has_a_skipped_case_per_record_on_one_side(tmp_path):
    r, outs = run_compare(tmp_path, edited(), *LET_PASS)
    assert r.returncode == 0, r.stdout + r.stderr
    cases = junit_cases(outs["junit"])
    for name, why in ((DROPPED, "only in the baseline"), (RENAMED_OLD, "only in the baseline"),
                      (RENAMED_NEW, "only in the candidate")):
        skipped = cases[name].find("skipped")
        assert skipped is not None and skipped.get("message").startswith(why), name
    suite = ET.parse(outs["junit"]).getroot().find("testsuite")
    assert suite.get("failures") == "0" and int(suite.get("tests")) == len(json.loads(outs["json"].read_text())["rows"]) + 3


def test_missing_fail_fails_the_gate_on_records_only_in_the_baseline(tmp_path):
    r, outs = run_compare(tmp_path, edited(), *LET_PASS, "--missing", "fail")
    assert r.returncode == 1, r.stdout + r.stderr
    verdict = r.stdout.splitlines()[-1]
    assert verdict.endswith("2 record(s) only in the baseline and 1 record(s) only in the candidate (--missing fail: exit 1)")
    assert "the candidate did not measure them: they fail the gate (--missing fail)" in r.stdout
    cases = junit_cases(outs["junit"])
    for name in (DROPPED, RENAMED_OLD):
        failure = cases[name].find("failure")
        assert failure is not None and failure.get("type") == "missing", name
    assert cases[RENAMED_NEW].find("skipped") is not None  # new: fails nothing
    doc = json.loads(outs["json"].read_text())
    assert doc["exit_code"] == 1 and doc["missing_fails"] is True and doc["policy"]["missing"] == "fail"
    md = outs["markdown"].read_text()
    assert "(fails the gate: 2 record(s) only in the baseline)" in md.splitlines()[0]
    assert f"- {DROPPED}" in md


def test_missing_fail_wins_over_an_inconclusive_outcome(tmp_path):
    """Without --inconclusive the real run's noisy records leave it inconclusive (exit 3): a record the candidate did
    not measure is still a failure, not "could not decide"."""
    r, _ = run_compare(tmp_path, edited(), "--missing", "fail")
    assert r.returncode == 1, r.stdout + r.stderr


def test_new_records_alone_fail_no_gate(tmp_path):
    """Only the candidate's: a collective added to the suite has nothing to regress from."""
    base = tmp_path / "base.json"
    base.write_text(json.dumps(edited(rename=False)))  # the baseline did not run broadcast 4 MiB; the candidate does
    r = subprocess.run([sys.executable, "-m", "reports", "compare", str(base), str(REAL), *LET_PASS, "--missing", "fail"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{DROPPED} (only in the candidate)" in r.stdout
    assert "; 1 record(s) only in the candidate, not compared (new records fail no gate)" in r.stdout.splitlines()[-1]


@pytest.mark.parametrize("text,code", [('missing = "fail"\ninconclusive = "pass"\n', 1), ('missing = "pass"\n', 3)])
def test_the_policy_file_sets_it(tmp_path, text, code):
    policy = tmp_path / "gate.toml"
    policy.write_text(text)
    r, outs = run_compare(tmp_path, edited(), "--policy", policy)
    assert r.returncode == code, r.stdout + r.stderr
    assert json.loads(outs["json"].read_text())["policy"]["missing"] == text.split('"')[1]


def test_the_command_line_overrides_the_file(tmp_path):
    policy = tmp_path / "gate.toml"
    policy.write_text('missing = "fail"\n')
    r, _ = run_compare(tmp_path, edited(), "--policy", policy, "--missing", "pass", *LET_PASS)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("args,message", [
    (["--missing", "maybe"], "argument --missing: invalid choice: 'maybe'"),
    (["--policy", "{policy}"], "missing: 'sometimes' is not one of pass, fail"),
])
def test_a_bad_choice_is_one_line_exit_2(tmp_path, args, message):
    policy = tmp_path / "bad.toml"
    policy.write_text('missing = "sometimes"\n')
    r, outs = run_compare(tmp_path, edited(), *(a.format(policy=policy) for a in args))
    assert r.returncode == 2, r.stdout + r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("trainscope: error:")]
    assert len(errors) == 1 and message in errors[0], r.stderr
    assert not outs["json"].exists()


def test_the_policy_default_is_pass():
    assert Policy().missing == Missing.PASS


def _write(tmp_path, doc):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path
