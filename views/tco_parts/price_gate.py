"""The cost page's price: a link that names a GPU fills that GPU's own price, or asks for one; never a stand-in."""

from collections.abc import Callable

import streamlit as st

from catalog import find_gpu
from tco import CUSTOM_GPU
from tco.inputs import catalog_price
from ui.lang import _
from ui.resources import price_book

_SEEN = "_tco.price_gate"  # the query string the gate last looked at
SCENARIO = "s"


def fill_link_price(key: Callable[[str], str]) -> None:
    """A link that names a GPU but no price gets the GPU's lowest public price, or none at all.

    Without this the page's default price (the handbook's A800 at 15 CNY) would stand in for a GPU it is not.
    """
    params = st.query_params.to_dict()
    signature = sorted(params.items())
    if st.session_state.get(_SEEN) == signature:
        return
    st.session_state[_SEEN] = signature
    if "gpu" not in params or "price" in params or SCENARIO in params:
        return
    gpu_id = st.session_state.get(key("gpu"))
    st.session_state[key("price")] = catalog_price(
        str(gpu_id), st.session_state[key("currency")], st.session_state[key("fx")], book=price_book()
    )


def price_missing(key: Callable[[str], str]) -> bool:
    """The GPU has no price yet: say so and what to do; the caller then computes nothing."""
    if st.session_state.get(key("price")) is not None:
        return False
    gpu_id = str(st.session_state.get(key("gpu")))
    name = _("this custom GPU") if gpu_id == CUSTOM_GPU else find_gpu(gpu_id).name
    st.warning(
        _(
            "No price for {gpu}: enter your price per GPU-hour under Scenario (sidebar) to see its cost. Nothing is "
            "computed from another GPU's price."
        ).format(gpu=name),
        icon=":material/sell:",
    )
    return True
