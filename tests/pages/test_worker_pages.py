"""--workers on the pages: Workers and Ray address in /probe's settings (from the shared model, in the link), and a
stored run's one row per worker beside its merged figures, with a partial run said."""

from collections.abc import Iterator

import pytest

from db import init_db, make_engine
from db.recorder import RunRecorder, finish_run
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import ProbeRun, RunSettings, RunStatus, Timeouts
from probes.models import ScheduleLag, WorkerStats
from probes.options import ProbeOptions
from tests.pages.apptest import open_page, open_tab, url_params

LOST = "worker 1 on vm/2 was lost at 2026-12-06 01:00:00 UTC during level 0 (ActorDiedError); its requests after its "
LOST += "last batch are missing"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def test_the_probe_form_has_workers_and_a_ray_address_from_the_link() -> None:
    at = open_page("probe", {"model": "m", "workers": "3", "ray_address": "ray-head:6379"})
    assert not at.exception and not at.warning
    workers = at.number_input(key="probe.workers")
    assert workers.value == 3 and workers.label == ProbeOptions.model_fields["workers"].title
    assert at.text_input(key="probe.ray_address").value == "ray-head:6379"
    at.number_input(key="probe.workers").set_value(4).run()
    assert url_params(at) == {"model": "m", "workers": "4", "ray_address": "ray-head:6379"}


def test_a_run_with_workers_shows_one_row_per_worker_and_says_it_is_partial(
    database_url: str, fake: FakeServer
) -> None:
    from ui.resources import get_engine

    get_engine.clear()
    engine = make_engine(database_url)
    init_db(engine)
    settings = RunSettings(
        base_url=fake.base_url, model="fake", concurrency=(2,), requests_per_level=4, timeouts=Timeouts(ttft_s=5)
    )
    recorder = RunRecorder(engine)
    run = ProbeRun(settings, sink=recorder).start()
    assert run.wait(30)
    workers = [
        WorkerStats(
            id=i, node=f"vm/{i + 1}", requests=2, errors=0, cpu_percent=12.5 * (i + 1), clock_offset_ms=0.04,
            schedule_lag_ms=ScheduleLag(p50=0.5, p99=2.0),
        )
        for i in range(2)
    ]  # fmt: skip
    assert recorder.run_id is not None
    finish_run(engine, recorder.run_id, RunStatus.COMPLETED, workers=workers, partial_reason=LOST)
    at = open_page("runs", {"runs": recorder.run_id})
    assert not at.exception
    assert any("Partial run: worker 1 on vm/2 was lost" in w.value for w in at.warning)
    at = open_tab(at, f"runs.run.{recorder.run_id}.tab", "Workers")
    table = next(df.value for df in at.dataframe if "Node" in df.value.columns)
    assert list(table["Node"]) == ["vm/1", "vm/2"] and list(table["Client CPU (% of a core)"]) == [12.5, 25.0]
