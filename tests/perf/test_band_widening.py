"""Bands keep their promise on sources they never saw: widened where held-out sources disagree, per dense/MoE."""

import math
import random

from perf import PerfRequest, estimate
from perf.bands import POOLED_KEY, widened, widening_for, widening_key, widenings
from perf.coefficients import load_coefficients
from perf.fit import Row
from perf.fitset import Point, load_points
from perf.pointfeatures import PointFeatures
from perf.validate import Prediction, by_source

_NO_FEATURES = PointFeatures(ttft=(), ttft_first=(), ttft_later=(), tpot=(), span=(), preemptions=0)


def _ttft_band(model: str) -> tuple[float, float]:
    est = estimate(PerfRequest(gpu="H100", gpus=8, model=model, engine="sglang", quant="fp8", concurrency=(8,)))
    band = est.bands["ttft_ms"]
    return band.low_ratio, band.high_ratio


def test_sglang_ttft_bands_follow_the_widening_found_on_held_out_sources() -> None:
    """SGLang's TTFT on MoE models varied across releases far beyond the percentiles' band; dense did not."""
    factors = load_coefficients().widening
    moe, dense = factors[widening_key("ttft_ms", "sglang", True)], factors[widening_key("ttft_ms", "sglang", False)]
    assert moe > 1 > dense
    moe_low, moe_high = _ttft_band("qwen3-30b-a3b")
    dense_low, dense_high = _ttft_band("qwen3-32b")
    assert moe_high / moe_low > dense_high / dense_low  # same engine, GPU and release: only dense/MoE differs


def test_widening_moves_both_ends_about_the_centre_in_log_space() -> None:
    low, high = widened(0.5, 2.0, 2.0)
    assert (round(low, 6), round(high, 6)) == (0.25, 4.0)
    low, high = widened(0.5, 2.0, 0.5)
    assert round(low * high, 9) == 1.0 and round(high, 6) == round(2**0.5, 6)


def _held_out(base: Point, engine: str, source: int, ratios: list[float]) -> list[Prediction]:
    """Predictions of one source (a release of `engine`) whose measured / estimated are `ratios`, every metric."""
    point = base.model_copy(update={"engine": engine, "engine_version": f"0.{source}", "model": "qwen3-32b"})
    return [
        Prediction(
            row=Row(point=point, features=_NO_FEATURES),
            tpot_ms=(point.tpot_ms or 10.0) / r,
            ttft_ms=(point.ttft_ms or 100.0) / r,
            tok_s=(point.measured_tok_s or 100.0) / r,
        )
        for r in ratios
    ]


def test_a_factor_found_on_few_sources_is_shrunk_towards_every_engines() -> None:
    """Two SGLang sources that agree with the estimate to 1% would narrow its band to the grid's floor on their word
    alone; 20 sources of other engines, 30% apart, say the band is too narrow. The factor quoted sits between."""
    base = next(p for p in load_points()[0] if p.tpot_ms and p.ttft_ms and p.ttft_stat == "mean" and p.concurrency)
    rng = random.Random(7)
    predictions = [
        q for s in range(2) for q in _held_out(base, "sglang", s, [rng.uniform(0.99, 1.01) for _ in range(20)])
    ]
    for s in range(20):
        offset = math.exp(rng.gauss(0, 0.3))
        predictions += _held_out(base, "vllm", s, [offset * rng.uniform(0.95, 1.05) for _ in range(20)])
    factors = widenings(predictions, by_source)
    pooled = factors[widening_key("tpot_ms", POOLED_KEY, False)]
    sglang = widening_for(factors, "tpot_ms", "sglang", False)
    assert 0.5 < sglang < pooled  # 2 sources: 2 / 7 its own, 5 / 7 every engine's
    assert widening_for(factors, "tpot_ms", "lmdeploy", False) == pooled  # no sources of its own: every engine's
