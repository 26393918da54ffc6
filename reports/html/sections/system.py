"""System: what each run ran on (the `env` inventory), the GPU link matrix and the NICs."""
import json

from ...common.json_types import Block, JsonObject
from ...common.load import Result
from ..plots import PlotSink


def _gib(b: int | None) -> str:
    return "-" if b is None else f"{b / 2**30:.1f} GiB"  # None: not known (an imported result)


def _gpu_blocks(h: JsonObject) -> list[Block]:
    """A host's GPUs and the links between them; none for a host without GPUs."""
    gpus = h["gpus"]["devices"]
    if not gpus:
        return []
    blocks: list[Block] = [{"kind": "table", "caption": f"GPUs of {h['hostname']}",
                            "columns": ["GPU", "name", "UUID", "PCI bus", "memory", "SMs", "CC", "SM MHz", "mem MHz"],
                            "rows": [[g["index"], g["name"], g["uuid"], g["pci_bus_id"], _gib(g["memory_bytes"]), g["sm_count"],
                                      g["compute_capability"], g["sm_clock_max_mhz"], g["mem_clock_max_mhz"]] for g in gpus]}]
    links = h["gpus"]["links"]
    if "matrix" in links:
        m = links["matrix"]
        blocks.append({"kind": "table",
                       "caption": f"GPU links of {h['hostname']} (NV<n>: n NVLinks; PIX/PXB/PHB/NODE/SYS: PCIe path)",
                       "columns": [""] + [f"GPU{j}" for j in range(len(m))],
                       "rows": [[f"GPU{i}"] + row for i, row in enumerate(m)]})
    else:
        blocks.append({"kind": "text", "text": f"GPU links of {h['hostname']}: unavailable ({links.get('reason', 'unknown')})"})
    return blocks


def _nic_blocks(h: JsonObject) -> list[Block]:
    nics = h["nics"]
    rows = [[n["device"], n["port"], n["link_layer"], n["state"], n["rate_gbps"] if n["rate_gbps"] is not None else "-"]
            for n in nics["rdma"]]
    rows += [[n["name"], "-", "Ethernet (kernel)", n["state"], f"{n['speed_mbps'] / 1000:g}" if n["speed_mbps"] else "-"]
             for n in nics["net"]]
    if not rows:
        return []
    return [{"kind": "table", "caption": f"NICs of {h['hostname']}",
             "columns": ["device", "port", "link", "state", "rate (Gb/s)"], "rows": rows}]


def _folded(labelled: list[tuple[str, Block]]) -> list[Block]:
    """A host's GPU and NIC blocks once for all the runs that saw the same (overlaid runs of one machine showed
    them once per run), the runs named after the block's caption (a table) or text (a GPU link matrix unavailable)."""
    groups: dict[str, tuple[Block, list[str]]] = {}
    for label, b in labelled:
        groups.setdefault(json.dumps(b, sort_keys=True, default=str), (b, []))[1].append(label)
    out: list[Block] = []
    for b, labels in groups.values():
        runs = labels[0] if len(labels) == 1 else f"the same for {len(labels)} runs: {', '.join(labels)}"
        field = "caption" if "caption" in b else "text"
        out.append(dict(b, **{field: f"{b[field]} ({runs})"}))
    return out


class SystemSection:
    key = "system"
    title = "System"
    order = 10

    def applies(self, results: list[Result]) -> bool:
        return bool(results)

    def build(self, results: list[Result], plots: PlotSink) -> list[Block]:
        blocks: list[Block] = []
        rows = []
        for r in results:
            run = r.run
            for h in run["hosts"]:
                v = h["versions"]
                gpus = h["gpus"]["devices"]
                gpu_text = f"{len(gpus)} x {gpus[0]['name']}" if gpus else f"none ({h['gpus'].get('reason', '')})"
                cpu = h["cpu"]
                rows.append([r.label, h["hostname"], cpu["model"] or "-",
                             f"{cpu['sockets'] or '-'} / {cpu['cores'] or '-'} / {cpu['threads'] or '-'}",
                             _gib(cpu["memory_bytes"]), cpu["numa_nodes"] if cpu["numa_nodes"] is not None else "-", gpu_text,
                             v.get("driver") or "-", v.get("cuda_runtime") or "-", v.get("nccl") or "-",
                             (v.get("mpi") or "-").split(",")[0]])
        blocks.append({"kind": "table", "caption": "Hosts", "rows": rows,
                       "columns": ["run", "host", "CPU", "sockets / cores / threads", "memory", "NUMA", "GPUs", "driver", "CUDA",
                                   "NCCL", "MPI"]})
        runs = []
        for r in results:
            run = r.run
            layouts = "; ".join(f"{lay['step']}: {lay['backend']}, {lay['size']} ranks" for lay in run["layouts"]) or "-"
            runs.append([r.label, run["subcommand"], run["started_at"], run["world"]["processes"], run["world"]["hosts"],
                         run["world"]["bootstrap"], layouts, run["tool"]["version"], run["tool"]["git_commit"][:12]])
        blocks.append({"kind": "table", "caption": "Runs", "rows": runs,
                       "columns": ["run", "command", "started", "processes", "hosts", "bootstrap", "layouts", "trainscope",
                                   "commit"]})
        blocks += _folded([(r.label, b) for r in results for h in r.run["hosts"] for b in _gpu_blocks(h) + _nic_blocks(h)])
        env_rows = [[r.label, k, v] for r in results for k, v in sorted(r.run["environment"].items())]
        if env_rows:
            blocks.append({"kind": "table", "caption": "Environment", "columns": ["run", "variable", "value"], "rows": env_rows})
        return blocks


SECTION = SystemSection()
