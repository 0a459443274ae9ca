"""A run that scraped a DCGM exporter keeps its GPU power readings in the database and loads back with its energy."""

import pytest
from sqlalchemy import text

from db import init_db, make_engine
from db.recorder import RunRecorder, delete_run
from db.run_queries import get_run
from fakeserver import Behaviour, serve_in_thread
from probes import ProbeRun, RunSettings, RunStatus
from probes.export import power_csv


def test_power_readings_are_stored_as_they_come_and_give_the_same_energy(any_database_url: str) -> None:
    engine = make_engine(any_database_url)
    init_db(engine)
    with serve_in_thread(defaults=Behaviour(ttft_ms=10, tpot_ms=5, tokens=10), dcgm_gpus=2) as server:
        settings = RunSettings(
            base_url=server.base_url,
            model="fake",
            concurrency=(2,),
            requests_per_level=20,
            dcgm_url=server.base_url.removesuffix("/v1") + "/metrics",
            dcgm_interval_s=0.1,
        )
        recorder = RunRecorder(engine)
        probe = ProbeRun(settings, sink=recorder).start()
        assert probe.wait(60)
    result = probe.result()
    assert result is not None and result.status == RunStatus.COMPLETED and not probe.sink_errors
    assert recorder.run_id is not None
    stored = get_run(engine, recorder.run_id, with_samples=False)
    assert stored is not None and stored.energy is not None and result.energy is not None
    assert len(stored.power) == len(result.power) >= 4
    assert stored.energy.energy_j == pytest.approx(result.energy.energy_j, rel=1e-6)
    assert stored.energy.j_per_output_token == pytest.approx(result.energy.j_per_output_token, rel=1e-6)
    csv_lines = power_csv(stored).splitlines()
    assert csv_lines[0].split(",")[:4] == ["t_s", "at", "gpu", "power_w"] and len(csv_lines) == len(stored.power) + 1
    assert delete_run(engine, recorder.run_id)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT COUNT(*) FROM probe_power")).scalar() == 0
