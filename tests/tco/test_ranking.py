"""The ranking of serving options: what the gates refuse is absent, the order follows the cost, the costs are the
cost page's own, the Pareto front is right, and the inputs read from a link as the other pages read theirs."""

import pytest
from pydantic import ValidationError

from catalog import find_gpu
from selector import advise
from tco import estimate
from tco.compare_figures import FRONT_NAME, MISSES_NAME, cost_latency_figure, front_options
from tco.compare_inputs import CompareInputs, LatencyAxis, RankBy
from tco.inputs import TpsSource
from tco.options import candidates
from tco.prices import snapshot_book
from tco.ranking import Ranking, pareto_front, rank, reordered
from tco.throughput import estimate_advice
from ui.params import to_params, validate_params

# Small enough to estimate in a few seconds, large enough to hold every kind of refusal.
NARROW = {"engines": ("vllm", "tensorrt-llm"), "counts": (1,)}


@pytest.fixture(scope="module")
def ranking() -> Ranking:
    return rank(CompareInputs.model_validate(NARROW))


def _keys(r: Ranking) -> set[tuple[str, str, str]]:
    return {(o.gpu_id, o.engine, o.quant) for o in r.options}


def test_options_the_gates_refuse_are_absent(ranking: Ranking) -> None:
    keys = _keys(ranking)
    assert ("h100-80gb-sxm", "vllm", "fp8") in keys  # Hopper runs FP8
    assert ("h100-80gb-sxm", "vllm", "nvfp4") not in keys  # FP4 needs Blackwell (architecture gate)
    assert not any(gpu == "mi300x-192gb" and engine == "tensorrt-llm" for gpu, engine, _ in keys)  # NVIDIA only
    assert not any(quant == "mxfp4" for _, _, quant in keys)  # MXFP4 is for experts; Qwen2.5-7B is dense
    assert not any(find_gpu(gpu).kind in ("cpu", "apple") for gpu, _, _ in keys)
    assert ranking.skipped["quantization refused by the architecture gate"] > 0


def test_gpus_without_a_price_are_left_out_unless_priced(ranking: Ranking) -> None:
    unpriced = find_gpu("A800 PCIe")
    assert not snapshot_book().priced(unpriced.id)
    assert unpriced.id not in {o.gpu_id for o in ranking.options}
    found, _ = candidates(CompareInputs.model_validate({**NARROW, "prices": "A800 PCIe:9"}))
    assert any(c.gpu == unpriced.id for c in found)


def test_ranking_is_sorted_by_cost_with_slo_misses_last(ranking: Ranking) -> None:
    options = ranking.options
    assert [o.rank for o in options] == list(range(1, len(options) + 1))
    assert len(options) > 20
    keys = [(not o.meets_slo, o.cost_per_million_output_tokens) for o in options]
    assert keys == sorted(keys)
    by_fleet = reordered(ranking, ranking.inputs.model_copy(update={"rank_by": RankBy.FLEET}))
    fleet_keys = [(not o.meets_slo, o.fleet_cost_per_month) for o in by_fleet.options]
    assert fleet_keys == sorted(fleet_keys)
    assert {o.label for o in by_fleet.options} == {o.label for o in options}


def test_the_first_measured_option_is_the_best_ranked_one_with_a_measured_basis(ranking: Ranking) -> None:
    measured = ranking.first_measured
    assert measured is not None and measured.basis_kind == "fitted"
    before = {o.basis_kind for o in ranking.options[: measured.rank - 1]}
    assert before <= {"datasheet", "extrapolated"}, "every option ranked above it is measured less"
    unmeasured = tuple(o for o in ranking.options if o.basis_kind in ("datasheet", "extrapolated"))
    assert ranking.model_copy(update={"options": unmeasured}).first_measured is None


def test_an_slo_nothing_meets_lists_every_option_as_missing_it() -> None:
    tight = rank(CompareInputs.model_validate({"engines": ("vllm",), "counts": (1,), "tpot_p50": 0.5}))
    assert tight.options and not tight.meeting
    assert all(o.concurrency == 1 for o in tight.options)  # priced at concurrency 1
    costs = [o.cost_per_million_output_tokens for o in tight.options]
    assert costs == sorted(costs)


def test_each_option_costs_what_its_cost_page_link_shows(ranking: Ranking) -> None:
    for option in ranking.options[:5]:
        tco = option.tco_inputs
        assert tco.tps_source == TpsSource.ESTIMATE
        assert (tco.gpu, tco.gpus_per_replica, tco.engine, tco.quant_method) == (
            option.gpu_id,
            option.gpus_per_replica,
            option.engine,
            option.quant,
        )
        assert tco.output_tok_s_per_replica == option.output_tok_s
        result = estimate(validate_params(type(tco), to_params(tco))[0])  # as the link reopens it
        assert result.capacity.cost_per_million_output_tokens == pytest.approx(option.cost_per_million_output_tokens)
        assert result.fleet.fleet_cost_per_month == pytest.approx(option.fleet_cost_per_month)
        assert result.fleet.gpus == option.total_gpus == option.replicas * option.gpus_per_replica
        advice = option.advice_request
        assert (advice.gpu, advice.gpus, advice.engine, advice.quant) == (
            option.gpu_id,
            option.gpus_per_replica,
            option.engine,
            option.quant,
        )


