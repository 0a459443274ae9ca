"""`python -m perf`'s flags, generated from PerfRequest: one flag a field, its help, default, choices and limits.

A flag is the field's name hyphenated; a nested model's fields (the SLO's three) get one flag each. Every value
arrives as text and the request model checks it. Only a value that is not one field's text has a typed parser,
registered by field: a list of levels with 'max', a list of rates, and a config.json for a custom model.
"""

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from catalog.models import CUSTOM_MODEL
from perf.inputs import PerfRequest
from selector import AdviceRequest, SelectorError
from selector.cli import read_config
from selector.hfconfig import ConfigError


class CliError(ValueError):
    """A flag's value that cannot be read (the message names the flag and what it takes)."""


Parse = Callable[[str], dict[str, Any]]
"""A typed parser: a flag's text to the fields it sets."""


@dataclass(frozen=True)
class Parser:
    """A field whose flag's text is not the field's own value: how to read it and what else it sets."""

    parse: Parse
    flag: str = ""  # the flag's name when it is not the field's ('' = the field's name, hyphenated)
    sets: tuple[str, ...] = ()  # fields it sets besides its own, which have no flag of their own
    replaces: tuple[str, ...] = ()  # fields it sets whose own flag it stands in for (so theirs is not required)
    metavar: str = ""
    help: str = ""  # what the flag's text is, when it is not what the field describes


@dataclass(frozen=True)
class Flag:
    """One flag: its names (the first shown in --help, the others accepted but hidden) and the fields it sets."""

    names: tuple[str, ...]
    field: str  # the field, dotted for a nested model's field ("slo.ttft_p50_ms")
    info: FieldInfo
    parser: Parser | None = None

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields this flag alone sets: its own and those without a flag of their own."""
        return (self.field, *(self.parser.sets if self.parser else ()))


def _levels(text: str) -> dict[str, Any]:
    """'1,10,50' -> levels; 'max' (alone or in the list) asks for the highest-throughput point."""
    parts = [p.strip().lower() for p in text.split(",") if p.strip()]
    bad = [p for p in parts if p != "max" and not p.isdigit()]
    if bad:
        raise CliError(
            f"--concurrency: '{bad[0]}' is not a whole number; give levels like 1,10,50 and/or 'max' (1 to 65536)"
        )
    return {"concurrency": tuple(int(p) for p in parts if p != "max"), "max_throughput": "max" in parts}


def _rates(text: str) -> dict[str, Any]:
    out = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            out.append(float(part))
        except ValueError:
            raise CliError(f"--request-rate: '{part}' is not a number; give requests/s like 1,2.5,8") from None
    return {"request_rates_rps": tuple(out)}


def _custom(path: str) -> dict[str, Any]:
    """A config.json as the advisor's custom model (CliError names what the file lacks)."""
    try:
        parsed = read_config(path)
    except (ConfigError, SelectorError) as exc:
        raise CliError(f"--config: {exc}") from exc
    return {"model": CUSTOM_MODEL, "custom": AdviceRequest.model_validate({**parsed.fields, "model": CUSTOM_MODEL})}


PARSERS: dict[str, Parser] = {
    "concurrency": Parser(_levels, sets=("max_throughput",)),
    "request_rates_rps": Parser(_rates, flag="--request-rate"),
    "custom": Parser(
        _custom,
        flag="--config",
        replaces=("model",),
        metavar="PATH",
        help="a Hugging Face config.json: estimates a model outside the catalog (instead of --model)",
    ),
}
"""The typed parsers, by field."""

ALIASES: dict[str, tuple[str, ...]] = {"kv_cache": ("--kv-cache-dtype", "--kv-cache")}
"""A field's names when it has two: the first is shown, the others are accepted."""


def _flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def _nested(info: FieldInfo) -> type[BaseModel] | None:
    annotation = info.annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def flags() -> Iterator[Flag]:
    """PerfRequest's flags: a field's own, a nested model's fields', none for a field another flag sets."""
    set_by_others = {name for parser in PARSERS.values() for name in parser.sets}
    for name, info in PerfRequest.model_fields.items():
        nested = _nested(info)
        parser = PARSERS.get(name)
        if nested is not None and parser is None:
            for sub, sub_info in nested.model_fields.items():
                yield Flag(names=(_flag_name(sub),), field=f"{name}.{sub}", info=sub_info)
        elif name not in set_by_others:
            names = ALIASES.get(name) or ((parser.flag,) if parser and parser.flag else (_flag_name(name),))
            yield Flag(names=names, field=name, info=info, parser=parser)


