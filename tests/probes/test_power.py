"""GPU power from a DCGM exporter: the parser on a real exporter's text, the energy arithmetic, the fake GPUs' counter,
and a probe run that scrapes the test server's /metrics and reports joules per output token."""

import asyncio
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fakeserver import Behaviour, serve_in_thread
from fakeserver.dcgm import GpuPower
from probes import ProbeRun, RunSettings, RunStatus, run_probe
from probes.__main__ import main
from probes.errors import ProbeSettingsError
from probes.options import ProbeOptions
from probes.power import PowerSample, energy_amount, measured_energy, parse_dcgm, three_digits
from probes.sink import MemorySink
from settings import Settings
from tests.support import wait_until

SAMPLE = Path(__file__).parent / "data" / "dcgm_exporter_sample.txt"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_real_exporters_text_gives_the_gpus_power_and_energy_counter() -> None:
    assert parse_dcgm(SAMPLE.read_text()) == {"0": (23.528, 31035686671.0)}


def test_energy_reads_in_three_digits_and_the_unit_that_fits() -> None:
    assert [three_digits(v) for v in (0.000045, 0.674, 99.96, 1234.5)] == ["0.0000450", "0.674", "100", "1,230"]
    assert [energy_amount(j) for j in (162.0, 162_000.0, 9_000_000.0)] == ["162 J", "45.0 Wh", "2.50 kWh"]


def test_several_gpus_and_a_power_only_exporter() -> None:
    text = (
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a"} 300.5\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-b"} 120\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} 99\n'
    )
    assert parse_dcgm(text) == {"0": (300.5, None), "1": (120.0, None)}
    assert parse_dcgm("# nothing here\n") == {}
    with pytest.raises(ValueError):
        parse_dcgm("DCGM_FI_DEV_POWER_USAGE{gpu=0 not a line\n")


def test_a_gpu_split_into_mig_instances_counts_once() -> None:
    # dcgm-exporter repeats the device's power and energy on each MIG instance's line (GPU_I_ID differs).
    text = (
        "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n"
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a",GPU_I_PROFILE="2g.20gb",GPU_I_ID="3"} 257858316\n'
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a",GPU_I_PROFILE="2g.20gb",GPU_I_ID="5"} 257858316\n'
    )
    assert parse_dcgm(text) == {"0": (None, 257858316.0)}


def test_the_energy_counter_gives_the_energy_of_the_window_per_gpu_summed() -> None:
    # Two GPUs at 200 W and 100 W for 10 s: the counters grow by 2,000 J and 1,000 J (in mJ).
    samples = [
        PowerSample(at=at(t), gpu=gpu, power_w=watts, energy_mj=1e9 + watts * t * 1000)
        for t in (0, 5, 10)
        for gpu, watts in (("0", 200.0), ("1", 100.0))
    ]
    energy = measured_energy(samples, at(0), at(10), output_tokens=1500)
    assert energy is not None and energy.source == "energy_counter"
    assert energy.energy_j == pytest.approx(3000.0)
    assert energy.j_per_output_token == pytest.approx(2.0)
    assert energy.kwh == pytest.approx(3000 / 3.6e6)
    assert energy.mean_power_w == pytest.approx(300.0) and energy.gpus == 2 and energy.scrapes == 3
    # A window inside the scrapes is interpolated: 2.5 s to 7.5 s is half of it.
    half = measured_energy(samples, at(2.5), at(7.5), output_tokens=0)
    assert half is not None and half.energy_j == pytest.approx(1500.0) and half.j_per_output_token is None


def test_without_the_counter_the_power_is_integrated_and_failed_scrapes_are_counted() -> None:
    samples = [
        PowerSample(at=at(0), gpu="0", power_w=100.0),
        PowerSample(at=at(1), gpu="", error="HTTP 503"),
        PowerSample(at=at(2), gpu="0", power_w=300.0),
    ]
    energy = measured_energy(samples, at(0), at(2), output_tokens=100)
    assert energy is not None and energy.source == "power_integral"
    assert energy.energy_j == pytest.approx(400.0)  # the trapezoid: 2 s x (100 + 300) / 2
    assert energy.failed_scrapes == 1 and energy.scrapes == 2
    assert measured_energy(samples[:2], at(0), at(2), 100) is None  # one reading is no measurement
    assert measured_energy(samples, None, None, 100) is None


def test_the_fake_gpus_counter_grows_by_the_integral_of_the_power_they_draw() -> None:
    now = [0.0]
    gpus = GpuPower(gpus=2, idle_w=50.0, per_request_w=100.0, clock=lambda: now[0])
    first = parse_dcgm(gpus.text(running=0))
    now[0] = 2.0
    gpus.observe(4)  # 2 s idle (50 W), then 4 requests: 50 + 100 x 4 / 2 = 250 W per GPU
    now[0] = 3.0
    last = parse_dcgm(gpus.text(running=4))
    assert last["0"][0] == pytest.approx(250.0) and last["1"][0] == pytest.approx(250.0)
    for gpu in ("0", "1"):
        assert (last[gpu][1] or 0) - (first[gpu][1] or 0) == pytest.approx((2 * 50 + 1 * 250) * 1000, abs=1)


