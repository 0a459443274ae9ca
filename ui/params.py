"""Pydantic input models <-> readable query parameters, with every bad value named and replaced by its default."""

import enum
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from i18n import N_, Translate, identity

M = TypeVar("M", bound=BaseModel)

LIST_SEPARATOR = ","
_MAX_SHOWN_CHARS = 60


def field_alias(name: str, field: FieldInfo) -> str:
    """The query parameter name of a field (its alias, else its name)."""
    return field.alias or name


def aliases(model_cls: type[BaseModel]) -> dict[str, str]:
    """Field name -> query parameter name."""
    return {name: field_alias(name, f) for name, f in model_cls.model_fields.items()}


def field_label(model_cls: type[BaseModel], alias: str) -> str:
    """A readable label for a parameter: the field's title, else its name."""
    for name, field in model_cls.model_fields.items():
        if field_alias(name, field) == alias:
            return field.title or name.replace("_", " ")
    return alias


def _is_sequence_field(field: FieldInfo) -> bool:
    annotation = field.annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return any(typing.get_origin(arg) in (list, tuple) for arg in typing.get_args(annotation))
    return origin in (list, tuple)


def _shown(raw: object) -> str:
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in str(raw))  # '\x00', not an invisible byte
    return text if len(text) <= _MAX_SHOWN_CHARS else text[: _MAX_SHOWN_CHARS - 1] + "…"


_BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def allowed_range(field: FieldInfo, tr: Translate = identity) -> str:
    """A number field's bounds as a person reads them ('from 1 to 4096', 'more than 0'); '' when unbounded."""
    bounds: dict[str, object] = {}
    for item in field.metadata:
        for name in ("ge", "gt", "le", "lt"):
            if getattr(item, name, None) is not None:
                bounds[name] = getattr(item, name)
    if "ge" in bounds and "le" in bounds:
        return tr("from {low} to {high}").format(low=format_value(bounds["ge"]), high=format_value(bounds["le"]))
    words = {
        "ge": N_("at least {limit}"),
        "gt": N_("more than {limit}"),
        "le": N_("at most {limit}"),
        "lt": N_("less than {limit}"),
    }
    return tr(" and ").join(tr(words[name]).format(limit=format_value(value)) for name, value in bounds.items())


# Pydantic's error types, as a reason in the page's language (English keeps pydantic's own words).
_REASONS = {
    "greater_than": (N_("must be more than {limit}"), "gt"),
    "greater_than_equal": (N_("must be at least {limit}"), "ge"),
    "less_than": (N_("must be less than {limit}"), "lt"),
    "less_than_equal": (N_("must be at most {limit}"), "le"),
    "float_parsing": (N_("must be a number"), ""),
    "float_type": (N_("must be a number"), ""),
    "finite_number": (N_("must be a finite number"), ""),
    "int_parsing": (N_("must be a whole number"), ""),
    "int_type": (N_("must be a whole number"), ""),
    "int_from_float": (N_("must be a whole number"), ""),
    "bool_parsing": (N_("must be true or false"), ""),
    "enum": (N_("must be one of {limit}"), "expected"),
    "literal_error": (N_("must be one of {limit}"), "expected"),
    "string_too_long": (N_("must be at most {limit} characters"), "max_length"),
}


def _reason(error: Mapping[str, Any], tr: Translate) -> str:
    """Why a value was refused: pydantic's message, or its translation when the page's language has one."""
    reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
    known = _REASONS.get(str(error.get("type")))
    if known is None or tr(known[0]) == known[0]:
        return reason
    template, key = known
    limit = (error.get("ctx") or {}).get(key, "") if key else ""
    return tr(template).format(limit=format_value(limit))


def format_value(value: object) -> str:
    """A value as it reads in a URL: 15 not 15.0, true/false, enums by value, lists comma-joined."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return format_value(value.value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, (list, tuple)):
        return LIST_SEPARATOR.join(format_value(v) for v in value)
    return str(value)


def _prepare(model_cls: type[BaseModel], raw: Mapping[str, object]) -> dict[str, object]:
    """Keep only the model's parameters; split comma lists."""
    by_alias = {field_alias(n, f): f for n, f in model_cls.model_fields.items()}
    prepared: dict[str, object] = {}
    for alias, value in raw.items():
        field = by_alias.get(alias)
        if field is None:
            continue
        if isinstance(value, str) and _is_sequence_field(field):
            value = [part.strip() for part in value.split(LIST_SEPARATOR) if part.strip()]
        prepared[alias] = value
    return prepared


def _error_message(
    model_cls: type[BaseModel], alias: str, error: Mapping[str, Any], raw: object, source: str, tr: Translate
) -> str:
    label = tr(field_label(model_cls, alias))
    reason = _reason(error, tr)
    field = next((f for n, f in model_cls.model_fields.items() if field_alias(n, f) == alias), None)
    bounds = allowed_range(field, tr) if field is not None and error.get("type") not in _BOUND_ERRORS else ""
    allowed = tr(" Allowed: {bounds}.").format(bounds=bounds) if bounds else ""
    if source == "url":
        default = format_value(field.get_default(call_default_factory=True)) if field is not None else ""
        instead = tr("the default ({value})").format(value=_shown(default)) if default else tr("the default")
        return tr("URL parameter `{alias}` ({label}): {reason}; got '{raw}'.{allowed} Using {instead} instead.").format(
            alias=alias, label=label, reason=reason, raw=_shown(raw), allowed=allowed, instead=instead
        )
    return tr("{label}: {reason}; you entered '{raw}'.{allowed}").format(
        label=label, reason=reason, raw=_shown(raw), allowed=allowed
    )


def validate_params(
    model_cls: type[M], raw: Mapping[str, object], *, source: str = "url", tr: Translate = identity
) -> tuple[M, list[str], dict[str, object]]:
    """Build the model from raw values; each invalid value is dropped (its default used) and named in a message.

    Returns the model, the messages (worded by `tr`), and the raw values that were rejected (alias -> value).
    """
    values = _prepare(model_cls, raw)
    messages: list[str] = []
    rejected: dict[str, object] = {}
    for _ in range(len(values) + 2):
        try:
            return model_cls.model_validate(values), messages, rejected
        except ValidationError as exc:
            dropped = False
            dropped_now: set[str] = set()
            for error in exc.errors():
                loc = error.get("loc") or ()
                alias = str(loc[0]) if loc else ""
                if alias in dropped_now:
                    continue  # a second complaint about a value already set aside
                if alias in values:
                    dropped_now.add(alias)
                    rejected[alias] = raw.get(alias, values[alias])
                    messages.append(_error_message(model_cls, alias, error, rejected[alias], source, tr))
                    values.pop(alias)
                    dropped = True
                elif not loc or alias not in values:
                    # A rule across several fields: name it and fall back to every default.
                    reason = str(error.get("msg", "invalid combination")).removeprefix("Value error, ")
                    messages.append(
                        tr("{reason}. Using the defaults instead.").format(reason=reason)
                        if source == "url"
                        else reason + "."
                    )
                    rejected.update(values)
                    values = {}
                    dropped = True
                    break
            if not dropped:
                break
    return model_cls(), messages, rejected


def to_params(model: BaseModel, *, keep_defaults: bool = False) -> dict[str, str]:
    """The model as query parameters, defaults omitted."""
    default = type(model)()
    params: dict[str, str] = {}
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        if not keep_defaults and value == getattr(default, name):
            continue
        params[field_alias(name, field)] = format_value(value)
    return params
