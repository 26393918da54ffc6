"""The training section and the critical path read a run's axes from its mesh (reports/common/mesh.py): a record with
another axis shows it in the per-rank table, and a record from before the mesh was recorded still renders with
its dp, tp and pp; a trace's coordinate on an axis other than the pipeline's keeps it off the path."""
import copy

from synthetic import make_doc, stats

from reports.traces.critical_path import critical_path
from reports.common.load import Result
from reports.html.sections.training import TrainingSection
from test_critical_path import STAGE0, STAGE1, doc as trace_doc


class Plots:
    def save(self, fig, name, title, alt):
        return {"kind": "plot", "file": name}


def parallel_record(ranks):
    row = {"step_us": 2000.0, "compute_us": 1500.0, "communication_us": 300.0, "exposed_communication_us": 100.0, "overlap": 2 / 3}
    return {"kind": "train", "model": "mlp", "preset": "tiny", "backend": "cpu", "device": "cpu", "precision": "float32",
            "world_size": len(ranks), "config": {}, "parameters": 10, "flops_per_step": 1e9, "items_per_step": 8, "item": "samples",
            "first_step": 0, "steps_done": 3, "warmup_steps": 1, "timed_steps": 2, "completed": True, "peak_memory_bytes": 1 << 20,
            "loss": {"initial": 2.3, "final": 2.2}, "loss_curve": [{"step": i, "loss": 2.3, "lr": 0.1, "grad_norm": 1.0} for i in range(3)],
            "step_time_us": stats([2000.0, 2000.0]), "throughput_per_s": 4000.0, "tflops": 0.5,
            "layout": {"dp": 2, "tp": 1, "pp": 1, "zero": 0, "sync": "allreduce", "overlap": True, "name": "dp=2"},
            "ranks": [dict(row, rank=r, **place) for r, place in enumerate(ranks)]}


def per_rank_table(record, validate):
    validate(make_doc([record]))
    blocks = TrainingSection().build([Result(path="r.json", doc={}, records=[record])], Plots())
    (table,) = [b for b in blocks if b["kind"] == "table" and b["caption"].startswith("Per rank")]
    return table["columns"][2], [row[2] for row in table["rows"]]


def test_the_per_rank_table_names_the_axes_of_the_mesh(validate):
    # A mesh with an axis trainscope does not have yet: context parallel, between dp and tp.
    mesh = [{"name": "dp", "size": 2, "stride": 2}, {"name": "cp", "size": 2, "stride": 1}, {"name": "tp", "size": 1, "stride": 1},
            {"name": "pp", "size": 1, "stride": 4}]
    places = [{"dp_rank": r // 2, "cp_rank": r % 2, "tp_rank": 0, "pp_rank": 0} for r in range(4)]
    rec = dict(parallel_record(places), mesh=mesh)
    assert per_rank_table(rec, validate) == ("dp/cp/tp/pp", ["0/0/0/0", "0/1/0/0", "1/0/0/0", "1/1/0/0"])


def test_a_record_from_before_the_mesh_shows_dp_tp_and_pp(validate):
    rec = parallel_record([{"dp_rank": r, "tp_rank": 0, "pp_rank": 0} for r in range(2)])
    assert per_rank_table(rec, validate) == ("dp/tp/pp", ["0/0/0", "1/0/0"])


def with_mesh(trace, cp_rank):
    """A trace file as trainscope writes it now: the mesh in `about`, here with a context-parallel axis."""
    about = trace["trainscope"]["about"]
    about["mesh"] = [{"name": "dp", "size": 1, "stride": 1}, {"name": "cp", "size": 2, "stride": 1}, {"name": "tp", "size": 1, "stride": 1},
                     {"name": "pp", "size": 2, "stride": 2}]
    about["cp_rank"] = cp_rank
    return trace


def test_the_critical_path_follows_the_ranks_at_zero_on_every_axis_but_the_pipelines():
    docs = {0: with_mesh(trace_doc(0, STAGE0), 0), 1: with_mesh(trace_doc(0, STAGE0), 1), 2: with_mesh(trace_doc(1, STAGE1), 0),
            3: with_mesh(trace_doc(1, STAGE1), 1)}
    cp = critical_path(docs)
    assert cp["stages"] == 2 and len(cp["path"]) == 6
    # Without the stage-1 rank at cp 0 there is one stage left: no path.
    assert critical_path({k: copy.deepcopy(v) for k, v in docs.items() if k != 2}) is None
