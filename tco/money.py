"""Currencies, conversion at an editable rate, and money formatting that keeps small costs readable."""

from enum import StrEnum

from i18n import Language
from i18n.numbers import COMPACT_FROM, ENGLISH_COMPACT_FROM, format_amount, format_large, split_unit


class Currency(StrEnum):
    """Currencies the cost model reports in."""

    CNY = "CNY"
    USD = "USD"


def convert(amount: float, source: Currency | str, target: Currency | str, cny_per_usd: float) -> float:
    """Convert an amount between CNY and USD at cny_per_usd."""
    source, target = Currency(source), Currency(target)
    if source == target:
        return amount
    return amount * cny_per_usd if source == Currency.USD else amount / cny_per_usd


def format_money(
    amount: float | None, currency: Currency | str, *, compact: bool = False, language: Language = "en"
) -> str:
    """'0.0014 CNY', '7.09 CNY', '10,800 CNY': two significant figures below 1, cents below 100, whole above.

    With compact, a million and more reads in four significant figures, as the Chinese 万 and 亿 do: '147.8M CNY',
    '1.300M CNY', '2.450B CNY'. In Chinese, amounts read as a Chinese reader expects them:
    '0.0014 元', '$0.0002', and from 10,000 on in 万 and 亿 ('1.08 万元', '$12.96 万'; compact or not).
    """
    if amount is None:
        return "—"
    code = Currency(currency).value
    magnitude = abs(amount)
    if language == "zh":
        if magnitude >= COMPACT_FROM:
            number, unit = split_unit(format_large(amount, language))
            return f"{number} {unit}元" if code == "CNY" else f"${number} {unit}"
        plain = format_money(amount, currency).removesuffix(f" {code}")
        return format_amount(plain, code, language)
    if compact and magnitude >= ENGLISH_COMPACT_FROM:
        text = format_large(amount, "en")
    elif magnitude == 0:
        text = "0"
    elif magnitude < 1:  # two significant figures in fixed notation, however small: 0.0014, 0.000042 (never 4.2e-05)
        rounded = float(f"{amount:.2g}")
        text = f"{rounded:.{_decimals_for(rounded)}f}"
    elif magnitude < 100:
        text = f"{amount:,.2f}"
    else:
        text = f"{amount:,.0f}"
    return f"{text} {code}"


def format_money_range(
    low: float | None, high: float | None, currency: Currency | str, *, language: Language = "en"
) -> str:
    """'2.50–7.00 USD' ('$2.50–$7.00' in Chinese); one figure when both ends read the same ('15 CNY', not '15–15')."""
    first, last = format_money(low, currency, language=language), format_money(high, currency, language=language)
    if first == last or high is None:
        return first
    if low is None:
        return last
    unit = last.rpartition(" ")[2]  # 'CNY', 'USD', '元' or, for '$2.50' and '1.08 万元', the figure itself
    if first.endswith(f" {unit}") and not unit[:1].isdigit() and not unit.startswith("$"):
        return f"{first.removesuffix(f' {unit}')}–{last}"
    return f"{first}–{last}"


def _decimals_for(value: float) -> int:
    """Decimals that show two significant figures of a value below 1 (0.0014 -> 4, 0.25 -> 2)."""
    digits = 0
    scaled = abs(value)
    while scaled and scaled < 10:
        scaled *= 10
        digits += 1
    return max(digits, 2)
