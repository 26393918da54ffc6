"""The GPU scripts (docs/gpu-validation.md) on a machine without a GPU: the runner (scripts/gpu-runner.sh) on fake
steps — a step past the deadline is skipped with its line, a hung one is cut at its limit and the next still runs, the
output folder is whole after every step, within the device's file limits — and the first contact and the re-run
(scripts/gpu-first-contact.sh, scripts/gpu-rerun.sh) dry-run here, where every GPU step fails fast with one line:
within the deadline, one line per step, and a run killed midway leaves the summary and the logs of what ran."""
import io
import json
import os
import re
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from helpers import ROOT, base_env, loaded_later, trainscope_path

# Timing decides most of these (steps skipped by the time left before a deadline, cut at their limits, a pair's
# grace): marked `alone`, they run after the parallel part (tests/README.md). A bad argument, the plans' command
# lines and the PyTorch peers' refusal do not depend on time.

RUNNER = ROOT / "scripts" / "gpu-runner.sh"
STEP_LINE = re.compile(r"^step (\S+): (ok|FAILED|TIME LIMIT|skipped|CUT)")


def fake_run(tmp_path, body: str, deadline: int = 20, env=None, timeout: int = 60):
    """Runs `body` (bash, after runner_init of a run named 'fake' writing to tmp_path/out) and returns the process."""
    script = tmp_path / "fake.sh"
    script.write_text(f"source {RUNNER}\nrunner_init fake {tmp_path / 'out'} {deadline}\n{body}\nrunner_finish\n")
    return subprocess.run(["bash", script], capture_output=True, text=True, timeout=timeout,
                          env=base_env({"RUNNER_KILL_AFTER": "1", "TMPDIR": str(tmp_path), **(env or {})}))


def step_lines(stdout: str) -> list[tuple[str, str]]:
    return [(m[1], m[2]) for m in map(STEP_LINE.match, stdout.splitlines()) if m]


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


@pytest.mark.alone
def test_a_hung_step_is_cut_at_its_limit_the_next_runs_and_one_past_the_deadline_is_skipped(tmp_path):
    pidfile = tmp_path / "hung.pid"
    t0 = time.monotonic()
    p = fake_run(tmp_path, f"""
hangs() {{ echo $$ > {pidfile}; echo "still waiting"; sleep 300; }}
deaf() {{ trap '' TERM; sleep 300; }}
gtest() {{ printf "[  FAILED  ] 2 tests, listed below:\n[  FAILED  ] A.b\n[  FAILED  ] A.c\n\n 2 FAILED TESTS\n"; return 1; }}
runner_step first 5 echo hello
runner_step broken 5 bash -c 'echo "error: the thing broke" >&2; echo "a later line"; exit 3'
runner_step gtest 5 gtest
runner_step hangs 1 hangs
runner_step deaf 1 deaf
runner_step after 5 true
runner_step too-long 60 true
""", deadline=20)
    took = time.monotonic() - t0
    assert p.returncode == 1, p.stderr
    assert step_lines(p.stdout) == [("first", "ok"), ("broken", "FAILED"), ("gtest", "FAILED"), ("hangs", "TIME LIMIT"),
                                    ("deaf", "TIME LIMIT"), ("after", "ok"), ("too-long", "skipped")], p.stdout
    lines = p.stdout.splitlines()
    assert "step broken: FAILED (exit 3) in " in lines[1] and lines[1].endswith(": error: the thing broke")
    assert lines[2].endswith(": failed tests: A.b, A.c")
    assert lines[3].startswith("step hangs: TIME LIMIT 1 s (exit 124)") and lines[3].endswith(": still waiting")
    assert lines[4].startswith("step deaf: TIME LIMIT 1 s (exit 137)")  # TERM ignored: killed after the grace
    assert re.match(r"step too-long: skipped: would pass the deadline \(needs up to 61 s, 1\d s left\)", lines[6]), lines[6]
    assert took < 15, f"{took:.1f} s: the hung steps were not cut at their limits"
    hung = int(pidfile.read_text())
    assert not Path(f"/proc/{hung}").exists(), "the hung step's process outlived its limit"
    summary = (tmp_path / "out" / "fake-summary.md").read_text()
    assert "| hangs | TIME LIMIT 1 s (exit 124) |" in summary and "7 steps: 4 failed, 1 skipped" in summary, summary


