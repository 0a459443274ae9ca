"""The probe form's widgets, each labelled, explained and bounded by its settings field."""

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from streamlit.delta_generator import DeltaGenerator

from probes.field_text import allowed_text, limits_of, max_length_of
from ui.lang import _
from ui.params import field_alias
from ui.state import PageState


def form_field(model_cls: type[BaseModel], alias: str) -> FieldInfo:
    """The field behind a URL parameter."""
    for name, field in model_cls.model_fields.items():
        if field_alias(name, field) == alias:
            return field
    raise KeyError(alias)


def field_label(field: FieldInfo, alias: str) -> str:
    """A widget's label: the field's title in the session's language (the alias when it has none)."""
    return _(field.title) if field.title else alias


def field_help(field: FieldInfo, hint: str = "") -> str:
    """A widget's help: the field's description, a page hint, and the values it allows (in the session's language)."""
    allowed = allowed_text(field, _) if field.annotation is not bool else None
    parts = [
        _(field.description) if field.description else "",
        hint,
        _("Allowed: {values}.").format(values=allowed) if allowed else "",
    ]
    return " ".join(part for part in parts if part)


def number_field(
    where: DeltaGenerator,
    state: PageState[Any],
    alias: str,
    *,
    step: float,
    fmt: str | None = None,
    placeholder: str | None = None,
) -> None:
    """A number input labelled, explained and bounded by its field; one without a default may stay empty.

    Only inclusive bounds go to the widget: an excluded one (> 0) is checked when the form is read.
    """
    field = form_field(state.model_cls, alias)
    as_type = int if field.annotation in (int, int | None) else float
    low, high, exclusive = limits_of(field)
    bounds: dict[str, Any] = {}
    if low is not None and not exclusive:
        bounds["min_value"] = as_type(low)
    if high is not None:
        bounds["max_value"] = as_type(high)
    if field.default is None:
        bounds.update(value=None, placeholder=placeholder)
    where.number_input(
        field_label(field, alias),
        key=state.key(alias),
        step=as_type(step),
        format=fmt,
        help=field_help(field),
        **bounds,
    )


def text_field(
    where: DeltaGenerator, state: PageState[Any], alias: str, *, placeholder: str | None = None, hint: str = ""
) -> None:
    """A text input labelled, explained and length-limited by its field."""
    field = form_field(state.model_cls, alias)
    max_chars = max_length_of(field)
    where.text_input(
        field_label(field, alias),
        key=state.key(alias),
        max_chars=max_chars,
        placeholder=placeholder,
        help=field_help(field, hint),
    )


def choice_field(where: DeltaGenerator, state: PageState[Any], alias: str, labels: Mapping[str, str]) -> None:
    """A select box over the field's values, shown by their labels (marked texts, translated here)."""
    field = form_field(state.model_cls, alias)
    shown = {value: _(label) for value, label in labels.items()}  # worded now: format_func may run outside the page
    where.selectbox(
        field_label(field, alias),
        list(labels),
        key=state.key(alias),
        format_func=shown.__getitem__,
        help=field_help(field),
    )


def catalog_field(
    where: DeltaGenerator, state: PageState[Any], alias: str, names: Mapping[str, str], *, placeholder: str
) -> None:
    """A select box over catalog ids shown by their names, empty until one is picked (a marked name is translated)."""
    field = form_field(state.model_cls, alias)
    shown = {value: _(name) for value, name in names.items()}  # worded now: format_func may run outside the page
    where.selectbox(
        field_label(field, alias),
        list(names),
        key=state.key(alias),
        index=None,
        format_func=lambda value: shown.get(value, value),
        placeholder=placeholder,
        help=field_help(field),
    )


def toggle_field(where: DeltaGenerator, state: PageState[Any], alias: str) -> None:
    """A toggle for a true/false field."""
    field = form_field(state.model_cls, alias)
    where.toggle(field_label(field, alias), key=state.key(alias), help=field_help(field))
