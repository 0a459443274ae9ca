"""Client fidelity: each client's TTFT/TPOT minus the fake server's own record, and its one-core ceiling, in one run.

Usage: .venv/bin/python bench/probe_fidelity.py [--clients probe,sdk,aiperf] [--quick] [--out bench/results]
(or `make bench`, which also builds bench/.venv with the public client pinned in bench/requirements.txt).

Method (docs/bench.md): the fake OpenAI-compatible server (fakeserver/) runs pinned to one core and records
when it received each request and sent each token (perf_counter, CLOCK_MONOTONIC, comparable across processes); each
client runs pinned to the other core, one process per load step, against 127.0.0.1 only. A figure is the client's
percentile minus the same percentile of the server's record over the same requests.
"""

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from common import PROJECT_PY, ROOT, FakeServer, pin

BENCH = ROOT / "bench"
BENCH_VENV = BENCH / ".venv"
AIPERF = BENCH_VENV / "bin" / "aiperf"

TTFT_MS = 200.0
TPOT_MS = 20.0
TOKENS = 128
TEMPERATURE = 0.3
LEVELS = (1, 16, 64, 256)
REQUESTS_PER_SLOT = 2
MIN_REQUESTS = 4
INFLATION_LIMIT = 0.10
# The ceiling ladder: (concurrency, per-token delay ms); offered load = concurrency / delay. First more concurrency
# at 20 ms per token, then shorter delays at 256 in flight.
CEILING_STEPS: tuple[tuple[int, float], ...] = (
    (16, 20.0),
    (64, 20.0),
    (128, 20.0),
    (256, 20.0),
    (256, 10.0),
    (256, 5.0),
    (256, 3.5),
    (256, 2.5),
    (256, 2.0),
    (256, 1.6),
    (256, 1.3),
    (256, 1.0),
)
STEP_TIMEOUT_S = 180.0


@dataclass
class Truth:
    """The server's own account of a set of requests (milliseconds)."""

    ttft_ms: list[float]
    tpot_ms: list[float]
    tokens: int
    wall_s: float


@dataclass
class Measured:
    """What a client reported for the same requests (milliseconds)."""

    ttft_ms: list[float]
    tpot_ms: list[float]
    failed: int = 0


@dataclass
class StepResult:
    """One client at one load: percentiles of the client and of the server, and the consumed token rate."""

    client: str
    concurrency: int
    tpot_nominal_ms: float
    requests: int
    failed: int
    ttft_p50_ms: float
    ttft_p99_ms: float
    tpot_p50_ms: float
    tpot_p99_ms: float
    server_ttft_p50_ms: float
    server_ttft_p99_ms: float
    server_tpot_p50_ms: float
    server_tpot_p99_ms: float
    tok_s: float
    elapsed_s: float
    notes: list[str] = field(default_factory=list)

    @property
    def decode_tok_s(self) -> float:
        """Aggregate tokens/s while every stream decodes: concurrency over the server's actual TPOT p50."""
        return self.concurrency * 1000.0 / self.server_tpot_p50_ms

    @property
    def tpot_inflation_ratio(self) -> float:
        """Client TPOT p50 over the server's TPOT p50, minus one."""
        return self.tpot_p50_ms / self.server_tpot_p50_ms - 1.0


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, as vLLM's benchmark)."""
    if not values:
        return math.nan
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


# The fake server's defaults for every step (bench/common.py starts it on a free port, pinned to its core).
SERVER_FLAGS = ("--ttft-ms", str(TTFT_MS), "--tpot-ms", str(TPOT_MS), "--tokens", str(TOKENS), "--no-metrics")


