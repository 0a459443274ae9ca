"""The memory-fit chart shows weights, KV cache for the target, free and reserved memory, and any shortfall."""

import pytest

from selector import AdviceRequest, advise, memory_fit_figure


def _bars(request: AdviceRequest) -> dict[str, float]:
    return {trace.name: trace.x[0] for trace in memory_fit_figure(advise(request)).data}


def test_a_fitting_model_fills_the_card_without_a_shortfall() -> None:
    advice = advise(AdviceRequest())
    bars = _bars(AdviceRequest())
    assert set(bars) == {"Weights", "KV cache (target)", "Free for more KV", "Reserved (runtime, headroom)"}
    assert bars["Weights"] == pytest.approx(advice.memory.weights_gb_per_gpu, abs=0.01)
    assert sum(bars.values()) == pytest.approx(advice.memory.memory_gb_per_gpu, abs=0.05)


def test_a_model_that_does_not_fit_shows_the_kv_shortfall() -> None:
    bars = _bars(AdviceRequest(gpu="a800-40gb-sxm", model="llama3.1-70b", quant="awq"))
    assert bars["KV shortfall"] > 0
    assert bars["Free for more KV"] == 0
