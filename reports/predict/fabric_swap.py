"""Which link a what-if fabric replaces, and a fabric measured elsewhere (`predict train --fabric-link`,
`--measured-fabric`, `--measured-fabric-transport`).

A buyer's question is rarely "every collective on another fabric": with 8 devices per node the choice is the
inter-node fabric (InfiniBand NDR against RoCE 400G), the links inside a node staying what they are. So a what-if
swaps one link class (placement.py): by default the inter-host ops where --ranks-per-host places the ranks on several
hosts, and every op where they share one. The swapped costs are a datasheet fabric's bandwidth (--fabric, the
fitted latencies kept) or another cluster's own measurements (--measured-fabric: its `collectives` result, fitted as
this calibration is, latencies included): a fabric one has measured beats a datasheet one has read."""
import argparse
from typing import Any

from ..common.errors import InputError
from ..common.link_datasheet import Fabric, fabric
from ..common.load import load_results
from .placement import LinkClass, Placement, transport_names
from .series import all_series
from .step_costs import MeasuredFabric

LINKS = {"all": None, "intra": LinkClass.INTRA, "inter": LinkClass.INTER}


def add_arguments(parser: Any) -> None:
    parser.add_argument("--measured-fabric", action="append", default=[], metavar="RESULT", help="what-if: the step "
                        "with the swapped link's collectives costed from another cluster's `collectives` result, fitted "
                        "as the calibration's are (repeatable: each file one what-if)")
    parser.add_argument("--measured-fabric-transport", metavar="NAME", help="the transport series of the "
                        "--measured-fabric files to take, where one measured several")
    parser.add_argument("--fabric-link", choices=("auto", *LINKS), default="auto", help="the ops a what-if fabric "
                        "(--fabric, --measured-fabric) replaces: those across hosts where --ranks-per-host puts the ranks "
                        "on several, every op where on one (auto, the default); every op (all); those inside a host "
                        "(intra) or across hosts (inter)")


def swapped_link(args: argparse.Namespace, where: Placement | None) -> LinkClass | None:
    """The link class a what-if fabric replaces (None: every op); InputError where no op of the layout is of it."""
    hosts = where.hosts if where else 1
    if args.fabric_link == "auto":
        return LinkClass.INTER if hosts > 1 else None
    link = LINKS[args.fabric_link]
    if link is LinkClass.INTER and hosts == 1:
        raise InputError("--fabric-link inter: every rank is on one host, so no op crosses hosts (place them with "
                         "--ranks-per-host)")
    if link is LinkClass.INTRA and where is not None and where.ranks_per_host == 1:
        raise InputError("--fabric-link intra: one rank per host (--ranks-per-host 1), so no op stays inside a host")
    return link


def datasheet_fabric(name: str) -> Fabric:
    """The datasheet's fabric of that name (--fabric); InputError naming the known ones otherwise."""
    try:
        return fabric(name)
    except KeyError as e:
        raise InputError(f"--fabric {e.args[0]}") from None


def describe_swap(link: LinkClass | None) -> str:
    return "every op" if link is None else f"the {link.value} ops (the others as calibrated)"


def measured_fabrics(args: argparse.Namespace) -> list[MeasuredFabric]:
    """Each --measured-fabric file's collectives series; InputError for a file without any, or whose transport series
    are several and not chosen (or not the one chosen)."""
    out = []
    for path in args.measured_fabric:
        series = all_series(load_results([path]))
        if not series:
            raise InputError(f"--measured-fabric {path}: holds no collectives records (measure the other cluster with "
                             "`trainscope collectives ... --json FILE`)")
        have = sorted({k.transport for k in series})
        want = args.measured_fabric_transport
        if want is None and len(have) > 1:
            raise InputError(f"--measured-fabric {path}: measured over {transport_names(have)}: choose one with "
                             "--measured-fabric-transport")
        if want is not None and want not in have:
            raise InputError(f"--measured-fabric-transport {want}: {path} measured no collectives over it (its "
                             f"transports: {transport_names(have)})")
        out.append(MeasuredFabric(path, series, (path,), want))
    return out