def truth_of(records: list[dict[str, Any]]) -> Truth:
    """The server's TTFT (request received to first token sent) and TPOT (first to last token) per request."""
    ttft, tpot = [], []
    tokens = 0
    for r in records:
        token_s = r["token_s"]
        n = sum(r["chunk_tokens"])
        tokens += n
        if not token_s:
            continue
        ttft.append((token_s[0] - r["received_s"]) * 1000.0)
        if n > 1:
            tpot.append((token_s[-1] - token_s[0]) * 1000.0 / (n - 1))
    starts = [r["received_s"] for r in records]
    ends = [r["done_s"] or (r["token_s"][-1] if r["token_s"] else r["received_s"]) for r in records]
    wall_s = max(ends) - min(starts) if records else math.nan
    return Truth(ttft, tpot, tokens, wall_s)


# -- the clients under test -----------------------------------------------------------------------------------------


@dataclass
class Load:
    """One load step: the model name carries the fake server's per-token delay."""

    concurrency: int
    requests: int
    ttft_ms: float
    tpot_ms: float

    @property
    def model(self) -> str:
        # TTFT and token count are the server's defaults; only the per-token delay varies, with no comma in the
        # name (aiperf splits --model on commas).
        assert self.ttft_ms == TTFT_MS
        return f"fake:tpot_ms={self.tpot_ms:g}"


def run_project_client(kind: str, server: FakeServer, load: Load, core: int, work: Path) -> Measured:
    """The probe or the handbook's SDK loop (bench/fidelity_clients.py) in the project venv."""
    out = work / f"{kind}-{load.concurrency}-{load.tpot_ms:g}.json"
    cmd = [
        str(PROJECT_PY),
        str(BENCH / "fidelity_clients.py"),
        kind,
        "--base-url",
        server.base_url,
        "--model",
        load.model,
        "--concurrency",
        str(load.concurrency),
        "--requests",
        str(load.requests),
        "--out",
        str(out),
    ]
    subprocess.run(
        cmd,
        cwd=ROOT,
        preexec_fn=pin(core),
        check=True,
        timeout=STEP_TIMEOUT_S,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    got = json.loads(out.read_text())
    ok = [r for r in got["requests"] if r["error"] is None]
    return Measured(
        [r["ttft_ms"] for r in ok if r["ttft_ms"] is not None],
        [r["tpot_ms"] for r in ok if r["tpot_ms"] is not None],
        len(got["requests"]) - len(ok),
    )


def write_prompt_file(work: Path) -> Path:
    """The handbook's eight prompts (the probe's seed workload) as aiperf's single-turn JSONL."""
    sys.path.insert(0, str(ROOT))
    from probes.workloads import SEED_PROMPTS

    path = work / "prompts.jsonl"
    path.write_text("".join(json.dumps({"text": p}) + "\n" for p in SEED_PROMPTS))
    return path


def tokenizer_dir(work: Path) -> Path:
    """A tiny word-level tokenizer on disk, so aiperf loads one without the network (its `builtin` downloads)."""
    out = work / "tokenizer"
    if (out / "tokenizer.json").exists():
        return out
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from tokenizers import Tokenizer, models, pre_tokenizers\n"
        "out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)\n"
        "words = ['[UNK]', 'alpha', 'beta', 'gamma', 'delta', 'eps', 'zeta', 'eta', 'theta']\n"
        "tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token='[UNK]'))\n"
        "tok.pre_tokenizer = pre_tokenizers.Whitespace()\n"
        "tok.save(str(out / 'tokenizer.json'))\n"
        "(out / 'tokenizer_config.json').write_text(json.dumps({'tokenizer_class': 'PreTrainedTokenizerFast',"
        " 'unk_token': '[UNK]', 'model_max_length': 1000000}))\n"
    )
    subprocess.run([str(BENCH_VENV / "bin" / "python"), "-c", script, str(out)], check=True)
    return out


