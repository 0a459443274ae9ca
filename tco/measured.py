"""Measured beside estimated on /compare: a stored run (probed or imported) of an option's exact deployment.

A run supports an option when it measured the same GPU, GPU count (one replica's), model, engine and
quantization, and served the declared model, at request lengths near the page's (perf.vouch's nearness rule, the
one calibration uses). Of its closed-loop levels the one nearest the option's concurrency is shown; the distance
to the estimate (measured / estimated - 1, output tokens per second) only when it ran the option's concurrency:
another load's figure is not the estimate's.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from perf import Calibration, MeasuredLevel
from perf.vouch import near_lengths, serves_declared_model
from tco.options import RankedOption


@dataclass(frozen=True)
class MeasuredBeside:
    """The measured level nearest an option's operating point."""

    run_id: str
    concurrency: int
    output_tok_s: float | None
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None
    same_load: bool  # measured at the option's concurrency
    distance_ratio: float | None  # measured / estimated output tok/s - 1; None at another load or without a figure


def _supports(calibration: Calibration, option: RankedOption, model: str) -> bool:
    return (
        calibration.gpu == option.gpu_id
        and calibration.gpus == option.gpus_per_replica
        and calibration.model == model
        and calibration.engine == option.engine
        and calibration.quant == option.quant
        and serves_declared_model(calibration)
    )


def measured_beside(
    option: RankedOption, model: str, in_tokens: float, out_tokens: float, calibrations: Sequence[Calibration]
) -> MeasuredBeside | None:
    """The measured level nearest the option's concurrency among the runs of its deployment; None when none."""
    found: list[tuple[int, int, str, MeasuredLevel]] = []
    for calibration in calibrations:
        if not _supports(calibration, option, model):
            continue
        for level in calibration.levels:
            if level.request_rate_rps or not level.concurrency:
                continue  # open-loop levels have no concurrency to set beside the option's
            if not near_lengths(level.input_tokens, level.output_tokens, in_tokens, out_tokens):
                continue
            gap = abs(level.concurrency - option.concurrency)
            found.append((gap, -level.concurrency, calibration.run_id, level))
    if not found:
        return None
    _, _, run_id, level = min(found, key=lambda item: (item[0], item[1]))
    same = level.concurrency == option.concurrency
    distance = None
    if same and level.output_tok_s is not None and option.output_tok_s > 0:
        distance = level.output_tok_s / option.output_tok_s - 1
    return MeasuredBeside(
        run_id=run_id,
        concurrency=int(level.concurrency or 0),
        output_tok_s=level.output_tok_s,
        ttft_p50_ms=level.ttft_p50_ms,
        tpot_p50_ms=level.tpot_p50_ms,
        same_load=same,
        distance_ratio=distance,
    )


OptionKey = tuple[str, int, str, str]  # GPU id, GPUs per replica, engine, quantization: an option, whatever its rank


def option_key(option: RankedOption) -> OptionKey:
    """The option's identity (its rank changes with the ordering)."""
    return (option.gpu_id, option.gpus_per_replica, option.engine, option.quant)


def measured_options(
    options: Sequence[RankedOption],
    model: str,
    in_tokens: float,
    out_tokens: float,
    calibrations: Sequence[Calibration],
) -> dict[OptionKey, MeasuredBeside]:
    """Each option that has measured support -> the measured level beside it."""
    return {
        option_key(option): beside
        for option in options
        if (beside := measured_beside(option, model, in_tokens, out_tokens, calibrations)) is not None
    }
