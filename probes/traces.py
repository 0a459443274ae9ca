"""Trace replay groundwork: stream request traces (Mooncake JSONL, Azure 2023 CSV, plain CSV), checked and sliced.

Formats (``TraceFormat``; each line becomes one ``TraceRequest``):

- ``mooncake``: JSONL, ``{"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [ints]}``;
  ``hash_ids`` is optional, each id names one block of ``BLOCK_TOKENS`` (512) prompt tokens.
- ``azure``: the Azure LLM inference 2023 CSV, header ``TIMESTAMP,ContextTokens,GeneratedTokens``; the time is
  ``2023-11-16 18:17:03.9799600`` (up to 9 fractional digits, an optional ``Z``/``+hh:mm`` suffix), read exactly in
  integer nanoseconds (``datetime`` takes only 6 digits, and float epoch seconds would lose the 7th).
- ``csv``: the user's own CSV with the header ``timestamp_s,input_tokens,output_tokens`` (any column order).

Rules for every format: lines are numbered from 1 as in an editor (a CSV header is line 1); blank lines are skipped;
lengths are whole numbers >= 1 (``12.0`` is accepted); times must not go back (requests are streamed in file order);
files are read as UTF-8 (a byte-order mark is dropped, undecodable bytes make their line malformed).

Use, in this order (nothing is sent before step 2 passed)::

    path, fmt = resolve_trace("azure-conv")            # a built-in name, or a path with fmt (None: sniffed)
    summary = check_trace(path, fmt, start_s=0, duration_s=600, limit=None, speed=10)  # TraceError: do not send
    # compare summary.requests with the per-run request cap; summary.duration_s is the replay's wall-clock length
    builder = TracePromptBuilder(seed=run_seed)        # a fresh seed per run keeps an earlier run's cache out
    for words in CALIBRATION_WORDS:                    # two short requests, max_tokens=1, the replay's API and
        send builder.calibration_prompt(words)         # message shape (chat template included); read
    builder.calibrate(w1, tokens1, (w2, tokens2))      # usage.prompt_tokens of each
    for req in read_trace(path, fmt, start_s=0, duration_s=600, speed=10):  # streamed, one request at a time
        send builder.prompt(req) at start + req.arrival_s, max_tokens=req.output_tokens, ignore_eos where supported

``check_trace`` validates the whole file in one streaming pass and raises ``TraceError`` listing the first problems
with their line numbers (``line 17: output_length is not a whole number >= 1 ('-3')``); ``read_trace`` yields the
slice and raises ``TraceError`` at the first bad line it meets (only if the file changed after the check). Memory stays
flat: one line at a time (``check_trace`` keeps 16 bytes per selected request for the medians).

Slicing: a request is kept when its original offset from the trace's first request lies in
``[start_s, start_s + duration_s)``, at most ``limit`` of them; ``arrival_s`` is its offset from the first kept
request divided by ``speed`` (speed 10 replays ten times faster).

Prompts of a trace's lengths: probes/trace_prompts.py. Each format's line reader: probes/trace_rows.py.

Built-in traces (``BUILTIN_TRACES``, CC-BY 4.0, see ``data/traces/ATTRIBUTION.md``): ``azure-code`` has 8,819
requests over 3,435.9 s (median input 1,469 and output 13 tokens; idle gaps of up to 217 s), ``azure-conv`` 19,366
over 3,501.7 s (median 1,020 and 129). Whole, azure-conv is over the default per-run cap of 10,000 requests: give a
duration or a limit. ``read_trace`` keeps its file open until exhausted; close it (``contextlib.closing``) on cancel.
"""

import math
import statistics
from array import array
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probes.errors import LineProblem, WorkloadError
from probes.trace_rows import COLUMNS, SECONDS_PER_UNIT, TraceFormat, TraceRow, csv_rows, mooncake_row

BLOCK_TOKENS = 512  # Mooncake: one hash id names this many prompt tokens
MAX_PROBLEMS = 20  # problems listed in a TraceError
TRACES_DIR = Path(__file__).parent / "data" / "traces"
BUILTIN_TRACES = {
    "azure-code": TRACES_DIR / "azure_llm_inference_2023_code.csv",
    "azure-conv": TRACES_DIR / "azure_llm_inference_2023_conv.csv",
}


