"""The environment bootstrap (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT) with a stranger on process 0's port
(docs/reliability.md, "A stranger on the bootstrap port"): whatever one connection does, a real two-process
job meets and finishes, and process 0 logs what it turned away with the stranger's address. Also where
process 0 listens, and one line for each bad environment value."""
import os
import re
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from helpers import base_env, free_port, trainscope_path

TOKEN = "test-job-token"
TOKEN_SOURCES = ("TRAINSCOPE_JOB_TOKEN", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE")


def job_env(port, rank, size=2, token=TOKEN, extra=None):
    env = base_env({"RANK": str(rank), "WORLD_SIZE": str(size), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                    "TRAINSCOPE_BOOTSTRAP_TIMEOUT": "60"})
    for name in TOKEN_SOURCES + ("LOCAL_RANK",):
        env.pop(name, None)
    if token is not None:
        env["TRAINSCOPE_JOB_TOKEN"] = token
    env.update(extra or {})
    return env


def start(port, rank, **kw):
    return subprocess.Popen([trainscope_path(), "env"], env=job_env(port, rank, **kw), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(*procs, timeout=60):
    """Each process's (exit code, stderr); a job still running after `timeout` is a failure, not a hang."""
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("the job did not finish: a connection blocked it")
        out.append((p.returncode, err))
    return out


def listeners(port):
    """The local addresses listening on `port` (from /proc/net/tcp{,6}: state 0A is LISTEN)."""
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            addr, hexport = fields[1].split(":")
            if fields[3] == "0A" and int(hexport, 16) == port:
                raw = bytes.fromhex(addr)
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))  # kernel words are host-endian
                found.append(socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, raw))
    return found


def wait_listening(port, proc):
    for _ in range(400):
        if listeners(port):
            return
        if proc.poll() is not None:
            pytest.fail(f"process 0 exited before listening: {proc.communicate()[1]}")
        time.sleep(0.05)
    pytest.fail("process 0 never listened")


def hello(rank, size, token, claimed_length=None):
    """A hello as docs/reliability.md spells it: magic, RANK, WORLD_SIZE, token length, token (big-endian)."""
    token = token.encode()
    n = len(token) if claimed_length is None else claimed_length
    return b"TSHELLO2" + struct.pack(">iiI", rank, size, n) + token


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    return s, "127.0.0.1:%d" % s.getsockname()[1]


def read_answer(s):
    """Process 0's answer: (admitted, reason), or None when it closed without one."""
    data = b""
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    if not data:
        return None
    assert data[:8] == b"TSANSWR2", data
    status, _, n = struct.unpack(">III", data[8:20])
    return status == 0, data[20:20 + n].decode()


def run_job_with(stranger):
    """Process 0 starts; `stranger(port)` does its worst and returns what process 0 should log about it; then
    process 1 starts. Both must finish, and process 0 must have logged that line once."""
    port = free_port()
    p0 = start(port, 0)
    wait_listening(port, p0)
    expected, keep = stranger(port)
    p1 = start(port, 1)
    (rc0, err0), (rc1, err1) = finish(p0, p1)
    for s in keep:
        s.close()
    assert rc0 == 0 and rc1 == 0, err0 + err1
    assert err0.splitlines().count("trainscope: bootstrap: " + expected) == 1, err0
    assert "error" not in err0 + err1
    return err0


def test_a_connection_that_closes_at_once_is_dropped_and_logged():
    def stranger(port):
        s, me = connect(port)
        s.close()
        return f"dropped the connection from {me}: it closed without a word", []

    run_job_with(stranger)


def test_a_silent_connection_does_not_block_the_job():
    def stranger(port):
        s, me = connect(port)  # and says nothing, for as long as the job takes
        return f"dropped the connection from {me}: it had not said hello when every process of the job had joined", [s]

    run_job_with(stranger)


