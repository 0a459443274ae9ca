"""A page's input model bound to its widgets and its URL: load from the link, validate the form, write back."""

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import streamlit as st
from pydantic import BaseModel
from streamlit.delta_generator import DeltaGenerator

from ui.lang import _, lang_param
from ui.params import aliases, to_params, validate_params

M = TypeVar("M", bound=BaseModel)


def plain_widget_value(_alias: str, value: object) -> object:
    """Widgets hold plain values: enums by their value, tuples as lists."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


SCENARIO_PARAM = "s"


@dataclass
class PageState(Generic[M]):
    """Binds one page's frozen input model to widget keys ('<page>.<param>') and to the query string."""

    page: str
    model_cls: type[M]
    to_widget: Callable[[str, object], object] = plain_widget_value
    load_base: Callable[[str], tuple[dict[str, str] | None, str | None]] | None = None
    _notes_slot: DeltaGenerator | None = field(
        default=None, init=False, repr=False
    )  # this run's notes, cleared once stale

    def key(self, alias: str) -> str:
        """The widget key of a parameter."""
        return f"{self.page}.{alias}"

    @property
    def _url_key(self) -> str:
        return f"_{self.page}.url"

    @property
    def _notes_key(self) -> str:
        return f"_{self.page}.notes"

    @property
    def _scenario_key(self) -> str:
        return f"_{self.page}.scenario"

    def load(self) -> None:
        """When the URL changed from outside (first load, a shared link, back button), push it into the widgets."""
        params = st.query_params.to_dict()
        signature = sorted(params.items())
        widget_keys = [self.key(a) for a in aliases(self.model_cls).values()]
        if st.session_state.get(self._url_key) == signature and all(k in st.session_state for k in widget_keys):
            return
        notes: list[tuple[str, str]] = []
        base: dict[str, str] = {}
        scenario = params.pop(SCENARIO_PARAM, None)
        st.session_state[self._scenario_key] = None
        if scenario is not None and self.load_base is not None:
            loaded, message = self.load_base(scenario)
            if loaded is None:
                notes.append(
                    (
                        "warning",
                        message or _("Scenario '{id}' was not found. Showing the defaults.").format(id=scenario),
                    )
                )
            else:
                base = loaded
                st.session_state[self._scenario_key] = (scenario, loaded)
                if message:
                    notes.append(("info", message))
        merged: dict[str, object] = {**base, **params}
        model, messages, _rejected = validate_params(self.model_cls, merged, source="url", tr=_)
        notes.extend(("warning", m) for m in messages)
        self.set_widgets(model)
        st.session_state[self._notes_key] = (model, notes)
        st.session_state[self._url_key] = signature

    def set_widgets(self, model: M) -> None:
        """Write a model's values into the widget state (only call before the widgets are drawn)."""
        for name, alias in aliases(self.model_cls).items():
            st.session_state[self.key(alias)] = self.to_widget(alias, getattr(model, name))

    def show_notes(self) -> None:
        """Show what loading the link had to say (bad parameters, unknown scenario) until the inputs change."""
        _, notes = st.session_state.get(self._notes_key, (None, []))
        self._notes_slot = st.empty()
        if not notes:
            return
        with self._notes_slot.container():
            for level, message in notes:
                (st.warning if level == "warning" else st.info)(message, icon="⚠️" if level == "warning" else "ℹ️")

    def read(self, from_widget: Callable[[str, object], object] | None = None) -> tuple[M | None, list[str]]:
        """Validate what the widgets hold; on success write it back to the URL. Returns (model or None, errors)."""
        values: dict[str, object] = {}
        for alias in aliases(self.model_cls).values():
            value = st.session_state.get(self.key(alias))
            values[alias] = from_widget(alias, value) if from_widget else value
        model, errors, _rejected = validate_params(self.model_cls, values, source="form", tr=_)
        loaded, _notes = st.session_state.get(self._notes_key, (None, []))
        if loaded is not None and model != loaded:
            st.session_state.pop(self._notes_key, None)  # the user has moved on from the link
            if self._notes_slot is not None:
                self._notes_slot.empty()  # drawn above in this same run; it no longer applies
        if errors:
            return None, errors
        self.write_url(model)
        return model, []

    def write_url(self, model: M, extra: Mapping[str, str] | None = None) -> None:
        """Put the model in the query string (defaults omitted), keeping ?s= while it still matches."""
        params = to_params(model)
        saved = st.session_state.get(self._scenario_key)
        if saved is not None:
            scenario_id, scenario_params = saved
            if to_params(validate_params(self.model_cls, scenario_params)[0]) == params:
                params = {SCENARIO_PARAM: scenario_id, **params}
            else:
                st.session_state[self._scenario_key] = None
        if extra:
            params.update(extra)
        params.update(lang_param())
        if st.query_params.to_dict() != params:
            st.query_params.from_dict(params)
        st.session_state[self._url_key] = sorted(params.items())

    def mark_scenario(self, scenario_id: str, params: dict[str, str]) -> None:
        """After saving: the URL becomes the short link while the inputs stay as saved."""
        st.session_state[self._scenario_key] = (scenario_id, params)
        linked = {SCENARIO_PARAM: scenario_id, **params, **lang_param()}
        st.query_params.from_dict(linked)
        st.session_state[self._url_key] = sorted(linked.items())
