"""Page speed: seconds from navigation to each page's headline figure in headless Chromium, against a one-metric floor.

Usage: .venv/bin/python bench/page_speed.py [--visits 5] [--pages tco,selector,...] [--keep] (or `make page-speed`).

Method: starts `streamlit run app.py` (its own temporary SQLite database and uploads folder, one probe run stored
against the project's fake server) and a "floor" app (one st.title and one st.metric) on free ports, both headless on
127.0.0.1 with the project's .streamlit config. One Debian Chromium, driven by Playwright; in each round the floor is
visited first, then every page in an order shuffled with a fixed seed. Each visit is a new browser context (empty
cache, no cookies, no session) with one tab. The time is taken in the page: a script installed before the page's own
(HEADLINE_JS) looks for the headline at every DOM change and every animation frame, and keeps performance.now() (time
since the navigation started) the first time it is laid out and visible. Playwright's own wait_for is not used for the
time: it looks again after 0, 20, 50, 100 and 100 ms and then only every 500 ms, which rounds a visit up by as much as
the 0.5 s this bench checks. Then the wait goes on until the page is whole: the first-paint beacon gone
(ui/first_paint.py) and the app's script finished (stApp's data-test-script-state, as tests/e2e/helpers.wait_idle).
Bytes received are counted in the page too, so that counting adds no work to the browser's side of the timed visit
(Playwright's network and WebSocket events did, per response and per frame): the transferSize of the document and of
every resource (Resource Timing: body as sent plus headers) and the size of every WebSocket message received, up to
the headline and up to idle. Results go to
bench/results/page_speed.md and .json (every visit). Exit 1 when a page's median is more than --limit-s (0.5 s) above
the floor's, or a page failed to show its headline.
"""

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from common import ROOT, FakeServer, free_port, process
from playwright.sync_api import Browser, ViewportSize, expect, sync_playwright

sys.path.insert(0, str(ROOT))
from ui.first_paint import BEACON_KEY

RESULTS = ROOT / "bench" / "results"
PYTHON = sys.executable


@dataclass(frozen=True)
class Headline:
    """What the page's headline is, as the in-page observer looks for it (HEADLINE_JS)."""

    kind: Literal["metric", "button", "label", "cell"]
    label: str
    value: str | None = None  # a metric's exact value, when it must be that one


def metric(label: str, value: str | None = None) -> Headline:
    """The value of the st.metric card with this label (showing exactly this text, if given)."""
    return Headline("metric", label, value)


def button(name: str) -> Headline:
    """A button by its text (its icon's name, drawn as a glyph, is not part of it)."""
    return Headline("button", name)


def table_cell(text: str) -> Headline:
    """A cell of a Markdown table (the runs list's first tab) by its exact text."""
    return Headline("cell", text)


@dataclass(frozen=True)
class Target:
    """One page to open: on which server, its path ("{run}": the stored run's id), and the headline waited for."""

    server: Literal["floor", "app"]
    path: str
    figure: str  # the headline, as the results table words it
    find: Headline


FLOOR = "floor"
SEED_LABEL = "page-speed"  # the label of the probe run the bench stores

# The pages and their headlines (English). The floor is visited in every round; --pages picks among the others.
TARGETS: dict[str, Target] = {
    FLOOR: Target("floor", "/", 'metric "Floor" = 1.4 s', metric("Floor", "1.4 s")),
    "tco": Target(
        "app",
        "/tco?price=15&currency=CNY&tps=588&out_tokens=200&hours=720",
        'metric "Cost per request" = 0.0014 CNY',
        metric("Cost per request", "0.0014 CNY"),
    ),
    "selector": Target(
        "app",
        "/selector?gpu=H100&gpus=2&model=llama3.1-70b&workload=rag",
        'metric "Max sequences" (the recommendation)',
        metric("Max sequences"),
    ),
    "compare-narrow": Target(
        "app",
        "/compare?engines=vllm&counts=1",
        'metric "Per million output tokens" (top option)',
        metric("Per million output tokens"),
    ),
    "compare": Target(
        "app", "/compare", 'metric "Per million output tokens" (top option)', metric("Per million output tokens")
    ),
    "probe": Target("app", "/probe", 'button "Start probe"', button("Start probe")),
    "runs": Target("app", "/runs", "the list: the stored run's label in its first tab", table_cell(SEED_LABEL)),
    "runs-open": Target(
        "app",
        "/runs?runs={run}",
        'metric "Max concurrency in SLO" (the run\'s first)',
        metric("Max concurrency in SLO"),
    ),
}

