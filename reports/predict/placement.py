"""Where a layout's ranks sit, and which link class each of its ops is costed from (`--ranks-per-host`,
`--intra-transport`, `--inter-transport` of `predict train` and `predict search`).

Ranks are placed in blocks of K consecutive ranks per host, as mpirun's default by-slot mapping fills a host's slots
before the next host's: rank r on host r // K. An op (a collective, or a send/recv pair) whose members all share a
host is costed from the intra-host series, any other from the inter-host one, each a `transport` value of the
calibration's collectives (`collectives --transports NAME` on one host, and across hosts with one rank per host:
docs/prediction.md "Placement"). Without --ranks-per-host every rank is on one host: every op intra-host, from
--transport's series, as before placement existed."""
import argparse
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..common.errors import InputError
from ..common.json_types import JsonObject, Record
from .series import SeriesKey

UNNAMED = "-"  # a series' transport where its sweep ran without --transports (series.SeriesKey)


class LinkClass(str, Enum):
    INTRA = "intra-host"
    INTER = "inter-host"


@dataclass(frozen=True)
class Placement:
    ranks: int
    ranks_per_host: int
    intra: str | None  # the transport of the intra-host series; None: the calibration's only one
    inter: str | None  # the inter-host one's; None where every rank is on one host
    # The network ports a host's inter-host traffic shares (--nics-per-host); None: one per rank, as rail-optimised GPU
    # nodes have (a NIC beside each GPU), so no two ranks' flows share one.
    nics_per_host: int | None = None

    @property
    def hosts(self) -> int:
        return self.ranks // self.ranks_per_host

    def link_of(self, members: Iterable[int]) -> LinkClass:
        return LinkClass.INTRA if len({m // self.ranks_per_host for m in members}) <= 1 else LinkClass.INTER

    def flows_per_nic(self, members: Sequence[int]) -> int:
        """How many flows share the busiest NIC of a host while an op over `members` crosses hosts: the op's group and
        its sibling groups (the same axis's other groups: a step issues the op on every one of them at once) each send
        one flow out of a host (a ring or a pair over hosts leaves each host once), and the host's ranks_per_host ranks
        hold ranks_per_host / (members on one host) of those groups. 1 inside a host, or with a NIC per rank."""
        if self.nics_per_host is None or self.link_of(members) is LinkClass.INTRA:
            return 1
        on_one_host = max(Counter(m // self.ranks_per_host for m in members).values())
        groups = max(1, self.ranks_per_host // on_one_host)
        return -(-groups // self.nics_per_host)

    def transport(self, link: LinkClass) -> str | None:
        return self.intra if link is LinkClass.INTRA else self.inter

    def describe(self) -> str:
        k = self.ranks_per_host
        where = ("every rank on one host" if self.hosts == 1 else f"one rank per host on {self.hosts} hosts" if k == 1 else
                 f"{k} ranks per host on {self.hosts} hosts (host h: ranks {k}h..{k}h+{k - 1}, by slot)")
        inter = f", inter-host ops from {self.inter}" if self.hosts > 1 else ""
        if self.nics_per_host is not None:
            inter += f" sharing {self.nics_per_host} NIC(s) per host"
        return f"{self.ranks} ranks, {where}; intra-host ops from {self.intra or 'the only transport series'}{inter}"

    def as_json(self, groups: Mapping[str, list[str]] | None = None) -> JsonObject:
        """As the train_prediction record's `placement` holds it; `groups`: links_by_group's."""
        return {"ranks_per_host": self.ranks_per_host, "hosts": self.hosts, "intra_transport": self.intra,
                "inter_transport": self.inter, "nics_per_host": self.nics_per_host,
                **({"groups": dict(groups)} if groups is not None else {})}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The placement options, as `predict train` and `predict search` both take them."""
    parser.add_argument("--transport", help="the transport series to fit every op from, all ranks on one host (needed "
                        "when the calibration measured several); with hosts, --intra-transport and --inter-transport")
    parser.add_argument("--ranks-per-host", type=int, metavar="K", help="place the ranks K per host, in blocks of K "
                        "consecutive ranks (mpirun's by-slot mapping; default: every rank on one host)")
    parser.add_argument("--intra-transport", metavar="NAME", help="the transport series (collectives --transports) an "
                        "op whose members share a host is costed from")
    parser.add_argument("--inter-transport", metavar="NAME", help="the transport series an op spanning hosts is costed "
                        "from (measured across hosts, one rank per host)")
    parser.add_argument("--nics-per-host", type=int, metavar="N", help="the NICs a host's inter-host traffic shares: an op "
                        "whose sibling groups send F flows out of a host at once takes ceil(F/N) times its fitted time "
                        "per byte (default: a NIC per rank, as rail-optimised GPU nodes have: no sharing)")


def check_ranks_per_host(args: argparse.Namespace, ranks: int | None = None) -> None:
    """The checks that need no calibration: K at least 1 and dividing the rank count (once known), and one way of
    naming the series."""
    k = args.ranks_per_host
    if k is not None and k < 1:
        raise InputError(f"--ranks-per-host {k}: 1 or more")
    if args.transport is not None and (args.intra_transport or args.inter_transport):
        raise InputError("--transport names one series for every op: give it, or --intra-transport and "
                         "--inter-transport, not both")
    if k is not None and ranks is not None and ranks % k:
        raise InputError(f"--ranks-per-host {k}: does not divide the {ranks} ranks (each host holds K of them)")
    nics = args.nics_per_host
    if nics is not None and nics < 1:
        raise InputError(f"--nics-per-host {nics}: 1 or more")
    if nics is not None and ranks is not None and (k or ranks) == ranks:
        raise InputError(f"--nics-per-host {nics}: every rank is on one host, so no op crosses hosts (place them with "
                         "--ranks-per-host)")


def placement_of(args: argparse.Namespace, ranks: int, series: Mapping[SeriesKey, Any]) -> Placement:
    """The placement of `ranks` ranks the command line gives; InputError where it is bad or the calibration lacks a
    link class it names."""
    check_ranks_per_host(args, ranks)
    p = Placement(ranks, args.ranks_per_host or ranks, args.intra_transport or args.transport, args.inter_transport,
                  args.nics_per_host)
    have = sorted({k.transport for k in series})
    if p.hosts > 1 and (p.intra is None or p.inter is None):
        if len(have) < 2:
            raise InputError(f"--ranks-per-host {p.ranks_per_host} puts the {ranks} ranks on {p.hosts} hosts, but the "
                             f"calibration holds one transport series ({transport_names(have)}): measure both link classes, "
                             "each with `collectives --transports NAME` (docs/prediction.md, \"Placement\")")
        raise InputError(f"--ranks-per-host {p.ranks_per_host} puts the {ranks} ranks on {p.hosts} hosts: give "
                         f"--intra-transport and --inter-transport (the calibration's transports: {transport_names(have)})")
    for option, name in (("--transport", args.transport), ("--intra-transport", args.intra_transport),
                         ("--inter-transport", args.inter_transport)):
        if name is not None and name not in have:
            raise InputError(f"{option} {name}: the calibration holds no collectives measured over it (its transports: "
                             f"{transport_names(have)})")
    return p


def transport_names(transports: Sequence[str]) -> str:
    """The transport series' names for a message: an unnamed one as the name that chooses it ("-")."""
    named = [t for t in transports if t != UNNAMED]
    unnamed = [f"{UNNAMED} for the one measured without --transports"] if UNNAMED in transports else []
    return ", ".join(named + unnamed) or "none"


def links_by_group(placement: Placement, plan: Iterable[Record]) -> dict[str, list[str]]:
    """Each group a plan's schedules (its train_plan records') issue ops on (dp, tp, pp, ...) and the link classes its
    ops are costed from."""
    links: dict[str, set[str]] = {}
    for r in plan:
        for e in r["schedule"]["events"]:
            if "issue" in e:
                links.setdefault(str(e["group"]), set()).add(placement.link_of(e["members"]).value)
    return {g: sorted(v) for g, v in sorted(links.items())}
