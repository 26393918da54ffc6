"""`trainscope import` (reports/import_export/importers.py, issue #22): the committed nccl-tests (text and -J JSON) and OSU
samples become valid result documents whose records hold the samples' own figures (each table read again
here, by a regex of its own); compare matches them to trainscope's records and calls them inconclusive
(one average, no samples); report draws them under the tool's name; bad input is one line, exit 2."""
import json
import re
from pathlib import Path

import pytest
from synthetic import make_doc, make_record

from reports.import_export import launcher_prefixes
from reports.__main__ import main
from reports.compare.compare import Outcome, compare
from reports.common.load import load_result, validate
from reports.common.policy import Policy
from reports.html.report import write_report

DATA = Path(__file__).parent / "data" / "import"
NCCL_TEXT = DATA / "nccl-tests-all_reduce.txt"
NCCL_JSON = DATA / "nccl-tests-all_reduce.json"
OSU_ALLREDUCE = DATA / "osu_allreduce.txt"
NCCL_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+float\s+sum\s+-1" + r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)" * 2 + r"\s*$")
OSU_ROW = re.compile(r"^(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)$")


def imported(tmp_path, *args):
    out = tmp_path / "imported.json"
    assert main(["import", *map(str, args), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    validate(doc)
    return doc, out


def by_place(doc):
    return {(r["bytes"], r["in_place"]): r for r in doc["records"]}


def test_nccl_tests_text_imports_the_tables_figures(tmp_path):
    doc, _ = imported(tmp_path, NCCL_TEXT)
    lines = NCCL_TEXT.read_text().splitlines()
    rows = [(n, m) for n, line in enumerate(lines, 1) if (m := NCCL_ROW.match(line))]
    recs = by_place(doc)
    assert len(rows) == 25 and len(recs) == 2 * len(rows)
    for n, m in rows:
        size, count = int(m[1]), int(m[2])
        for in_place, (t, alg, bus, wrong) in ((False, m.groups()[2:6]), (True, m.groups()[6:10])):
            r = recs[(size, in_place)]
            assert (r["op"], r["backend"], r["dtype"], r["redop"], r["root"], r["count"]) == ("all_reduce", "nccl", "float32",
                                                                                             "sum", None, count)
            assert r["time_us"]["median"] == r["samples_us"][0] == float(t) and r["time_us"]["n"] == 1
            assert (r["algbw_gbps"], r["busbw_gbps"], r["check"]["wrong"]) == (float(alg), float(bus), int(wrong))
            assert (r["ranks"], r["processes"], r["bus_factor"], r["iters"]) == (4, 4, 1.5, 20)
            assert r["source"] == {"tool": "nccl-tests", "version": "2.19.6", "benchmark": "all_reduce_perf",
                                   "file": str(NCCL_TEXT), "line": n}
    run = doc["run"]
    assert [h["hostname"] for h in run["hosts"]] == ["node-a", "node-b"] and run["world"]["processes"] == 4
    assert [(x["rank"], x["process"], x["host"], x["device"]) for x in run["layouts"][0]["ranks"]] == [
        (0, 0, "node-a", "cuda:0"), (1, 1, "node-a", "cuda:1"), (2, 2, "node-b", "cuda:0"), (3, 3, "node-b", "cuda:1")]
    assert run["hosts"][0]["versions"]["nccl"] == "2.28.7" and run["hosts"][0]["cpu"]["threads"] is None


def test_nccl_tests_json_imports_its_own_figures_and_agrees_with_the_text(tmp_path):
    doc, _ = imported(tmp_path, NCCL_JSON)
    text_doc, _ = imported(tmp_path, NCCL_TEXT)
    raw = json.loads(NCCL_JSON.read_text())
    recs, text_recs = by_place(doc), by_place(text_doc)
    assert recs.keys() == text_recs.keys()
    for entry in raw["results"]:
        for in_place, key in ((False, "out_of_place"), (True, "in_place")):
            r = recs[(entry["size"], in_place)]
            assert (r["time_us"]["median"], r["algbw_gbps"], r["busbw_gbps"]) == (
                entry[key]["time"], entry[key]["alg_bw"], entry[key]["bus_bw"])
            t = text_recs[(entry["size"], in_place)]  # the text rounds to its columns' widths
            assert t["time_us"]["median"] == pytest.approx(r["time_us"]["median"], rel=5e-3, abs=6e-3)
            assert t["busbw_gbps"] == pytest.approx(r["busbw_gbps"], abs=6e-3)
    assert doc["run"]["environment"] == {"NCCL_IB_HCA": "mlx5_0", "NCCL_SOCKET_IFNAME": "eth0"}
    assert {r["source"]["version"] for r in doc["records"]} == {None}  # the JSON does not give nccl-tests' version


def test_osu_allreduce_imports_its_table_with_the_ranks_given(tmp_path):
    doc, _ = imported(tmp_path, OSU_ALLREDUCE, "--ranks", 2)
    rows = [m for line in OSU_ALLREDUCE.read_text().splitlines() if (m := OSU_ROW.match(line))]
    recs = by_place(doc)
    assert len(rows) == len(recs) == 19
    for m in rows:
        size, avg, iters = int(m[1]), float(m[2]), int(m[5])
        r = recs[(size, False)]
        assert (r["op"], r["backend"], r["dtype"], r["ranks"], r["count"], r["iters"]) == ("all_reduce", "mpi", "float32", 2,
                                                                                          size // 4, iters)
        assert r["time_us"]["median"] == avg and r["algbw_gbps"] == pytest.approx(size / avg / 1e3)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"])  # 2 (n - 1) / n = 1 on 2 ranks
        assert r["source"]["tool"] == "osu" and r["source"]["version"] == "7.4" and "assumed" not in r["source"]  # -f printed them


OSU_REDUCE = DATA / "osu_reduce.txt"


def test_osu_reduce_imports_as_a_rooted_sum_of_the_whole_buffer(tmp_path):
    """osu_reduce's size is the whole buffer every rank passes (OMB's MPI_Reduce(sendbuf, recvbuf, size, ...)), as for
    allreduce: trainscope's bytes, not size x ranks; OSU sums onto rank 0, and a reduce moves each byte once."""
    doc, _ = imported(tmp_path, OSU_REDUCE, "--ranks", 4)
    rows = [m for line in OSU_REDUCE.read_text().splitlines() if (m := OSU_ROW.match(line))]
    recs = by_place(doc)
    assert len(rows) == len(recs) == 19
    for m in rows:
        size, avg, iters = int(m[1]), float(m[2]), int(m[5])
        r = recs[(size, False)]
        assert (r["op"], r["backend"], r["dtype"], r["redop"], r["root"], r["ranks"], r["count"], r["iters"]) == (
            "reduce", "mpi", "float32", "sum", 0, 4, size // 4, iters)
        assert r["time_us"]["median"] == avg and r["algbw_gbps"] == pytest.approx(size / avg / 1e3)
        assert r["bus_factor"] == 1 and r["busbw_gbps"] == r["algbw_gbps"]
        assert r["source"] == {"tool": "osu", "version": "7.4", "benchmark": "osu_reduce", "file": str(OSU_REDUCE),
                               "line": r["source"]["line"]}


OSU_ALLGATHER = DATA / "osu_allgather.txt"
OSU_SHORT_ROW = re.compile(r"^(\d+)\s+([\d.]+)$")


def test_osu_allgather_sizes_are_one_ranks_block(tmp_path, write_doc):
    """osu_allgather's size is what each rank sends (OMB's MPI_Allgather(sendbuf, size, ...)): trainscope's bytes are the
    whole receive buffer, size x ranks, and its count one rank's elements, so the record meets trainscope's own
    all_gather of the same buffer; OMB's default loop counts (1000, 100 above 8 KiB) stand where -f did not print them."""
    doc, path = imported(tmp_path, OSU_ALLGATHER, "--ranks", 2)
    rows = [m for line in OSU_ALLGATHER.read_text().splitlines() if (m := OSU_SHORT_ROW.match(line))]
    recs = by_place(doc)
    assert len(rows) == len(recs) == 21
    for m in rows:
        size, avg = int(m[1]), float(m[2])
        r = recs[(2 * size, False)]
        assert (r["op"], r["dtype"], r["count"], r["redop"], r["root"], r["iters"]) == ("all_gather", "int8", size, None, None,
                                                                                       1000 if size <= 8192 else 100)
        assert r["algbw_gbps"] == pytest.approx(2 * size / avg / 1e3) and r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] / 2)
        assert r["source"]["benchmark"] == "osu_allgather" and r["source"]["assumed"] == ["iters"]  # no -f: not printed
    ours = load_result(write_doc("ours.json", make_doc([make_record(op="all_gather", nbytes=2048, dtype="int8")])))
    cmp = compare(load_result(path), ours, Policy())
    assert [r.identity.split(" [")[0] for r in cmp.rows] == ["all_gather mpi int8 2048 B 2 ranks out-of-place"]


# OMB before 7.0 print no '# Datatype:' line: each benchmark's own type is in its source (c/mpi/collective/osu_<op>.c
# of OMB 5.x), MPI_CHAR for the ones that move bytes, MPI_FLOAT for the reducing ones; Size is bytes in both.
OSU_57 = {"osu_bcast": ("broadcast", "int8", 1), "osu_allgather": ("all_gather", "int8", 1),
          "osu_alltoall": ("alltoall", "int8", 1), "osu_gather": ("gather", "int8", 1), "osu_scatter": ("scatter", "int8", 1),
          "osu_allreduce": ("all_reduce", "float32", 4)}


@pytest.mark.parametrize("program", list(OSU_57))
def test_osu_5_7_output_is_labelled_with_each_benchmarks_own_datatype(tmp_path, program):
    sample = DATA / f"osu-5.7_{program.removeprefix('osu_')}.txt"
    doc, _ = imported(tmp_path, sample, "--ranks", 2)
    op, dtype, width = OSU_57[program]
    sizes = [int(m[1]) for line in sample.read_text().splitlines() if (m := OSU_SHORT_ROW.match(line))]
    assert len(sizes) == len(doc["records"]) >= 19
    for size, r in zip(sizes, doc["records"]):
        assert (r["op"], r["dtype"], r["count"]) == (op, dtype, size // width), size
        assert r["source"]["version"] == "5.7" and r["source"]["benchmark"] == program


# Launchers' line prefixes, as captured here: Open MPI 4.1's mpirun --tag-output and --timestamp-output, Slurm 22.05's
# srun --label (rank 0 printing the sample, rank 1 a NCCL_DEBUG line on stderr); MPICH's mpiexec -prepend-rank as
# written from Hydra's pattern (no MPICH here).
PREFIXED = ["nccl-tests-all_reduce.tag-output.txt", "nccl-tests-all_reduce.timestamp-output.txt",
            "nccl-tests-all_reduce.srun-label.txt", "nccl-tests-all_reduce.prepend-rank.txt"]


@pytest.mark.parametrize("name", PREFIXED)
def test_nccl_tests_output_with_a_launchers_prefixes_imports_as_the_bare_output(tmp_path, name):
    doc, _ = imported(tmp_path, DATA / name)
    bare, _ = imported(tmp_path, NCCL_TEXT)
    assert len(doc["records"]) == len(bare["records"]) == 50
    lines, bare_lines = (DATA / name).read_text().splitlines(), NCCL_TEXT.read_text().splitlines()
    for r, b in zip(doc["records"], bare["records"]):
        # the line named is the captured file's own (the other rank's stderr line is among them)
        prefixed, row = lines[r["source"]["line"] - 1], bare_lines[b["source"]["line"] - 1]
        assert prefixed.endswith(row) and prefixed != row
        r["source"], b["source"] = {}, {}
        assert r == b
    assert doc["run"]["layouts"][0]["ranks"] == bare["run"]["layouts"][0]["ranks"]


@pytest.mark.parametrize("name", ["nccl-tests-all_reduce.txt", "osu-5.7_bcast.txt", "osu_latency.txt"])
def test_bare_output_comes_through_the_prefix_stripping_unchanged(name):
    text = (DATA / name).read_text()
    assert launcher_prefixes.strip(text) == text


def test_a_file_whose_minority_of_lines_look_prefixed_is_left_as_it_is():
    """Only the style most lines carry is stripped: a table whose few lines happen to start like srun's '0: ' stays."""
    bare = (DATA / "nccl-tests-all_reduce.txt").read_text()
    lines = bare.splitlines()
    some = "\n".join(f"{i}: {line}" if i < len(lines) // 3 else line for i, line in enumerate(lines)) + "\n"
    assert launcher_prefixes.strip(some) == some


def test_osu_output_with_mpiruns_tag_output_imports_as_the_bare_output(tmp_path):
    doc, _ = imported(tmp_path, DATA / "osu-5.7_bcast.tag-output.txt", "--ranks", 2)
    bare, _ = imported(tmp_path, DATA / "osu-5.7_bcast.txt", "--ranks", 2)
    assert [(r["bytes"], r["dtype"], r["time_us"]) for r in doc["records"]] == [
        (r["bytes"], r["dtype"], r["time_us"]) for r in bare["records"]]


def trainscope_nccl_result(sizes):
    """trainscope's own records of the sample's op and placement (collectives --backend nccl on 4 ranks)."""
    recs = []
    for nbytes in sizes:
        for in_place in (False, True):
            rec = make_record(nbytes=nbytes, in_place=in_place, samples=[20.0 + nbytes / 40e3 + 0.1 * i for i in range(20)])
            rec.update(backend="nccl", ranks=4, processes=4, bus_factor=1.5, busbw_gbps=rec["algbw_gbps"] * 1.5,
                       timer="cuda_event")
            recs.append(rec)
    return make_doc(recs, label="trainscope")


def test_compare_matches_imported_records_and_calls_them_inconclusive(tmp_path, write_doc):
    _, path = imported(tmp_path, NCCL_TEXT)
    sizes = [1 << 10, 1 << 20, 1 << 26]
    ours = load_result(write_doc("ours.json", trainscope_nccl_result(sizes)))
    for policy in (Policy(), Policy(min_samples=1)):  # even a policy content with one sample decides nothing
        cmp = compare(load_result(path), ours, policy)
        assert len(cmp.rows) == 2 * len(sizes) and len(cmp.only_in_baseline) == 50 - 2 * len(sizes)
        for row in cmp.rows:
            assert row.outcome == Outcome.INCONCLUSIVE and row.reason.startswith("summary only: nccl-tests")
            assert row.samples == (1, 20)
        assert cmp.exit_code == 3
    row = next(r for r in cmp.rows if r.identity.startswith("all_reduce nccl float32 sum 1048576 B 4 ranks out-of-place"))
    t = NCCL_ROW.match(next(line for line in NCCL_TEXT.read_text().splitlines() if line.split()[:1] == ["1048576"]))
    assert t is not None and row.baseline == float(t[3])  # the point value is shown, with its change


def test_compare_through_the_command_says_why(tmp_path, write_doc, capsys):
    _, path = imported(tmp_path, NCCL_TEXT)
    ours = write_doc("ours.json", trainscope_nccl_result([1 << 20]))
    assert main(["compare", str(path), str(ours)]) == 3
    out = capsys.readouterr().out
    assert "(summary only: nccl-tests gave one average per size, no samples)" in out
    assert "2 record(s) summary only" in out


def test_report_overlays_the_imported_curve_under_the_tools_name(tmp_path, write_doc):
    _, path = imported(tmp_path, NCCL_TEXT)
    ours = write_doc("ours.json", trainscope_nccl_result([1 << 10, 1 << 20]))
    results = [load_result(path, "team numbers"), load_result(ours, "trainscope")]
    index = write_report(results, tmp_path / "report", "import", None)
    html = Path(index).read_text()
    assert "team numbers: nccl-tests nccl 4 ranks float32 sum" in html  # the peak table names the tool's series
    assert "trainscope: nccl 4 ranks float32 sum" in html
    assert (tmp_path / "report" / "collectives_all_reduce.png").exists()


def hostile_cases(tmp_path):
    text = NCCL_TEXT.read_text()
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if NCCL_ROW.match(line))
    short = lines.copy()
    short[row] = " ".join(lines[row].split()[:-1])
    nan = lines.copy()
    nan[row + 3] = lines[row + 3].replace("21.00", "  nan", 1)
    inf = lines.copy()
    inf[row + 3] = re.sub(r"  0\.00  ", "  inf   ", lines[row + 3], count=1)
    headless = [x for x in lines if not x.startswith("# nThread")]
    wrong_factor = lines.copy()
    cells = lines[-7].split()
    cells[7] = f"{float(cells[7]) * 2:.2f}"  # busbw twice what algbw x 1.5 gives
    wrong_factor[-7] = "  ".join(cells)
    raw = json.loads(NCCL_JSON.read_text())
    raw["results"][3]["in_place"]["time"] = "nan"  # what nccl-tests' writer prints for a NaN
    cases = {
        "empty": ("", [], "empty file"),
        "other tool": ("hello\nthis is not a benchmark\n", [], "neither nccl-tests output"),
        "trainscope result": (json.dumps(make_doc([make_record()])), [], "neither nccl-tests output"),
        "short row": ("\n".join(short), [], f"line {row + 1}: a row of 12 cells"),
        "nan time": ("\n".join(nan), [], f"line {row + 4}: time 'nan' must be a finite number"),
        "inf algbw": ("\n".join(inf), [], f"line {row + 4}: algbw 'inf' must be a finite number"),
        "no header": ("\n".join(headless), [], "results table before the '# nThread"),
        "busbw off": ("\n".join(wrong_factor), [], f"line {len(lines) - 6}: busbw"),
        "json nan": (json.dumps(raw), [], "results[3].in_place.time is 'nan', not a number"),
        "osu without ranks": (OSU_ALLREDUCE.read_text(), [], "give --ranks"),
        "osu bw": ((DATA / "osu_bw.txt").read_text(), ["--ranks", "2"], "line 2: OSU's Bandwidth test is not imported"),
        "osu as nccl-tests": (OSU_ALLREDUCE.read_text(), ["--from", "nccl-tests"], "no '# nThread"),
        "nccl-tests as osu": (text, ["--from", "osu", "--ranks", "4"], "not OSU output"),
        "osu bad row": (OSU_ALLREDUCE.read_text().replace("1.65", "1.6.5"), ["--ranks", "2"], "line 6: Avg Latency(us) '1.6.5'"),
        "osu datatype": (OSU_ALLREDUCE.read_text().replace("MPI_FLOAT", "MPI_DOUBLE_COMPLEX"), ["--ranks", "2"],
                         "line 3: datatype MPI_DOUBLE_COMPLEX has no trainscope dtype"),
        "osu zero time": (OSU_ALLREDUCE.read_text().replace("1.60", "0.00", 1), ["--ranks", "2"],
                          "line 5: Avg Latency(us) 0: an iteration takes some time"),
        "osu partial element": (OSU_ALLREDUCE.read_text().replace("\n4   ", "\n6   ", 1), ["--ranks", "2"],
                                "line 5: size 6 is not a whole number of MPI_FLOAT elements"),
        "osu two runs": (OSU_ALLREDUCE.read_text() * 2, ["--ranks", "2"], "a second OSU run in one file"),
        "osu reduce_scatter": (OSU_ALLGATHER.read_text().replace("Allgather", "Reduce_scatter"), ["--ranks", "2"],
                               "line 2: OSU's Reduce_scatter Latency test is not imported"),
    }
    return cases


@pytest.mark.parametrize("case", ["empty", "other tool", "trainscope result", "short row", "nan time", "inf algbw", "no header",
                                  "busbw off", "json nan", "osu without ranks", "osu bw", "osu as nccl-tests",
                                  "nccl-tests as osu", "osu bad row", "osu reduce_scatter", "osu datatype", "osu zero time",
                                  "osu partial element", "osu two runs"])
def test_bad_input_is_one_line_naming_the_file_and_exit_2(tmp_path, capsys, case):
    text, extra, expected = hostile_cases(tmp_path)[case]
    f = tmp_path / "input.txt"
    f.write_text(text)
    assert main(["import", str(f), *extra, "-o", str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"trainscope: error: {f}") and expected in err, err
    assert not (tmp_path / "out.json").exists()


def test_op_and_ranks_options_are_checked(tmp_path, capsys):
    assert main(["import", str(NCCL_TEXT), "--op", "all_gather"]) == 2
    assert "--op all_gather, but the output is of all_reduce_perf" in capsys.readouterr().err
    assert main(["import", str(OSU_ALLREDUCE), "--ranks", "1"]) == 2
    assert "--ranks 1" in capsys.readouterr().err
