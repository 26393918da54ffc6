"""The what-ifs of a prediction (WhatIf: the step replayed with one cost swapped, a datasheet fabric's bandwidth or
faster compute), and what a layout would need to reach a target step time: its collectives' bandwidth, or its
compute, this many times faster (each alone), found by replaying the plan at scaled costs. The step only shrinks as
either grows, so the factor is found by bisection (in its logarithm); a target that no factor up to MAX_FACTOR
reaches is unreachable by that knob alone, and the answer says what is left of the step then (the other knob's
share and the latencies)."""
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from .replay import StepReplay
from .step_costs import StepCosts

MAX_FACTOR = 1e6
STEPS = 60  # bisection steps over log(1)..log(MAX_FACTOR): a factor to 2e-7 of itself


class WhatIfKind(Enum):
    FABRIC = "fabric"  # the swapped link's bandwidth a datasheet fabric's (--fabric)
    MEASURED_FABRIC = "measured_fabric"  # the swapped link's collectives fitted from another cluster's (--measured-fabric)
    COMPUTE = "compute"  # compute faster by a ratio (--compute-speedup)


@dataclass(frozen=True)
class WhatIf:
    """The step replayed with one cost swapped: what the prediction's what-if table has a row of."""
    name: str
    kind: WhatIfKind
    detail: str
    step: StepReplay


class Knob(Enum):
    BANDWIDTH = "every collective's bandwidth"
    COMPUTE = "compute"

    def scale(self, costs: StepCosts, factor: float) -> StepCosts:
        return costs.scaled(bandwidth_scale=factor) if self is Knob.BANDWIDTH else costs.scaled(compute_speedup=factor)


@dataclass(frozen=True)
class Need:
    knob: Knob
    factor: float | None  # None: not reached with MAX_FACTOR
    floor_us: float  # the step with the knob at MAX_FACTOR: what that knob alone cannot remove

    def describe(self, target_us: float) -> str:
        if self.factor is None:
            return (f"{self.knob.value} alone cannot reach {target_us / 1e3:.3f} ms: even {MAX_FACTOR:g}x leaves "
                    f"{self.floor_us / 1e3:.3f} ms")
        if self.factor <= 1:
            return f"{self.knob.value}: the step is within the target as it is"
        return f"{self.knob.value} {self.factor:.2f}x faster"


def needed(step_us: Callable[[StepCosts], float], costs: StepCosts, target_us: float, knob: Knob) -> Need:
    """The least factor of `knob` at which step_us (a replay of the plan) is at most target_us."""
    floor = step_us(knob.scale(costs, MAX_FACTOR))
    if step_us(costs) <= target_us:
        return Need(knob, 1.0, floor)
    if floor > target_us:
        return Need(knob, None, floor)
    lo, hi = 0.0, math.log(MAX_FACTOR)
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        if step_us(knob.scale(costs, math.exp(mid))) <= target_us:
            hi = mid
        else:
            lo = mid
    return Need(knob, math.exp(hi), floor)
