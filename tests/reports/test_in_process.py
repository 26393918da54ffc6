"""The reports tool's main() called in-process, as the tests call it: from a thread other than Python's main one
(pytest-xdist's worker may run its tests there: execnet starts the worker's code in a thread of its own when its
main thread is not ready, which a loaded machine makes likely; 133 tests failed so in one run) it runs the command,
where setting the SIGPIPE handler would raise `signal only works in main thread`."""
import threading

from reports.__main__ import main


def test_main_runs_a_command_from_another_thread(tmp_path, capsys):
    got = {}
    worker = threading.Thread(target=lambda: got.setdefault("rc", main(["export", str(tmp_path / "none.json"),
                                                                        "--format", "csv"])))
    worker.start()
    worker.join(60)
    assert got.get("rc") == 2  # the missing file's one line, not an internal error
    err = capsys.readouterr().err
    assert "internal error" not in err and "none.json" in err, err
