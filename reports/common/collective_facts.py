"""trainscope's collectives as they are declared, once: the result schema's collective op
(schema/result-v1.schema.json, one entry of its oneOf per collective, in the registry's order), which the build
reads too (comm/CMakeLists.txt compiles comm/collectives/<name>.cpp for each, with these facts). The reports, the
importers and the tests read the collectives from here and keep no list, shape or bus factor of their own
(tests/reports/test_collective_facts.py holds them to that)."""
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "schema" / "result-v1.schema.json"

# busbw = algbw x factor on n ranks (nccl-tests' factors), as x-bus-factor spells each.
BUS_FACTORS: dict[str, Callable[[int], float]] = {
    "2(n-1)/n": lambda n: 2 * (n - 1) / n if n > 1 else 0.0,
    "(n-1)/n": lambda n: (n - 1) / n if n > 1 else 0.0,
    "1": lambda n: 1.0,
}
# The latency terms (messages in sequence) of the algorithm each bus factor stands for, on n ranks: the bus factor is
# the share of the bytes each rank moves in a ring (all_reduce: reduce-scatter then all-gather, 2(n-1) steps; all_gather,
# reduce_scatter, alltoall, gather, scatter: n-1 steps), so t(n ranks) = steps x alpha + factor x bytes x beta is the
# alpha-beta (Hockney) cost of that algorithm (reports/predict/formulas.py). Factor 1 (broadcast, reduce, sendrecv) has
# no ring form here: its cost is taken as measured, one step, whatever the group size.
LATENCY_STEPS: dict[str, Callable[[int], float]] = {
    "2(n-1)/n": lambda n: 2 * (n - 1),
    "(n-1)/n": lambda n: n - 1,
    "1": lambda n: 1,
}
FLAT = "flat"  # the shape whose bytes are one rank's buffer; the others' are nranks blocks of count


@dataclass(frozen=True)
class Collective:
    name: str
    shape: str  # flat, gathered, scattered or exchanged: which buffers hold one block per rank
    bus_factor_formula: str  # a key of BUS_FACTORS
    reduces: bool  # takes a reduction (--redop)
    rooted: bool  # takes a root (--root)
    backends: tuple[str, ...]  # those that run it: mpi, nccl

    @property
    def whole_buffer(self) -> bool:
        """Whether its bytes count the whole buffer, nranks blocks of count (docs/architecture.md "Formulas")."""
        return self.shape != FLAT

    def bus_factor(self, nranks: int) -> float:
        return BUS_FACTORS[self.bus_factor_formula](nranks)

    def latency_steps(self, nranks: int) -> float:
        return LATENCY_STEPS[self.bus_factor_formula](nranks)

    @property
    def scales_with_ranks(self) -> bool:
        """Whether its cost has a form in the group size (LATENCY_STEPS); those of factor 1 are taken as measured."""
        return self.bus_factor_formula != "1"


@cache
def collectives() -> tuple[Collective, ...]:
    """Every collective, in the registry's order."""
    entries = json.loads(SCHEMA_PATH.read_text())["$defs"]["collective"]["properties"]["op"]["oneOf"]
    return tuple(Collective(e["const"], e["x-shape"], e["x-bus-factor"], e["x-reduces"], e["x-rooted"], tuple(e["x-backends"]))
                 for e in entries)


def names() -> list[str]:
    return [c.name for c in collectives()]


def collective(name: str) -> Collective:
    """The collective of that name; KeyError naming the known ones otherwise."""
    for c in collectives():
        if c.name == name:
            return c
    raise KeyError(f"{name!r} is not a trainscope collective ({', '.join(names())})")


def bus_factor(op: str, nranks: int) -> float:
    return collective(op).bus_factor(nranks)


def on_backend(backend: str) -> list[str]:
    """The collectives a backend runs, in the registry's order: what `--ops all` measures on it."""
    return [c.name for c in collectives() if backend in c.backends]
