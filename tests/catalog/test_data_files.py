"""Every table under catalog/data/ says where each row comes from and when it was written or checked."""

from pathlib import Path

import pytest

from catalog import load_engines
from catalog.engines import load_engine_sources
from catalog.tables import read_rows
from tests.support import ROOT

DATA = ROOT / "catalog" / "data"
TABLES = sorted(DATA.glob("*.csv"))
DATE_COLUMNS = ("checked", "source_snapshot", "fetched_at")


def test_the_catalog_holds_the_tables_every_package_reads() -> None:
    names = {path.name for path in TABLES}
    assert {"gpus.csv", "models.csv", "engines.csv", "quantization.csv", "kv_dtypes.csv", "engine_limits.csv"} <= names
    assert not list((ROOT / "selector" / "data").glob("*.csv")), "facts live in catalog/data/, advice in selector/"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.name)
def test_each_row_names_its_source_and_its_date(path: Path) -> None:
    rows = list(read_rows(path))
    assert rows
    sources = [c for c in rows[0] if c == "source" or c.endswith("_source")]
    dates = [c for c in rows[0] if c in DATE_COLUMNS]
    assert sources and dates, f"{path.name} needs a source and a date column"
    for number, row in enumerate(rows, start=2):
        assert any(row[c].strip() for c in sources), f"{path.name}:{number} names no source"
        assert all(row[c].strip() for c in dates), f"{path.name}:{number} has no date"


def test_each_engine_cites_sources_for_what_decisions_say_about_it() -> None:
    ids = {e.id for e in load_engines()}
    assert {row.engine for row in load_engine_sources()} == ids
    for engine in load_engines():
        for topic in ("hardware", "quantization", "prefix_caching", "chunked_prefill", "speculative", "kv_offload"):
            assert engine.source_for(topic), f"{engine.id} cites nothing on {topic}"
