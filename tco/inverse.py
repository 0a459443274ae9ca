"""The inverse questions: what a monthly budget serves, what a power budget runs, what a cost ceiling allows.

Pure functions over the cost model's own figures (tco/cost.py); the arithmetic is the forward one run backwards,
worked by hand in tests/tco/test_inverse.py.
"""

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from catalog.units import TOKENS_PER_MILLION
from tco.cost import SECONDS_PER_DAY, SECONDS_PER_HOUR, Capacity

WATTS_PER_KW = 1000.0
MS_PER_S = 1000.0


class BudgetAnswer(BaseModel):
    """What a monthly budget buys: whole replicas, and the traffic they serve at the target utilization."""

    model_config = ConfigDict(frozen=True)

    replicas: int
    gpus: int
    fleet_cost_per_month: float  # what those replicas cost (at most the budget)
    requests_per_day: float  # average traffic served with its peak at the target utilization


def traffic_for_budget(
    budget_per_month: float, cap: Capacity, gpus_per_replica: int, peak_to_average: float, target_utilization: float
) -> BudgetAnswer:
    """The forward fleet run backwards: whole replicas the budget pays for, and the average traffic they serve.

    replicas = floor(budget / replica-month); their peak at the target utilization; average = peak / peak ratio.
    """
    replicas = math.floor(budget_per_month / cap.cost_per_replica_month + 1e-9)
    peak = replicas * cap.requests_per_s * target_utilization
    return BudgetAnswer(
        replicas=replicas,
        gpus=replicas * gpus_per_replica,
        fleet_cost_per_month=replicas * cap.cost_per_replica_month,
        requests_per_day=peak / peak_to_average * SECONDS_PER_DAY,
    )


class PowerAnswer(BaseModel):
    """What a power budget runs: GPUs at their rated power, whole replicas, tokens/s and concurrent users."""

    model_config = ConfigDict(frozen=True)

    power_kw: float
    gpu_power_w: float
    gpus: int  # GPUs the power feeds (whole replicas only)
    replicas: int
    output_tok_s: float  # at full load
    concurrent_users: float  # streams each getting one token per TPOT target


def fleet_for_power(
    power_kw: float, gpu_power_w: float, gpus_per_replica: int, output_tok_s_per_replica: float, tpot_ms: float
) -> PowerAnswer:
    """GPUs = floor(power / GPU power), in whole replicas; users = tokens/s / (1000 / TPOT) tokens/s each.

    The GPU's rated board power only: servers, cooling (PUE) and networking draw more, so this is an upper bound.
    """
    replicas = math.floor(power_kw * WATTS_PER_KW / gpu_power_w / gpus_per_replica + 1e-9)
    tok_s = replicas * output_tok_s_per_replica
    return PowerAnswer(
        power_kw=power_kw,
        gpu_power_w=gpu_power_w,
        gpus=replicas * gpus_per_replica,
        replicas=replicas,
        output_tok_s=tok_s,
        concurrent_users=tok_s / (MS_PER_S / tpot_ms),
    )


class LevelPoint(BaseModel):
    """One estimated load level of an option: how fast each user is served there, and its cost."""

    model_config = ConfigDict(frozen=True)

    concurrency: int
    output_tok_s: float  # per replica
    tpot_p50_ms: float
    meets_slo: bool

    @property
    def tok_s_per_user(self) -> float:
        """Interactivity: the tokens/s one user sees while decoding (1000 / TPOT)."""
        return MS_PER_S / self.tpot_p50_ms


def cost_per_million_at(level: LevelPoint, price_per_gpu_hour: float, gpus_per_replica: int) -> float:
    """Cost per million output tokens of one replica running at this level (the handbook's formula)."""
    return price_per_gpu_hour * gpus_per_replica / (level.output_tok_s * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


class CeilingAnswer(BaseModel):
    """The most interactive level of any option whose cost per million output tokens is within the ceiling."""

    model_config = ConfigDict(frozen=True)

    option: str  # the option's label
    concurrency: int
    tok_s_per_user: float
    cost_per_million_output_tokens: float


def _better(found: CeilingAnswer, best: CeilingAnswer) -> bool:
    return (found.tok_s_per_user, -found.cost_per_million_output_tokens) > (
        best.tok_s_per_user,
        -best.cost_per_million_output_tokens,
    )


PricedLevels = tuple[str, float, int, Sequence[LevelPoint]]  # label, price per GPU-hour, GPUs per replica, levels


def best_interactivity(options: Sequence[PricedLevels], ceiling_per_million: float) -> CeilingAnswer | None:
    """The highest tokens/s per user of any option's level within the SLO that costs at most the ceiling.

    The cost is per million output tokens at that level; ties go to the cheaper; None when no level fits under it.
    """
    best: CeilingAnswer | None = None
    for label, price, gpus, levels in options:
        for level in levels:
            cost = cost_per_million_at(level, price, gpus)
            if not level.meets_slo or cost > ceiling_per_million:
                continue
            found = CeilingAnswer(
                option=label,
                concurrency=level.concurrency,
                tok_s_per_user=level.tok_s_per_user,
                cost_per_million_output_tokens=cost,
            )
            if best is None or (found.tok_s_per_user, -cost) > (
                best.tok_s_per_user,
                -best.cost_per_million_output_tokens,
            ):
                best = found
    return best
