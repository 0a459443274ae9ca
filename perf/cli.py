"""The command line: `python -m perf --gpu H100 --model llama-3.1-8b --engine vllm --quant fp8 --json`.

The flags are PerfRequest's fields, generated from the model (perf/flags.py), plus `--calibrate-from` and `--json`;
every value is checked by the request model and a bad one is named with what is allowed. Exit codes: 0 an estimate
was printed; 2 bad input or no estimate for this engine or GPU (the message says which).
`fit` refits the coefficients on the public fit set and rewrites perf/data/coefficients.json.
"""

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from catalog.matching import forgiven_matches, forgiven_notes
from perf.disagg import estimate_topology
from perf.errors import NoEstimateError, PerfError
from perf.estimate import estimate
from perf.flags import CliError, add_flags, flag_of, request_fields
from perf.inputs import PerfRequest
from perf.npu_measurements import measured_lines
from perf.result import Calibration, Estimate, MeasuredLevel
from perf.topology import TOPOLOGY_FLAGS, TopologyOptions, add_topology_flags, render_topology
from perf.validate import METRIC_LABELS, METRICS

EXIT_OK, EXIT_NO_ESTIMATE = 0, 2


def build_parser() -> argparse.ArgumentParser:
    """PerfRequest's flags (perf/flags.py), then the command's own: --calibrate-from and --json."""
    p = argparse.ArgumentParser(
        prog="python -m perf",
        description="Estimate TTFT, TPOT and throughput of one configuration without hardware (an estimate, "
        "with its bands and basis). `python -m perf fit` refits the coefficients.",
        allow_abbrev=False,
        argument_default=argparse.SUPPRESS,  # only the flags given reach the model; it holds the defaults
    )
    add_flags(p)
    p.add_argument(
        "--calibrate-from",
        metavar="RUN.json",
        action="append",
        default=[],
        help="a probe run of this same configuration, as written by `python -m probes ... --output RUN.json`: "
        "calibrates the estimate",
    )
    p.add_argument("--json", action="store_true", default=False, help="print the estimate as JSON")
    add_topology_flags(p)
    return p


def _calibration(path: str, request: PerfRequest, resolved: Estimate) -> Calibration:
    """A probe JSON file (python -m probes --output) read as a calibration of the estimated configuration."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    levels = []
    for level in data.get("levels", []):
        if not level.get("completed", 1):
            continue
        levels.append(
            MeasuredLevel(
                concurrency=level.get("concurrency"),
                request_rate_rps=level.get("request_rate_rps"),
                input_tokens=float(level.get("input_tokens_per_request") or request.input_tokens),
                output_tokens=float(level.get("output_tokens_per_request") or request.output_tokens),
                ttft_p50_ms=(level.get("ttft_ms") or {}).get("p50"),
                tpot_p50_ms=(level.get("tpot_ms") or {}).get("p50"),
                output_tok_s=level.get("output_tok_s"),
            )
        )
    return Calibration(
        run_id=str(data.get("run_id") or Path(path).name),
        gpu=resolved.gpu_id,
        gpus=resolved.layout.gpus,
        model=resolved.model_id,
        engine=resolved.engine,
        quant=resolved.quant,
        levels=tuple(levels),
    )


def render(result: Estimate) -> str:
    """A plain-text table for people."""
    bands = "; ".join(
        f"{METRIC_LABELS[metric]} {result.bands[metric].low_ratio:.2f}-{result.bands[metric].high_ratio:.2f}"
        for metric in METRICS
    )
    lay = result.layout
    lines = [
        f"ESTIMATE for {lay.gpus}x {result.gpu_name}, {result.model_name}, {result.engine} {result.engine_version}, "
        f"{result.quant} (KV {result.kv_cache_dtype}), tp {lay.tp} pp {lay.pp} ep {lay.ep} dp {lay.dp}, "
        f"{result.request.input_tokens} in / {result.request.output_tokens} out",
        f"band (measured/estimated): {bands} ({result.band.group}); basis: {result.basis.text}",
        f"{'load':>12} {'tok/s':>10} {'req/s':>8} {'TTFT mean':>9} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} "
        f"{'E2E p50':>9}  SLO",
    ]
    for level in result.levels:
        load = f"c={level.concurrency}" if level.concurrency else f"{level.request_rate_rps:g} rps"
        lines.append(
            f"{load:>12} {level.output_tok_s:>10,.0f} {level.req_s:>8.2f} {level.ttft_ms.mean or 0:>7.0f}ms "
            f"{level.ttft_ms.p50:>7.0f}ms {level.ttft_ms.p99 or 0:>7.0f}ms {level.tpot_ms.p50:>7.1f}ms "
            f"{level.e2e_ms.p50:>7.0f}ms  {'meets' if level.meets_slo else 'misses'}"
        )
    lines.append(
        f"max {result.max_output_tok_s:,.0f} tok/s at concurrency {result.max_throughput_concurrency} "
        f"(max_num_seqs {result.max_num_seqs}); highest concurrency within SLO: {result.best_concurrency_within_slo}"
    )
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def _message(error: Any) -> str:
    """A validation error in the CLI's words: the flag, the value and what is allowed (no library text or links)."""
    flag = flag_of(tuple(str(p) for p in error["loc"]))
    ctx = error.get("ctx") or {}
    value = error.get("input")
    kind = error["type"]
    if kind in {"int_parsing", "int_from_float"}:
        what = f"'{value}' is not a whole number"
    elif kind == "float_parsing":
        what = f"'{value}' is not a number"
    elif kind in {"greater_than_equal", "greater_than", "less_than_equal", "less_than"}:
        bound = {"greater_than_equal": "at least", "greater_than": "above", "less_than_equal": "at most"}.get(
            kind, "below"
        )
        limit = next(iter(ctx.values()), "")
        what = f"{value} is out of range: it must be {bound} {limit}"
    elif kind == "literal_error":
        what = f"'{value}' is not one of {ctx.get('expected', '')}"
    elif kind == "value_error":
        what = str(ctx.get("error", "")) or "not allowed"
    elif kind == "missing":
        what = "is required"
    else:
        what = f"'{value}' is not allowed here"
    return f"{flag}: {what}" if flag else what


