"""`trainscope import` through the binary (issue #22): the committed OSU osu_allreduce sample becomes a
result naming this build, which compare matches record by record against a real `collectives --backend mpi`
run of the same op, dtype and ranks — each match inconclusive (one average from OSU, no samples), exit 3;
a file of another tool is one error line, exit 2."""
import json
import re

from helpers import ROOT, run_trainscope

SAMPLES = ROOT / "tests" / "reports" / "data" / "import"


def test_import_then_compare_against_a_real_collectives_run(tmp_path):
    imported = tmp_path / "osu.json"
    r = run_trainscope(["import", SAMPLES / "osu_allreduce.txt", "--ranks", "2", "-o", imported])
    assert r.rc == 0, r.err
    assert re.fullmatch(rf"import: {imported}: 19 record\(s\) from .*osu_allreduce.txt \(osu osu_allreduce\)\n", r.out)
    doc = json.loads(imported.read_text())
    version = run_trainscope(["--version"]).out.split()[1]
    assert doc["run"]["tool"]["version"] == version and doc["run"]["tool"]["git_commit"] != "unknown"

    ours = tmp_path / "ours.json"
    r = run_trainscope(["collectives", "--backend", "mpi", "--ops", "all_reduce", "-b", "4K", "-e", "16K", "-f", "2", "-n", "5",
                        "--json", ours], np=2)
    assert r.rc == 0, r.err
    r = run_trainscope(["compare", imported, ours])
    assert r.rc == 3, r.err
    matched = [line for line in r.out.splitlines() if line.startswith("inconclusive")]
    assert len(matched) == 3 and all("out-of-place" in m and "summary only: osu" in m for m in matched), r.out


def test_import_of_another_tools_file_is_one_line(tmp_path):
    f = tmp_path / "other.txt"
    f.write_text("Running benchmark...\nresult: 42\n")
    r = run_trainscope(["import", f])
    assert r.rc == 2 and r.err.count("\n") == 1 and f"{f}: neither nccl-tests output" in r.err, r.err
