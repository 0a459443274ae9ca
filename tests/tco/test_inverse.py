"""The inverse questions, worked by hand from the handbook's A800 (15 CNY/h, 588 tok/s, 200 output tokens)."""

import pytest

from tco import TcoInputs, capacity
from tco.inverse import LevelPoint, best_interactivity, fleet_for_power, traffic_for_budget
from tco.power import parse_power_kw
from ui.params import to_params, validate_params

A800 = capacity(588, 200, 500, 15, 1, 720)  # 2.94 requests/s, 10,800 CNY per replica-month


def test_a_monthly_budget_gives_the_traffic_it_serves() -> None:
    # 100,000 CNY buys 9 whole replicas (9 x 10,800 = 97,200); at 70% of 2.94 req/s each, peak 18.52 req/s;
    # with a peak twice the average: 9.261 req/s average = 800,150 requests a day
    answer = traffic_for_budget(100_000, A800, 1, 2.0, 0.7)
    assert (answer.replicas, answer.gpus, answer.fleet_cost_per_month) == (9, 9, 97_200)
    assert answer.requests_per_day == pytest.approx(9 * 2.94 * 0.7 / 2 * 86_400)


def test_a_budget_below_one_replica_serves_nothing() -> None:
    answer = traffic_for_budget(10_000, A800, 1, 2.0, 0.7)
    assert answer.replicas == 0 and answer.requests_per_day == 0


@pytest.mark.parametrize(("text", "kw"), [("800", 800), ("800 kW", 800), ("2 MW", 2000), ("1.5mw", 1500)])
def test_a_power_budget_reads_kw_or_mw(text: str, kw: float) -> None:
    assert parse_power_kw(text) == kw


@pytest.mark.parametrize("text", ["", "-5", "2 GW", "lots", "0"])
def test_a_bad_power_budget_says_what_is_allowed(text: str) -> None:
    with pytest.raises(ValueError, match=r"kW or MW|above 0"):
        parse_power_kw(text)


def test_a_power_budget_gives_gpus_tokens_and_users() -> None:
    # 1 MW of 400 W A800s: 2,500 GPUs; 2 per replica: 1,250 replicas x 588 tok/s = 735,000 tok/s;
    # each user reads at 1000 / 50 ms = 20 tok/s, so 36,750 concurrent streams
    answer = fleet_for_power(1000, 400, 2, 588, 50)
    assert (answer.gpus, answer.replicas) == (2500, 1250)
    assert answer.output_tok_s == pytest.approx(735_000)
    assert answer.concurrent_users == pytest.approx(36_750)


def test_the_power_budget_round_trips_through_the_link() -> None:
    inputs = TcoInputs.model_validate({"power": "2 MW", "budget": "100000"})
    assert inputs.power == "2MW" and inputs.power_kw == 2000
    assert to_params(inputs) == {"power": "2MW", "budget": "100000"}
    _model, messages, _rejected = validate_params(TcoInputs, {"power": "2 GW"})
    assert messages and "`power`" in messages[0] and "kW or MW" in messages[0]


def _level(concurrency: int, tok_s: float, tpot_ms: float, meets: bool = True) -> LevelPoint:
    return LevelPoint(concurrency=concurrency, output_tok_s=tok_s, tpot_p50_ms=tpot_ms, meets_slo=meets)


def test_a_cost_ceiling_gives_the_best_interactivity_under_it() -> None:
    # one A800 at 15 CNY/h: 1 user at 46 tok/s (21.7 ms) costs 15 / (46 x 3600) x 10^6 = 90.6 CNY per million;
    # 4 users at 150 tok/s (23 ms, 43.5 tok/s each): 27.8; 16 users at 588 tok/s (24 ms, 41.7 each): 7.09
    a800 = ("1x A800", 15.0, 1, [_level(1, 46, 21.7), _level(4, 150, 23), _level(16, 588, 24)])
    slow = ("1x slow", 15.0, 1, [_level(1, 20, 50), _level(8, 4000, 60, meets=False)])
    best = best_interactivity([a800, slow], 30.0)
    assert best is not None and best.option == "1x A800" and best.concurrency == 4
    assert best.tok_s_per_user == pytest.approx(1000 / 23)
    assert best.cost_per_million_output_tokens == pytest.approx(15 / (150 * 3600) * 1e6)
    looser = best_interactivity([a800, slow], 100.0)
    assert looser is not None and looser.concurrency == 1 and looser.tok_s_per_user == pytest.approx(1000 / 21.7)
    tight = best_interactivity([a800, slow], 10.0)
    assert tight is not None and tight.concurrency == 16
    assert best_interactivity([a800, slow], 1.0) is None  # 1.04 CNY at 8 users misses the SLO: it does not count