def run_aiperf(server: FakeServer, load: Load, core: int, work: Path) -> Measured:
    """aiperf against the same server and load; its per-request export (profile_export.jsonl) is read back.

    Token counts come from the server's usage (--use-server-token-count), as the probe's do; aiperf's
    inter_token_latency is (request latency - TTFT) / (output tokens - 1), the same TPOT. Its own warm-up is off.
    """
    out = work / f"aiperf-{load.concurrency}-{load.tpot_ms:g}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [
        str(AIPERF),
        "profile",
        "--model",
        load.model,
        "--url",
        f"http://127.0.0.1:{server.port}",
        "--endpoint-type",
        "chat",
        "--streaming",
        "--concurrency",
        str(load.concurrency),
        "--request-count",
        str(load.requests),
        "--input-file",
        str(write_prompt_file(work)),
        "--custom-dataset-type",
        "single_turn",
        "--tokenizer",
        str(tokenizer_dir(work)),
        "--use-server-token-count",
        "--extra-inputs",
        f"max_tokens:{TOKENS}",
        "--extra-inputs",
        f"temperature:{TEMPERATURE}",
        "--no-server-metrics",
        "--no-gpu-telemetry",
        "--ui",
        "none",
        "--artifact-dir",
        str(out),
    ]
    env = {**os.environ, "HF_HUB_DISABLE_TELEMETRY": "1", "NO_PROXY": "*", "no_proxy": "*"}
    with (work / "aiperf.log").open("ab") as log:
        subprocess.run(
            cmd, cwd=work, preexec_fn=pin(core), check=True, timeout=STEP_TIMEOUT_S, env=env, stdout=log, stderr=log
        )
    ttft, tpot, failed = [], [], 0
    for line in (out / "profile_export.jsonl").read_text().splitlines():
        rec = json.loads(line)
        metrics = rec.get("metrics") or {}
        if rec.get("error") or "time_to_first_token" not in metrics:
            failed += 1
            continue
        ttft.append(float(metrics["time_to_first_token"]["value"]))
        if "inter_token_latency" in metrics:
            tpot.append(float(metrics["inter_token_latency"]["value"]))
    return Measured(ttft, tpot, failed)


CLIENTS: dict[str, Callable[[FakeServer, Load, int, Path], Measured]] = {
    "probe": lambda s, ld, c, w: run_project_client("probe", s, ld, c, w),
    "sdk": lambda s, ld, c, w: run_project_client("sdk", s, ld, c, w),
    "aiperf": run_aiperf,
}
CLIENT_TITLES = {"probe": "probe (probes/)", "sdk": "handbook SDK loop", "aiperf": "aiperf"}


def run_step(client: str, server: FakeServer, load: Load, core: int, work: Path) -> StepResult:
    """One client at one load, fresh process; compare with the server's record of exactly those requests."""
    server.take_records()
    started = time.monotonic()
    measured = CLIENTS[client](server, load, core, work)
    elapsed_s = time.monotonic() - started
    truth = truth_of(server.take_records())
    notes = []
    server_tpot_p50 = percentile(truth.tpot_ms, 50)
    if abs(server_tpot_p50 / load.tpot_ms - 1) > 0.01 and load.tpot_ms >= TPOT_MS:
        notes.append(f"server disturbed: its TPOT p50 {server_tpot_p50:.3f} ms for a nominal {load.tpot_ms:g} ms")
    if len(truth.ttft_ms) != load.requests:
        notes.append(f"server saw {len(truth.ttft_ms)} streamed requests, expected {load.requests}")
    return StepResult(
        client=client,
        concurrency=load.concurrency,
        tpot_nominal_ms=load.tpot_ms,
        requests=load.requests,
        failed=measured.failed,
        ttft_p50_ms=percentile(measured.ttft_ms, 50),
        ttft_p99_ms=percentile(measured.ttft_ms, 99),
        tpot_p50_ms=percentile(measured.tpot_ms, 50),
        tpot_p99_ms=percentile(measured.tpot_ms, 99),
        server_ttft_p50_ms=percentile(truth.ttft_ms, 50),
        server_ttft_p99_ms=percentile(truth.ttft_ms, 99),
        server_tpot_p50_ms=percentile(truth.tpot_ms, 50),
        server_tpot_p99_ms=percentile(truth.tpot_ms, 99),
        tok_s=truth.tokens / truth.wall_s if truth.wall_s > 0 else math.nan,
        elapsed_s=elapsed_s,
        notes=notes,
    )


