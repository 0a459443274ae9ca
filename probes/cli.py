"""The command line's parsing and output: flags from CliOptions, progress on stderr, the JSON file, the exit code.

It stores nothing itself: `python -m probes` (probes/__main__.py) hands it the database's recorder as the run's sink.
Exit codes: 0 the run completed (failed requests included), 1 the endpoint could not be reached or the run failed,
2 refused settings or a bad command line, 130 cancelled (Ctrl-C; finished requests are kept).
"""

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from typing import Any, TextIO

from pydantic import ValidationError

from catalog.matching import LOOKUP_FLAGS, forgiven_matches, forgiven_notes
from probes.cli_options import API_KEY_ENV, CliOptions
from probes.config import RunSettings
from probes.deployment import deployment_text
from probes.endpoint import check_connection, list_models, run_sync
from probes.errors import ProbeError
from probes.export import result_json
from probes.field_text import allowed_text, default_text, flag_of, required_on_cli
from probes.models import LevelResult, RunResult, RunStatus
from probes.options import prepare_run
from probes.power import energy_text
from probes.progress import WorkerProgress
from probes.sink import RunSink
from probes.worker import ProbeRun

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
POLL_S = 0.5


# Opens the sink of a run about to start; None when it cannot (having said why on the error stream).
OpenSink = Callable[[RunSettings, TextIO], RunSink | None]


# The flags of the deployment names the catalog matches forgivingly (a note says what each became).
DEPLOYMENT_FLAGS = {**LOOKUP_FLAGS, "model": "--deploy-model"}


class UsageError(Exception):
    """The command line cannot run: each message names the flag."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = messages


def build_parser() -> argparse.ArgumentParser:
    """One flag per field of CliOptions: its name, help, default and allowed values come from the field."""
    parser = argparse.ArgumentParser(
        prog="python -m probes",
        description="Benchmark an OpenAI-compatible endpoint at several concurrency levels "
        "(TTFT, TPOT, ITL, E2E, throughput, SLO).",
        argument_default=argparse.SUPPRESS,  # only the flags given reach the model; it holds the defaults
    )
    for name, field in CliOptions.model_fields.items():
        flag, annotation = flag_of(name, field), field.annotation
        kwargs: dict[str, Any] = {"dest": name}
        if annotation is bool:  # a switch: given, it sets the opposite of the default
            kwargs.update(action="store_const", const=not field.get_default(), help=_help(field.description))
        elif isinstance(annotation, type) and issubclass(annotation, Enum):
            choices = [kind.value for kind in annotation]
            kwargs.update(choices=choices, help=_help(field.description, f"default: {default_text(field)}"))
        else:
            allowed = allowed_text(field)
            default = "required" if required_on_cli(field) else f"default: {default_text(field)}"
            notes = [default] + ([f"allowed: {allowed}"] if allowed else [])
            kwargs.update(
                metavar=flag.removeprefix("--").replace("-", "_").upper(),
                required=required_on_cli(field),
                help=_help(field.description, *notes),
            )
        parser.add_argument(flag, **kwargs)
    return parser


def _help(description: str | None, *notes: str) -> str:
    text = (description or "") + (f" [{'; '.join(notes)}]" if notes else "")
    return text.replace("%", "%%")  # argparse formats help with %


def usage_messages(exc: ValidationError) -> list[str]:
    """One message per flag that was refused, naming the flag and the values it allows."""
    by_key = {key: name for name, f in CliOptions.model_fields.items() for key in (name, f.alias) if key}
    messages: dict[str, str] = {}
    for error in exc.errors():
        loc = error.get("loc") or ("",)
        name = by_key.get(str(loc[0]), str(loc[0]))
        field = CliOptions.model_fields.get(name)
        if field is None or name in messages:
            continue
        allowed = allowed_text(field)
        reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        messages[name] = f"{flag_of(name, field)}: {reason}" + (f" (allowed: {allowed})" if allowed else "")
    return list(messages.values()) or [str(exc)]


def parse_options(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> CliOptions:
    """The command line as CliOptions; the API key from PROBE_API_KEY when no flag gives it.

    A malformed command line exits through argparse (code 2); a refused value raises UsageError.
    """
    given = vars(build_parser().parse_args(argv))
    key = (os.environ if environ is None else environ).get(API_KEY_ENV)
    if key and "api_key" not in given:
        given["api_key"] = key
    try:
        return CliOptions.model_validate(given)
    except ValidationError as exc:
        raise UsageError(usage_messages(exc)) from None


def _fmt(value: float | None, unit: str, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f} {unit}"


def level_line(level: LevelResult) -> str:
    """One level in one line."""
    errors = ", ".join(f"{k} {v}" for k, v in level.errors.items())
    slo = "SLO met" if level.slo.met else "SLO missed: " + "; ".join(level.slo.violations)
    if level.schedule_lag_ms is not None:
        lag = level.schedule_lag_ms
        load = f"trace replay (send lag p50 {_fmt(lag.p50, 'ms', 1)} p99 {_fmt(lag.p99, 'ms', 1)})"
    elif level.turns is not None:
        load = f"{level.concurrency} sessions"
    elif level.request_rate_rps is None:
        load = f"concurrency {level.concurrency}"
    else:
        load = f"rate {level.request_rate_rps:g} req/s (at most {level.concurrency} in flight)"
    return (
        f"{load}: {level.completed}/{level.requests} ok"
        + (f" ({errors})" if errors else "")
        + f" | TTFT p50 {_fmt(level.ttft_ms.p50, 'ms')} p99 {_fmt(level.ttft_ms.p99, 'ms')}"
        + f" | TPOT p50 {_fmt(level.tpot_ms.p50, 'ms', 1)} | {_fmt(level.output_tok_s, 'tok/s')}"
        + f" | {_fmt(level.req_s, 'req/s', 2)} | {slo}"
        + _turns_text(level)
    )


def _turns_text(level: LevelResult) -> str:
    """Sessions: TTFT p50 per turn index, and the server's prefix-cache hit ratio when it reported one."""
    if not level.turns:
        return ""
    ttfts = ", ".join("-" if t.ttft_ms_p50 is None else f"{t.ttft_ms_p50:.0f}" for t in level.turns)
    text = f" | TTFT p50 by turn {ttfts} ms"
    ratio = level.server_metrics.prefix_cache_hit_ratio if level.server_metrics else None
    return text + (f" | prefix cache hits {ratio:.0%}" if ratio is not None else "")


