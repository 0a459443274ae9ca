"""Names in the advisor's link read as their nearest match, and the warning that says so."""

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from catalog import load_engines, load_quant_methods
from selector import Advice, AdviceRequest, nearest_params
from ui.lang import _

_NEAREST_NOTES = "_selector.nearest"  # alias -> (note, the value the link's name was read as), while it stands


def nearest_names() -> None:
    """Read an unknown name in the link as its clear nearest match before the page reads the link; note it."""
    fixed, notes = nearest_params(st.query_params.to_dict(), tr=_)
    if notes:
        st.query_params.from_dict(fixed)
        st.session_state[_NEAREST_NOTES] = {alias: (note, fixed[alias]) for alias, note in notes.items()}


def _shown_for(alias: str, value: str, advice: Advice | None) -> str:
    """What the advice below actually uses for a parameter read as `value` (it may not use a pinned engine)."""
    if advice is None:
        return ""
    if alias == "engine":
        if advice.engine != value:
            name = next((e.name for e in load_engines() if e.id == value), value)
            return _("{name} cannot be used here, so the advice below is for {engine} (see why below).").format(
                name=name, engine=advice.engine_name
            )
        return _("The advice below is for {engine}.").format(engine=advice.engine_name)
    if alias == "quant":
        if advice.quantization != value:
            name = next((q.name for q in load_quant_methods() if q.id == value), value)
            return _("{name} cannot be used here, so the advice below uses {method}.").format(
                name=name, method=advice.quantization_name
            )
        return _("The advice below uses {method}.").format(method=advice.quantization_name)
    if alias == "gpu":
        return _("The advice below is for the {gpu}.").format(gpu=advice.gpu_name)
    return _("The advice below is for {model}.").format(model=advice.model_name)


def show_nearest(slot: DeltaGenerator, request: AdviceRequest | None, advice: Advice | None) -> None:
    """One warning per name read as its nearest match, saying what is shown; dropped once the user changes it."""
    notes: dict[str, tuple[str, str]] = st.session_state.get(_NEAREST_NOTES, {})
    if request is not None:
        notes = {a: (n, v) for a, (n, v) in notes.items() if str(getattr(request, a)) == v}
        st.session_state[_NEAREST_NOTES] = notes
    for alias, (note, value) in notes.items():
        shown = _shown_for(alias, value, advice)
        slot.warning(_("{first} {second}").format(first=note, second=shown) if shown else note, icon="⚠️")
