"""How a run scales with concurrency, beside the handbook's vLLM benchmark (588 tok/s at 16, 12.6x concurrency 1)."""

from pydantic import BaseModel, ConfigDict

from catalog import load_handbook
from i18n import Translate, identity
from probes.models import RunResult


class Scaling(BaseModel):
    """Output throughput from the lowest to the highest measured concurrency."""

    model_config = ConfigDict(frozen=True)

    low_concurrency: int
    high_concurrency: int
    low_output_tok_s: float
    high_output_tok_s: float

    @property
    def factor(self) -> float:
        return self.high_output_tok_s / self.low_output_tok_s


def scaling(result: RunResult) -> Scaling | None:
    """None unless two levels produced output tokens."""
    levels = sorted((lv for lv in result.levels if lv.output_tok_s), key=lambda lv: lv.concurrency)
    if len(levels) < 2:
        return None
    low, high = levels[0], levels[-1]
    return Scaling(
        low_concurrency=low.concurrency,
        high_concurrency=high.concurrency,
        low_output_tok_s=low.output_tok_s or 0.0,
        high_output_tok_s=high.output_tok_s or 0.0,
    )


def scaling_sentence(result: RunResult, tr: Translate = identity) -> str | None:
    """One sentence: this run's scaling beside the handbook's benchmark, or None."""
    found = scaling(result)
    if found is None:
        return None
    seed = load_handbook().seed_benchmark
    return tr(
        "Throughput grew {factor}× from concurrency {low} ({low_tok_s} tok/s) to {high} ({high_tok_s} tok/s). "
        "The handbook's baseline: {engine} with {model} on an A800 reached {seed_tok_s} tok/s at concurrency "
        "{seed_concurrency} ({speedup}× concurrency 1, TPOT {tpot} ms), against about {plain_tok_s} tok/s for plain "
        "transformers generate()."
    ).format(
        factor=f"{found.factor:.1f}",
        low=found.low_concurrency,
        low_tok_s=f"{found.low_output_tok_s:,.0f}",
        high=found.high_concurrency,
        high_tok_s=f"{found.high_output_tok_s:,.0f}",
        engine=seed.engine,
        model=seed.model,
        seed_tok_s=f"{seed.output_tok_s:g}",
        seed_concurrency=seed.concurrency,
        speedup=f"{seed.speedup_vs_concurrency_1:g}",
        tpot=f"{seed.tpot_ms:g}",
        plain_tok_s=f"{seed.transformers_generate_tok_s:g}",
    )