@pytest.mark.parametrize("garbage", [b"GET / HTTP/1.0\r\n\r\n", struct.pack("<ii", 1, 2)], ids=["http", "old-hello-rank-1"])
def test_garbage_is_dropped_and_logged(garbage):
    """The second is the hello of before (RANK=1, WORLD_SIZE=2 as two ints), which took rank 1 from the real one."""
    def stranger(port):
        s, me = connect(port)
        s.sendall(garbage)
        assert read_answer(s) is None
        return f"dropped the connection from {me}: not a trainscope hello (it starts with other bytes)", []

    run_job_with(stranger)


@pytest.mark.parametrize("claimed", [2**32 - 1, 257], ids=["4GiB", "just-over"])
def test_a_huge_claimed_length_is_dropped_without_allocating(claimed):
    def stranger(port):
        s, me = connect(port)
        s.sendall(hello(1, 2, "", claimed_length=claimed))
        assert read_answer(s) is None
        return f"dropped the connection from {me}: its hello claims {claimed} bytes of payload, more than the 256 allowed", []

    run_job_with(stranger)


def test_an_impostor_with_the_wrong_token_is_refused_and_told_why():
    def stranger(port):
        s, me = connect(port)
        s.sendall(hello(1, 2, "guessed"))
        assert read_answer(s) == (False, "wrong job token")
        return f"refused {me} claiming RANK=1 WORLD_SIZE=2: wrong job token", []

    run_job_with(stranger)


@pytest.mark.parametrize("rank,size,why", [
    (5, 2, "RANK=5 is outside 1..1 (WORLD_SIZE=2; process 0 is the one listening)"),
    (0, 2, "RANK=0 is outside 1..1 (WORLD_SIZE=2; process 0 is the one listening)"),
    (1, 3, "it has WORLD_SIZE=3 but this job has WORLD_SIZE=2"),
], ids=["rank-out-of-range", "rank-0", "other-world"])
def test_an_impossible_rank_with_the_right_token_is_refused_with_one_line_naming_it(rank, size, why):
    def stranger(port):
        s, me = connect(port)
        s.sendall(hello(rank, size, TOKEN))
        assert read_answer(s) == (False, why)
        return f"refused {me} claiming RANK={rank} WORLD_SIZE={size}: {why}", []

    run_job_with(stranger)


def test_process_0_listens_only_on_the_address_master_addr_names():
    port = free_port()
    p0 = start(port, 0)
    try:
        wait_listening(port, p0)
        assert listeners(port) == ["127.0.0.1"]
        # Any other address of this host is closed, 127.0.0.2 (loopback too) included.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.2", port), timeout=5).close()
        p1 = start(port, 1)
        (rc0, err0), (rc1, err1) = finish(p0, p1)
        assert rc0 == 0 and rc1 == 0, err0 + err1
    finally:
        p0.kill()
        p0.wait()


def test_without_a_token_every_process_refuses_to_start_with_one_line():
    """Outside a launcher nothing hands the processes a job id: without TRAINSCOPE_JOB_TOKEN any local process
    could join as a member, so each process stops before listening or connecting (issue #34)."""
    port = free_port()
    p0 = start(port, 0, token=None)
    p1 = start(port, 1, token=None)
    for rc, err in finish(p0, p1):
        assert rc == 2, err
        assert len(err.splitlines()) == 1, err
        assert err.startswith("trainscope: error: no job token: the RANK/WORLD_SIZE bootstrap admits only processes that "
                              "carry the job's token, and neither TRAINSCOPE_JOB_TOKEN nor a launcher's job id"), err
        assert "set TRAINSCOPE_JOB_TOKEN to one secret in every process" in err
        assert err.rstrip().endswith("or TRAINSCOPE_JOB_TOKEN=none to admit any process that reaches "
                                     "MASTER_ADDR:MASTER_PORT"), err
    assert listeners(port) == []


def test_torchruns_default_run_id_is_no_token_either():
    port = free_port()
    p = start(port, 1, token=None, extra={"TORCHELASTIC_RUN_ID": "none", "TRAINSCOPE_MASTER_PORT": str(port)})
    (rc, err), = finish(p)
    assert rc == 2 and err.startswith("trainscope: error: no job token: "), err


