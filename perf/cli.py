"""The command line: `python -m perf --gpu H100 --model llama-3.1-8b --engine vllm --quant fp8 --json`.

Exit codes: 0 an estimate was printed; 2 bad input or no estimate for this engine or GPU (the message says which).
`fit` refits the coefficients on the public fit set and rewrites perf/data/coefficients.json.
"""

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from perf.errors import PerfError
from perf.estimate import estimate
from perf.inputs import PerfRequest, Slo
from perf.result import Calibration, Estimate, MeasuredLevel

EXIT_OK, EXIT_NO_ESTIMATE = 0, 2


def _levels(text: str) -> tuple[tuple[int, ...], bool]:
    """'1,10,50' -> levels; 'max' (alone or in the list) asks for the highest-throughput point."""
    parts = [p.strip().lower() for p in text.split(",") if p.strip()]
    values = tuple(int(p) for p in parts if p != "max")
    return values, "max" in parts


def _rates(text: str) -> tuple[float, ...]:
    return tuple(float(p) for p in text.split(",") if p.strip())


def build_parser() -> argparse.ArgumentParser:
    """The flags of the estimate (the same names as PerfRequest's fields, hyphenated)."""
    slo = Slo()
    p = argparse.ArgumentParser(
        prog="python -m perf",
        description="Estimate TTFT, TPOT and throughput of one configuration without hardware (an estimate, "
        "with its band and basis). `python -m perf fit` refits the coefficients.",
    )
    p.add_argument("--gpu", required=True, help="a catalog GPU by id, name or alias (H100, A800, 'RTX 4090')")
    p.add_argument("--gpus", type=int, default=1, help="GPUs for one model copy (default 1)")
    p.add_argument("--model", required=True, help="a catalog model (llama-3.1-8b, qwen2.5-7b, ...)")
    p.add_argument("--engine", required=True, help="vllm, sglang, tensorrt-llm or lmdeploy")
    p.add_argument("--quant", default="auto", help="bf16, fp8, awq, gptq, w8a8-int8, nvfp4, mxfp4 or auto")
    p.add_argument("--kv-cache", default="auto", help="KV cache dtype: auto (the advisor's) or fp8")
    p.add_argument("--input-tokens", type=int, default=1000)
    p.add_argument("--output-tokens", type=int, default=200)
    p.add_argument(
        "--concurrency",
        default="1,10,50,100",
        help="closed-loop levels, comma-separated; 'max' = the highest-throughput point (offline batch, no SLO)",
    )
    p.add_argument("--request-rate", default="", help="Poisson arrival rates in requests/s, comma-separated")
    p.add_argument("--find-max-rate", action="store_true", help="also search the highest rate within the SLO")
    p.add_argument("--prefix-cache-hit", type=float, default=0.0, help="share of each prompt already cached (0-1)")
    p.add_argument("--speculative-tokens", type=int, default=0, help="draft tokens per step (0 = no speculation)")
    p.add_argument("--acceptance-rate", type=float, default=0.7, help="speculative acceptance rate (0-1)")
    p.add_argument("--ttft-p50-ms", type=float, default=slo.ttft_p50_ms)
    p.add_argument("--ttft-p99-ms", type=float, default=slo.ttft_p99_ms)
    p.add_argument("--tpot-p50-ms", type=float, default=slo.tpot_p50_ms)
    p.add_argument(
        "--calibrate-from",
        metavar="RUN.json",
        action="append",
        default=[],
        help="a probe run's JSON (python -m probes --json) of this same configuration: calibrates the estimate",
    )
    p.add_argument("--json", action="store_true", help="print the estimate as JSON")
    return p


def _calibration(path: str, request: PerfRequest, resolved: Estimate) -> Calibration:
    """A probe JSON file (python -m probes --json) read as a calibration of the estimated configuration."""
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
        gpus=request.gpus,
        model=resolved.model_id,
        engine=resolved.engine,
        quant=resolved.quant,
        levels=tuple(levels),
    )


def render(result: Estimate) -> str:
    """A plain-text table for people."""
    lines = [
        f"ESTIMATE for {result.layout.gpus}x {result.gpu_name}, {result.model_name}, {result.engine}, {result.quant} "
        f"(KV {result.kv_cache_dtype}), {result.request.input_tokens} in / {result.request.output_tokens} out",
        f"band: measured/estimated tok/s {result.band.low_ratio:.2f}-{result.band.high_ratio:.2f} "
        f"({result.band.group}); basis: {result.basis.text}",
        f"{'load':>12} {'tok/s':>10} {'req/s':>8} {'TTFT p50':>9} {'TTFT p99':>9} {'TPOT p50':>9} {'E2E p50':>9}  SLO",
    ]
    for level in result.levels:
        load = f"c={level.concurrency}" if level.concurrency else f"{level.request_rate_rps:g} rps"
        lines.append(
            f"{load:>12} {level.output_tok_s:>10,.0f} {level.req_s:>8.2f} {level.ttft_ms.p50:>8.0f}ms "
            f"{level.ttft_ms.p99 or 0:>7.0f}ms {level.tpot_ms.p50:>7.1f}ms {level.e2e_ms.p50:>7.0f}ms  "
            f"{'meets' if level.meets_slo else 'misses'}"
        )
    lines.append(
        f"max {result.max_output_tok_s:,.0f} tok/s at concurrency {result.max_throughput_concurrency}; "
        f"highest concurrency within SLO: {result.best_concurrency_within_slo}"
    )
    lines.extend(f"note: {n}" for n in result.notes)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["fit"]:
        from perf.refit import main as refit

        return refit(args_list[1:])
    args = build_parser().parse_args(args_list)
    try:
        levels, want_max = _levels(args.concurrency)
        request = PerfRequest(
            gpu=args.gpu,
            gpus=args.gpus,
            model=args.model,
            engine=args.engine,
            quant=args.quant,
            kv_cache=args.kv_cache,
            input_tokens=args.input_tokens,
            output_tokens=args.output_tokens,
            concurrency=levels,
            max_throughput=want_max,
            request_rates_rps=_rates(args.request_rate),
            find_max_rate=args.find_max_rate,
            prefix_cache_hit=args.prefix_cache_hit,
            speculative_tokens=args.speculative_tokens,
            acceptance_rate=args.acceptance_rate,
            slo=Slo(ttft_p50_ms=args.ttft_p50_ms, ttft_p99_ms=args.ttft_p99_ms, tpot_p50_ms=args.tpot_p50_ms),
        )
        result = estimate(request)
        if args.calibrate_from:  # the files measured this configuration: name it as the estimate resolved it
            calibrations = [_calibration(path, request, result) for path in args.calibrate_from]
            result = estimate(request, calibrations)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or "input"
            print(f"error: {field}: {error['msg']}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    except (PerfError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_NO_ESTIMATE
    print(json.dumps(result.to_json_dict(), indent=2) if args.json else render(result))
    return EXIT_OK