def _request(args: argparse.Namespace) -> PerfRequest:
    given = {k: v for k, v in vars(args).items() if k not in {"calibrate_from", "json", *TOPOLOGY_FLAGS}}
    if not ({"model", "custom"} & given.keys()):
        raise CliError("--model: give a catalog model, or --config with a config.json for one outside the catalog")
    return PerfRequest(**request_fields(given))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["fit"]:
        from perf.refit import main as refit

        return refit(args_list[1:])
    args = build_parser().parse_args(args_list)
    topology = {k: v for k, v in vars(args).items() if k in TOPOLOGY_FLAGS}
    if topology:
        return _main_topology(args, topology)
    try:
        with forgiven_matches() as forgiven:  # the estimate resolves the names: it notes the forgiving ones
            request = _request(args)
            result = estimate(request)
        for note in forgiven_notes(forgiven):
            print(note, file=sys.stderr)
        if args.calibrate_from:  # the files measured this configuration: name it as the estimate resolved it
            calibrations = [_calibration(path, request, result) for path in args.calibrate_from]
            result = estimate(request, calibrations)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            print(f"error: {_message(error)}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    except NoEstimateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for line in measured_lines(request.gpu, request.model):  # an NPU: what was measured there, as published
            print(line, file=sys.stderr)
        return EXIT_NO_ESTIMATE
    except (PerfError, CliError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    print(json.dumps(result.to_json_dict(), indent=2) if args.json else render(result))
    return EXIT_OK


def _main_topology(args: argparse.Namespace, given: dict[str, Any]) -> int:
    """--topology agg|disagg|best (and the pools' flags): the topology's figures, with the other under alternative."""
    try:
        options = TopologyOptions(**given)
        if args.calibrate_from:
            raise CliError("--calibrate-from: calibrates one pool only; leave out --topology to use it")
        with forgiven_matches() as forgiven:
            result = estimate_topology(_request(args), options)
        for note in forgiven_notes(forgiven):
            print(note, file=sys.stderr)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            loc = tuple(str(p) for p in error["loc"])
            if loc and loc[0] in TOPOLOGY_FLAGS:
                print(f"error: --{loc[0].replace('_', '-')}: {error['msg']}", file=sys.stderr)
            else:
                print(f"error: {_message(error)}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    except (PerfError, CliError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    print(json.dumps(result.to_json_dict(), indent=2) if args.json else render_topology(result))
    return EXIT_OK
