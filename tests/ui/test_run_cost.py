"""Cost this on a probe run carries the deployment the run declared: GPU, GPU count, price and quantization."""

from datetime import timedelta

from probes import RunSettings
from probes.deployment import Deployment
from probes.power import PowerSample
from tco import TcoInputs, lever_chain
from tco.prices import snapshot_book
from tests.probes.test_page_models import NOW, level, run
from ui.params import validate_params
from ui.run_cost import run_cost_params


def test_a_run_on_two_h100s_opens_the_cost_page_on_two_h100s_at_their_price() -> None:
    result = run([level(0, 8, 1200.0, True)], best=8)
    settings = RunSettings(
        base_url="http://h:8000/v1", model="m", deployment=Deployment(gpu="H100", gpu_count=2, quant="fp8")
    )
    params, declared = run_cost_params(result.model_copy(update={"settings": settings}), result.levels[0])
    assert declared
    assert params["gpu"] == "h100-80gb-sxm" and params["gpus"] == "2"
    assert (params["price"], params["currency"]) == ("1.99", "USD")  # not one A800 at 15 CNY
    assert (params["tps"], params["out_tokens"], params["in_tokens"]) == ("1200", "128", "40")
    assert (params["tps_source"], params["quant_method"]) == ("measured", "fp8")
    assert (params["prefix"], params["spot"]) == ("false", "false")  # assumptions start off
    inputs, errors, _ = validate_params(TcoInputs, params)
    assert not errors
    quant = next(s for s in lever_chain(inputs).steps if s.key == "quant")
    assert quant.no_gain and "FP8" in quant.effect  # the run already ran FP8: no +30% on top


def test_a_run_on_a_gpu_without_a_price_carries_no_price() -> None:
    result = run([level(0, 4, 500.0, True)], best=4)
    settings = RunSettings(base_url="http://h:8000/v1", model="m", deployment=Deployment(gpu="H800"))
    params, declared = run_cost_params(result.model_copy(update={"settings": settings}), result.levels[0])
    assert declared and params["gpu"] == "h800-80gb-sxm" and "price" not in params


def test_a_measured_rate_carries_no_derived_throughput() -> None:
    rated = level(0, 4, 320.0, True).model_copy(update={"request_rate_rps": 2.5})
    result = run([rated], best=4)
    params, _declared = run_cost_params(result, rated)
    assert params["rps"] == f"2.5@{result.run_id}" and "tps" not in params  # the cost page derives it from the rate


def test_a_length_the_run_did_not_measure_is_not_carried() -> None:
    result = run([level(0, 4, 500.0, True, in_tok=None)], best=4)
    params, _declared = run_cost_params(result, result.levels[0])
    assert params["out_tokens"] == "128" and "in_tokens" not in params  # the page's own default, not a stand-in


def test_a_run_without_a_declared_gpu_says_so() -> None:
    result = run([level(0, 4, 500.0, True)], best=4)
    params, declared = run_cost_params(result, result.levels[0])
    assert not declared and params["gpu"] == "a800-40gb-sxm" and params["price"] == "15"


def test_a_run_on_an_h20_carries_its_yuan_price_from_a_chinese_cloud() -> None:
    result = run([level(0, 4, 500.0, True)], best=4)
    settings = RunSettings(base_url="http://h:8000/v1", model="m", deployment=Deployment(gpu="H20", gpu_count=2))
    params, _ = run_cost_params(result.model_copy(update={"settings": settings}), result.levels[0])
    tier = snapshot_book().lowest("h20-96gb", "on_demand", "CNY", 7.0)
    assert tier is not None and tier.currency == "CNY"  # the snapshot's China-market row, not a dollar survey
    assert (params["gpu"], params["gpus"], params["price"], params["currency"]) == (
        "h20-96gb",
        "2",
        f"{tier.price_per_gpu_hour:g}",
        "CNY",
    )


def test_a_run_that_read_gpu_power_carries_its_measured_draw_to_the_cost_page() -> None:
    start = NOW
    measured = level(0, 4, 500.0, True).model_copy(
        update={"started_at": start, "finished_at": start + timedelta(seconds=10)}
    )
    result = run([measured], best=4)
    # two H100s (700 W rated) each reading a steady 350 W over the level: half their rated power
    power = [PowerSample(at=start + timedelta(seconds=s), gpu=str(g), power_w=350.0) for s in range(11) for g in (0, 1)]
    deployment = Deployment(gpu="H100", gpu_count=2)
    settings = RunSettings(base_url="http://h:8000/v1", model="m", deployment=deployment)
    with_power = result.model_copy(update={"settings": settings, "power": power})
    params, _ = run_cost_params(with_power, with_power.levels[0])
    assert params["draw"] == "50"
    inputs, errors, _rejected = validate_params(TcoInputs, params)
    assert not errors and inputs.power_draw_pct == 50
    params, _ = run_cost_params(result.model_copy(update={"settings": settings}), result.levels[0])
    assert "draw" not in params  # without readings the cost page keeps its own assumption
