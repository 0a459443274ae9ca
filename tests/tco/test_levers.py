"""Each lever of handbook Q5 on its own, and the chain's order and savings."""

import pytest

from tco import TcoInputs, lever_chain
from tco.levers import expected_tokens_per_step, prefix_caching_throughput_factor, speculative_throughput_factor

ALL_OFF = {"quant": "false", "prefix": "false", "spec": "false", "distill": "false", "spot": "false"}
BASE = {"price": "15", "tps": "588", "out_tokens": "200", "hours": "720", "traffic": "1000000"}


def only(lever: str, **params: str) -> TcoInputs:
    return TcoInputs.model_validate({**BASE, **ALL_OFF, lever: "true", **params})


def cost(chain_inputs: TcoInputs) -> float:
    return lever_chain(chain_inputs).optimized.cost_per_request


BASELINE = 15 / (588 / 200 * 3600)


@pytest.mark.parametrize(
    ("lever", "params", "factor"),
    [
        ("quant", {}, 1 / 1.3),  # +30% throughput
        ("quant", {"quant_gain": "50"}, 1 / 1.5),  # the handbook's upper end
        ("prefix", {"reuse": "80", "prefill_share": "68"}, 1 - 0.8 * 0.68),
        ("prefix", {"reuse": "0"}, 1.0),
        ("distill", {}, 0.5),  # 7B -> 3B: cost -50%
        ("spot", {}, 0.35),  # -65% price
        ("spot", {"spot_cut": "70"}, 0.30),
    ],
)
def test_single_lever_effect(lever: str, params: dict[str, str], factor: float) -> None:
    assert cost(only(lever, **params)) == pytest.approx(BASELINE * factor)


def test_speculative_decoding_breaks_even_at_sixty_percent() -> None:
    assert speculative_throughput_factor(0.60, 5, 0.60) == pytest.approx(1.0)
    assert cost(only("spec", accept="60")) == pytest.approx(BASELINE)


@pytest.mark.parametrize(("acceptance", "cheaper"), [(0.3, False), (0.5, False), (0.7, True), (0.9, True)])
def test_speculative_decoding_helps_only_above_break_even(acceptance: float, cheaper: bool) -> None:
    result = cost(only("spec", accept=str(acceptance * 100)))
    assert (result < BASELINE) is cheaper


def test_speculative_decoding_at_high_acceptance_halves_latency() -> None:
    # handbook Q5: code / JSON latency -50%; at 90% acceptance the model gives about that.
    assert speculative_throughput_factor(0.9, 5, 0.6) == pytest.approx(2.0, abs=0.1)


def test_expected_tokens_per_step() -> None:
    assert expected_tokens_per_step(0.0, 5) == 1.0
    assert expected_tokens_per_step(1.0, 5) == 6.0
    assert expected_tokens_per_step(0.5, 1) == pytest.approx(1.5)


def test_prefix_caching_factor_grows_with_reuse() -> None:
    factors = [prefix_caching_throughput_factor(r / 10, 0.68) for r in range(11)]
    assert factors == sorted(factors) and factors[0] == 1.0


def test_chain_order_is_cheapest_first_and_savings_add_up() -> None:
    inputs = TcoInputs.model_validate({**BASE, "spec": "true", "distill": "true"})
    chain = lever_chain(inputs)
    assert [s.key for s in chain.steps] == ["quant", "prefix", "spec", "distill", "spot"]
    total = sum(s.saving_per_request for s in chain.steps)
    assert total == pytest.approx(chain.baseline.cost_per_request - chain.optimized.cost_per_request)
    assert sum(s.saving_per_year for s in chain.steps) == pytest.approx(chain.saving_per_year)
    assert chain.saving_per_year > 0


def test_disabled_lever_saves_nothing() -> None:
    chain = lever_chain(TcoInputs.model_validate({**BASE, **ALL_OFF}))
    assert all(s.saving_per_request == 0 and s.saving_per_year == 0 for s in chain.steps)
    assert chain.optimized.cost_per_request == pytest.approx(BASELINE)