def requests_for(concurrency: int) -> int:
    return max(MIN_REQUESTS, REQUESTS_PER_SLOT * concurrency)


@dataclass
class Ceiling:
    """The highest consumed tok/s with TPOT p50 inflated by at most 10%, and what ended the ladder."""

    client: str
    tok_s: float
    concurrency: int
    tpot_nominal_ms: float
    ended_by: str
    steps: list[StepResult]


def find_ceiling(client: str, server: FakeServer, core: int, work: Path, log: Callable[[str], None]) -> Ceiling:
    """Climb CEILING_STEPS until the client's TPOT p50 differs from the server's by more than 10% (either way).

    Too low is as wrong as too high: a client that reads late coalesces the first tokens and under-reports TPOT.
    """
    best: StepResult | None = None
    steps: list[StepResult] = []
    ended_by = "ladder exhausted"
    server_lagged = False
    for concurrency, tpot_ms in CEILING_STEPS:
        load = Load(concurrency, REQUESTS_PER_SLOT * concurrency, TTFT_MS, tpot_ms)
        step = run_step(client, server, load, core, work)
        steps.append(step)
        log(
            f"  ceiling {client}: c={concurrency} tpot={tpot_ms:g} ms -> {step.decode_tok_s:,.0f} tok/s in decode "
            f"(wall average {step.tok_s:,.0f}), "
            f"client tpot p50 {step.tpot_p50_ms:.3f} ms vs server {step.server_tpot_p50_ms:.3f} ms "
            f"({step.tpot_inflation_ratio:+.1%})"
        )
        if step.failed or abs(step.tpot_inflation_ratio) > INFLATION_LIMIT:
            ended_by = (
                f"client TPOT p50 {step.tpot_inflation_ratio:+.0%} vs the server's at c={concurrency}, "
                f"{tpot_ms:g} ms/token" + (f", {step.failed} failed" if step.failed else "")
            )
            break
        best = step if best is None or step.decode_tok_s > best.decode_tok_s else best
        if step.server_tpot_p50_ms > tpot_ms * (1 + INFLATION_LIMIT):
            server_lagged = True
    if server_lagged:
        ended_by += "; the server itself fell behind its nominal per-token delay (its own limit)"
    if best is None:
        return Ceiling(client, 0.0, 0, math.nan, ended_by, steps)
    return Ceiling(client, best.decode_tok_s, best.concurrency, best.tpot_nominal_ms, ended_by, steps)


# -- report ---------------------------------------------------------------------------------------------------------