def test_a_run_scrapes_the_exporter_and_measures_joules_per_output_token() -> None:
    behaviour = Behaviour(ttft_ms=20, tpot_ms=10, tokens=20)
    with serve_in_thread(defaults=behaviour, dcgm_gpus=2) as server:
        metrics_url = server.base_url.removesuffix("/v1") + "/metrics"
        settings = RunSettings(
            base_url=server.base_url,
            model="fake",
            concurrency=(4,),
            requests_per_level=40,
            dcgm_url=metrics_url,
            dcgm_interval_s=0.1,
        )
        sink = MemorySink()
        result = asyncio.run(run_probe(settings, sink=sink))
    assert result.status == RunStatus.COMPLETED
    assert sink.power_samples == result.power and len({s.at for s in result.power}) >= 5
    assert {s.gpu for s in result.power} == {"0", "1"} and all(s.ok for s in result.power)
    energy = result.energy
    assert energy is not None and energy.source == "energy_counter" and energy.gpus == 2
    assert energy.output_tokens == result.levels[0].output_tokens == 40 * 20
    # The fake GPUs draw 60 W idle and 60 + 40 x 4 / 2 = 140 W each with four requests running.
    assert 2 * 60 <= energy.mean_power_w <= 2 * 140
    assert energy.j_per_output_token == pytest.approx(energy.energy_j / 800)
    # The integral of the power read agrees with the counter's increase (the fake's counter is that integral).
    power_only = [s.model_copy(update={"energy_mj": None}) for s in result.power]
    window = result.levels[0].started_at, result.levels[0].finished_at
    integrated = measured_energy(power_only, *window, 800)
    assert integrated is not None and integrated.energy_j == pytest.approx(energy.energy_j, rel=0.2)


def test_an_exporter_that_fails_is_counted_and_never_stops_the_run() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4)) as server:
        settings = RunSettings(
            base_url=server.base_url,
            model="fake",
            concurrency=(1,),
            requests_per_level=4,
            dcgm_url=server.base_url.removesuffix("/v1") + "/no-such-exporter",
            dcgm_interval_s=0.1,
        )
        result = asyncio.run(run_probe(settings))
    assert result.status == RunStatus.COMPLETED and result.levels[0].completed == 4
    assert result.power and all(s.error == "HTTP 404" for s in result.power)
    assert result.energy is None


def test_the_exporter_url_is_checked_like_the_endpoint() -> None:
    with pytest.raises(ValueError, match="DCGM exporter URL"):
        ProbeOptions.model_validate({"dcgm_url": "http://user:pw@gpu-box:9400/metrics"})
    with pytest.raises(ValueError, match="like http://gpu-box:9400/metrics"):
        ProbeOptions.model_validate({"dcgm_url": "gpu-box:9400"})
    assert ProbeOptions.model_validate({"dcgm_url": " "}).dcgm_url is None
    settings = RunSettings(base_url="http://127.0.0.1:8000/v1", model="m", dcgm_url="http://169.254.169.254/metrics")
    with pytest.raises(ProbeSettingsError, match="DCGM exporter URL"):
        asyncio.run(run_probe(settings, limits=Settings()))


def test_the_command_line_writes_the_readings_and_says_the_energy(tmp_path: Path) -> None:
    output = tmp_path / "run.json"
    out, err = io.StringIO(), io.StringIO()
    with serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=5, tokens=10), dcgm_gpus=1) as server:
        metrics_url = server.base_url.removesuffix("/v1") + "/metrics"
        argv = ["--base-url", server.base_url, "--model", "fake", "--concurrency", "2", "--requests", "10"]
        argv += ["--dcgm-url", metrics_url, "--dcgm-interval", "0.1", "--no-db", "--output", str(output)]
        code = main(argv, out=out, err=err)
    assert code == 0, err.getvalue()
    data = json.loads(output.read_text())
    assert data["energy"]["source"] == "energy_counter" and data["energy"]["gpus"] == 1
    assert data["energy"]["output_tokens"] == 100 and data["energy"]["j_per_output_token"] > 0
    assert {"at", "gpu", "power_w", "energy_mj", "error"} <= set(data["power"][0])
    assert "J/output token" in err.getvalue() and "energy counter, 1 GPUs" in err.getvalue()


def test_a_cancelled_run_keeps_its_power_readings() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=20, tokens=50), dcgm_gpus=1) as server:
        settings = RunSettings(
            base_url=server.base_url,
            model="fake",
            concurrency=(2,),
            requests_per_level=200,
            dcgm_url=server.base_url.removesuffix("/v1") + "/metrics",
            dcgm_interval_s=0.1,
        )
        sink = MemorySink()
        probe = ProbeRun(settings, sink=sink).start()
        # three reads and a finished request, then cancel
        wait_until(lambda: len({s.at for s in sink.power_samples}) >= 3 and bool(sink.sample_list), timeout_s=30)
        probe.cancel()
        assert probe.wait(30)
    result = probe.result()
    assert result is not None and result.status == RunStatus.CANCELLED
    assert len(result.power) >= 3 and sink.power_samples == result.power
