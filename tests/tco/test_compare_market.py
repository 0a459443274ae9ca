"""/compare's market and price tier: only the GPUs asked for, each at its lowest tier of the chosen kind, the tier and
seller named on every option, and every catalog GPU without an option named with why."""

import pytest

from catalog import load_gpus
from catalog.prices import PriceTier, market_gpus
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
    npu = "GPU types of kind NPU (Huawei Ascend) (no step-time model)"
    assert dropped["ascend-910b-64gb"] == dropped["ascend-910c-128gb"] == npu
    worded = {d.gpu_id: d.reason_worded(lambda text: translate("zh", text)) for d in china.dropped}
    assert worded["ascend-910b-64gb"] == "NPU（华为昇腾）（没有单步耗时模型）"


def test_a_price_override_brings_an_unpriced_china_gpu_in_as_your_price() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "market": "cn", "prices": "H800:20"}))
    h800 = [o for o in ranking.options if o.gpu_id == "h800-80gb-sxm"]
    assert h800 and all(o.price_overridden and o.price_kind == "" for o in h800)


def test_a_typed_price_for_an_ascend_npu_still_invents_no_estimate() -> None:
    ranking = rank(CompareInputs.model_validate({**NARROW, "market": "cn", "prices": "910B:20"}))
    assert not [o for o in ranking.options if o.gpu_id.startswith("ascend")]
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    assert dropped["ascend-910b-64gb"].endswith("(no step-time model)")


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
    inputs = CompareInputs.model_validate({**NARROW, "currency": "USD", "price_tier": "spot", "gpu_names": "H100,A100"})
    ranking = rank(inputs, prices=book)
    assert ranking.options and {o.gpu_id for o in ranking.options} == {"h100-80gb-sxm"}
    assert {(o.price_kind, o.price_provider, o.price_per_gpu_hour) for o in ranking.options} == {
        ("spot", "runpod", 1.75)
    }
    dropped = {d.gpu_id: d.reason for d in ranking.dropped}
    assert dropped["a100-80gb-sxm"] == "no spot price on record (give one in prices)"
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