def fmt(x: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(x) else f"{x:+.{digits}f}"


def report(levels: list[StepResult], ceilings: list[Ceiling], clients: list[str], meta: dict[str, Any]) -> str:
    """The side-by-side Markdown tables."""
    lines = [
        f"Load average before: {meta['load_before']}; after: {meta['load_after']}; "
        f"client core {meta['client_core']}, server core {meta['server_core']}; total {meta['elapsed_s']:.0f} s.",
        "",
        "Measured minus the server's own record (ms); TTFT 200 ms, 20 ms/token, 128 tokens, "
        f"{REQUESTS_PER_SLOT} requests per slot (at least {MIN_REQUESTS}):",
        "",
    ]
    head = "| concurrency | metric | " + " | ".join(CLIENT_TITLES[c] for c in clients) + " |"
    lines += [head, "|---|---|" + "---|" * len(clients)]
    by = {(s.client, s.concurrency): s for s in levels}
    for c in LEVELS:
        rows = [
            ("TTFT p50", "ttft_p50_ms", 1),
            ("TTFT p99", "ttft_p99_ms", 1),
            ("TPOT p50", "tpot_p50_ms", 3),
            ("TPOT p99", "tpot_p99_ms", 3),
        ]
        for title, attr, digits in rows:
            cells = []
            for client in clients:
                s = by.get((client, c))
                if s is None:
                    cells.append("n/a")
                    continue
                diff = getattr(s, attr) - getattr(s, "server_" + attr)
                cells.append(
                    fmt(diff, digits) + (f" ({s.failed} failed)" if s.failed else "") + (" (!)" if s.notes else "")
                )
            lines.append(f"| {c} | {title} | " + " | ".join(cells) + " |")
    noted = [f"{CLIENT_TITLES[s.client]} at {s.concurrency}: " + "; ".join(s.notes) for s in levels if s.notes]
    if noted:
        lines += ["", "(!) " + " | ".join(noted) + " (rerun on a quieter machine)"]
    lines += [
        "",
        "Server's own record (ms), p50 / p99:",
        "",
        "| concurrency | " + " | ".join(CLIENT_TITLES[c] for c in clients) + " |",
        "|---|" + "---|" * len(clients),
    ]
    for c in LEVELS:
        cells = []
        for client in clients:
            s = by.get((client, c))
            cells.append(
                "n/a"
                if s is None
                else f"TTFT {s.server_ttft_p50_ms:.1f} / {s.server_ttft_p99_ms:.1f}, "
                f"TPOT {s.server_tpot_p50_ms:.3f} / {s.server_tpot_p99_ms:.3f}"
            )
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Ceiling: the aggregate tokens/s the client consumes while its streams decode (concurrency / the "
        "server's actual TPOT p50) at the highest step where the client's TPOT p50 stayed within 10% of the "
        f"server's; TTFT 200 ms, 128 tokens, {REQUESTS_PER_SLOT} requests per slot; steps (concurrency x "
        "ms/token): " + ", ".join(f"{c}x{d:g}" for c, d in CEILING_STEPS) + ".",
        "",
        "| client | ceiling tok/s | at (concurrency, ms/token) | wall average there | ended by |",
        "|---|---|---|---|---|",
    ]
    for ce in ceilings:
        best = next(
            (st for st in ce.steps if st.concurrency == ce.concurrency and st.tpot_nominal_ms == ce.tpot_nominal_ms),
            None,
        )
        at = "n/a" if best is None else f"{ce.concurrency}, {ce.tpot_nominal_ms:g}"
        wall = "n/a" if best is None else f"{best.tok_s:,.0f}"
        lines.append(f"| {CLIENT_TITLES[ce.client]} | {ce.tok_s:,.0f} | {at} | {wall} | {ce.ended_by} |")
    probe = next((ce for ce in ceilings if ce.client == "probe"), None)
    if probe is not None:
        ratios = [
            f"{CLIENT_TITLES[ce.client]} {probe.tok_s / ce.tok_s:.1f}x"
            for ce in ceilings
            if ce.client != "probe" and ce.tok_s > 0
        ]
        if ratios:
            lines += ["", "Probe ceiling over: " + ", ".join(ratios) + "."]
    lines += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()) + "."]
    return "\n".join(lines)


def versions(clients: list[str]) -> dict[str, str]:
    """Python, the kernel, openai (project venv) and the public client (bench venv)."""
    import importlib.metadata
    import platform

    got = {
        "python": platform.python_version(),
        "linux": platform.release(),
        "openai": importlib.metadata.version("openai"),
        "httpx2": importlib.metadata.version("httpx2"),
    }
    if "aiperf" in clients:
        out = subprocess.run(
            [str(BENCH_VENV / "bin" / "python"), "-c", "import importlib.metadata as m; print(m.version('aiperf'))"],
            capture_output=True,
            text=True,
            check=False,
        )
        got["aiperf"] = out.stdout.strip() or "?"
    return got


