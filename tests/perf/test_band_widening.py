"""Bands keep their promise on sources they never saw: widened where held-out sources disagree, per dense/MoE."""

from perf import PerfRequest, estimate
from perf.bands import widened, widening_key
from perf.coefficients import load_coefficients


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
