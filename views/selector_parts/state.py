"""The advisor page's state: its URL parameters as widgets (views/selector.py)."""

from selector import AdviceRequest
from ui.state import PageState

PAGE = "selector"
TABS = "_selector.tab"  # the open tab of the advice (lazy: the others do not run)
_YES_NO = {"build_engines", "qlora", "tie_embeddings"}


def to_widget(alias: str, value: object) -> object:
    if alias in _YES_NO:
        return getattr(value, "value", value) == "yes"
    return getattr(value, "value", value)


def from_widget(alias: str, value: object) -> object:
    if alias in _YES_NO and isinstance(value, bool):
        return "yes" if value else "no"
    return value


state = PageState(PAGE, AdviceRequest, to_widget=to_widget)
K = state.key
