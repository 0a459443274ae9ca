"""/compare's market and price tier: only the GPUs asked for, each at its lowest tier of the chosen kind, the tier and
seller named on every option, and every catalog GPU without an option named with why."""

import pytest

from catalog import load_gpus
from catalog.prices import PriceKind, PriceTier, market_gpus
from db import init_db, make_engine
from i18n import translate
from tco.compare_inputs import CompareInputs
from tco.owned_tiers import OWNED_PROVIDER, owned_tiers
from tco.price_refresh import current_book
from tco.prices import merged, snapshot_book
from tco.ranking import Ranking, rank
from ui.params import validate_params

NARROW = {"engines": ("vllm",), "counts": (1, 2), "currency": "CNY"}


@pytest.fixture(scope="module")
def china() -> Ranking:
    return rank(CompareInputs.model_validate({**NARROW, "market": "cn"}))


def test_a_china_market_ranking_holds_china_market_gpus_only_priced_in_yuan_with_their_seller(china: Ranking) -> None:
    assert china.options
    assert {o.gpu_id for o in china.options} <= market_gpus("cn")
    a800 = next(o for o in china.options if o.gpu_id == "a800-80gb-sxm")
    assert (a800.price_kind, a800.price_provider, a800.price_region) == ("on_demand", "晨涧云", "mainland China")
    assert a800.price_per_gpu_hour == 5.15 and not a800.price_overridden


def test_the_rtx_4090_d_ranks_in_the_china_market_at_its_yuan_price(china: Ranking) -> None:
    d = [o for o in china.options if o.gpu_id == "rtx-4090d-24gb"]
    assert d and {(o.price_provider, o.price_per_gpu_hour, o.price_kind) for o in d} == {("算家云", 1.14, "on_demand")}
    assert all(o.gpu_name == "RTX 4090 D 24GB" for o in d)


def test_every_gpu_without_an_option_is_named_with_why(china: Ranking) -> None:
    ranked = {o.gpu_id for o in china.options}
    dropped = {d.gpu_id: d.reason for d in china.dropped}
    assert ranked | set(dropped) == {g.id for g in load_gpus()} and not ranked & set(dropped)
    assert dropped["b300"] == "not in the market chosen (available in mainland China)"
    assert dropped["h800-80gb-sxm"] == "no on-demand price on record (give one in prices)"
    assert dropped["apple-m4-max"].startswith("GPU types of kind apple")
    npu = (
        "GPU types of kind NPU (Huawei Ascend) (no step-time model; the engine advisor lists what was published on "
        "them)"
    )
    assert dropped["ascend-910b-64gb"] == dropped["ascend-910c-128gb"] == npu
    worded = {d.gpu_id: d.reason_worded(lambda text: translate("zh", text)) for d in china.dropped}
    assert (
        worded["ascend-910b-64gb"] == "NPU（华为昇腾）（没有单步耗时模型；引擎选型页列出了在它上面公开发布的实测数据）"
    )


def test_a_price_override_brings_an_unpriced_china_gpu_in_as_your_price() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "market": "cn", "prices": "H800:20"}))
    h800 = [o for o in ranking.options if o.gpu_id == "h800-80gb-sxm"]
    assert h800 and all(o.price_overridden and o.price_kind == "" for o in h800)


def test_a_typed_price_for_an_ascend_npu_still_invents_no_estimate() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "market": "cn", "prices": "910B:20"}))
    assert not [o for o in ranking.options if o.gpu_id.startswith("ascend")]
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    assert "(no step-time model;" in dropped["ascend-910b-64gb"]


def test_the_spot_tier_ranks_each_gpu_at_its_lowest_spot_price_or_leaves_it_out() -> None:
    spot = PriceTier(
        gpu="h100-80gb-sxm",
        provider="runpod",
        region="CA-MTL-1",
        kind="spot",
        price_per_gpu_hour=1.75,
        currency="USD",
        source="test",
        fetched_at="2026-12-05T18:00:00Z",
    )
    book = merged(snapshot_book().tiers, [spot], stamp="2026-12-05T18:00:00Z")
    inputs = CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": "spot", "gpu_names": "H100,L40S"})
    ranking = rank(inputs, prices=book)
    assert ranking.options and {o.gpu_id for o in ranking.options} == {"h100-80gb-sxm"}
    assert {(o.price_kind, o.price_provider, o.price_per_gpu_hour) for o in ranking.options} == {
        ("spot", "runpod", 1.75)  # below the snapshot's CoreWeave spot price (19.71 / 8 GPUs)
    }
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    assert dropped["l40s-48gb"] == "no spot price on record (give one in prices)"
    assert dropped["l4-24gb"] == "not among the GPUs chosen"
    assert ranking.prices_stamp == "2026-12-05T18:00:00Z"


def test_vendors_keep_only_their_gpus() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "currency": "USD", "vendors": "amd"}))
    assert ranking.inputs.vendors == ("AMD",)
    assert {o.gpu_id for o in ranking.options} <= {g.id for g in load_gpus() if g.vendor == "AMD"}


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"price_tier": "cheapest"}, "price_tier"),
        ({"market": "mars"}, "market"),
        ({"gpu_names": "H100,Z9000"}, "gpu_names"),
        ({"vendors": "acme"}, "vendors"),
    ],
)
def test_a_bad_market_parameter_falls_back_and_names_the_field(params: dict[str, str], field: str) -> None:
    inputs, messages, rejected = validate_params(CompareInputs, params)
    assert field in rejected and any(field in m for m in messages)
    assert getattr(inputs, field) == getattr(CompareInputs(), field)