FLOOR_SCRIPT = 'import streamlit as st\n\nst.title("Floor")\nst.metric("Floor", "1.4 s")\n'
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [  # as the browser tests launch it (tests/conftest.py)
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
VIEWPORT: ViewportSize = {"width": 1400, "height": 1000}  # the browser tests' window
SEED = 13  # the order of the pages within each round
LIMIT_S = 0.5  # a page's median may be this much above the floor's
SETTLE_IDLE = 0.75  # before each visit, wait for a quarter second in which the CPUs were at least this idle
SETTLE_MAX_S = 5.0  # ... but no longer than this
POLL_MS = 50  # how often Python asks the page whether it has timed the headline (not part of the time)
TIMEOUT_S = 300.0  # one wait (a server's start, a headline, idle): generous, the machine may be busy
# Installed before the page's own scripts: at every DOM change and every animation frame, is the headline there, laid
# out and not hidden? The first time it is, performance.now() (milliseconds since the navigation started) is kept.
HEADLINE_JS = """
(spec) => {
  const shown = (el) => {
    if (!el || !el.isConnected) return false;
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && el.checkVisibility({ visibilityProperty: true });
  };
  const text = (el) => {
    if (!el) return null;
    const copy = el.cloneNode(true);
    copy.querySelectorAll('[data-testid="stIconMaterial"]').forEach((icon) => icon.remove());
    return (copy.textContent || "").trim();
  };
  const found = () => {
    if (spec.kind === "metric") {
      for (const card of document.querySelectorAll('[data-testid="stMetric"]')) {
        if (text(card.querySelector('[data-testid="stMetricLabel"]')) !== spec.label) continue;
        const value = card.querySelector('[data-testid="stMetricValue"]');
        if ((spec.value === null || text(value) === spec.value) && shown(value)) return true;
      }
      return false;
    }
    const selector = {
      button: "button",
      label: '[data-testid="stWidgetLabel"]',
      cell: '[data-testid="stMarkdownContainer"] td',
    }[spec.kind];
    return [...document.querySelectorAll(selector)].some((el) => text(el) === spec.label && shown(el));
  };
  const received = () => {
    const loaded = performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource"));
    return {
      http: loaded.reduce((sum, entry) => sum + entry.transferSize, 0),
      responses: loaded.filter((entry) => entry.transferSize > 0).length,
      websocket: window.__wsBytes,
      frames: window.__wsFrames,
    };
  };
  window.__received = received;
  window.__wsBytes = 0;
  window.__wsFrames = 0;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        window.__wsBytes += event.data.byteLength ?? event.data.length ?? 0;
        window.__wsFrames += 1;
      });
    }
  };
  const look = () => {
    if (window.__headlineMs === undefined && found()) {
      window.__headlineMs = performance.now();
      window.__atHeadline = received();
    }
  };
  new MutationObserver(look).observe(document, { subtree: true, childList: true, characterData: true });
  const frame = () => {
    look();
    if (window.__headlineMs === undefined) requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}
"""
BEACON = f".st-key-{BEACON_KEY}"  # there until the run that draws the rest of the page
SEED_PROBE = ["--concurrency", "1,2", "--requests", "4", "--max-tokens", "16", "--label", SEED_LABEL]


# --- servers --------------------------------------------------------------------------------------------------------


def streamlit(script: Path, env: dict[str, str], log: Path) -> tuple[list[str], str]:
    """The command that serves script headless on 127.0.0.1 and a free port (run in ROOT: its .streamlit config)."""
    port = free_port()
    cmd = [PYTHON, "-m", "streamlit", "run", str(script), "--server.port", str(port)]
    cmd += ["--server.address", "127.0.0.1", "--server.headless", "true"]
    return cmd, f"http://127.0.0.1:{port}"


def seed_run(env: dict[str, str], folder: Path) -> str:
    """Store one small probe run (the fake server, a few requests) in the bench's database; return its id."""
    output = folder / "seed-run.json"
    with FakeServer(python=PYTHON, env=env, log=folder / "fakeserver.log", timeout_s=TIMEOUT_S) as server:
        cmd = [PYTHON, "-m", "probes", "--base-url", server.base_url, "--model", "fake", *SEED_PROBE]
        cmd += ["--output", str(output), "--quiet"]
        subprocess.run(cmd, cwd=ROOT, env=env, check=True, timeout=TIMEOUT_S)
    return str(json.loads(output.read_text())["run_id"])


# --- visits ---------------------------------------------------------------------------------------------------------


@dataclass
class Received:
    """Bytes the browser received, counted in the page: HTTP responses (headers included) and WebSocket messages."""

    http: int = 0
    websocket: int = 0
    responses: int = 0
    frames: int = 0

    @property
    def total(self) -> int:
        return self.http + self.websocket


@dataclass
class Visit:
    """One visit of one page: its round, when the headline showed, when the run ended, and what was received."""

    page: str
    round: int
    order: int
    headline_s: float | None = None  # navigation start to the headline drawn, timed in the page
    headline_wall_s: float | None = None  # start of page.goto to Python seeing it (polled every POLL_MS)
    idle_s: float | None = None
    to_headline: Received = field(default_factory=Received)
    to_idle: Received = field(default_factory=Received)
    exceptions: int = 0
    error: str | None = None
    settled_s: float = 0.0  # the wait before the visit for the machine to be quiet (settle())


def visit(browser: Browser, name: str, url: str, round_no: int, order: int) -> Visit:
    """Open url in a new browser context and time its headline, then its idle; count the bytes up to each."""
    target = TARGETS[name]
    result = Visit(name, round_no, order)
    timeout_ms = TIMEOUT_S * 1000
    context = browser.new_context(viewport=VIEWPORT, locale="en-US")
    context.set_default_timeout(timeout_ms)
    context.set_default_navigation_timeout(timeout_ms)
    try:
        page = context.new_page()
        page.add_init_script(script=f"({HEADLINE_JS})({json.dumps(asdict(target.find))})")
        start = time.perf_counter()
        page.goto(url, wait_until="commit")
        page.wait_for_function("window.__headlineMs !== undefined", polling=POLL_MS, timeout=timeout_ms)
        result.headline_wall_s = time.perf_counter() - start
        result.headline_s = float(page.evaluate("window.__headlineMs")) / 1000
        result.to_headline = Received(**page.evaluate("window.__atHeadline"))
        app = page.locator('[data-testid="stApp"]')
        expect(app).to_have_attribute("data-test-connection-state", "CONNECTED", timeout=timeout_ms)
        expect(page.locator(BEACON)).to_have_count(0, timeout=timeout_ms)
        expect(app).to_have_attribute("data-test-script-state", "notRunning", timeout=timeout_ms)
        result.idle_s = time.perf_counter() - start
        result.to_idle = Received(**page.evaluate("window.__received()"))
        result.exceptions = page.locator('[data-testid="stException"]').count()
        page.goto("about:blank")
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    finally:
        context.close()
    return result


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies of all CPUs from /proc/stat; None where there is none."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return fields[3] + fields[4], sum(fields)  # idle + iowait


def settle() -> float:
    """Wait until the machine is quiet (the last visit's browser context and page runs wound down); return the wait.

    One visit's teardown (its context closed, its session ended, a page's second run) must not overlap the next
    visit's start, or the page after a heavy one pays for it.
    """
    start = time.perf_counter()
    while time.perf_counter() - start < SETTLE_MAX_S:
        before = _cpu_times()
        time.sleep(0.25)
        after = _cpu_times()
        if before is None or after is None:
            time.sleep(1.0)
            break
        idle, total = after[0] - before[0], after[1] - before[1]
        if total > 0 and idle / total >= SETTLE_IDLE:
            break
    return time.perf_counter() - start


def rounds(pages: list[str], visits: int, seed: int) -> Iterator[tuple[int, int, str]]:
    """(round, position, page): in each round the floor first, then the pages in a shuffled order."""
    rng = random.Random(seed)
    for round_no in range(1, visits + 1):
        order = pages.copy()
        rng.shuffle(order)
        for position, name in enumerate([FLOOR, *order], start=1):
            yield round_no, position, name


# --- report ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One page's summary over its visits."""

    page: str
    path: str
    figure: str
    visits: int
    failed: int
    median_s: float | None
    ratio: float | None
    above_floor_s: float | None
    idle_median_s: float | None
    kb_headline: float | None
    kb_headline_ws: float | None
    kb_idle: float | None
    kb_idle_ws: float | None


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(name: str, visits: list[Visit], floor_s: float | None) -> Row:
    done = [v for v in visits if v.error is None and v.headline_s is not None]
    med = median([v.headline_s for v in done if v.headline_s is not None])
    return Row(
        page=name,
        path=TARGETS[name].path,
        figure=TARGETS[name].figure,
        visits=len(visits),
        failed=len(visits) - len(done),
        median_s=med,
        ratio=med / floor_s if med is not None and floor_s else None,
        above_floor_s=med - floor_s if med is not None and floor_s is not None else None,
        idle_median_s=median([v.idle_s for v in done if v.idle_s is not None]),
        kb_headline=median([v.to_headline.total / 1000 for v in done]),
        kb_headline_ws=median([v.to_headline.websocket / 1000 for v in done]),
        kb_idle=median([v.to_idle.total / 1000 for v in done if v.idle_s is not None]),
        kb_idle_ws=median([v.to_idle.websocket / 1000 for v in done if v.idle_s is not None]),
    )


def _f(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _kb(total: float | None, ws: float | None) -> str:
    return "—" if total is None else f"{total:,.0f} ({_f(ws, ',.0f')})"


def markdown(rows: list[Row], machine: dict[str, object], visits: int, run_id: str) -> str:
    lines = [
        "# Page speed: navigation to the headline figure",
        "",
        f"Median of {visits} visits per page, one headless Chromium, pages interleaved, each headline timed in the "
        "page from the navigation's start (bench/page_speed.py; the method is in its docstring). KB = 1,000 bytes "
        "received by the browser, HTTP + WebSocket (WebSocket alone in brackets), median per visit; every visit "
        f"starts with an empty cache. `{{run}}` = `{run_id}`.",
        "",
        "| page | figure waited for | median (s) | vs the floor | − floor (s) | KB to headline | KB to idle "
        "| idle (s) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        failed = f" ({row.failed} of {row.visits} failed)" if row.failed else ""
        lines.append(
            f"| `{row.path}` | {row.figure}{failed} | {_f(row.median_s, '.2f')} | {_f(row.ratio, '.1f')}× "
            f"| {_f(row.above_floor_s, '+.2f')} | {_kb(row.kb_headline, row.kb_headline_ws)} "
            f"| {_kb(row.kb_idle, row.kb_idle_ws)} | {_f(row.idle_median_s, '.2f')} |"
        )
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items()), ""]
    return "\n".join(lines)


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "?"
    return head.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- main -----------------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    assert __doc__ is not None
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visits", type=int, default=5, help="rounds; each visits every page once (default: 5)")
    others = [name for name in TARGETS if name != FLOOR]
    parser.add_argument(
        "--pages", default=",".join(others), help=f"comma-separated, of {', '.join(others)} (default: all)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (database, logs)")
    parser.add_argument("--limit-s", type=float, default=LIMIT_S, help="most a median may be above the floor's")
    args = parser.parse_args(argv)
    args.page_list = [p.strip() for p in args.pages.split(",") if p.strip() and p.strip() != FLOOR]
    unknown = [p for p in args.page_list if p not in TARGETS]
    if unknown or args.visits < 1:
        parser.error(f"unknown pages {unknown}; known: {', '.join(others)}" if unknown else "--visits must be ≥ 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="page-speed-"))
    (folder / "floor.py").write_text(FLOOR_SCRIPT)
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{folder / 'bench.db'}",
        "UPLOADS_DIR": str(folder / "uploads"),
    }
    load_before = load_average()
    results: list[Visit] = []
    chromium = "?"
    try:
        run_id = seed_run(env, folder) if any(TARGETS[p].server == "app" for p in args.page_list) else ""
        with ExitStack() as stack:
            bases: dict[str, str] = {}
            for server, script in (("floor", folder / "floor.py"), ("app", ROOT / "app.py")):
                cmd, bases[server] = streamlit(script, env, folder / f"{server}.log")
                ready = f"{bases[server]}/_stcore/health"
                stack.enter_context(process(cmd, ready, env=env, log=folder / f"{server}.log", timeout_s=TIMEOUT_S))
            pw = stack.enter_context(sync_playwright())
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            stack.callback(browser.close)
            chromium = browser.version
            for round_no, position, name in rounds(args.page_list, args.visits, SEED):
                target = TARGETS[name]
                url = bases[target.server] + target.path.format(run=run_id)
                settled_s = settle()
                one = visit(browser, name, url, round_no, position)
                one.settled_s = settled_s
                results.append(one)
                shown = "failed: " + (one.error or "") if one.error else f"{one.headline_s:.2f} s"
                print(f"round {round_no} #{position:<2} {name:<15} {shown}", file=sys.stderr, flush=True)
    finally:
        if args.keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    machine: dict[str, object] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "load average before": load_before,
        "after": load_average(),
        "Python": platform.python_version(),
        "Chromium": chromium,
        "Streamlit": _version("streamlit"),
        "Playwright": _version("playwright"),
        "commit": git_commit(),
    }
    floor_visits = [v for v in results if v.page == FLOOR]
    floor = summarize(FLOOR, floor_visits, None)
    rows = [summarize(FLOOR, floor_visits, floor.median_s)]
    rows += [summarize(name, [v for v in results if v.page == name], floor.median_s) for name in args.page_list]
    report = markdown(rows, machine, args.visits, run_id)
    print(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "page_speed.md").write_text(report)
    (RESULTS / "page_speed.json").write_text(
        json.dumps(
            {
                "machine": machine,
                "visits_per_page": args.visits,
                "seed": SEED,
                "limit_s": args.limit_s,
                "run_id": run_id,
                "pages": [asdict(row) for row in rows],
                "visits": [asdict(v) | {"url_path": TARGETS[v.page].path.format(run=run_id)} for v in results],
            },
            indent=2,
        )
        + "\n"
    )
    return verdict(rows, args.limit_s)


def verdict(rows: list[Row], limit_s: float) -> int:
    """1 (and why) when the floor or a page failed, or a page's median is over limit_s above the floor's."""
    bad: list[str] = []
    for row in rows:
        if row.failed or row.median_s is None:
            bad.append(f"{row.page}: {row.failed} of {row.visits} visits did not show {row.figure}")
        elif row.above_floor_s is not None and row.above_floor_s > limit_s:
            bad.append(f"{row.page}: median {row.median_s:.2f} s, {row.above_floor_s:.2f} s above the floor")
    for line in bad:
        print(f"OVER: {line}", file=sys.stderr)
    if not bad:
        print(f"every page within {limit_s:g} s of the floor", file=sys.stderr)
    return 1 if bad else 0


def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
