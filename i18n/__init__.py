"""Languages of the app: gettext catalogs (English msgids, Simplified Chinese translations) and locale formatting.

Strings are marked in code with ``_`` (translated where they are drawn, ui/lang.py), ``N_`` (marked for the
catalog, translated later: texts defined in packages) or ``tr`` (a package function's ``Translate`` argument, given
``_`` by the page). ``make i18n`` extracts them (Babel) per area
(``i18n/domains.toml``), updates ``i18n/locale/zh/LC_MESSAGES/<area>.po`` and compiles ``<area>.mo``; tests/test_i18n.py
fails on a string without a Chinese translation and on a catalog entry no code uses.
"""

import gettext
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Literal, get_args

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
DEFAULT_LANGUAGE: Language = "en"
LANGUAGE_NAMES: dict[Language, str] = {"en": "English", "zh": "中文"}
LOCALE_DIR = Path(__file__).parent / "locale"
Translate = Callable[[str], str]  # what a package function takes to word its texts (ui/lang.py's `_`)
BABEL_LOCALES: dict[Language, str] = {"en": "en_US", "zh": "zh_Hans_CN"}


def identity(message: str) -> str:
    """The Translate of English (packages' default)."""
    return message


def N_(message: str) -> str:
    """Mark a text for the catalog without translating it here (packages define texts the pages translate)."""
    return message


@cache
def translations(language: Language) -> gettext.NullTranslations:
    """The compiled catalogs of a language, every area's chained (English: the msgids themselves)."""
    chain = gettext.NullTranslations()
    if language == DEFAULT_LANGUAGE:
        return chain
    for mo in sorted((LOCALE_DIR / language / "LC_MESSAGES").glob("*.mo")):
        with mo.open("rb") as f:
            area = gettext.GNUTranslations(f)
        area.add_fallback(chain)
        chain = area
    return chain


def translate(language: Language, message: str) -> str:
    """The message in the language (itself when the catalog has no translation)."""
    return translations(language).gettext(message) if message else message


def parse_language(value: object) -> Language | None:
    """A language code as the URL or a browser gives it (zh, zh-CN, zh_Hans, en-US), None when not one of ours."""
    if not isinstance(value, str) or not value.strip():
        return None
    head = value.strip().replace("_", "-").split("-")[0].lower()
    return next((code for code in LANGUAGES if code == head), None)


__all__ = [
    "BABEL_LOCALES",
    "DEFAULT_LANGUAGE",
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "LOCALE_DIR",
    "N_",
    "Language",
    "Translate",
    "identity",
    "parse_language",
    "translate",
    "translations",
]