@pytest.mark.alone
def test_the_output_folder_is_whole_after_every_step_and_each_file_under_its_cap(tmp_path):
    out = tmp_path / "out"
    # Each step records what the folder held when it started: the previous steps' summary rows and logs.
    p = fake_run(tmp_path, f"""
look() {{ cat {out}/fake-summary.md > "$RUN_LOGS/$1.seen"; tar -tzf {out}/fake-logs.tar.gz > "$RUN_LOGS/$1.listed"; }}
big() {{ head -c 300000 /dev/urandom > "$RUN_LOGS/big.bin"; mkdir -p "$RUN_TRACES/t"; echo '{{}}' > "$RUN_TRACES/t/trace.json"; }}
chatty() {{ for i in $(seq 1 20000); do echo "line $i of a long log"; done; }}
runner_step one 5 look one
runner_step two 5 look two
runner_step big 5 big
runner_step chatty 5 chatty
runner_step three 5 look three
""", env={"RUNNER_CAP_BYTES": "200000", "RUNNER_LOG_KEEP_BYTES": "40000"})
    assert p.returncode == 0, p.stdout + p.stderr
    assert sorted(f.name for f in out.iterdir()) == ["fake-logs.tar.gz", "fake-summary.md", "fake-traces.tar.gz"]
    logs = members(out / "fake-logs.tar.gz")
    assert "| one | ok |" in logs["fake-logs/two.seen"].decode() and "fake-logs/one.log" in logs["fake-logs/two.listed"].decode()
    assert "| big | ok |" in logs["fake-logs/three.seen"].decode()
    # The incompressible file went over the cap: left out, and said so, in the archive and in the summary.
    assert "fake-logs/big.bin" not in logs and "fake-logs/big.bin (300000 bytes)" in logs["fake-logs/LEFT-OUT.txt"].decode()
    assert "Left out of the archives" in (out / "fake-summary.md").read_text()
    assert all(f.stat().st_size <= 200000 for f in out.iterdir())
    # The long log keeps its head and its tail.
    chatty = logs["fake-logs/chatty.log"].decode()
    assert "line 1 of a long log" in chatty and "line 20000 of a long log" in chatty and "bytes of this log cut here" in chatty
    assert members(out / "fake-traces.tar.gz") == {"fake-traces/t/trace.json": b"{}\n"}


@pytest.mark.alone
def test_a_run_told_to_stop_mid_step_says_which_step_was_cut(tmp_path):
    script = tmp_path / "fake.sh"
    script.write_text(f"source {RUNNER}\nrunner_init fake {tmp_path / 'out'} 60\nrunner_step quick 5 true\n"
                      "runner_step long 50 sleep 50\nrunner_finish\n")
    proc = subprocess.Popen(["bash", script], stdout=subprocess.PIPE, text=True, env=base_env({"TMPDIR": str(tmp_path)}))
    assert proc.stdout.readline().startswith("step quick: ok")
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 143 and rest.strip() == "step long: CUT by SIGTERM (the call ended)", rest
    assert "| long | CUT by SIGTERM |" in (tmp_path / "out" / "fake-summary.md").read_text()


def fake_bundle(tmp_path) -> Path:
    """An unpacked bundle of this checkout's build (the dry runs need no copy of it: nothing leaves this machine)."""
    build = Path(trainscope_path()).parent
    b = tmp_path / "bundle"
    (b / "bin").mkdir(parents=True)
    (b / "lib").mkdir()
    (b / "bin" / "trainscope").symlink_to(build / "trainscope")
    if (build / "tests" / "ts_gpu_tests").exists():
        (b / "bin" / "ts_gpu_tests").symlink_to(build / "tests" / "ts_gpu_tests")
    if (build / "loaded-later.txt").exists():  # what trainscope loads on first use (the bundle carries it too)
        (b / "loaded-later.txt").symlink_to(build / "loaded-later.txt")
    return b


def listed_steps(script: str) -> list[str]:
    p = subprocess.run([ROOT / "scripts" / script, "--list"], capture_output=True, text=True, env=base_env(), timeout=60)
    assert p.returncode == 0, p.stderr
    return [line.split()[0] for line in p.stdout.splitlines()]