class TraceError(WorkloadError):
    """A trace cannot be used; ``problems`` lists the first malformed lines, ``problem_count`` counts them all."""

    def __init__(self, message: str, problems: tuple[str, ...] = (), problem_count: int = 0) -> None:
        super().__init__(message)
        self.problems = problems
        self.problem_count = problem_count


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """One request of a trace: its file line, when to send it (s after the first kept request) and its lengths."""

    line: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    hash_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class TraceSummary:
    """What ``check_trace`` found: the whole file's extent and the selected slice's requests and lengths."""

    path: Path
    fmt: TraceFormat
    requests_in_file: int
    trace_duration_s: float  # first to last request of the file, trace time
    requests: int  # selected by the slice
    duration_s: float  # first to last selected request, replay time (divided by the speed)
    input_tokens_mean: float
    input_tokens_median: float
    input_tokens_max: int
    output_tokens_mean: float
    output_tokens_median: float
    output_tokens_max: int
    requests_with_hash_ids: int

    @property
    def request_rate_rps(self) -> float | None:
        """Mean requests per second of the replay (None for a single request or no time span)."""
        return (self.requests - 1) / self.duration_s if self.requests > 1 and self.duration_s > 0 else None


def _rows(path: Path, fmt: TraceFormat) -> Iterator[TraceRow | LineProblem]:
    """Every request or problem of the file, in order, one line in memory at a time; times checked not to go back."""
    try:
        handle = path.open(encoding="utf-8-sig", errors="replace", newline="")
    except OSError as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.strerror or exc}") from exc
    with handle:
        if fmt == TraceFormat.MOONCAKE:
            source: Iterator[TraceRow | LineProblem] = (
                mooncake_row(n, text) for n, text in enumerate(handle, start=1) if text.strip()
            )
        else:
            source = csv_rows(fmt, handle)
        latest: TraceRow | None = None
        for item in source:
            if isinstance(item, TraceRow):
                if latest is not None and item.time < latest.time:
                    item = LineProblem(
                        item.line, f"goes back in time (earlier than line {latest.line}); sort the trace"
                    )
                else:
                    latest = item
            yield item


# ---- the public entry points ------------------------------------------------------------------------------------


def _format(fmt: TraceFormat | str) -> TraceFormat:
    try:
        return TraceFormat(str(fmt).strip().lower())
    except ValueError:
        raise TraceError(f"unknown trace format {fmt!r}; give one of {', '.join(TraceFormat)}") from None


def sniff_format(path: Path) -> TraceFormat:
    """The format of a trace file from its first non-blank line (JSON object, Azure header or the plain CSV header)."""
    try:
        with path.open(encoding="utf-8-sig", errors="replace") as handle:
            first = next((text for text in handle if text.strip()), "").strip().lower()
    except OSError as exc:
        raise TraceError(f"cannot read the trace {path}: {exc.strerror or exc}") from exc
    if first.startswith("{"):
        return TraceFormat.MOONCAKE
    for fmt, columns in COLUMNS.items():
        if all(c.lower() in first for c in columns):
            return fmt
    raise TraceError(f"cannot tell the format of {path.name}; give one of {', '.join(TraceFormat)}")


def resolve_trace(name_or_path: str | Path, fmt: TraceFormat | str | None = None) -> tuple[Path, TraceFormat]:
    """A built-in trace by name (format azure) or an existing file with its format (given, or sniffed when None)."""
    name = str(name_or_path).strip()
    if name in BUILTIN_TRACES:
        if fmt is not None and _format(fmt) != TraceFormat.AZURE:
            raise TraceError(f"the built-in trace {name} is in the azure format, not {fmt}")
        return BUILTIN_TRACES[name], TraceFormat.AZURE
    path = Path(name).expanduser()
    if not name or not path.is_file():
        raise TraceError(f"no trace file {name!r}; give a path or a built-in trace: {', '.join(BUILTIN_TRACES)}")
    return path, sniff_format(path) if fmt is None else _format(fmt)


@dataclass
class _Window:
    """The slice: selects requests by original offset, counts them, and gives their replay arrival times."""

    start_s: float
    duration_s: float | None
    limit: int | None
    speed: float
    kept: int = 0
    first_kept_s: float | None = None
    errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start_s) and self.start_s >= 0):
            self.errors.append(f"the start must be 0 s or later (got {self.start_s})")
        if self.duration_s is not None and not (math.isfinite(self.duration_s) and self.duration_s > 0):
            self.errors.append(f"the duration must be over 0 s (got {self.duration_s})")
        if self.limit is not None and self.limit < 1:
            self.errors.append(f"the limit must be 1 request or more (got {self.limit})")
        if not (math.isfinite(self.speed) and self.speed > 0):
            self.errors.append(f"the speed must be over 0 (got {self.speed})")
        if self.errors:
            raise TraceError("; ".join(self.errors))

    @property
    def full(self) -> bool:
        """The limit is reached."""
        return self.limit is not None and self.kept >= self.limit

    def past(self, offset_s: float) -> bool:
        """No request at this offset or later can be kept (the trace is in time order)."""
        return self.full or (self.duration_s is not None and offset_s >= self.start_s + self.duration_s)

    def take(self, offset_s: float) -> float | None:
        """The arrival time of a request at this offset, or None when it is before the slice (or past it)."""
        if offset_s < self.start_s or self.past(offset_s):
            return None
        if self.first_kept_s is None:
            self.first_kept_s = offset_s
        self.kept += 1
        return (offset_s - self.first_kept_s) / self.speed