def test_an_option_and_the_advice_it_links_to_estimate_the_same_throughput(ranking: Ranking) -> None:
    """/compare's option and the /selector page its link opens ask perf for the same deployment."""
    for option in (ranking.options[0], ranking.options[-1]):
        chosen = estimate_advice(advise(option.advice_request))
        assert chosen.point is not None, chosen.missing
        assert chosen.point.output_tok_s == option.output_tok_s
        assert chosen.point.concurrency == option.concurrency
        assert chosen.point.estimate.bands == option.bands


def test_price_overrides_replace_the_catalog_price() -> None:
    inputs = CompareInputs.model_validate({"engines": ("vllm",), "counts": (1,), "prices": "h100:0.01"})
    h100 = [o for o in rank(inputs).options if o.gpu_id == "h100-80gb-sxm"]
    assert h100 and all(o.price_per_gpu_hour == 0.01 and o.price_overridden for o in h100)
    assert rank(inputs).top.gpu_id == "h100-80gb-sxm"  # nearly free H100s win


def test_eight_gpus_as_two_copies_of_four_is_the_four_gpu_option() -> None:
    r = rank(CompareInputs.model_validate({"engines": ("vllm",), "counts": (4, 8)}))
    seen = [(o.gpu_id, o.gpus_per_replica, o.quant) for o in r.options]
    assert len(seen) == len(set(seen))
    assert r.skipped.get("the same replica as a smaller count", 0) > 0  # Qwen2.5-7B's 4 KV heads stop TP 8


@pytest.mark.parametrize(
    ("points", "front"),
    [
        ([], []),
        ([(1.0, 1.0)], [0]),
        ([(1, 5), (2, 3), (3, 4), (4, 1), (5, 1)], [0, 1, 3]),  # (3, 4) and (5, 1) are beaten
        ([(2, 3), (2, 3), (1, 9)], [2, 0, 1]),  # equal points both stay
        ([(1, 2), (1, 1), (2, 2)], [1]),  # same latency, cheaper wins; (2, 2) is beaten
        ([(3, 1), (2, 2), (1, 3)], [2, 1, 0]),  # a pure trade-off: all on the front, by latency
    ],
)
def test_pareto_front(points: list[tuple[float, float]], front: list[int]) -> None:
    assert pareto_front(points) == front


def test_figure_marks_the_front_and_the_misses(ranking: Ranking) -> None:
    for axis in LatencyAxis:
        figure = cost_latency_figure(ranking, axis)
        traces = {t.name: t for t in figure.data}
        front = traces[FRONT_NAME]
        assert front.mode == "lines+markers"
        expected = front_options(ranking, axis)
        assert list(front.x) == [o.latency_ms(axis) for o in expected]
        # Brute force: a front option is beaten by no SLO-meeting option.
        for o in expected:
            assert not any(
                p.latency_ms(axis) <= o.latency_ms(axis)
                and p.cost_per_million_output_tokens <= o.cost_per_million_output_tokens
                and (p.latency_ms(axis), p.cost_per_million_output_tokens)
                != (o.latency_ms(axis), o.cost_per_million_output_tokens)
                for p in ranking.meeting
            )
        points = sum(len(t.x) for name, t in traces.items() if name not in (FRONT_NAME,))
        assert points == len(ranking.options)
        assert "per 1M output tokens" in front.text[0]
    assert (MISSES_NAME in {t.name for t in cost_latency_figure(ranking, LatencyAxis.TPOT).data}) == bool(
        len(ranking.meeting) < len(ranking.options)
    )


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"prices": "h100"}, "prices"),
        ({"prices": "Z9000:3"}, "prices"),
        ({"prices": "h100:-1"}, "prices"),
        ({"engines": "ollama"}, "engines"),
        ({"counts": "3"}, "counts"),
        ({"model": "custom"}, "model"),
        ({"tpot_p50": "0"}, "tpot_p50"),
        ({"rank_by": "cheapest"}, "rank_by"),
    ],
)
def test_bad_values_name_their_parameter_and_fall_back(raw: dict[str, str], named: str) -> None:
    model, messages, rejected = validate_params(CompareInputs, raw)
    assert model == CompareInputs()
    assert len(messages) == 1 and f"`{named}`" in messages[0]
    assert set(rejected) == {named}


def test_inputs_read_forgivingly_and_round_trip_through_the_url() -> None:
    link = {
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "prices": "H100:2.5, a800:12",
        "engines": "sglang,vllm",
        "counts": "4,1",
    }
    inputs, messages, _ = validate_params(CompareInputs, link)
    assert not messages
    assert inputs.model == "qwen2.5-7b"
    assert inputs.price_overrides == {"a800-40gb-sxm": 12.0, "h100-80gb-sxm": 2.5}
    assert inputs.engines == ("vllm", "sglang")
    assert inputs.counts == (1, 4)
    params = to_params(inputs)
    assert params == {"prices": "a800-40gb-sxm:12,h100-80gb-sxm:2.5", "engines": "vllm,sglang", "counts": "1,4"}
    assert validate_params(CompareInputs, params)[0] == inputs
    assert validate_params(CompareInputs, {"engines": ""})[2] == {"engines": ""}  # none at all: the default
    with pytest.raises(ValidationError):
        CompareInputs.model_validate({"engines": ()})
