"""One voice per timeout (docs/reliability.md "Hang"): when one rank hangs, the others soon wait for it, and each
used to print the same timeout line. The rank stuck in its own work must be the one that speaks, naming itself and
the operation, once; the ranks that wait for it stay silent (process 0 may add where the records are). When no rank
can speak for itself (a frozen process: TRAINSCOPE_FAULT=freeze stops it whole, watchdog included), the lowest rank
that still runs speaks for the run, once, and says that it waited for its peers."""
import re

import socket

import pytest

from helpers import run_trainscope

# Timing decides (--timeout 2: which rank notices first):
# these run alone, after the parallel part (tests/README.md).
pytestmark = pytest.mark.alone

COLLECTIVE = ["collectives", "--backend", "mpi", "--ops", "all_reduce", "-b", "1K", "-e", "4K", "-f", "4", "-w", "1", "-n", "2",
              "--timeout", "2"]
TRAIN = ["train", "--model", "mlp", "--batch", "24", "--steps", "30", "--no-ceiling", "--timeout", "2"]


def error_lines(err):
    return [line for line in err.splitlines() if line.startswith("trainscope: error:")]


def speakers(lines):
    return {int(m.group(1)) for line in lines if (m := re.match(r"trainscope: error: rank (\d+) of", line))}


def timeout_lines(err):
    return [line for line in error_lines(err) if ": timeout: " in line]


@pytest.mark.parametrize("hung", [1, 2])
def test_the_hung_rank_of_a_collective_names_itself_and_the_op_once(tmp_path, hung):
    r = run_trainscope(COLLECTIVE + ["--json", tmp_path / "c.json"], np=3,
                       env={"TRAINSCOPE_FAULT": f"hang:rank={hung}:op=all_reduce:bytes=1K"}, timeout=120)
    assert r.rc == 3, r.err
    (line,) = timeout_lines(r.err)
    assert line.startswith(f"trainscope: error: rank {hung} of 3 ") and "all_reduce 1 KiB" in line
    assert "made no progress" in line, line
    # The other waiting rank says nothing; process 0 only where its records are.
    assert speakers(error_lines(r.err)) <= {0, hung}, r.err
    zero = [line for line in error_lines(r.err) if line.startswith("trainscope: error: rank 0 of 3 ")]
    assert all("while waiting for its peers in all_reduce 1 KiB" in line for line in zero), r.err


def test_the_hung_rank_of_a_training_run_names_itself_and_the_step_once(tmp_path):
    r = run_trainscope(TRAIN + ["--json", tmp_path / "t.json"], np=3, env={"TRAINSCOPE_FAULT": "hang:rank=2:step=3"},
                       timeout=120)
    assert r.rc == 3, r.err
    (line,) = timeout_lines(r.err)
    assert line.startswith("trainscope: error: rank 2 of 3 ") and "train step 3 made no progress" in line, line
    assert 1 not in speakers(error_lines(r.err)), r.err


@pytest.mark.parametrize(("frozen", "speaker"), [(2, 0), (0, 1)])
def test_when_a_process_freezes_the_lowest_running_rank_speaks_for_the_run_once(tmp_path, frozen, speaker):
    r = run_trainscope(COLLECTIVE + ["--json", tmp_path / "c.json"], np=3,
                       env={"TRAINSCOPE_FAULT": f"freeze:rank={frozen}:op=all_reduce:bytes=1K"}, timeout=120)
    assert r.rc == 3, r.err
    (line,) = timeout_lines(r.err)
    assert line.startswith(f"trainscope: error: rank {speaker} of 3 ") and "all_reduce 1 KiB" in line, line
    # Its liveness beacon accepts (the kernel does, for a stopped process) but never answers: it is named.
    assert f"for its peers: rank {frozen} on host {socket.gethostname()} accepts but does not answer (a stopped or stuck " \
           "process)" in line, line
    assert speakers(error_lines(r.err)) == {speaker}, r.err  # the frozen one never speaks again, the third waits
