"""Overview: what the dashboard answers, where to start, and how to read its numbers."""

import streamlit as st

from db import safe_url
from settings import get_settings
from ui.concepts import all_concepts
from ui.errors import guarded
from ui.lang import _


def body() -> None:
    """Draw the page."""
    st.title(_("LLM serving decisions"))
    st.markdown(
        _(
            "Three questions, one place: **what will it cost**, **what should we run**, and **how fast is it "
            "really**. Every page keeps its inputs in the URL, so a link shows the same scenario on another screen."
        )
    )
    left, mid, right = st.columns(3)
    with left.container(border=True):
        st.subheader(":material/payments: " + _("What will it cost?"))
        st.write(
            _(
                "GPU price and traffic in; cost per request, per million tokens, per month and year out, with the "
                "GPUs the traffic needs and what each optimization saves."
            )
        )
        st.page_link("views/tco.py", label=_("Open the cost calculator"), icon=":material/arrow_forward:")
    with mid.container(border=True):
        st.subheader(":material/tune: " + _("What should we run?"))
        st.write(
            _(
                "GPU, model and workload in; the engine, quantization, KV-cache and speculative-decoding advice, the "
                "memory fit and a launch command out, every decision with its source."
            )
        )
        st.page_link("views/selector.py", label=_("Open the engine advisor"), icon=":material/arrow_forward:")
    with right.container(border=True):
        st.subheader(":material/speed: " + _("How fast is it really?"))
        st.write(
            _(
                "An OpenAI-compatible endpoint in; TTFT, TPOT and throughput at each concurrency level out, the "
                "highest concurrency within your SLO, every run kept to compare, and the measured throughput carried "
                "into the costs."
            )
        )
        st.page_link("views/probe.py", label=_("Open the live probe"), icon=":material/arrow_forward:")
    st.page_link(
        "views/compare.py",
        label=_("Or compare every GPU, engine and quantization by estimated cost for your traffic and SLO"),
        icon=":material/leaderboard:",
    )
    st.header(_("How to read this"), anchor="how-to-read-this")
    st.caption(
        _(
            "The concepts behind the numbers, from the handbook. Each page shows the same note, collapsed, beside "
            "the figure it explains."
        )
    )
    all_concepts()
    _about()


def _about() -> None:
    """The app's settings, in one place rather than in every page's sidebar: where the runs are stored."""
    st.header(_("About this app"), anchor="about")
    with st.expander(_("Settings"), icon=":material/settings:"):
        st.caption(_("Database: `{url}`").format(url=safe_url(get_settings().database_url)))
        st.caption(_("Set DATABASE_URL before starting the app to store the probe runs elsewhere (see the README)."))


guarded(body)
