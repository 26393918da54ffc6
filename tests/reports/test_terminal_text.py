"""Issue #34: control bytes from a result (a host name, a label, a suite's name) or an imported file reached the
terminal raw (`accept` printed a host named `h\\x1b[2Jx` as is, clearing the screen). Everything the reports tool
prints goes through one helper, reports/common/terminal.py; data written to a file or a pipe is left as it is."""
import json
import os
import subprocess
import sys

from synthetic import ROOT, make_doc, make_fleet_doc, make_kernel, make_record

from reports.__main__ import main
from reports.common.terminal import printable

ESC = "\x1b"
RULES = ROOT / "bench" / "suites" / "rules" / "quick.toml"


def test_printable_escapes_what_a_terminal_acts_on_and_keeps_text():
    assert printable("a\x1b[31mred\x07\r\x00\x7f\x9b") == "a\\x1b[31mred\\x07\\x0d\\x00\\x7f\\x9b"
    assert printable("right\u202eleft \ud800") == "right\\u202eleft \\ud800"
    assert printable("two\nlines\tand tab, é, 漢字, 😀") == "two\nlines\tand tab, é, 漢字, 😀"
    assert printable("two\nlines\t", one_line=True) == "two\\x0alines\\x09"


def hostile_docs(tmp_path):
    # a GEMM the quick rules judge (half its roofline: PASS), so that accept does its whole work on the hostile host
    gemm = make_kernel("gemm", f"g{ESC}[1m", 0.5, 100.0, 1.0, 100.0)
    fleet = make_fleet_doc([make_record(), gemm], {f"h{ESC}[2Jx": [0, 1]}, suite=f"s{ESC}]0;title\x07")
    single = make_doc([make_record()], hostname=f"node{ESC}[31m", label=f"lab{ESC}]0;t\x07el")
    paths = tmp_path / "fleet.json", tmp_path / "single.json"
    for p, doc in zip(paths, (fleet, single)):
        p.write_text(json.dumps(doc))
    return paths


def test_no_control_byte_of_a_result_reaches_the_terminal(tmp_path, capsys):
    fleet, single = hostile_docs(tmp_path)
    codes = []
    for args in (["accept", fleet, "--rules", RULES], ["compare", single, single], ["memory", single],
                 ["report", single, "-o", tmp_path / "rep"], ["export", single, "--format", "csv", "-o", tmp_path / "x.csv"],
                 ["accept", fleet, "--rules", RULES, "--junit", tmp_path / f"{ESC}[2J.xml"]):
        codes.append(main([str(a) for a in args]))
        out, err = capsys.readouterr()
        assert ESC not in out and "\x07" not in out and ESC not in err, (args, out, err)
    assert codes == [0] * 6, codes  # each did its work: a command that stops early prints little to test
    assert "h\\x1b[2Jx" in main_output(["accept", str(fleet), "--rules", str(RULES)], capsys)


def main_output(args, capsys):
    main(args)
    return capsys.readouterr().out


def test_an_error_line_naming_a_hostile_path_is_one_escaped_line(tmp_path, capsys):
    bad = tmp_path / f"a{ESC}]0;x\x07\nb.json"
    assert main(["report", str(bad), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and ESC not in err and "a\\x1b]0;x\\x07\\x0ab.json: cannot read" in err, err


def test_data_written_to_a_terminal_is_escaped(tmp_path):
    _, single = hostile_docs(tmp_path)
    main_end, terminal = os.openpty()
    try:
        r = subprocess.run([sys.executable, "-m", "reports", "export", str(single), "--format", "csv"], cwd=ROOT,
                           stdout=terminal, stderr=subprocess.PIPE, timeout=120)
        os.close(terminal)
        shown = b""
        while chunk := _read(main_end):
            shown += chunk
    finally:
        os.close(main_end)
    assert r.returncode == 0, r.stderr
    assert ESC.encode() not in shown and b"lab\\x1b]0;t\\x07el" in shown, shown


def _read(fd):
    try:
        return os.read(fd, 1 << 16)
    except OSError:  # EIO: the terminal's other end is closed and all was read
        return b""


def test_data_written_to_a_pipe_is_left_as_it_is(tmp_path):
    """export to a pipe or a file writes the records' text unchanged: escaping belongs to a terminal only."""
    _, single = hostile_docs(tmp_path)
    r = subprocess.run([sys.executable, "-m", "reports", "export", str(single), "--format", "csv"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and f"lab{ESC}]0;t\x07el" in r.stdout, r.stderr
    out = tmp_path / "x.csv"
    assert main(["export", str(single), "--format", "csv", "-o", str(out)]) == 0
    assert f"lab{ESC}]0;t\x07el" in out.read_text()