def _offsets(fmt: TraceFormat) -> Callable[[TraceRow], float]:
    scale = SECONDS_PER_UNIT[fmt]
    first: float | None = None

    def offset(row: TraceRow) -> float:
        nonlocal first
        if first is None:
            first = row.time
        return (row.time - first) * scale

    return offset


def read_trace(
    path: Path | str,
    fmt: TraceFormat | str,
    *,
    start_s: float = 0.0,
    duration_s: float | None = None,
    limit: int | None = None,
    speed: float = 1.0,
) -> Generator[TraceRequest]:
    """Stream the slice's requests in time order; call ``check_trace`` first (this raises TraceError at a bad line).

    Stops reading as soon as the slice is complete. ``arrival_s`` is relative to the first kept request, divided by
    ``speed``; ``line`` is the request's line in the file.
    """
    fmt, path = _format(fmt), Path(path)
    window = _Window(start_s, duration_s, limit, speed)
    offset = _offsets(fmt)
    for item in _rows(path, fmt):
        if isinstance(item, LineProblem):
            raise TraceError(f"{path.name} {item}", (str(item),), 1)
        at = offset(item)
        if window.past(at):
            return
        arrival = window.take(at)
        if arrival is not None:
            yield TraceRequest(item.line, arrival, item.input_tokens, item.output_tokens, item.hash_ids)
            if window.full:
                return


def check_trace(
    path: Path | str,
    fmt: TraceFormat | str,
    *,
    start_s: float = 0.0,
    duration_s: float | None = None,
    limit: int | None = None,
    speed: float = 1.0,
    max_problems: int = MAX_PROBLEMS,
) -> TraceSummary:
    """Validate the whole file in one streaming pass and summarise the slice ``read_trace`` would yield.

    Raises TraceError, listing the first ``max_problems`` malformed lines with their numbers, when any line is
    malformed, when the file has no request, or when the slice selects none. Nothing should be sent before this passed.
    """
    fmt, path = _format(fmt), Path(path)
    window = _Window(start_s, duration_s, limit, speed)
    offset = _offsets(fmt)
    problems: list[str] = []
    problem_count = in_file = with_ids = 0
    last_offset = last_arrival = 0.0
    inputs, outputs = array("q"), array("q")
    for item in _rows(path, fmt):
        if isinstance(item, LineProblem):
            problem_count += 1
            if len(problems) < max_problems:
                problems.append(str(item))
            continue
        in_file += 1
        last_offset = offset(item)
        arrival = window.take(last_offset)
        if arrival is not None:
            last_arrival = arrival
            inputs.append(item.input_tokens)
            outputs.append(item.output_tokens)
            with_ids += bool(item.hash_ids)
    if problem_count:
        raise _malformed(path, problems, problem_count)
    if not in_file:
        raise TraceError(f"{path.name} has no request")
    if not inputs:
        when = (
            f"at {start_s:g} s or later"
            if duration_s is None
            else f"between {start_s:g} s and {start_s + duration_s:g} s"
        )
        raise TraceError(f"no request of {path.name} starts {when} of the trace, which spans {last_offset:.1f} s")
    return TraceSummary(
        path=path,
        fmt=fmt,
        requests_in_file=in_file,
        trace_duration_s=last_offset,
        requests=len(inputs),
        duration_s=last_arrival,
        **_lengths("input", inputs),
        **_lengths("output", outputs),
        requests_with_hash_ids=with_ids,
    )


def _malformed(path: Path, problems: list[str], count: int) -> TraceError:
    """The error of a file with malformed lines: how many, and the first ones."""
    more = f" (and {count - len(problems)} more)" if count > len(problems) else ""
    listing = "; ".join(problems)
    return TraceError(
        f"{path.name}: {count} malformed line{'s' * (count > 1)}{more}: {listing}", tuple(problems), count
    )


def _lengths(kind: str, values: "array[int]") -> dict[str, Any]:
    """The mean, median and maximum of the selected requests' input or output lengths, as TraceSummary fields."""
    return {
        f"{kind}_tokens_mean": statistics.fmean(values),
        f"{kind}_tokens_median": float(statistics.median(values)),
        f"{kind}_tokens_max": max(values),
    }


__all__ = [
    "BLOCK_TOKENS",
    "BUILTIN_TRACES",
    "MAX_PROBLEMS",
    "TraceError",
    "TraceFormat",
    "TraceRequest",
    "TraceSummary",
    "check_trace",
    "read_trace",
    "resolve_trace",
    "sniff_format",
]
