"""Command line: run a probe sweep, show progress on stderr, store it in DATABASE_URL, write the JSON file.

This module is the caller that bridges probes/ and db/ (the probe package itself never imports db/).
Exit codes: 0 the run completed (failed requests included), 1 the endpoint could not be reached or the run failed,
2 refused settings or a bad command line, 130 cancelled (Ctrl-C; finished requests are kept).
"""

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from pydantic import SecretStr, ValidationError

from probes.config import ApiKind, RunSettings, SloTargets, Timeouts, WorkloadKind, check_run_settings
from probes.endpoint import check_connection, list_models, run_sync
from probes.errors import ProbeError
from probes.export import result_json
from probes.models import LevelResult, RequestSample, RunResult, RunStatus
from probes.worker import ProbeRun
from probes.workloads import build_prompts

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
API_KEY_ENV = "PROBE_API_KEY"


def build_parser() -> argparse.ArgumentParser:
    """Every run setting as a flag."""
    defaults = RunSettings(base_url="http://127.0.0.1/v1", model="-")
    slo, timeouts = SloTargets(), Timeouts()
    p = argparse.ArgumentParser(
        prog="python -m probes",
        description="Benchmark an OpenAI-compatible endpoint "
        "at several concurrency levels (TTFT, TPOT, ITL, E2E, throughput, SLO).",
    )
    p.add_argument("--base-url", required=True, help="e.g. http://host:8000/v1")
    p.add_argument("--api-key", default=None, help=f"API key (better: the {API_KEY_ENV} environment variable)")
    p.add_argument("--model", default=None, help="model name as the server knows it")
    p.add_argument("--label", default="", help="a name for the run, shown in run lists")
    p.add_argument("--list-models", action="store_true", help="print the served models and exit")
    p.add_argument("--test-connection", action="store_true", help="list models, send one tiny request, exit")
    p.add_argument("--api", choices=[k.value for k in ApiKind], default=defaults.api.value)
    p.add_argument("--workload", choices=[k.value for k in WorkloadKind], default=defaults.workload.value)
    p.add_argument("--input-tokens", type=int, default=defaults.input_tokens, help="synthetic prompt length")
    p.add_argument("--shared-prefix-tokens", type=int, default=defaults.shared_prefix_tokens)
    p.add_argument("--prompt-file", default=None, help="JSONL prompts for --workload file")
    p.add_argument("--concurrency", default=",".join(map(str, defaults.concurrency)), help="levels, e.g. 1,4,16")
    p.add_argument("--requests", type=int, default=defaults.requests_per_level, help="requests per level")
    p.add_argument("--warmup", type=int, default=defaults.warmup_requests, help="uncounted warm-up requests")
    p.add_argument("--request-rate", type=float, default=None, help="Poisson arrivals (req/s) capped by the level")
    p.add_argument("--duration", type=float, default=None, help="per level: stop sending after this many seconds")
    p.add_argument("--max-tokens", type=int, default=defaults.max_tokens)
    p.add_argument("--temperature", type=float, default=defaults.temperature)
    p.add_argument("--ignore-eos", action="store_true", help="vLLM/SGLang: always generate max_tokens")
    p.add_argument("--no-usage", action="store_true", help="do not ask for stream_options.include_usage")
    p.add_argument("--continuous-usage", action="store_true", help="vLLM: usage on every chunk")
    p.add_argument("--no-metrics", action="store_true", help="do not scrape Prometheus /metrics")
    p.add_argument("--metrics-url", default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--slo-ttft-p50-ms", type=float, default=slo.ttft_p50_ms)
    p.add_argument("--slo-ttft-p99-ms", type=float, default=slo.ttft_p99_ms)
    p.add_argument("--slo-tpot-p50-ms", type=float, default=slo.tpot_p50_ms)
    p.add_argument("--goodput-ttft-ms", type=float, default=slo.request_ttft_ms)
    p.add_argument("--goodput-tpot-ms", type=float, default=slo.request_tpot_ms)
    p.add_argument("--max-failed-ratio", type=float, default=slo.max_failed_ratio)
    p.add_argument("--connect-timeout", type=float, default=timeouts.connect_s, help="seconds")
    p.add_argument("--ttft-timeout", type=float, default=timeouts.ttft_s, help="seconds to the first token")
    p.add_argument("--stall-timeout", type=float, default=timeouts.stall_s, help="seconds between two events")
    p.add_argument("--overlength-extra-tokens", type=int, default=timeouts.overlength_extra_tokens)
    p.add_argument("--output", default=None, help="write the run as JSON to this file")
    p.add_argument("--no-db", action="store_true", help="do not store the run in DATABASE_URL")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def settings_from_args(args: argparse.Namespace) -> RunSettings:
    """The RunSettings of a parsed command line (pydantic ValidationError on bad values)."""
    key = args.api_key or os.environ.get(API_KEY_ENV) or None
    return RunSettings(
        base_url=args.base_url,
        api_key=SecretStr(key) if key else None,
        model=args.model or "-",
        label=args.label,
        api=args.api,
        workload=args.workload,
        input_tokens=args.input_tokens,
        shared_prefix_tokens=args.shared_prefix_tokens,
        prompt_file=args.prompt_file,
        concurrency=args.concurrency,
        requests_per_level=args.requests,
        warmup_requests=args.warmup,
        request_rate_rps=args.request_rate,
        duration_s=args.duration,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        ignore_eos=args.ignore_eos,
        include_usage=not args.no_usage,
        continuous_usage_stats=args.continuous_usage,
        scrape_metrics=not args.no_metrics,
        metrics_url=args.metrics_url,
        seed=args.seed,
        slo=SloTargets(
            ttft_p50_ms=args.slo_ttft_p50_ms,
            ttft_p99_ms=args.slo_ttft_p99_ms,
            tpot_p50_ms=args.slo_tpot_p50_ms,
            request_ttft_ms=args.goodput_ttft_ms,
            request_tpot_ms=args.goodput_tpot_ms,
            max_failed_ratio=args.max_failed_ratio,
        ),
        timeouts=Timeouts(
            connect_s=args.connect_timeout,
            ttft_s=args.ttft_timeout,
            stall_s=args.stall_timeout,
            overlength_extra_tokens=args.overlength_extra_tokens,
        ),
    )


def _fmt(value: float | None, unit: str, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f} {unit}"


def level_line(level: LevelResult) -> str:
    """One level in one line."""
    errors = ", ".join(f"{k} {v}" for k, v in level.errors.items())
    slo = "SLO met" if level.slo.met else "SLO missed: " + "; ".join(level.slo.violations)
    return (
        f"concurrency {level.concurrency}: {level.completed}/{level.requests} ok"
        + (f" ({errors})" if errors else "")
        + f" | TTFT p50 {_fmt(level.ttft_ms.p50, 'ms')} p99 {_fmt(level.ttft_ms.p99, 'ms')}"
        + f" | TPOT p50 {_fmt(level.tpot_ms.p50, 'ms', 1)} | {_fmt(level.output_tok_s, 'tok/s')}"
        + f" | {_fmt(level.req_s, 'req/s', 2)} | {slo}"
    )


class _Recorder:
    """Optional database storage of the run (the CLI keeps going without it if the database fails)."""

    def __init__(self, settings: RunSettings, enabled: bool, err: TextIO) -> None:
        self.inner = None
        self.err = err
        if not enabled:
            return
        try:
            from db.engine import init_db, make_engine
            from db.runs import RunRecorder, recover_interrupted_runs
            from settings import get_settings

            engine = make_engine(get_settings().database_url)
            init_db(engine)
            recover_interrupted_runs(engine)
            self.inner = RunRecorder(engine, settings)
        except Exception as exc:  # storage is a convenience here; the JSON file is the result
            print(f"warning: the run will not be stored in the database: {exc}", file=err)

    @property
    def run_id(self) -> str | None:
        return self.inner.run_id if self.inner is not None else None


def run_cli(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Parse, run, store, write; return the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        for problem in exc.errors():
            where = ".".join(str(p) for p in problem["loc"])
            print(f"error: {where}: {problem['msg']}", file=err)
        return EXIT_USAGE
    try:
        if args.list_models:
            for name in run_sync(list_models(settings.base_url, settings.api_key, timeouts=settings.timeouts)):
                print(name, file=out)
            return EXIT_OK
        if args.test_connection:
            report = run_sync(
                check_connection(
                    settings.base_url, settings.api_key, args.model, api=settings.api, timeouts=settings.timeouts
                )
            )
            print(report.message, file=out)
            return EXIT_OK if report.ok else EXIT_FAILED
    except ProbeError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_FAILED
    if not args.model:
        print("error: --model is required (see --list-models)", file=err)
        return EXIT_USAGE
    return _run(settings, args, out, err)


def _run(settings: RunSettings, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    quiet = args.quiet

    def on_sample(sample: RequestSample) -> None:
        if recorder.inner is not None:
            recorder.inner.on_sample(sample)

    def on_level(level: LevelResult) -> None:
        if recorder.inner is not None:
            recorder.inner.on_level(level)
        if not quiet:
            print(level_line(level), file=err, flush=True)

    def on_heartbeat() -> None:
        if recorder.inner is not None:
            recorder.inner.on_heartbeat()

    def on_finish(result: RunResult | None, error: BaseException | None) -> None:
        if recorder.inner is not None:
            recorder.inner.on_finish(result, error)

    probe = ProbeRun(settings, on_sample=on_sample, on_level=on_level, on_heartbeat=on_heartbeat, on_finish=on_finish)
    try:  # refuse bad settings and workloads before anything is stored (start() checks them the same way)
        check_run_settings(settings)
        build_prompts(settings, settings.requests_per_level)
    except ProbeError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    # The recorder exists before the worker starts: its callbacks store every sample and the run's end.
    recorder = _Recorder(settings, not args.no_db, err)
    try:
        probe.start()
    except ProbeError as exc:
        if recorder.inner is not None:
            recorder.inner.on_finish(None, exc)
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    if not quiet:
        print(
            f"probing {settings.endpoint} model {settings.model}: levels {list(settings.concurrency)}, "
            f"{settings.requests_per_level} requests each",
            file=err,
            flush=True,
        )
    interrupted = False
    last_shown = ""
    try:
        while not probe.wait(0.5):
            if not quiet and err.isatty():
                p = probe.progress()
                shown = f"  level {p.concurrency}: {p.finished}/{p.requests_per_level} ({p.failed} failed)"
                if shown != last_shown:
                    print(shown, end="\r", file=err, flush=True)
                    last_shown = shown
    except KeyboardInterrupt:
        interrupted = True
        print("\ncancelling: finished requests are kept", file=err, flush=True)
        probe.cancel()
        while not probe.wait(0.5):
            time.sleep(0)
    result = probe.result()
    if result is None:
        print(f"error: the run crashed: {probe.error}", file=err)
        return EXIT_FAILED
    if recorder.run_id is not None:
        result = result.model_copy(update={"run_id": recorder.run_id})
    if args.output:
        Path(args.output).write_text(result_json(result), encoding="utf-8")
    if not quiet:
        best = result.best_concurrency_within_slo
        print(
            f"{result.status}: highest concurrency within SLO: {best if best is not None else 'none'}"
            + (f" ({result.error})" if result.error else "")
            + (f"; stored as run {recorder.run_id}" if recorder.run_id else ""),
            file=err,
            flush=True,
        )
    if result.status == RunStatus.FAILED:
        if quiet:
            print(f"error: {result.error}", file=err)
        return EXIT_FAILED
    if interrupted or result.status == RunStatus.CANCELLED:
        return EXIT_CANCELLED
    return EXIT_OK


def main() -> None:
    """Entry point of `python -m probes`."""
    sys.exit(run_cli())
