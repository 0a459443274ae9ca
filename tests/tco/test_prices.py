"""GPU prices: the dated snapshot, its tiers per GPU, and `python -m tco prices refresh|show` over a recorded gpuhunt
catalog (never the network): what changed, exit 0; a failed or partial refresh stores nothing, exit 2."""

import io
import json
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from catalog import load_gpus, load_handbook
from catalog.prices import PRICE_KINDS, load_markets, load_price_snapshot, market_gpus
from db import make_engine, stored_prices
from db.engine import init_db
from tco import TcoInputs
from tco.inputs import catalog_price
from tco.owning import owned_cost, owned_hardware
from tco.price_refresh import catalog_gpu, current_book, refresh_prices
from tco.prices import snapshot_book
from tco.prices_cli import SHOW_KEYS, main

HERE = Path(__file__).parent
CATALOG = HERE / "gpuhunt_catalog"
BROKEN = HERE / "gpuhunt_broken"
NOW = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)
FX = load_handbook().fx.cny_per_usd


def _run(*argv: str) -> tuple[int, str, str]:
    """`python -m tco prices ...` in this process (its output captured)."""
    assert argv[0] == "prices"
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv[1:]), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_every_snapshot_tier_has_a_catalog_gpu_a_kind_a_source_a_date_and_a_licence() -> None:
    ids = {g.id for g in load_gpus()}
    for tier in load_price_snapshot():
        assert tier.gpu in ids and tier.kind in PRICE_KINDS
        assert tier.source.strip() and tier.fetched_at.strip() and tier.licence.strip(), tier.key
    keys = [t.key for t in load_price_snapshot()]
    assert len(keys) == len(set(keys)), "one row per (gpu, provider, region, kind)"


def test_the_cost_page_opens_with_the_handbooks_a800_price_and_the_catalog_agrees() -> None:
    hb = load_handbook().tco
    assert TcoInputs().price_per_gpu_hour == hb.price_per_gpu_hour == 15.0
    assert catalog_price(TcoInputs().gpu, "CNY", FX) == hb.price_per_gpu_hour


def test_china_market_gpus_are_priced_in_yuan_from_chinese_clouds_or_say_why_not() -> None:
    book = snapshot_book()
    for gpu_id in ("a800-80gb-sxm", "h20-96gb", "l20-48gb", "ascend-910b-64gb"):
        tier = book.lowest(gpu_id, "on_demand", "CNY", FX)
        assert tier is not None and tier.currency == "CNY" and tier.region == "mainland China"
    # H800 and the 910C are rented by the month as whole servers: a monthly tier, and no on-demand price to fill in.
    for gpu_id in ("h800-80gb-sxm", "ascend-910c-128gb"):
        assert book.lowest(gpu_id, "on_demand", "CNY", FX) is None
        monthly = book.lowest(gpu_id, "monthly", "CNY", FX)
        assert monthly is not None and monthly.currency == "CNY" and "720 hours" in monthly.note
    assert "A800 40GB PCIe" in {g.name for g in load_gpus() if "Chinese-cloud" in g.price_note}


def test_a_monthly_price_is_below_the_same_sellers_hourly_one_and_derived_in_its_note() -> None:
    # 天翼云's L20: 7,545 CNY a month for one card is 10.48 per GPU-hour over 720 hours, against 15.72 by the hour.
    tiers = {t.kind: t for t in snapshot_book().for_gpu("l20-48gb") if t.provider == "天翼云"}
    assert tiers["monthly"].price_per_gpu_hour == pytest.approx(7545 / 720, abs=1e-4)
    assert tiers["monthly"].price_per_gpu_hour < tiers["on_demand"].price_per_gpu_hour == 15.72
    assert catalog_price("L20", "CNY", FX) == 15.72
    assert catalog_price("H800", "CNY", FX) is None
    assert catalog_price("H800", "CNY", FX, kind="monthly") == pytest.approx(69000 / 8 / 720, abs=1e-4)


def test_a_band_is_kept_as_its_low_and_high_end_and_picking_a_gpu_fills_the_low_end() -> None:
    tiers = [t for t in snapshot_book().for_gpu("h100-80gb-sxm") if t.provider.startswith("market survey")]
    assert sorted(t.price_per_gpu_hour for t in tiers) == [1.99, 5.0]
    assert catalog_price("H100", "USD", FX) == 1.99
    assert catalog_price("H100", "CNY", FX) == round(1.99 * FX, 4)
    assert catalog_price("H100", "USD", FX, kind="reserved_3y") is None


# "...; on-demand 27.44705/8 = 3.4309 per GPU-hour" or "...; on-demand 0.8048 per GPU-hour": the same instance's rate
ON_DEMAND_IN_NOTE = re.compile(r"on-demand (?:[\d.,]+/\d+ = )?([\d.]+) per GPU-hour")


