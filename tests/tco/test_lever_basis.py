"""Levers start from where the throughput stands: no gain twice, and assumptions marked as what-ifs."""

import pytest

from tco import TcoInputs, lever_chain
from tco.lever_basis import already_in, lever_link_params, measured_or_estimated

HANDBOOK = {"price": "15", "tps": "588", "out_tokens": "200", "hours": "720", "traffic": "1000000"}
ONLY_QUANT = {"quant": "true", "prefix": "false", "spec": "false", "distill": "false", "spot": "false"}
BASELINE = 15 / (588 / 200 * 3600)  # 0.0014 CNY per request, the handbook's


def chain_cost(**params: str) -> float:
    return lever_chain(TcoInputs.model_validate({**HANDBOOK, **ONLY_QUANT, **params})).optimized.cost_per_request


def test_a_typed_throughput_keeps_the_handbook_quantization_gain() -> None:
    assert chain_cost() == pytest.approx(BASELINE / 1.3)  # 0.0014 -> 0.0011


@pytest.mark.parametrize(
    ("source", "quant", "name"),
    [("estimate", "nvfp4", "NVFP4"), ("estimate", "awq", "AWQ"), ("measured", "fp8", "FP8")],
)
def test_a_throughput_already_quantized_gains_nothing_from_quantization(source: str, quant: str, name: str) -> None:
    inputs = TcoInputs.model_validate({**HANDBOOK, **ONLY_QUANT, "tps_source": source, "quant_method": quant})
    chain = lever_chain(inputs)
    step = next(s for s in chain.steps if s.key == "quant")
    assert step.enabled and step.no_gain and step.throughput_factor == 1.0
    assert name in step.effect and "no gain" in step.effect
    assert chain.optimized.cost_per_request == pytest.approx(BASELINE)  # the +30% is not counted twice
    assert chain.saving_per_year == 0


@pytest.mark.parametrize("params", [{"tps_source": "estimate", "quant_method": "bf16"}, {"tps_source": "estimate"}])
def test_a_full_precision_or_unnamed_format_still_gains(params: dict[str, str]) -> None:
    assert chain_cost(**params) == pytest.approx(BASELINE / 1.3)


def test_a_measured_rate_on_a_quantized_run_gains_nothing() -> None:
    inputs = TcoInputs.model_validate({**HANDBOOK, **ONLY_QUANT, "rps": "2.94@9f0c1a2b", "quant_method": "awq"})
    assert measured_or_estimated(inputs)
    assert "quant" in already_in(inputs)


def test_prompt_reuse_and_spot_are_what_ifs() -> None:
    chain = lever_chain(TcoInputs.model_validate(HANDBOOK))  # the handbook's chain: quantization, prefix, spot on
    assert chain.what_if
    assert {s.key for s in chain.steps if s.assumed} == {"prefix", "spot"}
    assert chain.optimized.cost_per_request == pytest.approx(0.00017, abs=0.000005)  # 0.0014 -> ... -> 0.0002
    off = lever_chain(TcoInputs.model_validate({**HANDBOOK, **lever_link_params()}))
    assert not off.what_if
    assert off.optimized.cost_per_request == pytest.approx(BASELINE / 1.3)


def test_an_estimate_with_a_cached_share_gains_nothing_from_prefix_caching() -> None:
    inputs = TcoInputs.model_validate({"tps_source": "estimate", "cached": "40", "prefix": "true"})
    assert already_in(inputs) == {"prefix": "no gain: the estimate already has 40% of each prompt cached"}
    chain = lever_chain(inputs)
    step = next(s for s in chain.steps if s.key == "prefix")
    assert step.no_gain and step.throughput_factor == 1.0
    typed = TcoInputs.model_validate({"cached": "40", "prefix": "true"})  # a typed throughput: the lever still counts
    assert "prefix" not in already_in(typed)
