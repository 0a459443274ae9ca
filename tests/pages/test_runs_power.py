"""The GPU power of a run that scraped a DCGM exporter, on /runs and /probe: the energy cards, the power chart on the
run's time axis with its levels shaded, the power CSV, the form's exporter fields, and all of it in Chinese."""

import json
from collections.abc import Iterator

import pytest

from db.recorder import RunRecorder
from db.run_queries import get_run
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import ProbeRun, RunSettings
from probes.power import energy_amount, three_digits
from tests.pages.apptest import english_leftovers, finish_probe, metric, open_page, open_result_tab, open_tab


@pytest.fixture(scope="module")
def gpu_server() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=5, tokens=10), dcgm_gpus=2) as server:
        yield server


def record_with_power(engine: object, server: FakeServer) -> str:
    """A real run with two levels against the fake GPUs, read every 0.1 s, stored as the page stores it."""
    settings = RunSettings(
        base_url=server.base_url,
        model="fake",
        concurrency=(1, 4),
        requests_per_level=12,
        dcgm_url=server.base_url.removesuffix("/v1") + "/metrics",
        dcgm_interval_s=0.1,
    )
    recorder = RunRecorder(engine)
    run = ProbeRun(settings, sink=recorder).start()
    assert run.wait(60) and not run.sink_errors
    assert recorder.run_id is not None
    return recorder.run_id


def test_the_run_page_shows_the_measured_energy_and_power_on_the_runs_time_axis(
    engine: object, gpu_server: FakeServer
) -> None:
    run_id = record_with_power(engine, gpu_server)
    stored = get_run(engine, run_id, with_samples=False)  # type: ignore[arg-type]
    assert stored is not None and stored.energy is not None and stored.energy.j_per_output_token is not None
    at = open_page("runs", {"runs": run_id})
    tab_labels = [t.label for t in at.tabs]
    assert "Power" in tab_labels and not at.exception
    at = open_tab(at, f"runs.run.{run_id}.tab", "Power")
    assert not at.exception and not at.error
    assert metric(at, "Energy per output token") == f"{three_digits(stored.energy.j_per_output_token)} J"
    assert metric(at, "Energy of the run") == energy_amount(stored.energy.energy_j)
    assert "e-" not in metric(at, "Energy of the run")  # a small run reads in J or Wh, not 4.5e-05 kWh
    assert metric(at, "Mean GPU power").endswith(" W")
    assert any("from the GPUs' energy counter" in str(c.value) for c in at.caption)
    (chart,) = at.get("plotly_chart")
    figure = json.loads(chart.proto.spec)
    traces = {trace["name"]: trace for trace in figure["data"]}
    assert set(traces) == {"GPU 0", "GPU 1", "all GPUs"}
    run_s = (stored.finished_at - stored.started_at).total_seconds() if stored.finished_at else 60.0
    assert all(0 <= x <= run_s + 1 for x in traces["GPU 0"]["x"])
    # The fake GPUs draw 60 W idle and 60 + 40 x 4 / 2 = 140 W each with four requests running.
    assert all(60 <= y <= 140 for y in traces["GPU 0"]["y"]) and max(traces["all GPUs"]["y"]) > 120
    assert len(figure["layout"]["shapes"]) == 2  # each level shaded on the time axis
    buttons = {b.proto.label for b in at.get("download_button")}
    assert "Download power CSV" in buttons
    # Level by level: four requests in flight share the GPUs' draw, so each token costs fewer joules than alone.
    (by_level,) = [d.value for d in at.dataframe if "Energy per output token (J)" in d.value.columns]
    assert list(by_level["Concurrency"]) == [1, 4]
    alone, shared = by_level["Energy per output token (J)"]
    assert shared < alone


def test_the_power_tab_and_the_form_fields_read_in_chinese(engine: object, gpu_server: FakeServer) -> None:
    run_id = record_with_power(engine, gpu_server)
    at = open_page("runs", {"runs": run_id, "lang": "zh"})
    at = open_tab(at, f"runs.run.{run_id}.tab", "功率")
    assert not at.exception and not at.error
    assert metric(at, "每个输出 token 的能耗").endswith(" J")
    assert not english_leftovers(at)
    form = open_page("probe", {"lang": "zh", "dcgm_url": "http://gpu-box:9400/metrics", "dcgm_interval": "2"})
    assert not form.exception and not english_leftovers(form)
    assert form.text_input(key="probe.dcgm_url").value == "http://gpu-box:9400/metrics"
    assert form.number_input(key="probe.dcgm_interval").value == 2.0
    assert "GPU 功率（可选：DCGM 导出器）" in [e.label for e in form.expander]


def test_a_bad_exporter_url_in_a_link_is_named_and_dropped(engine: object) -> None:
    at = open_page("probe", {"dcgm_url": "http://user:pw@gpu-box:9400/metrics"})
    assert not at.exception
    assert any("dcgm_url" in str(w.value) for w in at.warning)
    assert at.text_input(key="probe.dcgm_url").value in ("", None)


def test_a_run_started_on_the_probe_page_shows_its_energy_once_done(database_url: str, gpu_server: FakeServer) -> None:
    from ui.resources import get_engine

    get_engine.clear()
    metrics_url = gpu_server.base_url.removesuffix("/v1") + "/metrics"
    link = {"url": gpu_server.base_url, "model": "fake", "levels": "2", "requests": "8", "dcgm_url": metrics_url}
    at = open_page("probe", {**link, "dcgm_interval": "0.1"})
    at.button(key="probe.start").click().run()
    finish_probe(at)
    assert not at.exception and not at.error
    at = open_result_tab(at, "Power")
    assert metric(at, "Energy per output token").endswith(" J")
    assert len(at.get("plotly_chart")) == 1
