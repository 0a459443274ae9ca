"""The page edge: expected failures become one actionable message; nothing else leaks a traceback."""

import logging
from collections.abc import Callable

import streamlit as st

from ui.lang import _

log = logging.getLogger("ui")


def show_errors(title: str, errors: list[str]) -> None:
    """One error box listing what is wrong with the inputs."""
    body = "\n".join(f"- {e}" for e in errors)
    st.error(f"**{title}**\n\n{body}", icon="🚫")


def guarded(body: Callable[[], None]) -> None:
    """Run a page body; an unexpected exception is logged and shown as a short message, never a traceback."""
    try:
        body()
    except st.errors.StreamlitAPIException:
        raise
    except Exception as exc:  # the page edge (st.rerun / st.stop are BaseExceptions and pass through)
        log.exception("page failed")
        st.error(
            _(
                "Something went wrong while drawing this page ({error}). Your inputs are kept in the URL; change one "
                "and try again, or report it with the link."
            ).format(error=f"{type(exc).__name__}: {exc}"),
            icon="🚫",
        )
