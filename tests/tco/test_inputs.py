"""Bad input is named with what is allowed; valid input is normalised (GPU names, currencies)."""

import pytest
from pydantic import ValidationError

from i18n import Language
from tco import Currency, TcoInputs, convert, estimate, format_money
from tco.money import format_money_range
from ui.params import to_params, validate_params


@pytest.mark.parametrize(
    ("param", "value", "words"),
    [
        ("tps", "0", ["Throughput", "greater than or equal to 0.01"]),
        ("tps", "-5", ["Throughput", "greater than or equal to 0.01"]),
        ("tps", "1e-322", ["Throughput", "greater than or equal to 0.01"]),
        ("util", "0", ["utilization", "greater than or equal to 0.1"]),
        ("fx", "1e-300", ["Exchange rate", "greater than or equal to 0.001"]),
        ("tps", "fast", ["Throughput", "valid number"]),
        ("price", "0", ["Price per GPU-hour", "greater than 0"]),
        ("out_tokens", "0", ["Output tokens", "greater than or equal to 1"]),
        ("util", "150", ["utilization", "less than or equal to 100"]),
        ("peak", "0.5", ["Peak-to-average", "greater than or equal to 1"]),
        ("currency", "EUR", ["Currency", "'CNY' or 'USD'"]),
        ("gpu", "Z9000", ["GPU", "not in the catalog", "custom"]),
        ("gpu", "a10", ["GPU", "a10g-24gb"]),
        ("hours", "nan", ["Hours per month"]),
        ("traffic", "inf", ["Traffic"]),
    ],
)
def test_bad_url_value_falls_back_and_is_named(param: str, value: str, words: list[str]) -> None:
    model, messages, rejected = validate_params(
        TcoInputs, {param: value, "price": "20"} if param != "price" else {param: value}
    )
    assert rejected == {param: value}
    assert len(messages) == 1
    for word in [f"`{param}`", *words]:
        assert word.lower() in messages[0].lower()
    default = TcoInputs()
    field = next(n for n, f in TcoInputs.model_fields.items() if (f.alias or n) == param)
    assert getattr(model, field) == getattr(default, field)
    if param != "price":
        assert model.price_per_gpu_hour == 20  # the good parameters are kept


def test_forgiving_gpu_names_normalise_to_catalog_ids() -> None:
    for name in ["A800", "a800-40gb", "NVIDIA A800 40GB", "a800-40gb-sxm"]:
        assert TcoInputs.model_validate({"gpu": name}).gpu == "a800-40gb-sxm"
    assert TcoInputs.model_validate({"gpu": "Custom"}).gpu == "custom"


def test_model_refuses_bad_values_directly() -> None:
    with pytest.raises(ValidationError):
        TcoInputs(output_tok_s_per_replica=0)


def test_params_round_trip_with_defaults_omitted() -> None:
    model = TcoInputs.model_validate({"price": "2.5", "currency": "USD", "gpu": "H100", "spec": "true"})
    params = to_params(model)
    assert params == {"price": "2.5", "currency": "USD", "gpu": "h100-80gb-sxm", "spec": "true"}
    assert validate_params(TcoInputs, params)[0] == model
    assert to_params(TcoInputs()) == {}


def test_currency_conversion_and_formatting() -> None:
    assert convert(15, "CNY", "USD", 7.5) == pytest.approx(2)
    assert convert(2, Currency.USD, Currency.CNY, 7.5) == pytest.approx(15)
    usd = estimate(TcoInputs.model_validate({"price": "2", "currency": "USD", "tps": "588", "out_tokens": "200"}))
    assert format_money(usd.capacity.cost_per_request, "USD").endswith(" USD")
    assert format_money(0.0014172, "CNY") == "0.0014 CNY"
    assert format_money(10_800, "CNY") == "10,800 CNY"
    assert format_money(7.0862, "CNY") == "7.09 CNY"
    assert format_money(None, "CNY") == "—"


@pytest.mark.parametrize(
    ("amount", "english", "chinese"),
    [
        (4.15e-05, "0.000041 USD", "$0.000041"),  # fixed notation however small, never 4.15e-05
        (0.00002, "0.000020 USD", "$0.000020"),
        (0.0014172, "0.0014 USD", "$0.0014"),
    ],
)
def test_small_amounts_read_in_fixed_notation(amount: float, english: str, chinese: str) -> None:
    assert format_money(amount, "USD") == english
    assert format_money(amount, "USD", language="zh") == chinese


@pytest.mark.parametrize(
    ("low", "high", "currency", "language", "shown"),
    [
        (15, 15, "CNY", "en", "15.00 CNY"),  # equal ends print one value, not '15–15'
        (15, 15, "CNY", "zh", "15.00 元"),
        (2.5, 7, "USD", "en", "2.50–7.00 USD"),
        (2.5, 7, "USD", "zh", "$2.50–$7.00"),
        (0.071, 0.32, "CNY", "zh", "0.071–0.32 元"),
        (None, 3, "USD", "en", "3.00 USD"),
    ],
)
def test_a_money_range_prints_one_value_when_its_ends_agree(
    low: float | None, high: float, currency: str, language: Language, shown: str
) -> None:
    assert format_money_range(low, high, currency, language=language) == shown
