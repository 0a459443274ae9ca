"""The language of this session: the link's `lang`, else the one chosen, else the browser's; `_` translates."""

import streamlit as st

from i18n import DEFAULT_LANGUAGE, LANGUAGE_NAMES, LANGUAGES, Language, parse_language, translate

LANG_PARAM = "lang"
_CHOSEN = "_lang.chosen"  # the language this session chose (a link's, or the switch's): kept across pages
_SWITCH = "_lang.switch"


def language() -> Language:
    """`lang` of the URL, else the session's choice, else the browser's language, else English."""
    from_url = parse_language(st.query_params.get(LANG_PARAM))
    if from_url is not None:
        st.session_state[_CHOSEN] = from_url
        return from_url
    chosen = st.session_state.get(_CHOSEN)
    if chosen in LANGUAGES:
        return chosen  # type: ignore[no-any-return]
    return parse_language(_browser_locale()) or DEFAULT_LANGUAGE


def _browser_locale() -> str | None:
    try:
        return st.context.locale
    except Exception:  # no browser behind this run (bare mode, tests)
        return None


def _(message: str) -> str:
    """The message in this session's language."""
    return translate(language(), message)


def lang_param() -> dict[str, str]:
    """The URL parameter that keeps the language in a link (empty while the browser's language decides)."""
    chosen = st.session_state.get(_CHOSEN)
    return {LANG_PARAM: chosen} if chosen in LANGUAGES else {}


def _switched() -> None:
    picked = st.session_state.get(_SWITCH)
    if picked in LANGUAGES:
        st.session_state[_CHOSEN] = picked
        st.query_params[LANG_PARAM] = picked


def language_switch() -> None:
    """The sidebar's language switch: it sets `lang` in the link and keeps every other input."""
    st.session_state[_SWITCH] = language()
    st.sidebar.segmented_control(
        "Language / 语言",
        list(LANGUAGES),
        key=_SWITCH,
        format_func=lambda code: LANGUAGE_NAMES[code],
        on_change=_switched,
        required=True,
    )
