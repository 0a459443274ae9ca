"""A trace file's lines as requests or problems: one reader per format (probes/traces.py checks, slices and replays)."""

import csv
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from enum import StrEnum
from typing import TextIO

from probes.errors import LineProblem


class TraceFormat(StrEnum):
    """How a trace file is written."""

    MOONCAKE = "mooncake"  # JSONL: timestamp (ms), input_length, output_length, hash_ids
    AZURE = "azure"  # Azure LLM inference 2023 CSV: TIMESTAMP, ContextTokens, GeneratedTokens
    CSV = "csv"  # timestamp_s, input_tokens, output_tokens


@dataclass(frozen=True, slots=True)
class TraceRow:
    line: int
    time: float | int  # the format's own unit: ms (mooncake), ns (azure), s (csv)
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


SECONDS_PER_UNIT = {TraceFormat.MOONCAKE: 1e-3, TraceFormat.AZURE: 1e-9, TraceFormat.CSV: 1.0}
COLUMNS = {
    TraceFormat.AZURE: ("TIMESTAMP", "ContextTokens", "GeneratedTokens"),
    TraceFormat.CSV: ("timestamp_s", "input_tokens", "output_tokens"),
}
_AZURE_TIME = re.compile(
    r"\s*(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?\s*(Z|[+-]\d{2}:?\d{2})?\s*$"
)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(value: object) -> int | None:
    """A whole number >= 1 from JSON (int, integral float) or CSV text; None otherwise."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 1 else None


def _number(value: object) -> float | None:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _azure_ns(text: str) -> int | None:
    """Nanoseconds since 0001-01-01 of ``2023-11-16 18:17:03.9799600`` (exact, any offset applied); None if bad."""
    m = _AZURE_TIME.match(text)
    if not m:
        return None
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        days = date(year, month, day).toordinal()
    except ValueError:
        return None
    if hour > 23 or minute > 59 or second > 60:
        return None
    fraction, zone = m.group(7) or "", m.group(8)
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return seconds * 1_000_000_000 + int(fraction.ljust(9, "0"))


def mooncake_row(line: int, text: str) -> TraceRow | LineProblem:
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return LineProblem(line, f"not JSON ({exc})")
    if not isinstance(obj, dict):
        return LineProblem(line, "not a JSON object")
    missing = [k for k in ("timestamp", "input_length", "output_length") if k not in obj]
    if missing:
        return LineProblem(line, f"missing {', '.join(missing)}")
    time = _number(obj["timestamp"])
    if time is None:
        return LineProblem(line, f"timestamp is not a number of milliseconds ({_show(obj['timestamp'])})")
    lengths = []
    for key in ("input_length", "output_length"):
        n = _whole(obj[key])
        if n is None:
            return LineProblem(line, f"{key} is not a whole number ≥ 1 ({_show(obj[key])})")
        lengths.append(n)
    ids = obj.get("hash_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
        return LineProblem(line, f"hash_ids is not a list of whole numbers ≥ 0 ({_show(ids)})")
    return TraceRow(line, time, lengths[0], lengths[1], tuple(ids))


def csv_rows(fmt: TraceFormat, handle: TextIO) -> Iterator[TraceRow | LineProblem]:
    reader = csv.reader(handle)
    wanted = COLUMNS[fmt]
    try:
        header = next(reader, None)
        while header is not None and not any(c.strip() for c in header):
            header = next(reader, None)
    except csv.Error as exc:
        yield LineProblem(reader.line_num, f"not CSV ({exc})")
        return
    names = [c.strip().lower() for c in header or []]
    if any(w.lower() not in names for w in wanted):
        found = ",".join(c.strip() for c in header or []) or "nothing"
        yield LineProblem(max(reader.line_num, 1), f"the {fmt} header must name {','.join(wanted)} (found {found})")
        return
    at = [names.index(w.lower()) for w in wanted]
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield LineProblem(reader.line_num, f"not CSV ({exc})")
            continue
        line = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(names):
            yield LineProblem(line, f"expected {len(names)} fields, found {len(row)}")
            continue
        raw_time = row[at[0]]
        time = _azure_ns(raw_time) if fmt == TraceFormat.AZURE else _number(raw_time)
        if time is None:
            what = "a date and time like 2023-11-16 18:17:03.9799600" if fmt == TraceFormat.AZURE else "a number"
            yield LineProblem(line, f"{wanted[0]} is not {what} ({_show(raw_time)})")
            continue
        input_tokens, output_tokens = _whole(row[at[1]]), _whole(row[at[2]])
        if input_tokens is None or output_tokens is None:
            k = 1 if input_tokens is None else 2
            yield LineProblem(line, f"{wanted[k]} is not a whole number ≥ 1 ({_show(row[at[k]])})")
            continue
        yield TraceRow(line, time, input_tokens, output_tokens)