def test_a_commitment_or_spot_price_is_never_above_the_same_sellers_shorter_term_or_on_demand_price() -> None:
    tiers = load_price_snapshot()
    by_key = {t.key: t for t in tiers}
    three_year = [t for t in tiers if t.kind == "reserved_3y"]
    for tier in three_year:
        one_year = by_key.get((tier.gpu, tier.provider, tier.region, "reserved_1y"))
        assert one_year is not None, f"{tier.key}: a 3-year price comes with the same seller's 1-year price"
        assert tier.price_per_gpu_hour <= one_year.price_per_gpu_hour, tier.key
    checked = 0
    for tier in tiers:
        if tier.kind not in ("spot", "reserved_1y", "reserved_3y"):
            continue
        on_demand = by_key.get((tier.gpu, tier.provider, tier.region, "on_demand"))
        if on_demand is not None:
            assert tier.price_per_gpu_hour <= on_demand.price_per_gpu_hour, tier.key
            checked += 1
        if match := ON_DEMAND_IN_NOTE.search(tier.note):
            assert tier.price_per_gpu_hour <= float(match.group(1)), tier.key
            checked += 1
    assert len(three_year) >= 5 and checked >= 15  # the check has data to bite on


def test_every_committed_tier_says_how_its_per_gpu_hour_figure_was_derived() -> None:
    committed = [t for t in load_price_snapshot() if t.kind in ("reserved_1y", "reserved_3y")]
    assert len(committed) >= 8 and len({t.provider for t in committed}) >= 2
    for tier in committed:
        assert tier.source.startswith("https://") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", tier.fetched_at), tier.key
        assert "year" in tier.note and ("per instance-hour" in tier.note or "8,760 h" in tier.note), tier.key


def test_market_presets_name_catalog_gpus_with_reasons() -> None:
    ids = {g.id for g in load_gpus()}
    assert all(m.gpu in ids and m.reason.strip() and m.source.strip() for m in load_markets())
    assert {"a800-40gb-sxm", "a800-80gb-sxm", "h800-80gb-sxm", "h20-96gb", "l20-48gb"} <= market_gpus("cn")
    assert "b300" in market_gpus("global") and "b300" not in market_gpus("cn")


@pytest.mark.parametrize(
    ("name", "memory_gb", "expected"),
    [
        ("H100", 80.0, "h100-80gb-sxm"),
        ("A100", 80.0, "a100-80gb-sxm"),
        ("A100", 40.0, "a100-40gb-sxm"),
        ("RTX4090", 24.0, "rtx-4090-24gb"),
        ("A10G", 24.0, "a10g-24gb"),
        ("V100", 16.0, None),  # the catalog's V100 has 32 GB
        ("H100NVL", 94.0, None),
    ],
)
def test_gpuhunt_names_map_to_catalog_gpus_only_when_the_memory_agrees(
    name: str, memory_gb: float, expected: str | None
) -> None:
    assert catalog_gpu(name, memory_gb) == expected


def test_refresh_from_a_recorded_catalog_stores_per_gpu_prices_and_says_what_changed(database_url: str) -> None:
    code, out, _ = _run("prices", "refresh", "--from", str(CATALOG))
    assert code == 0
    assert "refreshed 9 price tiers" in out and "not in the GPU catalog: H100NVL, V100" in out
    code, out, _ = _run("prices", "show", "--gpu", "H100", "--json")
    tiers = json.loads(out)
    assert code == 0 and all(tuple(t) == SHOW_KEYS for t in tiers)
    aws = {(t["kind"], t["price_per_gpu_hour"]) for t in tiers if t["provider"] == "aws"}
    assert aws == {("on_demand", 55.04 / 8), ("spot", 21.5 / 8)}  # p5.48xlarge holds 8 GPUs
    assert any(t["provider"] == "market survey (low end)" for t in tiers), "the snapshot stays beside the refresh"
    a10g = [t for t in stored_prices(make_engine(database_url)) if t.gpu == "a10g-24gb"]
    assert {(t.region, t.price_per_gpu_hour) for t in a10g} == {("us-east-1", 1.006), ("eu-west-1", 1.123)}


def test_a_failed_refresh_keeps_the_previous_prices_and_exits_2(database_url: str) -> None:
    assert _run("prices", "refresh", "--from", str(CATALOG))[0] == 0
    before = stored_prices(make_engine(database_url))
    code, _, err = _run("prices", "refresh", "--from", str(BROKEN))
    assert code == 2 and "runpod" in err and "previous prices stay" in err
    assert stored_prices(make_engine(database_url)) == before
    code, out, _ = _run("prices", "refresh", "--from", str(HERE / "no-such-dir"), "--json")
    report = json.loads(out)
    assert code == 2 and not report["ok"] and report["failed"]
    assert stored_prices(make_engine(database_url)) == before