def start_line(settings: RunSettings) -> str:
    """What is about to be probed."""
    return f"probing {settings.endpoint} model {settings.model}: {settings.load_text}"


def summary_line(result: RunResult) -> str:
    """How the run ended, its highest concurrency within the SLO, the deployment, the GPU energy, where it is stored."""
    deployment = deployment_text(result.settings.deployment)
    failed_reads = sum(1 for s in result.power if not s.ok)
    energy = f"; {energy_text(result.energy, failed_reads)}" if result.settings.dcgm_url else ""
    if result.settings.trace_mode or result.settings.sessions_mode:
        met = [lv.slo.met for lv in result.levels]
        done = "trace replayed" if result.settings.trace_mode else "sessions held"
        best = f"{done}, SLO " + ("met" if met and all(met) else "missed" if met else "not measured")
    elif result.settings.rate_mode:
        rate = result.best_request_rate_within_slo_rps
        best = f"highest request rate within SLO: {f'{rate:g} req/s' if rate is not None else 'none'}"
        if result.rate_search is not None:
            best += f" (search stopped: {result.rate_search.stop_detail})"
    else:
        concurrency = result.best_concurrency_within_slo
        best = f"highest concurrency within SLO: {concurrency if concurrency is not None else 'none'}"
    return (
        f"{result.status}: {best}"
        + (f" ({result.error})" if result.error else "")
        + "".join(f"; note: {note}" for note in result.notes)
        + (f"; deployment: {deployment}" if deployment else "")
        + energy
        + (f"; stored as run {result.run_id}" if result.run_id else "")
        + (f"; PARTIAL: {result.partial_reason}" if result.partial else "")
    )


def worker_lines(result: RunResult) -> list[str]:
    """--workers: one line per Ray worker (its node, requests, errors, client CPU, clock offset, send lag)."""
    return [
        f"worker {w.id} on {w.node}: {w.requests} requests ({w.errors} failed) | client CPU "
        f"{_fmt(w.cpu_percent, '%')} | clock offset {_fmt(w.clock_offset_ms, 'ms', 2)} | send lag p50 "
        f"{_fmt(w.schedule_lag_ms.p50, 'ms', 1)} p99 {_fmt(w.schedule_lag_ms.p99, 'ms', 1)}"
        for w in result.workers
    ]


def live_workers_text(workers: Sequence[WorkerProgress]) -> str:
    """--workers: the live line's part per worker and in total (sent, finished, errors, client CPU)."""
    if not workers:
        return ""
    parts = [
        f"w{w.id} {w.sent}/{w.finished}/{w.errors} {_fmt(w.cpu_percent, '%')}"
        + ("" if w.alive else " LOST")
        + (" CLIENT-BOUND" if w.client_bound else "")
        for w in workers
    ]
    total = (sum(w.sent for w in workers), sum(w.finished for w in workers), sum(w.errors for w in workers))
    return f" | total sent/finished/errors {total[0]}/{total[1]}/{total[2]} | " + " ".join(parts)


