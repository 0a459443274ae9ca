"""How an option reads in words: its flag, whether the command line needs it, its limits, allowed values, default.

Read from each pydantic field's metadata: its constraints, and these json_schema_extra keys.
"""

from enum import Enum
from typing import Any

from annotated_types import Ge, Gt, Le, Lt, MaxLen
from pydantic.fields import FieldInfo

from i18n import Translate, identity
from probes.deployment import ALLOWED
from probes.ratesearch import MAX_RATE_RPS

# Field metadata read by the command line and the docs (json_schema_extra keys):
FLAG = "flag"  # the CLI flag when it is not --<field-name>; a bool's flag sets the opposite of its default
# ALLOWED (probes/deployment.py): the allowed values in words, when Field constraints do not say it
CLI_REQUIRED = "cli_required"  # the command line needs it (the page starts from the default)
# The limits an ALLOWED text may name ({max_levels}, {max_rate}).
MAX_LEVELS = 32
MAX_RATE = MAX_RATE_RPS  # requests/s, per rate level


def _extra(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def flag_of(name: str, field: FieldInfo) -> str:
    """The command-line flag of a field: its own, else --<field-name> with hyphens."""
    return str(_extra(field).get(FLAG) or "--" + name.replace("_", "-"))


def required_on_cli(field: FieldInfo) -> bool:
    """True when the command line has no default for the field."""
    return bool(_extra(field).get(CLI_REQUIRED))


def number_text(value: float) -> str:
    """A limit or default as people write it: 100000 not 100000.0 or 1e5."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def limits_of(field: FieldInfo) -> tuple[float | None, float | None, bool]:
    """The field's numeric bounds: (lowest, highest, lowest excluded), None where unbounded."""
    low: float | None = None
    high: float | None = None
    exclusive = False
    for item in field.metadata:
        if isinstance(item, Ge):
            low = float(item.ge)  # type: ignore[arg-type]
        elif isinstance(item, Gt):
            low, exclusive = float(item.gt), True  # type: ignore[arg-type]
        elif isinstance(item, Le):
            high = float(item.le)  # type: ignore[arg-type]
        elif isinstance(item, Lt):
            high = float(item.lt)  # type: ignore[arg-type]
    return low, high, exclusive


def max_length_of(field: FieldInfo) -> int | None:
    """The longest text a field takes, None: unbounded."""
    return next((item.max_length for item in field.metadata if isinstance(item, MaxLen)), None)


def allowed_text(field: FieldInfo, tr: Translate = identity) -> str | None:
    """The values a field accepts, in words ("1–100000", "> 0, ≤ 600", "chat, completions"); None: any."""
    stated = _extra(field).get(ALLOWED)
    if stated:
        return tr(str(stated)).format(max_levels=MAX_LEVELS, max_rate=f"{MAX_RATE:.0f}")
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return ", ".join(kind.value for kind in annotation)
    if annotation is bool:
        return "true, false"
    max_length = max_length_of(field)
    if max_length is not None:
        return tr("up to {count} characters").format(count=max_length)
    low, high, exclusive = limits_of(field)
    if high is None:
        return None if low is None else f"{'>' if exclusive else '≥'} {number_text(low)}"
    if low is None:
        return f"≤ {number_text(high)}"
    if exclusive:
        return f"> {number_text(low)}, ≤ {number_text(high)}"
    return f"{number_text(low)}–{number_text(high)}"


def default_text(field: FieldInfo) -> str:
    """A field's default as the command line's help and docs state it ("off" for a flag not given)."""
    if required_on_cli(field):
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, bool):
        return "off"
    if value is None:
        return "none"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value) or "none"
    if isinstance(value, float):
        return number_text(value)
    return str(value) if value != "" else "empty"
