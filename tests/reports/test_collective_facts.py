"""The collectives are declared once, in the result schema's collective op (one oneOf entry each: name, shape, bus
factor, reduction, root, backends), which the build compiles in (the CollectiveRegistry unit tests hold the C++ to it)
and Python reads through reports/common/collective_facts.py. A consumer that keeps its own list of collectives or its own bus
factor formula fails in tests/integration/test_registry_lists.py."""
import pytest
from synthetic import make_record

from reports.common.collective_facts import BUS_FACTORS, collective, collectives, names, on_backend
from reports.common.errors import InputError
from reports.common.load import validate_record


def test_the_facts_are_the_schemas_declarations(schema):
    entries = schema["$defs"]["collective"]["properties"]["op"]["oneOf"]
    assert names() == [e["const"] for e in entries]
    for c, e in zip(collectives(), entries):
        assert (c.shape, c.bus_factor_formula, c.reduces, c.rooted, list(c.backends)) == (
            e["x-shape"], e["x-bus-factor"], e["x-reduces"], e["x-rooted"], e["x-backends"])
        assert c.shape in ("flat", "gathered", "scattered", "exchanged") and c.bus_factor_formula in BUS_FACTORS
        assert c.backends and set(c.backends) <= {"mpi", "nccl"}
    assert len(set(names())) == len(names())


def test_each_bus_factor_is_its_formula():
    for n in range(1, 9):
        ring = (n - 1) / n
        assert [BUS_FACTORS[f](n) for f in ("2(n-1)/n", "(n-1)/n", "1")] == [2 * ring, ring, 1.0]
    assert (collective("all_reduce").bus_factor(4), collective("all_gather").bus_factor(4)) == (1.5, 0.75)
    assert collective("broadcast").bus_factor(4) == 1.0 and not collective("broadcast").whole_buffer
    assert collective("reduce_scatter").whole_buffer and collective("reduce_scatter").reduces
    assert on_backend("mpi") == on_backend("nccl") == names()  # every collective runs on both backends today
    with pytest.raises(KeyError, match="'allreduce' is not a trainscope collective"):
        collective("allreduce")


def test_a_record_of_an_unknown_collective_names_the_declared_ones():
    with pytest.raises(InputError) as e:
        validate_record(dict(make_record(), op="allreduce"), "r.jsonl")
    assert f"'allreduce' is not one of {names()!r}" in str(e.value)


def test_each_latency_step_count_is_its_algorithms():
    """Ring all_reduce: 2(n-1) steps; the ring gathers and scatters n-1; factor 1 ops one (taken as measured)."""
    for n in range(2, 9):
        assert [collective(op).latency_steps(n) for op in ("all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                                           "broadcast")] == [2 * (n - 1), n - 1, n - 1, n - 1, 1]
    assert [c.name for c in collectives() if not c.scales_with_ranks] == [c.name for c in collectives()
                                                                          if c.bus_factor_formula == "1"]
