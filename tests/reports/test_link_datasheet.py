"""The links' datasheet, declared once (reports/schema/link-datasheet.json): the fabrics a what-if can name carry
the figures the datasheets give, per direction after encoding, and the C++ peaks are generated from the same rows
(bench/CMakeLists.txt; tests/unit/test_link_records.cpp checks those)."""
import pytest

from reports.common import link_datasheet


@pytest.mark.parametrize("name,kind,gbps", [
    ("nvlink4", "nvlink", 18 * 25.0),           # H100/H200: 18 links of 25 GB/s
    ("nvlink5", "nvlink", 18 * 50.0),           # B200
    ("pcie4-x16", "pcie", 16 * 16 * 128 / 130 / 8),  # 16 GT/s a lane, 128b/130b
    ("pcie5-x16", "pcie", 32 * 16 * 128 / 130 / 8),
    ("ib-ndr", "network", 400 / 8),
    ("ib-xdr", "network", 800 / 8),
    ("roce-200g", "network", 200 / 8),
    ("ethernet-25g", "network", 25 / 8),
])
def test_each_fabric_carries_its_datasheet_figure(name, kind, gbps):
    f = link_datasheet.fabric(name)
    assert f.kind == kind and f.gbps == pytest.approx(gbps, rel=1e-12)


def test_the_issue_s_fabrics_are_all_there():
    for name in ["nvlink4", "nvlink5", "pcie4-x16", "pcie5-x16", "ib-hdr", "ib-ndr", "ib-xdr", "roce-100g", "roce-200g",
                 "roce-400g", "ethernet-10g", "ethernet-100g"]:
        assert name in link_datasheet.fabrics()


def test_an_unknown_fabric_names_the_known_ones():
    with pytest.raises(KeyError, match="'infiniband' is not a fabric of the datasheet .*ib-ndr"):
        link_datasheet.fabric("infiniband")


def test_pcie_of_the_old_encoding():
    assert link_datasheet.pcie_gbps(2, 16) == pytest.approx(5.0 * 0.8 / 8 * 16)
    assert link_datasheet.pcie_gbps(7, 16) is None and link_datasheet.pcie_gbps(4, 0) is None
