"""Numbers and money as each language writes them (Babel): grouping, and 万/亿 for large amounts in Chinese."""

from babel.numbers import format_compact_decimal, format_decimal

from i18n import BABEL_LOCALES, Language

COMPACT_FROM = 10_000  # Chinese readers expect 万 from ten thousand on (12.96 万元), 亿 from 10^8
COMPACT_SIGNIFICANT = 4  # a compact figure keeps this many significant figures: 12.96万, 147.8M
ENGLISH_COMPACT_FROM = 1_000_000  # English figures read in M and B from a million on (147.8M, 2.200B)
CURRENCY_UNITS: dict[Language, dict[str, tuple[str, str]]] = {  # (prefix, suffix) around the number
    "en": {"CNY": ("", " CNY"), "USD": ("", " USD")},
    "zh": {"CNY": ("", " 元"), "USD": ("$", "")},
}
UNITS = ("万", "亿")


def format_number(value: float, language: Language, *, decimals: int = 0) -> str:
    """A plain number with the language's grouping ('10,800', '0.0014')."""
    pattern = "#,##0" + ("." + "#" * decimals if decimals else "")
    return format_decimal(value, format=pattern, locale=BABEL_LOCALES[language])


def format_large(value: float, language: Language, *, significant: int = COMPACT_SIGNIFICANT) -> str:
    """A large figure, grouped ('129,600') below the language's compact forms.

    In Chinese from 10,000 on in 万 or 亿 ('12.96万', '1.3亿'); in English from a million on in M or B ('147.8M',
    '2.200B'; 999.96 million reads '1.000B').
    """
    if language == "zh" and abs(value) >= COMPACT_FROM:
        digits = max(0, significant - len(str(int(abs(value) / (1e8 if abs(value) >= 1e8 else 1e4)))))
        return format_compact_decimal(value, locale=BABEL_LOCALES[language], fraction_digits=digits)
    if language == "en" and abs(value) >= ENGLISH_COMPACT_FROM:
        millions = _significant(value / 1e6, significant)
        if abs(float(millions.replace(",", ""))) < 1000:
            return f"{millions}M"
        return f"{_significant(value / 1e9, significant)}B"
    return format_number(value, language)


def _significant(value: float, significant: int) -> str:
    digits = max(0, significant - len(str(int(abs(value)))))
    return f"{value:,.{digits}f}"


def format_amount(text: str, currency: str, language: Language) -> str:
    """An amount already written as a number ('0.0014', '12.96万') with the currency as the language writes it."""
    prefix, suffix = CURRENCY_UNITS[language].get(currency, ("", f" {currency}"))
    return f"{prefix}{text}{suffix}"


def split_unit(text: str) -> tuple[str, str]:
    """('12.96', '万') from '12.96万'; (text, '') without a unit."""
    for unit in UNITS:
        if text.endswith(unit):
            return text.removesuffix(unit), unit
    return text, ""
