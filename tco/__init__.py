"""The cost model: pure functions over pydantic models (no I/O, no Streamlit)."""

from tco.cost import Capacity, Fleet, capacity, fleet
from tco.estimate import TcoResult, estimate
from tco.inputs import CUSTOM_GPU, TcoInputs
from tco.levers import LeverChain, LeverStep, lever_chain
from tco.money import Currency, convert, format_money

__all__ = [
    "CUSTOM_GPU",
    "Capacity",
    "Currency",
    "Fleet",
    "LeverChain",
    "LeverStep",
    "TcoInputs",
    "TcoResult",
    "capacity",
    "convert",
    "estimate",
    "fleet",
    "format_money",
    "lever_chain",
]