def test_show_names_the_field_of_an_unknown_gpu_and_notes_a_forgiving_match(database_url: str) -> None:
    code, _, err = _run("prices", "show", "--gpu", "Z9000")
    assert code == 2 and err.startswith("--gpu:")
    code, out, err = _run("prices", "show", "--gpu", "h10")
    assert code == 0 and "note: --gpu 'h10' matched" in err and "H100" in out


def _zip(provider: str) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.write(CATALOG / f"{provider}.csv", f"{provider}.csv")
    return data.getvalue()


def test_a_bucket_refresh_with_one_provider_unreachable_stores_nothing(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'p.db'}")
    init_db(engine)

    def fetch(url: str) -> bytes:
        provider = url.split("/")[-2] if url.endswith("/version") else url.split("/")[-3]
        if provider == "gcp":
            raise OSError("connection refused")
        if url.endswith("/version"):
            return b"20261205"
        return _zip(provider) if (CATALOG / f"{provider}.csv").exists() else _zip("aws")

    report = refresh_prices(engine, "https://example.test/v3", fetch=fetch, now=lambda: NOW)
    assert not report.ok and "gcp" in report.failed and "connection refused" in report.failed["gcp"]
    assert stored_prices(engine) == ()
    assert current_book(engine).stamp == "snapshot"

    def fetch_all(url: str) -> bytes:
        return b"20261205" if url.endswith("/version") else _zip("runpod")

    report = refresh_prices(engine, "https://example.test/v3", fetch=fetch_all, now=lambda: NOW)
    assert report.ok and report.fetched_at == "2026-12-05T18:00:00Z"
    assert {t.provider for t in stored_prices(engine)} == {"runpod"}
    assert current_book(engine).stamp == "2026-12-05T18:00:00Z"


def test_a_gpu_with_a_sourced_purchase_price_has_an_owned_tier_at_the_cost_pages_owning_figure(
    database_url: str,
) -> None:
    code, out, _ = _run("prices", "show", "--gpu", "H100", "--json")
    owned = [t for t in json.loads(out) if t["kind"] == "owned"]
    assert code == 0 and len(owned) == 1 and owned[0]["currency"] == "USD"
    inputs = TcoInputs.model_validate({"gpu": "h100-80gb-sxm", "currency": "USD"})
    hardware, missing = owned_hardware(inputs)
    assert hardware is not None and not missing
    # what /tco's "Rent or own" shows for the same GPU at its defaults (about 1.59 USD per GPU-hour)
    expected = owned_cost(hardware, 2.0, inputs.hours_per_month).per_used_gpu_hour
    assert owned[0]["price_per_gpu_hour"] == pytest.approx(expected, abs=1e-4)
    assert "owning.csv" in owned[0]["source"] and owned[0]["fetched_at"]
    code, out, _ = _run("prices", "show", "--gpu", "H800", "--json")
    assert code == 0 and not [t for t in json.loads(out) if t["kind"] == "owned"]  # no purchase price: no owned tier


def test_show_lists_the_committed_and_spot_tiers_with_their_seller_region_source_and_date(database_url: str) -> None:
    code, out, _ = _run("prices", "show", "--gpu", "H100", "--json")
    tiers = json.loads(out)
    assert code == 0 and all(tuple(t) == SHOW_KEYS for t in tiers)
    one_year = [t for t in tiers if t["kind"] == "reserved_1y"]
    assert [
        (t["provider"], t["region"], t["price_per_gpu_hour"], t["currency"], t["fetched_at"]) for t in one_year
    ] == [("qubrid", "region not stated", 1.90375, "USD", "2026-09-20")]
    assert one_year[0]["source"].startswith("https://qubrid.com/pricing")
    spot = [(t["provider"], t["region"], t["price_per_gpu_hour"]) for t in tiers if t["kind"] == "spot"]
    assert spot == [("coreweave", "North America", 2.46375)]
    code, out, _ = _run("prices", "show", "--gpu", "T4", "--json")
    aws_cn = {(t["region"], t["kind"]): t["price_per_gpu_hour"] for t in json.loads(out) if t["currency"] == "CNY"}
    assert code == 0 and {k: v for k, v in aws_cn.items() if k[1] != "on_demand"} == {
        ("cn-north-1", "reserved_1y"): 3.056,
        ("cn-north-1", "reserved_3y"): 2.209,
        ("cn-northwest-1", "reserved_1y"): 2.338,
        ("cn-northwest-1", "reserved_3y"): 1.603,
    }
    code, out, _ = _run("prices", "show", "--gpu", "L4")
    assert code == 0 and "reserved_1y" in out and "aws (us-east-1, 2026-01-21)" in out