@pytest.mark.alone
def test_the_first_contact_dry_run_ends_within_its_deadline_with_one_line_per_step(tmp_path):
    out = tmp_path / "out"
    t0 = time.monotonic()
    p = subprocess.run([ROOT / "scripts" / "gpu-first-contact.sh", "--bundle", fake_bundle(tmp_path), "--out", out],
                       capture_output=True, text=True, timeout=480, env=base_env({"TMPDIR": str(tmp_path)}))
    took = time.monotonic() - t0
    assert p.returncode == 1, p.stdout + p.stderr  # the GPU steps fail here
    names = listed_steps("gpu-first-contact.sh")
    assert len(names) == len(set(names)) > 20, names
    assert [n for n, _ in step_lines(p.stdout)] == names, p.stdout
    assert "step preflight-gpu: FAILED" in p.stdout and "step preflight-libs: ok" in p.stdout
    assert re.search(r"step train-mlp-float32: FAILED \(exit \d+\) in [\d.]+ s: trainscope: error: ", p.stdout), p.stdout
    m = re.search(r"(\d+) steps: \d+ failed, 0 skipped; ended (\d+) s before the deadline", p.stdout)
    assert m and int(m[1]) == len(names) and int(m[2]) > 0 and took < 480, p.stdout[-2000:]
    logs = members(out / "first-contact-logs.tar.gz")
    assert {f"first-contact-logs/{n}.log" for n in names} <= set(logs), sorted(logs)
    assert "| pair-nccl | FAILED" in (out / "first-contact-summary.md").read_text()
    assert len(list(out.iterdir())) <= 8
    # One process per suite loses no test: the suites' JSON together count every test the binary lists.
    gtests = Path(trainscope_path()).parent / "tests" / "ts_gpu_tests"
    if gtests.exists():
        listed = subprocess.run([gtests, "--gtest_list_tests"], capture_output=True, text=True, check=True).stdout
        total = sum(1 for line in listed.splitlines() if line.startswith("  "))
        ran = sum(json.loads(v)["tests"] for k, v in logs.items() if re.fullmatch(r"first-contact-logs/tests-.*\.json", k))
        assert ran == total > 0, (ran, total)


def session_processes(sid: int) -> list[int]:
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid:  # the session id: every process the killed run started
            pids.append(int(stat.parent.name))
    return pids


@pytest.mark.alone
def test_a_first_contact_killed_midway_leaves_the_summary_and_logs_of_the_steps_that_ran(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([ROOT / "scripts" / "gpu-first-contact.sh", "--bundle", fake_bundle(tmp_path), "--out", out],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
                            env=base_env({"TMPDIR": str(tmp_path)}))
    seen = []
    try:
        for line in proc.stdout:
            m = STEP_LINE.match(line)
            if m:
                seen.append(m[1])
            if len(seen) == 3:
                os.killpg(proc.pid, signal.SIGKILL)  # as the device tool ends a call at its limit: no chance to tidy up
                break
    finally:
        for pid in session_processes(proc.pid):  # a step's own process group outlives the group kill
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=20)
    assert len(seen) == 3 and proc.returncode == -signal.SIGKILL
    summary = (out / "first-contact-summary.md").read_text()
    rows = re.findall(r"^\| (\S+) \| ", summary, re.M)
    assert rows[:4] == ["step", *seen], summary
    logs = members(out / "first-contact-logs.tar.gz")
    for name in seen:
        assert f"first-contact-logs/{name}.log" in logs
    assert f"| {seen[0]} |" in logs["first-contact-logs/summary.md"].decode()
    assert tarfile.open(fileobj=io.BytesIO((out / "first-contact-logs.tar.gz").read_bytes())).getmembers()