def run_cli(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    *,
    open_sink: OpenSink | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    """Parse, then list the models, test the connection or run the sweep; return the exit code.

    open_sink stores the run as it goes (python -m probes passes the database's); without it nothing is stored.
    """
    out, err = out or sys.stdout, err or sys.stderr
    try:
        with forgiven_matches() as forgiven:
            options = parse_options(argv, environ)
        for note in forgiven_notes(forgiven, DEPLOYMENT_FLAGS):
            print(note, file=err)
    except UsageError as exc:
        for message in exc.messages:
            print(f"error: {message}", file=err)
        return EXIT_USAGE
    if options.list_models:
        return _list_models(options, out, err)
    if options.test_connection:
        return _test_connection(options, out, err)
    if not options.model:
        print("error: --model is required (see --list-models)", file=err)
        return EXIT_USAGE
    return _run(options, err, open_sink if options.store else None)


def _list_models(options: CliOptions, out: TextIO, err: TextIO) -> int:
    try:
        names = run_sync(list_models(options.base_url, options.api_key, timeouts=options.timeouts))
    except ProbeError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    for name in names:
        print(name, file=out)
    return EXIT_OK


def _test_connection(options: CliOptions, out: TextIO, err: TextIO) -> int:
    try:
        report = run_sync(
            check_connection(
                options.base_url, options.api_key, options.model or None, api=options.api, timeouts=options.timeouts
            )
        )
    except ProbeError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    print(report.message, file=out)
    return EXIT_OK if report.ok else EXIT_FAILED


def _run(options: CliOptions, err: TextIO, open_sink: OpenSink | None) -> int:
    """Check the settings, open the sink, start the probe, wait for it, report; the exit code."""
    try:  # refuse bad settings and workloads before anything is stored (start() checks them the same way)
        settings = prepare_run(options)
    except ProbeError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    probe = _start(settings, open_sink(settings, err) if open_sink is not None else None, err)
    if probe is None:
        return EXIT_USAGE
    if not options.quiet:
        print(start_line(settings), file=err, flush=True)
    interrupted = _wait(probe, err, None if options.quiet else err)
    return _finish(probe, options, interrupted, err)


def _start(settings: RunSettings, sink: RunSink | None, err: TextIO) -> ProbeRun | None:
    """The started run; None when refused (said on err; the sink records it as failed).

    A sink that cannot record the run's start is warned about, and the run goes on unstored.
    """
    probe = ProbeRun(settings, sink=sink)
    try:
        return probe.start()
    except ProbeError as exc:
        print(f"error: {exc}", file=err)
        return None
    except Exception as exc:  # the database failed on the run's first row: storage is a convenience here
        if sink is None:
            raise
        print(f"warning: the run will not be stored in the database: {exc}", file=err)
        return _start(settings, None, err)


def _wait(probe: ProbeRun, err: TextIO, progress: TextIO | None) -> bool:
    """Wait for the run to end, showing each finished level on progress (and, on a terminal, the level's count).

    True if Ctrl-C cancelled it.
    """
    last_shown, levels_shown = "", 0
    interrupted = False
    try:
        while not probe.wait(POLL_S):
            levels_shown = _show_levels(probe, progress, levels_shown)
            if progress is not None and progress.isatty():
                p = probe.progress()
                shown = f"  level {p.concurrency}: {p.finished}/{p.requests_per_level} ({p.failed} failed)"
                shown += live_workers_text(p.workers)
                if shown != last_shown:
                    print(shown, end="\r", file=progress, flush=True)
                    last_shown = shown
    except KeyboardInterrupt:
        print("\ncancelling: finished requests are kept", file=err, flush=True)
        probe.cancel()
        probe.wait()
        interrupted = True
    _show_levels(probe, progress, levels_shown)
    return interrupted


def _show_levels(probe: ProbeRun, progress: TextIO | None, shown: int) -> int:
    """Print the levels that finished since the first `shown`; how many are shown now."""
    levels = probe.progress().levels
    if progress is not None:
        for level in levels[shown:]:
            print(level_line(level), file=progress, flush=True)
    return len(levels)


def _finish(probe: ProbeRun, options: CliOptions, interrupted: bool, err: TextIO) -> int:
    """Write the run's file, say how it ended, and return the exit code."""
    result = probe.result()
    if result is None:
        print(f"error: the run crashed: {probe.error}", file=err)
        return EXIT_FAILED
    if probe.run_id is not None:
        result = result.model_copy(update={"run_id": probe.run_id})
    written = _write_output(result, options, err)
    if not options.quiet:
        for line in worker_lines(result):
            print(line, file=err, flush=True)
        print(summary_line(result), file=err, flush=True)
    elif result.status == RunStatus.FAILED:
        print(f"error: {result.error}", file=err)
    return _exit_code(result, interrupted, written)


def _write_output(result: RunResult, options: CliOptions, err: TextIO) -> bool:
    """Write the JSON file when --output asks for one; False if it could not be written (said on err)."""
    if options.output is None:
        return True
    try:
        options.output.write_text(result_json(result), encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write {options.output}: {exc.strerror or exc}", file=err)
        return False
    return True


def _exit_code(result: RunResult, interrupted: bool, written: bool) -> int:
    if result.status == RunStatus.FAILED or not written:
        return EXIT_FAILED
    if interrupted or result.status == RunStatus.CANCELLED:
        return EXIT_CANCELLED
    return EXIT_OK
