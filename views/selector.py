"""Engine advisor: GPU, model and workload in; engine, quantization, KV cache, speculation and a launch command out."""

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from catalog import (
    NameLookupError,
)
from selector import SelectorError, advise, names_worded_by
from ui.errors import guarded, show_errors
from ui.first_paint import stopped_at_headline
from ui.lang import _, language
from views.selector_parts.card import card
from views.selector_parts.custom import keep_custom_fields
from views.selector_parts.disagg import disagg_tab
from views.selector_parts.form import inputs_form
from views.selector_parts.nearest import nearest_names, show_nearest
from views.selector_parts.state import TABS, from_widget, state
from views.selector_parts.tabs import engines_tab, launch_tab, memory_tab, reasons_tab


def body() -> None:
    """Draw the page."""
    st.title(_("What should we run?"))
    st.caption(
        _(
            "The handbook's rules (sections 1.2, 3.2, 4, 5, 6.2) checked against today's engines: GPU, model and "
            "workload in; engine, quantization, KV cache, speculative decoding, memory fit and a launch command out. "
            "The URL keeps every input."
        )
    )
    nearest_slot = st.container()
    nearest_names()
    with names_worded_by(_):  # an unknown GPU, model, engine or quantization in the link, said in the page's language
        state.load()
    state.show_notes()
    keep_custom_fields()
    _advice(nearest_slot)
    # The form comes after the advice (the sidebar keeps its place): a shared link's card is not held back by it.
    if not stopped_at_headline():
        with st.sidebar:
            inputs_form()


def _advice(nearest_slot: DeltaGenerator) -> None:
    """The advice for the form's inputs, or why there is none."""
    with names_worded_by(_):
        request, errors = state.read(from_widget)
    if request is None:
        show_nearest(nearest_slot, None, None)
        show_errors(_("Check these inputs; the advice updates once they are valid."), errors)
        return
    try:
        advice = advise(request, language=language())
    except (SelectorError, NameLookupError) as exc:
        show_nearest(nearest_slot, request, None)
        st.error(str(exc), icon="🚫")
        return
    show_nearest(nearest_slot, request, advice)
    for warning in advice.warnings:
        st.warning(warning, icon="⚠️")
    if not card(advice):
        return
    # Lazy tabs: only the open one runs, so the recommendation is not held back by charts (docs/performance.md).
    why, memory, launch, engines, pools = st.tabs(
        [_("Why"), _("Memory fit"), _("Launch command"), _("Engines compared"), _("Separate pools")],
        key=TABS,
        on_change="rerun",
    )
    with why:
        reasons_tab(advice)
    if memory.open:
        with memory:
            memory_tab(advice)
    if launch.open:
        with launch:
            launch_tab(advice)
    if engines.open:
        with engines:
            engines_tab(advice)
    if pools.open:
        with pools:
            disagg_tab(request, advice)


guarded(body)