@pytest.mark.alone
def test_the_rerun_runs_the_named_steps_and_the_peers_and_refuses_a_name_that_is_no_step(tmp_path):
    bundle = fake_bundle(tmp_path)
    p = subprocess.run([ROOT / "scripts" / "gpu-rerun.sh", "--bundle", bundle, "--out", tmp_path / "out",
                        "tests-CudaOps,pair-train-*"], capture_output=True, text=True, timeout=300,
                       env=base_env({"TMPDIR": str(tmp_path)}))
    names = [n for n, _ in step_lines(p.stdout)]
    pairs = [n for n in listed_steps("gpu-first-contact.sh") if n.startswith("pair-train-")]  # the plan's, in its order
    assert {"pair-train-pp", "pair-train-dp", "pair-train-tp", "pair-train-zero3", "pair-train-ep"} <= set(pairs)
    expected = ["preflight-libs"] + (["tests-CudaOps"] if (bundle / "bin" / "ts_gpu_tests").exists() else []) + \
        pairs + ["peer-nccl", "peer-torch", "peer-ts-gemm"]
    assert p.returncode == 1 and names == expected, p.stdout + p.stderr
    assert "step peer-nccl: skipped: the bundle carries no nccl-tests" in p.stdout
    assert (tmp_path / "out" / "rerun-summary.md").is_file() and (tmp_path / "out" / "rerun-logs.tar.gz").is_file()
    # The preflight checks and lists what trainscope loads later by the build's names for it (none in the scripts).
    preflight = members(tmp_path / "out" / "rerun-logs.tar.gz")["rerun-logs/preflight-libs.log"].decode()
    for lib in loaded_later():
        assert re.search(rf"^{re.escape(lib)} => /", preflight, re.M), preflight

    p = subprocess.run([ROOT / "scripts" / "gpu-rerun.sh", "--bundle", bundle, "--out", tmp_path / "out2", "no-such-step"],
                       capture_output=True, text=True, timeout=60, env=base_env({"TMPDIR": str(tmp_path)}))
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "gpu-rerun: error: no step of the first contact is named 'no-such-step' (scripts/gpu-first-contact.sh --list)"]


def test_a_missing_bundle_or_a_bad_deadline_is_one_line(tmp_path):
    for args, rc, text in ((["--bundle", tmp_path / "none"], 1, "no bundle at"), (["--deadline", "soon"], 2, "whole seconds")):
        p = subprocess.run([ROOT / "scripts" / "gpu-first-contact.sh", *args, "--out", tmp_path / "out"],
                           capture_output=True, text=True, timeout=60, env=base_env())
        assert p.returncode == rc and text in p.stderr.splitlines()[0], p.stderr


def test_every_trainscope_command_of_the_plans_parses(tmp_path):
    # TRAINSCOPE_PARSE_ONLY stops trainscope once its command line is read: a step that fails here has a flag its
    # subcommand does not take, which on the device would cost a step for nothing.
    bundle = fake_bundle(tmp_path)
    (bundle / "peers").mkdir()
    for name in ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "sendrecv_perf"):
        (bundle / "peers" / name).write_text(f'#!/bin/sh\necho "{name} $*"\n')
        (bundle / "peers" / name).chmod(0o755)
    env = base_env({"TMPDIR": str(tmp_path), "TRAINSCOPE_PARSE_ONLY": "1"})
    # One re-run of every step that runs trainscope, and the peers: the same commands as the first contact's.
    ours = [n for n in listed_steps("gpu-first-contact.sh") if not n.startswith(("preflight-", "tests-"))]
    # A deadline no parse can reach: the default (150 s, sized for the device) skipped a step on a busy 2-core host,
    # and whether a command parses must not depend on the host's load.
    p = subprocess.run([ROOT / "scripts" / "gpu-rerun.sh", "--bundle", bundle, "--deadline", "3600", "--out",
                        tmp_path / "out", ",".join(ours)], capture_output=True, text=True, timeout=600, env=env)
    results = dict(step_lines(p.stdout))
    assert set(ours) < set(results) and "peer-nccl-all_reduce" in results and "peer-ts-gemm" in results, p.stdout
    assert {n: r for n, r in results.items() if r != "ok" and n != "peer-torch"} == {}, p.stdout


