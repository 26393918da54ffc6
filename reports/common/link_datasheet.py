"""The links' datasheet figures as they are declared, once: schema/link-datasheet.json, which the build reads too
(bench/CMakeLists.txt generates the links' peak tables from it). A what-if puts a named fabric's figure in place of
a measured link's: every GB/s here is per direction, after encoding (10^9 bytes/s)."""
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATASHEET_PATH = Path(__file__).resolve().parents[1] / "schema" / "link-datasheet.json"
ENCODINGS = {"8b/10b": 8 / 10, "128b/130b": 128 / 130}
PCIE_WIDTH = 16  # the fabrics name a GPU's or a NIC's slot: x16


@dataclass(frozen=True)
class Fabric:
    name: str  # nvlink4, pcie5-x16, ib-ndr, ...: what --fabric takes
    kind: str  # nvlink, pcie or network (a link record's type)
    detail: str  # NVLink4 x18 (H100/H200), PCIe Gen5 x16, InfiniBand NDR 400 Gb/s
    gbps: float  # per direction, GB/s


@cache
def _datasheet() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DATASHEET_PATH.read_text())
    return doc


def pcie_gbps(generation: int, width: int) -> float | None:
    """The link's per-direction GB/s, as bench/links/link_peaks.cpp computes it from the same rows."""
    for g in _datasheet()["pcie"]:
        if g["generation"] == generation and width >= 1:
            return g["gt_per_s"] * ENCODINGS[g["encoding"]] / 8 * width
    return None


@cache
def fabrics() -> dict[str, Fabric]:
    """Every fabric a what-if can name, in the datasheet's order: each NVLink generation with its GPU's links, PCIe
    Gen3 onwards at x16, and the networks at their line rate."""
    out: dict[str, Fabric] = {}
    for g in _datasheet()["nvlink"]:
        name = g["generation"].lower()
        out[name] = Fabric(name, "nvlink", f"{g['generation']} x{g['links']} ({g['gpu']})", g["per_link_gbps"] * g["links"])
    for g in _datasheet()["pcie"]:
        if g["generation"] >= 3:
            name = f"pcie{g['generation']}-x{PCIE_WIDTH}"
            gbps = pcie_gbps(g["generation"], PCIE_WIDTH)
            assert gbps is not None
            out[name] = Fabric(name, "pcie", f"PCIe Gen{g['generation']} x{PCIE_WIDTH}", gbps)
    for n in _datasheet()["networks"]:
        out[n["name"]] = Fabric(n["name"], "network", f"{n['detail']} {n['gbit_per_s']} Gb/s", n["gbit_per_s"] / 8)
    return out


def fabric(name: str) -> Fabric:
    """The fabric of that name; KeyError naming the known ones otherwise."""
    known = fabrics()
    if name not in known:
        raise KeyError(f"{name!r} is not a fabric of the datasheet ({', '.join(known)})")
    return known[name]
