"""--workers scaling: delivered tok/s, client CPU and TTFT error against the server's records, at 1, 2, 4 workers."""

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from common import PROJECT_PY, ROOT, FakeServer

WORKERS = (1, 2, 4)
TTFT_MS, TPOT_MS, TOKENS = 150, 15, 64


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def _one(server: FakeServer, workers: int, concurrency: int, requests: int, out: Path) -> dict[str, Any]:
    server.take_records()
    cmd = [str(PROJECT_PY), "-m", "probes", "--base-url", server.base_url, "--model", "fake"]
    cmd += ["--concurrency", str(concurrency), "--requests", str(requests), "--no-db", "--no-metrics", "--quiet"]
    cmd += ["--workers", str(workers), "--output", str(out)]
    started = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, check=True, timeout=1800)
    wall_s = time.monotonic() - started
    run = json.loads(out.read_text())
    level = run["levels"][0]
    records = server.take_records()
    server_ttft = [(r["token_s"][0] - r["received_s"]) * 1000 for r in records if r["token_s"]]
    probe_ttft = [s["ttft_ms"] for s in run["samples"] if s["ttft_ms"] is not None]
    return {
        "workers": workers,
        "requests": len(run["samples"]),
        "server_requests": len(records),
        "output_tok_s": level["output_tok_s"],
        "client_cpu_percent": sum(w["cpu_percent"] or 0 for w in run["workers"]),
        "ttft_p50_error_ms": round(_percentile(probe_ttft, 50) - _percentile(server_ttft, 50), 2),
        "ttft_p99_error_ms": round(_percentile(probe_ttft, 99) - _percentile(server_ttft, 99), 2),
        "partial": run["partial"],
        "wall_s": round(wall_s, 1),
    }


def main() -> None:
    """Run each worker count once against one fake server and print a markdown table (and the JSON rows)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--requests", type=int, default=512)
    args = parser.parse_args()
    flags = ("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS), "--tokens", str(TOKENS))
    rows = []
    with FakeServer(*flags) as server, tempfile.TemporaryDirectory() as tmp:
        for workers in WORKERS:
            rows.append(_one(server, workers, args.concurrency, args.requests, Path(tmp) / f"w{workers}.json"))
    print("| workers | requests (server) | output tok/s | client CPU % | TTFT p50 error ms | TTFT p99 error ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['workers']} | {r['requests']} ({r['server_requests']}) | {r['output_tok_s']:.0f} | "
            f"{r['client_cpu_percent']:.0f} | {r['ttft_p50_error_ms']} | {r['ttft_p99_error_ms']} |"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