def test_the_pytorch_peers_without_torch_or_without_a_gpu_end_with_one_line(tmp_path):
    # Here python3 has no torch, or (CI: Debian's python3-torch) no GPU: either is one line and exit 2, never a traceback.
    p = subprocess.run(["/usr/bin/python3", ROOT / "scripts" / "gpu-peers.py", "--json", tmp_path / "peers.json"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith(("gpu-peers: error: this python3 has no torch", "gpu-peers: error: torch sees no CUDA device"))
    assert not (tmp_path / "peers.json").exists()


@pytest.mark.alone
def test_a_pair_whose_rank_is_left_waiting_ends_within_its_grace_and_names_it(tmp_path):
    # The two-process hang of issue 33 (one rank ends, its peer waits on): the step ends after the grace with a line
    # naming the rank left running and the first rank's status, instead of spending its whole limit.
    bundle = tmp_path / "bundle"
    (bundle / "bin").mkdir(parents=True)
    fake = bundle / "bin" / "trainscope"
    fake.write_text('#!/bin/bash\necho "rank $RANK local $LOCAL_RANK host $NCCL_HOSTID: $*"\n'
                    '[ "$RANK" = 0 ] && { echo "trainscope: error: rank 0 refuses" >&2; exit 3; }\n'
                    f'echo $$ > {tmp_path}/rank$RANK.pid\nexec sleep 300\n')
    fake.chmod(0o755)
    script = tmp_path / "pair.sh"
    script.write_text(f"source {ROOT / 'scripts' / 'gpu-plan.sh'}\nexport TS_GPU_BIN={bundle / 'bin'} TS_GPU_LD=\n"
                      "pair collectives --backend nccl\n")
    t0 = time.monotonic()
    p = subprocess.run(["bash", script], capture_output=True, text=True, timeout=60,
                       env=base_env({"TS_GPU_PAIR_GRACE": "1"}))
    assert time.monotonic() - t0 < 20 and p.returncode == 3, p.stdout + p.stderr
    assert "error: rank 1 was still running 1 s after rank 0 ended (exit 3): stopped" in p.stdout
    assert "rank 0 local 0 host trainscope-rank0: collectives --backend nccl" in p.stdout
    assert "[rank 1] rank 1 local 0 host trainscope-rank1: collectives --backend nccl" in p.stdout
    assert p.stdout.strip().splitlines()[-1] == "rank 0 exit 3, rank 1 exit 143"
    assert not Path(f"/proc/{(tmp_path / 'rank1.pid').read_text().strip()}").exists(), "rank 1 outlived the pair"


FAKE_GPU = Path(trainscope_path()).parent / "tests" / "libts_fake_gpu.so"


@pytest.mark.alone
def test_the_first_contact_on_a_fake_h200_plans_each_process_on_the_one_gpu_and_every_step_ends_in_one_line(tmp_path):
    # The host-side half of first contact on the device's own shape of node (tests/tools/fake_gpu: one H200 that
    # answers every device query and refuses all work): the inventory is read, and every step that starts work on
    # the GPU (both processes of a pair included, each planned on cuda:0) ends at the first refused call with
    # trainscope's one line, never at its limit and never by the pair's grace (a rank left waiting for the other).
    if not FAKE_GPU.exists():
        pytest.skip(f"built without CUDA (no fake GPU library at {FAKE_GPU})")
    out = tmp_path / "out"
    steps = "env,train-mlp-float32,nccl-world1,pair-nccl,pair-train-pp,pair-train-tp"
    p = subprocess.run([ROOT / "scripts" / "gpu-first-contact.sh", "--bundle", fake_bundle(tmp_path), "--out", out],
                       capture_output=True, text=True, timeout=300,
                       env=base_env({"TMPDIR": str(tmp_path), "TS_GPU_ONLY": steps, "LD_PRELOAD": str(FAKE_GPU),
                                     "TS_FAKE_GPU": "h200:1"}))
    ran = dict(step_lines(p.stdout))
    assert list(ran) == steps.split(","), p.stdout + p.stderr
    assert ran.pop("env") == "ok", p.stdout
    assert set(ran.values()) == {"FAILED"}, p.stdout
    for name in ran:
        line = next(line for line in p.stdout.splitlines() if line.startswith(f"step {name}: "))
        assert re.search(r": (\[rank 1\] )?trainscope: error: .*fake GPU", line), line
    logs = members(out / "first-contact-logs.tar.gz")
    for name in ("pair-nccl", "pair-train-pp", "pair-train-tp"):
        log = logs[f"first-contact-logs/{name}.log"].decode()
        assert "still running" not in log and len(re.findall(r"^trainscope: error: ", log, re.M)) == 1, log
    gpus = json.loads(logs["first-contact-logs/env.json"])["run"]["hosts"][0]["gpus"]["devices"]
    assert [g["name"] for g in gpus] == ["NVIDIA H200"] and gpus[0]["sm_count"] == 132, gpus