def test_the_market_parameters_read_from_a_link() -> None:
    inputs, messages, _ = validate_params(
        CompareInputs, {"price_tier": "reserved_1y", "market": "global", "gpu_names": "a800,H100", "vendors": "NVIDIA"}
    )
    assert not messages
    assert (inputs.price_tier, inputs.market) == ("reserved_1y", "global")
    assert inputs.gpu_names == ("a800-40gb-sxm", "h100-80gb-sxm") and inputs.vendors == ("NVIDIA",)


def test_the_owned_tier_ranks_the_gpus_one_can_price_owning_at_their_owning_cost(database_url: str) -> None:
    engine = make_engine(database_url)
    init_db(engine)
    book = current_book(engine)  # the prices every page uses
    inputs = CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": "owned"})
    ranking = rank(inputs, prices=book)
    owned = {t.gpu: t.price_per_gpu_hour for t in owned_tiers()}
    assert ranking.options and {o.gpu_id for o in ranking.options} <= set(owned)
    assert all(o.price_kind == "owned" and o.price_provider == OWNED_PROVIDER for o in ranking.options)
    assert all(o.price_per_gpu_hour == pytest.approx(owned[o.gpu_id], abs=1e-3) for o in ranking.options)
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    assert dropped["h800-80gb-sxm"] == "no owned price on record (give one in prices)"


def test_the_snapshot_alone_ranks_the_main_data_center_gpus_at_a_published_spot_price() -> None:
    inputs = CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": "spot"})
    ranking = rank(inputs)  # no refresh: the shipped, dated spot tiers
    sellers = {o.gpu_id: (o.price_provider, o.price_region, o.price_per_gpu_hour) for o in ranking.options}
    assert sellers["h100-80gb-sxm"] == ("coreweave", "North America", round(19.71 / 8, 4))  # HGX H100, 8 GPUs
    assert sellers["b200"] == ("coreweave", "North America", round(34.11 / 8, 4))
    assert {"h200-141gb-sxm", "a100-80gb-sxm", "h100-80gb-pcie"} <= set(sellers)
    assert all(o.price_kind == "spot" for o in ranking.options)


TERM_WORDS = {"reserved_1y": "1-year reserved", "reserved_3y": "3-year reserved"}


@pytest.mark.parametrize("tier", ["reserved_1y", "reserved_3y"])
def test_a_reserved_tier_ranks_each_gpu_at_its_lowest_committed_price_and_names_every_gpu_without_one(
    tier: PriceKind,
) -> None:
    book = snapshot_book()
    ranking = rank(CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": tier}), prices=book)
    fx = ranking.inputs.cny_per_usd
    committed = {t.gpu for t in book.tiers if t.kind == tier}
    assert ranking.options and {o.gpu_id for o in ranking.options} <= committed
    for option in ranking.options:
        lowest = book.lowest(option.gpu_id, tier, "USD", fx)
        assert lowest is not None and not option.price_overridden
        assert (option.price_kind, option.price_provider, option.price_region) == (
            tier,
            lowest.provider,
            lowest.region,
        )
        assert option.price_per_gpu_hour == book.price(option.gpu_id, tier, "USD", fx)
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    ranked = {o.gpu_id for o in ranking.options}
    assert ranked | set(dropped) == {g.id for g in load_gpus()} and not ranked & set(dropped)
    assert dropped["mi300x-192gb"] == f"no {TERM_WORDS[tier]} price on record (give one in prices)"
    assert dropped["h800-80gb-sxm"] == f"no {TERM_WORDS[tier]} price on record (give one in prices)"


def test_a_one_year_ranking_names_the_seller_and_region_of_each_commitment() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": "reserved_1y"}))
    sellers = {o.gpu_id: (o.price_provider, o.price_region, o.price_per_gpu_hour) for o in ranking.options}
    provider, region, price = sellers["h100-80gb-sxm"]
    assert (provider, region) == ("qubrid", "region not stated")
    assert price == pytest.approx(133_414.80 / 8 / 8760, abs=1e-4)  # an 8-GPU server's price per year
    assert sellers["l4-24gb"] == ("aws", "us-east-1", 0.5239)  # g6.xlarge, 1-year Standard RI, no upfront
    assert sellers["l40s-48gb"] == ("aws", "us-east-1", 1.1724)  # g6e.xlarge


def test_a_three_year_ranking_holds_only_the_gpus_with_a_three_year_price_converted_from_yuan() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": "reserved_3y"}))
    fx = ranking.inputs.cny_per_usd
    sellers = {o.gpu_id: (o.price_provider, o.price_region, o.price_per_gpu_hour) for o in ranking.options}
    assert set(sellers) == {"t4-16gb", "a10g-24gb", "a100-40gb-sxm"}
    assert sellers["t4-16gb"] == ("aws", "cn-northwest-1", round(1.603 / fx, 4))  # g4dn.xlarge in Ningxia
    assert sellers["a100-40gb-sxm"] == ("aws", "cn-northwest-1", round(73.80361 / 8 / fx, 4))  # p4d.24xlarge
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    assert dropped["h100-80gb-sxm"] == "no 3-year reserved price on record (give one in prices)"