def _number(value: float) -> str:
    """A default or a limit as people write it: 1000 not 1000.0, 0.7 as it is."""
    return str(int(value)) if float(value).is_integer() else str(value)


def default_text(info: FieldInfo) -> str:
    """The default as --help states it; '' when there is none to state (the description words an unset one)."""
    if info.is_required():
        return ""
    value = info.get_default(call_default_factory=True)
    if value is None or value == "" or value == () or isinstance(value, bool):
        return ""
    if isinstance(value, tuple):
        return ",".join(_number(v) for v in value)
    if isinstance(value, int | float):
        return _number(value)
    return str(value)


def allowed_text(info: FieldInfo) -> str:
    """The field's limits in words ('1–1024', '≥ 0, < 1', '> 0'); '' when it has none."""
    low = high = ""
    for item in info.metadata:
        if isinstance(item, Ge):
            low = f"≥ {_number(float(item.ge))}"  # type: ignore[arg-type]
        elif isinstance(item, Gt):
            low = f"> {_number(float(item.gt))}"  # type: ignore[arg-type]
        elif isinstance(item, Le):
            high = f"≤ {_number(float(item.le))}"  # type: ignore[arg-type]
        elif isinstance(item, Lt):
            high = f"< {_number(float(item.lt))}"  # type: ignore[arg-type]
    if low.startswith("≥") and high.startswith("≤"):
        return f"{low[2:]}–{high[2:]}"
    return ", ".join(part for part in (low, high) if part)


def _help(flag: Flag) -> str:
    if flag.parser and flag.parser.help:
        return flag.parser.help
    default, allowed = default_text(flag.info), allowed_text(flag.info)
    notes = [f"default: {default}"] * bool(default) + [f"allowed: {allowed}"] * bool(allowed)
    text = flag.info.description or ""
    if notes and text.endswith(")") and "(default: " in text:  # a default the description words: one parenthesis
        text = f"{text[:-1]}; {'; '.join(notes)})"
    elif notes:
        text = f"{text} ({'; '.join(notes)})"
    return text.replace("%", "%%")  # argparse formats help with %


def add_flags(parser: argparse.ArgumentParser) -> None:
    """PerfRequest's flags on `parser` (whose argument_default is SUPPRESS: the model holds the defaults)."""
    replaced = {name for p in PARSERS.values() for name in p.replaces}
    for flag in flags():
        kwargs: dict[str, Any] = {"dest": flag.field, "help": _help(flag)}
        annotation = flag.info.annotation
        if annotation is bool:
            kwargs["action"] = "store_const"
            kwargs["const"] = not flag.info.get_default()
        elif get_origin(annotation) is Literal:
            kwargs["metavar"] = "{" + ",".join(str(v) for v in get_args(annotation)) + "}"
        else:
            own = flag.names[0].removeprefix("--").replace("-", "_").upper()
            kwargs["metavar"] = (flag.parser.metavar if flag.parser else "") or own
            kwargs["required"] = flag.info.is_required() and flag.field not in replaced
        first, *hidden = flag.names
        parser.add_argument(first, **kwargs)
        for alias in hidden:
            parser.add_argument(alias, **{**kwargs, "help": argparse.SUPPRESS, "required": False})


def request_fields(given: dict[str, Any]) -> dict[str, Any]:
    """The parsed flags (text by field, as add_flags stores them) as PerfRequest's fields."""
    fields: dict[str, Any] = {}
    for flag in flags():
        if flag.field not in given:
            continue
        value = given[flag.field]
        if flag.parser:
            fields |= flag.parser.parse(value)
        elif "." in flag.field:
            outer, inner = flag.field.split(".", 1)
            fields.setdefault(outer, {})[inner] = value
        else:
            fields[flag.field] = value
    return fields


def flag_of(loc: tuple[str, ...]) -> str:
    """The flag of a field a validation error names ('' when none does)."""
    if not loc:
        return ""
    dotted = ".".join(loc)
    return next((f.names[0] for f in flags() if dotted == f.field or loc[0] in f.fields), "")
