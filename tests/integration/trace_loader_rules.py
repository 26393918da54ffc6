"""How Holistic Trace Analysis (HTA) and Perfetto's JSON importer read a trace directory, written from their own code
(not copied from it) so that a test can read trainscope's files as those tools do: from the raw bytes, where
json.loads would forgive what they do not.

Sources (the rules' text, kept here as data):
  HTA  github.com/facebookresearch/HolisticTraceAnalysis, tags v0.2.0 (e42d21e) and v0.6.1 (c925565):
       hta/common/trace_file.py      which files of DIR are traces, and the rank of each (a regex on the raw text)
       hta/common/trace_parser.py    the columns kept (_compress_df), ts rounding (round_down_time_stamps),
                                     the ijson backends' metadata read (parse_metadata_ijson: keys before traceEvents)
       hta/common/trace.py           iterations (add_iteration: ProfilerStep#N, an event's step by its start time)
       hta/configs/parser_config.py  the minimum columns
  Perfetto  github.com/google/perfetto at ec5d16b (v58):
       src/trace_processor/importers/json/json_trace_tokenizer.cc   the first byte, ts/dur/pid/tid/id coercion,
                                                                    tid 0 on a pid other than 0 becomes the pid
       src/trace_processor/importers/json/json_trace_parser.cc      'X' slices that do not nest are spilled,
                                                                    the metadata ('M') events it knows
       and v4.0 to v21 (e569a24 .. ee80bcb): a "displayTimeUnit" of "ms" or "ns" at the start of the file made
       it read every ts and dur in that unit (v22 ignores the key, as catapult does).
"""
import gzip
import json
import math
import os
import re
import sys
from pathlib import Path

# --- HTA ---------------------------------------------------------------------------------------------------------

# The rank of a trace file, searched line by line in its raw text (trace_file.py, create_rank_to_trace_dict):
# v0.5.0-v0.6.1 take the first line the regex matches, and a file it matches nowhere is rank 0;
HTA_RANK_RE = re.compile(r'"rank":\s+(\d+)')
# v0.2.0 stops at the first line containing "rank" and searches only that line (no match: the file is left out).
HTA_V020_RANK_RE = re.compile(r'"rank": \d+')
HTA_TRACE_SUFFIXES = (".gz", ".json")  # os.listdir(DIR), not recursive; ".gz" opened with gzip
HTA_STEP_RE = re.compile(r"ProfilerStep\s*#\s*(\d+)")  # trace.py add_iteration; a "ProfilerStep..." name it fails is an assert
HTA_MIN_COLUMNS = ("ts", "dur", "name", "cat", "pid", "tid")  # parser_config.py DEFAULT_MIN_REQUIRED_COLS


def _lines(path: Path):
    opener = gzip.open(path, "rt") if str(path).endswith("gz") else open(path, "r")
    with opener as f:
        yield from f


def hta_rank_files(directory: Path, version: str = "v0.6.1") -> dict[int, Path]:
    """{rank: file} as HTA maps a trace directory; a later file of a rank replaces the earlier one, as in HTA's dict."""
    found: dict[int, Path] = {}
    for name in os.listdir(directory):
        if not name.endswith(HTA_TRACE_SUFFIXES):
            continue
        path = directory / name
        if version == "v0.2.0":
            line = next((text for text in _lines(path) if "rank" in text), "")
            m = HTA_V020_RANK_RE.search(line)
            if m:
                found[int(m.group().split(": ")[1])] = path
            continue
        m = next((m for text in _lines(path) if (m := HTA_RANK_RE.search(text))), None)
        found[int(m.group(1)) if m else 0] = path
    return found


def hta_metadata_keys(path: Path) -> list[str]:
    """The top-level keys HTA's ijson backends read as the trace's metadata: those before "traceEvents"."""
    keys = list(json.loads(path.read_text()).keys())
    return keys[:keys.index("traceEvents")] if "traceEvents" in keys else keys


def hta_iterations(path: Path, include_last_profiler_step: bool = False) -> set[int]:
    """The iterations HTA finds in one rank's file (Trace.get_iterations after add_iteration): each ProfilerStep#N
    span's N, given to the host events that start inside it. By default (TraceAnalysis's include_last_profiler_step=False)
    a trace of two steps or more keeps only the host events that start before its last step does
    (trace.py, _filter_irrelevant_gpu_kernels), so the last step is not an iteration. Raises where HTA would fail or
    skip the file."""
    events = json.loads(path.read_text())["traceEvents"]
    present = set().union(*(e.keys() for e in events)) if events else set()
    missing = [c for c in HTA_MIN_COLUMNS if c not in present]
    if missing:
        raise ValueError(f"{path}: HTA skips a trace without the columns {missing}")
    # _compress_df drops rows without dur or cat (the metadata events) and cat "Trace"; round_down_time_stamps then
    # moves a float ts up and its end down to whole microseconds.
    rows = []
    for e in events:
        if e.get("dur") is None or e.get("cat") is None or e["cat"] == "Trace":
            continue
        if not all(isinstance(e.get(k), (int, float)) for k in ("ts", "dur")):
            raise ValueError(f"{path}: ts and dur must be numbers: {e}")
        ts, end = math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])
        rows.append((ts, end - ts, e["name"], e.get("args", {}).get("stream", -1)))
    steps = []
    for ts, dur, name, _ in rows:
        if name.startswith("ProfilerStep"):
            m = HTA_STEP_RE.match(name)
            if m is None:
                raise ValueError(f"{path}: HTA asserts on the step name {name!r}")
            steps.append((ts, dur, int(m.group(1))))
    if len({n for _, _, n in steps}) > 1 and not include_last_profiler_step:
        last = max(ts for ts, _, _ in steps)
        rows = [r for r in rows if r[0] < last]
    found = set()
    for ts, _, _, stream in rows:  # host events (stream < 0): the last step whose [ts, ts + dur) holds their start
        if stream < 0:
            it = -1
            for s_ts, s_dur, n in steps:
                if s_ts <= ts < s_ts + s_dur:
                    it = n
            if it >= 0:
                found.add(it)
    return found