def idle_ratio(window_s: float = 3.0) -> float:
    """Share of CPU time both cores spent idle over the window (from /proc/stat)."""

    def sample() -> list[int]:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:9]]

    a = sample()
    time.sleep(window_s)
    b = sample()
    deltas = [y - x for x, y in zip(a, b, strict=True)]
    return deltas[3] / max(1, sum(deltas))


def wait_idle(min_ratio: float, log: Callable[[str], None], max_wait_s: float = 600.0) -> None:
    """Before a client's runs: wait until the machine is this idle (other work on the cores shows in the figures)."""
    deadline = time.monotonic() + max_wait_s
    while (ratio := idle_ratio()) < min_ratio:
        if time.monotonic() > deadline:
            log(f"  still only {ratio:.0%} idle after {max_wait_s:g} s; running anyway")
            return
        log(f"  machine {ratio:.0%} idle, waiting for {min_ratio:.0%}")


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="probe-fidelity-") as tmp:
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="probe,sdk,aiperf")
    parser.add_argument("--levels", default=",".join(map(str, LEVELS)))
    parser.add_argument("--no-ceiling", action="store_true")
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="JSON and Markdown results here")
    parser.add_argument("--work", type=Path, default=None, help="keep the clients' raw files here")
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="RATIO",
        help="before each client, wait (up to 10 min) until both cores are this idle, e.g. 0.9",
    )
    args = parser.parse_args()
    clients = [c for c in args.clients.split(",") if c]
    unknown = set(clients) - set(CLIENTS)
    if unknown:
        parser.error(f"unknown clients {sorted(unknown)}")
    if "aiperf" in clients and not AIPERF.exists():
        parser.error(f"aiperf is not installed in {BENCH_VENV} (run `make bench`)")
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        parser.error("needs two cores: one for the server, one for the client")
    client_core, server_core = cores[0], cores[1]
    os.sched_setaffinity(0, {server_core})  # this driver idles on the server's core while a client runs
    levels_wanted = [int(x) for x in args.levels.split(",")]

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    meta: dict[str, Any] = {
        "load_before": loadavg(),
        "client_core": client_core,
        "server_core": server_core,
        "versions": versions(clients),
    }
    started = time.monotonic()
    levels: list[StepResult] = []
    ceilings: list[Ceiling] = []
    with FakeServer(*SERVER_FLAGS, core=server_core) as server, workdir(args.work) as work:
        for client in clients:
            if args.wait_idle:
                wait_idle(args.wait_idle, log)
            for c in levels_wanted:
                step = run_step(client, server, Load(c, requests_for(c), TTFT_MS, TPOT_MS), client_core, work)
                levels.append(step)
                log(
                    f"{client} c={c}: TTFT p50 {step.ttft_p50_ms - step.server_ttft_p50_ms:+.2f} ms, "
                    f"TPOT p50 {step.tpot_p50_ms - step.server_tpot_p50_ms:+.4f} ms ({step.elapsed_s:.1f} s)"
                )
            if not args.no_ceiling:
                ceilings.append(find_ceiling(client, server, client_core, work, log))
    meta["load_after"] = loadavg()
    meta["elapsed_s"] = time.monotonic() - started
    text = report(levels, ceilings, clients, meta)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe_fidelity.md").write_text(text + "\n")

    def step_json(step: StepResult) -> dict[str, Any]:
        return {**asdict(step), "decode_tok_s": step.decode_tok_s, "tpot_inflation_ratio": step.tpot_inflation_ratio}

    payload = {
        "meta": meta,
        "levels": [step_json(s) for s in levels],
        "ceilings": [{**asdict(c), "steps": [step_json(s) for s in c.steps]} for c in ceilings],
    }
    (args.out / "probe_fidelity.json").write_text(json.dumps(payload, indent=1))


if __name__ == "__main__":
    main()
