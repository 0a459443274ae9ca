"""A ranking of serving options: GPU x count x engine x quantization, estimated by perf and priced by the cost model.

Every priced catalog GPU x 1, 2, 4, 8 GPUs x engine with a step-time model x quantization the advisor allows is
estimated at its SLO operating point (the highest concurrency within the SLO) and priced as the cost page prices it,
cheapest first; options that miss the SLO even at concurrency 1 come last.
"""

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from i18n import N_
from perf import Calibration
from tco.compare_inputs import CompareInputs, RankBy
from tco.disagg_options import twins
from tco.dropped import DroppedGpu, dropped_gpus
from tco.options import RankedOption, advised, candidates, estimated, left_out, price_option
from tco.prices import SNAPSHOT, PriceBook, snapshot_book
from tco.token_ranks import TOKEN_RANKS, token_rank_cost


class Ranking(BaseModel):
    """The ranked options (SLO-meeting first, by the chosen cost), and what was left out and why (counts)."""

    model_config = ConfigDict(frozen=True)

    inputs: CompareInputs
    options: tuple[RankedOption, ...]
    considered: int
    skipped: dict[str, int]
    dropped: tuple[DroppedGpu, ...] = ()  # every catalog GPU without an option, with why
    prices_stamp: str = SNAPSHOT  # the price book it was priced with (the snapshot, or the refresh it follows)

    @property
    def meeting(self) -> tuple[RankedOption, ...]:
        return tuple(o for o in self.options if o.meets_slo)

    @property
    def top(self) -> RankedOption | None:
        return self.options[0] if self.options else None

    @property
    def first_measured(self) -> RankedOption | None:
        """The best-ranked option with a measured basis: fitted on its engine's release and GPU, or calibrated by a run.

        Not one that rests on datasheets, nor an extrapolation to a release or vendor no measurement covers.
        """
        return next((o for o in self.options if o.basis_kind in ("fitted", "calibrated")), None)


Progress = Callable[[int, int], None]
"""Called as (options done, options in all) while the ranking runs."""


def sort_key(rank_by: RankBy) -> Callable[[RankedOption], tuple[Any, ...]]:
    """SLO-meeting options first, then the chosen cost, then the other cost, then fewer GPUs.

    The pessimistic order takes each option's cost at the low end of its throughput band: an option that rests on
    datasheets alone (a wide band) no longer wins on a figure nobody measured.
    """
    if rank_by in TOKEN_RANKS:
        return lambda o: (not o.meets_slo, token_rank_cost(o.tokens, rank_by), o.fleet_cost_per_month, o.total_gpus)
    if rank_by == RankBy.FLEET:
        return lambda o: (not o.meets_slo, o.fleet_cost_per_month, o.cost_per_million_output_tokens, o.total_gpus)
    if rank_by == RankBy.PESSIMISTIC:
        return lambda o: (not o.meets_slo, o.cost_per_million_range[1], o.cost_per_million_output_tokens, o.total_gpus)
    return lambda o: (not o.meets_slo, o.cost_per_million_output_tokens, o.fleet_cost_per_month, o.total_gpus)


def ordered(options: Sequence[RankedOption], rank_by: RankBy) -> tuple[RankedOption, ...]:
    """The options sorted for `rank_by`, numbered from 1."""
    ranked = sorted(options, key=sort_key(rank_by))
    return tuple(o.model_copy(update={"rank": i}) for i, o in enumerate(ranked, start=1))


def rank(
    inputs: CompareInputs,
    *,
    calibrations: Sequence[Calibration] = (),
    progress: Progress | None = None,
    prices: PriceBook | None = None,
) -> Ranking:
    """Rank every option for the inputs (see the module docstring); `progress` hears (done, all) as it goes.

    Each option's check and estimate is cached, so a second ranking that changes only prices, traffic or the
    currency costs no estimate. `prices` is the price book in use (default: the shipped snapshot).
    """
    found, skipped = candidates(inputs, prices)
    refusals: defaultdict[str, Counter[str]] = defaultdict(Counter)
    cals = tuple(calibrations)
    seen: set[tuple[str, int, str, str]] = set()
    options: list[RankedOption] = []
    for done, candidate in enumerate(found, start=1):
        if progress is not None:
            progress(done - 1, len(found))
        split, refused = advised(candidate, inputs.model, inputs.context_tokens)
        if refused:
            skipped[refused] += 1
            refusals[candidate.gpu][refused] += 1
            continue
        shape = (candidate.gpu, split, candidate.engine, candidate.quant)
        if shape in seen:  # e.g. 8 GPUs as two copies of 4: the same replica as the 4-GPU option
            skipped[left_out(N_("the same replica as a smaller count"))] += 1
            continue
        seen.add(shape)
        point = estimated(
            candidate,
            inputs.model,
            inputs.in_tokens_per_request,
            inputs.out_tokens_per_request,
            inputs.slo,
            cals,
            inputs.engine_versions.get(candidate.engine, ""),
            inputs.cached_share,
        )
        if isinstance(point, str):
            skipped[point] += 1
            refusals[candidate.gpu][point] += 1
            continue
        options.append(price_option(inputs, candidate, split, point, prices))
    paired, unpaired = twins(inputs, ordered(options, inputs.rank_by))  # separate pools, where they could pay
    options.extend(paired)
    for reason in unpaired:
        skipped[reason] += 1
    if progress is not None:
        progress(len(found), len(found))
    return Ranking(
        inputs=inputs,
        options=ordered(options, inputs.rank_by),
        considered=len(found),
        skipped=dict(skipped),
        dropped=dropped_gpus(inputs, prices, found, refusals, options),
        prices_stamp=(prices or snapshot_book()).stamp,
    )


def reordered(ranking: Ranking, inputs: CompareInputs) -> Ranking:
    """The same options for inputs that differ only in the ordering or the chart axis (nothing is estimated)."""
    if ranking.inputs.priced_inputs != inputs.priced_inputs:
        raise ValueError("the inputs change the prices or the estimates: rank them again")
    return ranking.model_copy(update={"inputs": inputs, "options": ordered(ranking.options, inputs.rank_by)})


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (both lower is better), by the first.

    A point is dominated when another is at most as large on both and smaller on one; equal points all stay.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front: list[int] = []
    best_second = float("inf")
    for i in order:
        x, y = points[i]
        if y < best_second or (front and points[front[-1]] == (x, y)):
            front.append(i)
            best_second = min(best_second, y)
    return front