def test_job_token_none_admits_any_process_and_process_0_warns_once():
    port = free_port()
    p0 = start(port, 0, token="none")
    p1 = start(port, 1, token="none")
    (rc0, err0), (rc1, err1) = finish(p0, p1)
    assert rc0 == 0 and rc1 == 0, err0 + err1
    warnings = [line for line in err0.splitlines() if line.startswith("trainscope: warning: ")]
    assert warnings == ["trainscope: warning: TRAINSCOPE_JOB_TOKEN=none: process 0 admits any process that reaches "
                        "MASTER_ADDR:MASTER_PORT and claims a free rank"], err0
    assert "warning" not in err1


def test_a_world_of_one_needs_no_token():
    p = start(free_port(), 0, size=1, token=None)
    (rc, err), = finish(p)
    assert rc == 0, err


def test_silent_strangers_holding_many_connections_do_not_keep_the_real_ranks_out():
    """Issue #34: 100 silent connections held for 3 s filled process 0's waiting room; it closed the real rank 1's
    connection unread, rank 1 took the reset for a fatal error and process 0 waited out the bootstrap timeout. Now
    the oldest silent connection makes room, and a real process whose connection is reset tries again."""
    port = free_port()
    p0 = start(port, 0)
    wait_listening(port, p0)
    strangers = [socket.create_connection(("127.0.0.1", port), timeout=20) for _ in range(100)]
    p1 = start(port, 1)
    time.sleep(3)
    for s in strangers:
        s.close()
    (rc0, err0), (rc1, err1) = finish(p0, p1)
    assert rc0 == 0 and rc1 == 0, err0 + err1
    assert "error" not in err0 + err1, err0 + err1
    assert "trainscope: bootstrap: more connections turned away are counted, not logged" in err0, err0


def read_one_answer(s):
    """Process 0's answer to a hello, read to its last byte (the connection stays open)."""
    data = b""
    while len(data) < 20 or len(data) < 20 + struct.unpack(">I", data[16:20])[0]:
        chunk = s.recv(4096)
        assert chunk, data
        data += chunk
    assert data[:8] == b"TSANSWR2" and struct.unpack(">I", data[8:12])[0] == 0, data
    return data


