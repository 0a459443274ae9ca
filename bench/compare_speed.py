"""Speed: how long the /compare ranking takes, cold (every option estimated) and warm (estimates cached).

Usage: .venv/bin/python bench/compare_speed.py [--cases default,70b,two-hundred] [--limit-s 2]
Method: each case runs in a fresh Python process (nothing cached, as after a server start). It times the imports,
then rank() once cold (the advisor's check and perf's estimate of every option, perf's first-call set-up included),
then rank() with another SLO (new estimates, perf already set up: what a user's change of model or SLO costs), then
rank() again with another currency and traffic (every estimate cached: what a change of prices or traffic costs).
Wall times by time.perf_counter. Exit 1 when a case of at most 250 options takes longer than --limit-s cold.
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CASES: dict[str, dict[str, object]] = {
    "default": {},
    "70b": {"model": "llama3.1-70b"},
    "two-hundred": {"engines": ("vllm", "sglang"), "counts": (1,)},  # about 200 options: one GPU per replica
    "moe": {"model": "qwen3-30b-a3b", "engines": ("vllm", "sglang")},
}


def _one(case: str) -> dict[str, object]:
    """Run one case in this process and return its figures."""
    start = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from tco.compare_inputs import CompareInputs
    from tco.ranking import rank

    imported = time.perf_counter() - start
    inputs = CompareInputs.model_validate(CASES[case])
    start = time.perf_counter()
    ranking = rank(inputs)
    cold = time.perf_counter() - start
    other_slo = inputs.model_copy(update={"tpot_p50_ms": inputs.tpot_p50_ms * 0.8})
    start = time.perf_counter()
    rank(other_slo)
    new_slo = time.perf_counter() - start
    other_prices = inputs.model_copy(update={"currency": "USD", "traffic_requests_per_day": 5e6})
    start = time.perf_counter()
    rank(other_prices)
    warm = time.perf_counter() - start
    top = ranking.top
    return {
        "case": case,
        "inputs": CASES[case],
        "options": len(ranking.options),
        "considered": ranking.considered,
        "import_s": round(imported, 3),
        "cold_s": round(cold, 3),
        "new_slo_s": round(new_slo, 3),
        "warm_s": round(warm, 3),
        "cold_ms_per_option": round(cold / max(len(ranking.options), 1) * 1000, 2),
        "top": top.label if top else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--limit-s", type=float, default=2.0)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(args.one)))
        return 0
    failed = False
    print("| case | inputs | options (of combinations) | import s | cold s | ms/option cold | new SLO s | warm s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case in args.cases.split(","):
        out = subprocess.run(
            [sys.executable, __file__, "--one", case], check=True, capture_output=True, text=True, cwd=ROOT
        ).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(
            f"| {case} | `{r['inputs']}` | {r['options']} ({r['considered']}) | {r['import_s']} | {r['cold_s']} | "
            f"{r['cold_ms_per_option']} | {r['new_slo_s']} | {r['warm_s']} |"
        )
        if int(r["options"]) <= 250 and float(r["cold_s"]) > args.limit_s:
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
