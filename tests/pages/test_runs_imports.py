"""Imported runs on /runs under AppTest: listed and marked beside probe runs, opened with their provenance, compared
on the same charts, costed; the page's import stores uploads as the command line does."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from db import import_of, list_runs, store_imported
from db.recorder import RunRecorder
from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import ProbeRun, RunSettings, Timeouts
from probes.deployment import Deployment
from probes.importers.common import with_given
from probes.importers.registry import read_runs
from tests.pages.apptest import newest_list, open_page, texts
from tests.support import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "imports"
NOW = datetime(2026, 12, 6, 1, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=8), max_running=None) as server:
        yield server


def _probe_run(engine: object, fake: FakeServer) -> str:
    settings = RunSettings(
        base_url=fake.base_url,
        model="fake",
        label="own probe",
        concurrency=(1, 4),
        requests_per_level=3,
        timeouts=Timeouts(connect_s=2, ttft_s=5, stall_s=5),
    )
    recorder = RunRecorder(engine)
    assert ProbeRun(settings, sink=recorder).start().wait(30)
    assert recorder.run_id is not None
    return recorder.run_id


def _imported(engine: object, name: str) -> str:
    runs = [
        with_given(run, Deployment(gpu="h100-80gb-sxm", gpu_count=1, engine="vllm", quant="bf16"), "from vllm")
        for run in read_runs(FIXTURES / "vllm" / name, NOW)
    ]
    [run_id] = store_imported(engine, runs) or []  # type: ignore[arg-type]
    return run_id


def test_an_imported_run_is_listed_marked_and_opens_with_its_provenance(engine: object, fake: FakeServer) -> None:
    own = _probe_run(engine, fake)
    imported = _imported(engine, "vllm_aggregate.json")
    at = open_page("runs")
    assert not at.exception and not at.error
    offered = tuple(at.selectbox(key="runs.import.format").options)
    assert offered[0] == "auto"
    assert set(offered) == {"auto", "aiperf", "guidellm", "sglang", "vllm", "llmd-br", "inference-perf", "inferencex"}
    assert at.selectbox(key="runs.import.gpu").value is None  # the deployment fields, blank: from the file, if it says
    listed = newest_list(at)
    assert "| source |" in listed
    assert r"imported, aggregate only\: vllm bench serve" in listed and "| probe |" in listed
    at = open_page("runs", {"runs": imported})
    assert not at.exception and not at.error
    about = " ".join(texts(at.info))
    assert r"Imported: written by vllm bench serve, file vllm\_aggregate\.json" in about
    assert "Aggregate only" in about
    cost = next(p for p in at.get("page_link") if p.proto.label == "Cost this")
    query = cost.proto.query_string  # an imported run is costed like a probe run: its measured rate, its deployment
    assert "tps_source=measured" in query and f"rps=20%40{imported}" in query and "gpu=h100-80gb-sxm" in query
    compared = open_page("runs", {"runs": f"{own},{imported}"})
    assert not compared.exception and not compared.error
    assert any("Comparing 2 runs" in s for s in texts(compared.subheader))


@dataclass
class _Upload:
    """What Streamlit's uploader hands the page: a name and the bytes."""

    name: str
    data: bytes

    def getvalue(self) -> bytes:
        return self.data


def test_the_page_import_stores_an_aiperf_pair_as_one_run_and_says_what_it_skipped(engine: object) -> None:
    from views.runs_parts.imports import _import

    folder = FIXTURES / "aiperf" / "run1"
    uploads = [
        _Upload("profile_export_aiperf.json", (folder / "profile_export_aiperf.json").read_bytes()),
        _Upload("profile_export.jsonl", (folder / "profile_export.jsonl").read_bytes()),
        _Upload("notes.txt", b"hello"),
    ]
    report = _import(uploads, "auto", {"gpu": "h100-80gb-sxm"}, "vendor")
    assert [(r["source_format"], r["samples"]) for r in report.runs] == [("aiperf", 40)]
    assert [s["file"] for s in report.skipped] == ["notes.txt"] and report.refused
    [stored] = list_runs(engine)  # type: ignore[arg-type]
    assert stored.label == "vendor" and stored.deploy_gpu == "h100-80gb-sxm"
    assert import_of(engine, stored.id) is not None  # type: ignore[arg-type]
    again = _import(uploads[:2], "auto", {}, "")
    assert again.runs == [] and again.skipped == [{"file": "aiperf", "reason": "already imported"}]