def test_a_member_announcing_more_than_its_byte_budget_is_refused_before_process_0_allocates(tmp_path):
    """Issue #34: a process with the token is a member, and the first thing members exchange is their host names,
    each announcing its length first. One announcing 1 GiB took process 0 to 3.3 GB (the string, padded to the
    longest for every process). Now each member has a budget for everything it sends process 0 (256 MiB for the
    whole run), checked before anything is allocated, and exceeding it is one line naming the member."""
    port = free_port()
    err_path = tmp_path / "p0.err"
    with open(err_path, "w") as err_file:
        p0 = subprocess.Popen([trainscope_path(), "env"], env=job_env(port, 0), stdout=subprocess.DEVNULL, stderr=err_file)
    wait_listening(port, p0)
    s, me = connect(port)
    s.sendall(hello(1, 2, TOKEN))
    read_one_answer(s)
    s.sendall(struct.pack("<Q", 1 << 30))  # the length of its "host name", in the byte order of the machine
    deadline, hwm = time.monotonic() + 30, 0
    while True:
        pid, status, usage = os.wait4(p0.pid, os.WNOHANG)
        if pid:
            p0.returncode = os.waitstatus_to_exitcode(status)
            hwm = max(hwm, usage.ru_maxrss * 1024)
            break
        try:
            hwm = max(hwm, int(re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{p0.pid}/status").read_text()).group(1)) * 1024)
        except (OSError, AttributeError):
            pass
        if time.monotonic() > deadline:
            p0.kill()
            p0.wait()
            pytest.fail(f"process 0 still waited 30 s after the announcement (its peak memory: {hwm >> 20} MiB)")
        time.sleep(0.05)
    s.close()
    err = err_path.read_text()
    assert p0.returncode == 1, err
    assert err.splitlines() == [f"trainscope: error: rank 0 of 2 ({socket.gethostname()}): bootstrap: process 1 ({me}) "
                                "announced a 1073741824-byte message, past "
                                "its budget: one process may send process 0 at most 268435456 bytes (256 MiB) in a run, and "
                                "it had sent 0"], err
    assert hwm < 600 << 20, f"process 0 reached {hwm >> 20} MiB"


def test_a_process_with_another_token_fails_with_the_reason_and_process_0_times_out_naming_the_rank():
    port = free_port()
    p0 = start(port, 0, extra={"TRAINSCOPE_BOOTSTRAP_TIMEOUT": "2"})
    wait_listening(port, p0)
    p1 = start(port, 1, token="another-job")
    (rc0, err0), (rc1, err1) = finish(p0, p1)
    assert rc1 == 1 and rc0 == 1
    assert err1.count("\n") == 1 and "refused this process (RANK=1 WORLD_SIZE=2): wrong job token" in err1, err1
    assert "only 1 of 2 processes connected to MASTER_ADDR=127.0.0.1" in err0, err0
    assert "(missing RANK 1); 1 other connection(s) were turned away, logged above" in err0, err0


@pytest.mark.parametrize("env,line", [
    ({"RANK": "5"}, "RANK=5 is outside the world of WORLD_SIZE=2 (ranks are 0..1)"),
    ({"RANK": "-1"}, "RANK=-1 is outside the world of WORLD_SIZE=2 (ranks are 0..1)"),
    ({"RANK": "abc"}, "RANK='abc' is not an integer"),
    ({"RANK": "1", "WORLD_SIZE": "two"}, "WORLD_SIZE='two' is not an integer"),
    ({"RANK": "1", "WORLD_SIZE": "0"}, "WORLD_SIZE=0 must be between 1 and 1048576"),
    ({"RANK": "99999999999"}, "RANK=99999999999 is out of range"),
    ({"RANK": "1", "LOCAL_RANK": "7"}, "LOCAL_RANK=7 is outside 0..1 (WORLD_SIZE=2)"),
    ({"RANK": "1", "MASTER_PORT": "http"}, "MASTER_PORT='http' is not an integer"),
    ({"RANK": "1", "MASTER_PORT": "70000"}, "MASTER_PORT=70000 is not a TCP port (1-65535)"),
    ({"RANK": "1", "MASTER_ADDR": "nohost.invalid"}, "MASTER_ADDR=nohost.invalid cannot be resolved: "),
    ({"RANK": "0", "MASTER_ADDR": "nohost.invalid"}, "MASTER_ADDR=nohost.invalid cannot be resolved: "),
    ({"RANK": "0", "MASTER_ADDR": "203.0.113.7"},
     "MASTER_ADDR=203.0.113.7 (203.0.113.7:{port}) is not an address of this host, where process 0 runs and listens"),
    ({"RANK": "1", "TRAINSCOPE_BOOTSTRAP_TIMEOUT": "abc"},
     "TRAINSCOPE_BOOTSTRAP_TIMEOUT='abc' is not a number of seconds above 0"),
    ({"RANK": "1", "TRAINSCOPE_JOB_TOKEN": "k" * 257}, "TRAINSCOPE_JOB_TOKEN is 257 bytes; at most 256 are allowed"),
], ids=["rank-5", "rank-neg", "rank-abc", "size-abc", "size-0", "rank-huge", "local-rank", "port-abc", "port-big",
        "addr-unresolvable", "addr-unresolvable-rank0", "addr-not-here", "timeout-abc", "token-long"])
def test_a_bad_environment_value_is_one_line_and_exit_2_before_any_work(tmp_path, env, line):
    port = free_port()
    out = tmp_path / "env.json"
    env = dict(env)
    e = job_env(port, env.pop("RANK"))
    e.update(env)
    p = subprocess.run([trainscope_path(), "env", "--json", str(out)], env=e, capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("trainscope: error: " + line.format(port=port)), p.stderr
    assert not out.exists() and not (tmp_path / "env.jsonl").exists()