# --- Perfetto ----------------------------------------------------------------------------------------------------

PERFETTO_METADATA_NAMES = {"process_name", "thread_name", "process_sort_index", "thread_sort_index"}
PERFETTO_OLD_TIME_UNITS = {"ms", "ns"}  # v4.0-v21: read every ts and dur in this unit when set
UINT32_MAX = 2**32 - 1


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def perfetto_view(path: Path) -> tuple[dict, list[str]]:
    """What Perfetto's JSON importer makes of one file: ({(pid, tid): {"name": thread name, "slices": [(ts, dur,
    name)]}}, [the problems it records or the misreadings older versions make]). pid and tid as it coerces them."""
    raw = path.read_bytes()
    problems: list[str] = []
    if raw.lstrip()[:1] not in (b"{", b"["):
        problems.append("the first non-whitespace byte is not { or [")
    doc = json.loads(raw)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    if isinstance(doc, dict) and doc.get("displayTimeUnit") in PERFETTO_OLD_TIME_UNITS:
        problems.append(f'"displayTimeUnit": "{doc["displayTimeUnit"]}" (Perfetto v4-v21 read ts and dur in it)')
    threads: dict = {}
    for e in events:
        ph = e.get("ph")
        if not isinstance(ph, str) or not ph:
            problems.append(f"an event without ph: {e}")
            continue
        for key in ("pid", "tid"):
            if not _is_int(e.get(key)) or not 0 <= e[key] <= UINT32_MAX:
                problems.append(f"{key} is not an integer in uint32's range: {e}")
        if ph != "M" and not isinstance(e.get("ts"), (int, float)):
            problems.append(f"ts is not a number: {e}")
        pid, tid = e.get("pid", 0), e.get("tid", 0)
        if tid == 0 and pid != 0:  # json_trace_tokenizer.cc: "Make the tid equal to the pid if tid is not set"
            tid = pid
        thread = threads.setdefault((pid, tid), {"names": [], "slices": []})
        if ph == "M":
            if e.get("name") not in PERFETTO_METADATA_NAMES:
                problems.append(f"a metadata event Perfetto ignores: {e}")
            elif e["name"] == "thread_name":
                thread["names"].append(e["args"]["name"])
        elif ph == "X":
            if not isinstance(e.get("dur"), (int, float)):
                problems.append(f"an 'X' event without a numeric dur: {e}")
                continue
            thread["slices"].append((e["ts"], e["dur"], e.get("name")))
        elif ph in ("s", "t", "f") and not (_is_int(e.get("id")) or isinstance(e.get("id"), str)):
            problems.append(f"a flow id that is neither an integer nor a string (flow_invalid_id): {e}")
    view = {}
    for key, t in threads.items():
        if len(set(t["names"])) > 1:
            problems.append(f"thread {key} is named {sorted(set(t['names']))}: two of the writer's threads became one")
        problems += [f"thread {key}: {p}" for p in spilled(t["slices"])]
        view[key] = {"name": t["names"][-1] if t["names"] else None, "slices": t["slices"]}
    return view, problems


def spilled(slices) -> list[str]:
    """The slices ((ts, dur, name), microseconds) Perfetto spills to an overflow track
    (slice_spill_overlapping_complete_event): those that start inside another of the thread's slices and end after it.
    Perfetto works in whole nanoseconds. The one nesting rule of the tests (test_trace.py's assert_nested too)."""
    out = []
    stack: list[tuple[int, int, str]] = []
    for ts, dur, name in sorted(((round(ts * 1000), round(dur * 1000), n) for ts, dur, n in slices), key=lambda s: (s[0], -s[1])):
        while stack and ts >= stack[-1][0] + stack[-1][1]:
            stack.pop()
        if stack and ts + dur > stack[-1][0] + stack[-1][1]:
            out.append(f"{name!r} at {ts} ns overlaps {stack[-1][2]!r} without nesting")
            continue
        stack.append((ts, dur, name))
    return out


def main(argv: list[str]) -> int:
    """python3 tests/integration/trace_loader_rules.py DIR: a trace directory as HTA and Perfetto would read it (for a
    GPU run's CUPTI trace, whose flows and stream tracks a CPU run has not): exit 1 on any problem."""
    if len(argv) != 1:
        print("usage: trace_loader_rules.py DIR", file=sys.stderr)
        return 2
    d = Path(argv[0])
    bad = 0
    for rank, f in sorted(hta_rank_files(d).items()):
        print(f"HTA: rank {rank}: {f.name}, iterations {sorted(hta_iterations(f, include_last_profiler_step=True))}")
    for f in sorted(d.glob("*.json")) + sorted(d.glob("merged/*.json")):
        view, problems = perfetto_view(f)
        print(f"Perfetto: {f.relative_to(d)}: {len(view)} threads, {len(problems)} problem(s)")
        for p in problems[:10]:
            print(f"  {p}")
        bad += len(problems)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
