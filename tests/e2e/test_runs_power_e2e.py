"""A run that read a DCGM exporter, opened on /runs in a browser: its Power tab draws the energy cards and the chart of
each GPU's power on the run's time axis, in English and in Chinese."""

import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from db import init_db, make_engine
from db.recorder import RunRecorder
from fakeserver import Behaviour, serve_in_thread
from probes import ProbeRun, RunSettings
from tests.conftest import ARTIFACTS
from tests.e2e.helpers import fresh_tab, metric, open_page, show_tab
from tests.support import running_app

pytestmark = pytest.mark.e2e


def test_the_power_tab_draws_the_energy_and_the_power_chart(browser: Browser, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'power.db'}"
    engine = make_engine(url)
    init_db(engine)
    with serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=5, tokens=10), dcgm_gpus=2) as server:
        settings = RunSettings(
            base_url=server.base_url,
            model="fake",
            label="power",
            concurrency=(1, 4),
            requests_per_level=12,
            dcgm_url=server.base_url.removesuffix("/v1") + "/metrics",
            dcgm_interval_s=0.1,
        )
        recorder = RunRecorder(engine)
        assert ProbeRun(settings, sink=recorder).start().wait(60)
    with running_app(url) as app:
        with fresh_tab(browser, "runs-power") as tab:
            open_page(tab, f"{app}/runs?runs={recorder.run_id}", "Probe runs")
            show_tab(tab, "Power")
            expect(metric(tab, "Energy per output token")).to_contain_text(" J")
            expect(metric(tab, "Energy of the run")).to_contain_text(re.compile(r"\d (J|Wh|kWh)$"))
            chart = tab.locator(".js-plotly-plot").filter(has_text="GPU power during the run")
            expect(chart).to_be_visible()
            expect(chart.locator(".legendtext", has_text="all GPUs")).to_be_visible()
            chart.screenshot(path=str(ARTIFACTS / "runs-power-chart.png"))
        with fresh_tab(browser, "runs-power-zh") as tab:
            open_page(tab, f"{app}/runs?runs={recorder.run_id}&lang=zh", "压测记录")
            show_tab(tab, "功率")
            expect(metric(tab, "每个输出 token 的能耗")).to_contain_text(" J")
            expect(tab.locator(".js-plotly-plot").filter(has_text="运行期间的 GPU 功率")).to_be_visible()
