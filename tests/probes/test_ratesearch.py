"""The request-rate search (grow, bisect, budgets), rate lists, gamma arrivals, and the fake server's load mode."""

import asyncio
import json
import math
import random
import socket
import statistics
import time
from datetime import UTC, datetime
from itertools import islice

import pytest

from fakeserver import Batching, Behaviour, FakeServer, serve_in_thread
from probes import RunSettings, SloTargets, Timeouts
from probes.client import close_quietly, make_client, make_http
from probes.level import Level, LevelPlan
from probes.metrics import summarize_level
from probes.models import LevelResult, RateOutcome, RateSearch, StopReason
from probes.progress import Progress
from probes.ratesearch import arrival_gaps, find_max_rate, parse_rates
from probes.runner import run_probe
from probes.transport import LeanTransport
from probes.workloads import build_prompts
from tests.probes.conftest import settings_for
from tests.support import wait_until

# -- the search against a fake measure ----------------------------------------------------------------------------


class FakeLevels:
    """A measure with a known threshold on a fake clock: a level meets the SLO iff its rate <= threshold_rps.

    Each level ends by `count` requests or `level_s` seconds, whichever comes first (as the probe's levels do),
    and `overhead_s` passes between levels (scrapes, set-up).
    """

    def __init__(self, threshold_rps: float, count: int = 50, level_s: float = 10.0, overhead_s: float = 0.0) -> None:
        self.threshold_rps = threshold_rps
        self.count = count
        self.level_s = level_s
        self.overhead_s = overhead_s
        self.now_s = 100.0
        self.rates: list[float] = []

    def clock(self) -> float:
        return self.now_s

    async def __call__(self, rate_rps: float) -> RateOutcome:
        self.rates.append(rate_rps)
        requests = min(self.count, math.ceil(rate_rps * self.level_s))
        duration_s = min(self.level_s, requests / rate_rps)
        self.now_s += duration_s + self.overhead_s
        met = rate_rps <= self.threshold_rps
        return RateOutcome(met_slo=met, requests=requests, duration_s=duration_s, violations=() if met else ("slow",))


def search(levels: FakeLevels, **budgets: float) -> RateSearch:
    kwargs: dict[str, float] = {"start_rps": 1.0, "max_levels": 50, "max_requests": 10**6, "max_duration_s": 1e9}
    kwargs.update(budgets)
    return asyncio.run(find_max_rate(levels, clock=levels.clock, **kwargs))  # type: ignore[arg-type]


def assert_well_formed(result: RateSearch) -> None:
    """Levels in order; the grow phase doubles, each bisect rate lies strictly inside the bracket of its time."""
    assert [lv.index for lv in result.levels] == list(range(len(result.levels)))
    good: float | None = None
    bad: float | None = None
    for i, lv in enumerate(result.levels):
        if lv.phase == "grow":
            assert bad is None and all(p.phase == "grow" for p in result.levels[:i])
            assert i == 0 or lv.rate_rps == 2 * result.levels[i - 1].rate_rps
        else:
            assert good is not None and bad is not None and good < lv.rate_rps < bad
        if lv.met_slo:
            good = max(good or 0.0, lv.rate_rps)
        else:
            bad = min(bad or math.inf, lv.rate_rps)
    assert result.best_rate_rps == good and result.lowest_missed_rate_rps == bad
    assert result.requests == sum(lv.requests for lv in result.levels)


@pytest.mark.parametrize(
    ("threshold_rps", "start_rps", "precision"),
    [(10.0, 1.0, 0.1), (3.7, 1.0, 0.1), (1.0, 1.0, 0.1), (50.5, 2.0, 0.05), (123.0, 0.5, 0.01), (7.9, 8.0, 0.1)],
)
def test_finds_the_threshold_within_the_precision(threshold_rps: float, start_rps: float, precision: float) -> None:
    levels = FakeLevels(threshold_rps)
    result = search(levels, start_rps=start_rps, precision=precision)
    assert_well_formed(result)
    if threshold_rps < start_rps:
        assert result.best_rate_rps is None
        return
    assert result.stop_reason == StopReason.CONVERGED and "met the SLO" in result.stop_detail
    good, bad = result.best_rate_rps, result.lowest_missed_rate_rps
    assert good is not None and bad is not None
    assert good <= threshold_rps < bad and (bad - good) / good <= precision
    assert levels.rates == [lv.rate_rps for lv in result.levels]  # every level measured is listed
    assert all(lv.met_slo == (lv.rate_rps <= threshold_rps) for lv in result.levels)
    assert all(lv.violations == ("slow",) for lv in result.levels if not lv.met_slo)


def test_none_when_the_first_rate_misses() -> None:
    result = search(FakeLevels(threshold_rps=0.5), start_rps=1.0)
    assert result.best_rate_rps is None and result.lowest_missed_rate_rps == 1.0
    assert result.stop_reason == StopReason.FIRST_RATE_MISSED and len(result.levels) == 1
    assert "1 requests/s" in result.stop_detail


def test_the_level_budget() -> None:
    result = search(FakeLevels(threshold_rps=100.0), max_levels=3)
    assert [lv.rate_rps for lv in result.levels] == [1.0, 2.0, 4.0]
    assert result.stop_reason == StopReason.MAX_LEVELS and "(3)" in result.stop_detail
    assert result.best_rate_rps == 4.0 and result.lowest_missed_rate_rps is None  # the best so far is kept


def test_the_request_budget_counts_what_the_next_level_would_send() -> None:
    # levels end by 50 requests (rates of 5/s and more) or by 10 s: 10 + 20 + 40 + 50 sent. Not knowing which bound
    # ended a level, the search takes the tightest projection that holds under both: 50 * 16/8 = 100 at 16/s.
    levels = FakeLevels(threshold_rps=100.0, count=50, level_s=10.0)
    result = search(levels, max_requests=150)
    assert [lv.requests for lv in result.levels] == [10, 20, 40, 50]
    assert result.stop_reason == StopReason.MAX_REQUESTS and result.requests == 120 <= 150
    assert "120 of 150 requests" in result.stop_detail and "about 100 more" in result.stop_detail


def test_the_time_budget_counts_the_clock_and_what_the_next_level_would_take() -> None:
    # each level lasts 10 s (the count is never reached) and 1 s passes between levels
    levels = FakeLevels(threshold_rps=100.0, count=10**6, level_s=10.0, overhead_s=1.0)
    result = search(levels, max_duration_s=40.0)
    assert len(result.levels) == 3 and result.stop_reason == StopReason.MAX_DURATION
    assert result.duration_s == 33.0 <= 40.0 and "33.0 of 40 s" in result.stop_detail


@pytest.mark.parametrize("seed", range(40))
def test_every_budget_holds_whatever_the_threshold(seed: int) -> None:
    rng = random.Random(seed)
    levels = FakeLevels(
        threshold_rps=rng.uniform(0.5, 200.0),
        count=rng.randint(5, 80),
        level_s=rng.uniform(1.0, 20.0),
        overhead_s=rng.uniform(0.0, 2.0),
    )
    budgets = {
        "start_rps": rng.choice([0.5, 1.0, 4.0]),
        "max_levels": rng.randint(1, 12),
        "max_requests": rng.randint(80, 600),
        "max_duration_s": rng.uniform(60.0, 300.0),
        "precision": rng.choice([0.02, 0.1, 0.25]),
    }
    start_s = levels.now_s
    result = search(levels, **budgets)
    assert_well_formed(result)
    assert 1 <= len(result.levels) <= budgets["max_levels"]
    first = result.levels[0]
    assert result.requests <= max(budgets["max_requests"], first.requests)  # the first level always runs
    assert levels.now_s - start_s - levels.overhead_s <= max(budgets["max_duration_s"], first.duration_s)
    if result.stop_reason == StopReason.CONVERGED:
        assert result.best_rate_rps is not None and result.lowest_missed_rate_rps is not None
        assert (result.lowest_missed_rate_rps - result.best_rate_rps) / result.best_rate_rps <= budgets["precision"]


def test_refuses_a_search_that_cannot_run() -> None:
    for bad in ({"start_rps": 0.0}, {"max_levels": 0}, {"max_requests": 0}, {"max_duration_s": 0.0}, {"precision": 0}):
        with pytest.raises(ValueError):
            search(FakeLevels(10.0), **bad)


def test_the_json_carries_the_levels_that_led_to_the_best_rate() -> None:
    result = search(FakeLevels(threshold_rps=6.0), precision=0.25)
    data = json.loads(result.model_dump_json())
    assert data["best_rate_rps"] == result.best_rate_rps and data["stop_reason"] == "converged"
    assert [lv["rate_rps"] for lv in data["levels"]] == [1.0, 2.0, 4.0, 8.0, 6.0, 7.0]
    assert set(data["levels"][0]) == {"index", "rate_rps", "phase", "met_slo", "requests", "duration_s", "violations"}


# -- rate lists and gamma arrivals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rates"),
    [("1,2,4,8", (1.0, 2.0, 4.0, 8.0)), (" 0.5, 1.5 ", (0.5, 1.5)), ("8,2", (8.0, 2.0)), ("3", (3.0,))],
)
def test_parse_rates(text: str, rates: tuple[float, ...]) -> None:
    assert parse_rates(text) == rates


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "at least one request rate"),
        ("  ", "at least one request rate"),
        ("1,,2", "rate 2 of 3 is empty"),
        ("1,2,", "rate 3 of 3 is empty"),
        ("1,fast", "'fast' is not a number"),
        ("0", "must be above 0"),
        ("-2", "must be above 0"),
        ("nan", "must be above 0"),
        ("inf", "must be above 0"),
        ("2e6", "at most 1,000,000"),
        ("1,2,1.0", "1.0 repeats"),
    ],
)
def test_parse_rates_says_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rates(text)


def test_burstiness_one_draws_what_the_levels_poisson_arrivals_draw() -> None:
    rng = random.Random(7919 * 3 + 2)  # as probes/level.py's _Arrivals seeds and draws
    assert list(arrival_gaps(4.0, 200, seed=7919 * 3 + 2)) == [rng.expovariate(4.0) for _ in range(200)]
    endless = arrival_gaps(4.0, None, seed=1)
    assert len(list(islice(endless, 1000))) == 1000
    assert list(arrival_gaps(4.0, 0, seed=1)) == []


@pytest.mark.parametrize("burstiness", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_gamma_gaps_have_the_rate_and_the_burstiness(burstiness: float) -> None:
    rate_rps = 8.0
    gaps = list(arrival_gaps(rate_rps, 20_000, burstiness=burstiness, seed=11))
    mean = statistics.fmean(gaps)
    assert len(gaps) == 20_000 and min(gaps) >= 0
    assert abs(mean * rate_rps - 1) <= 0.03
    assert statistics.pstdev(gaps) / mean == pytest.approx(math.sqrt(burstiness), rel=0.1)


def test_arrival_gaps_refuse_what_has_no_meaning() -> None:
    for rate, burstiness, n in ((0.0, 1.0, 1), (math.inf, 1.0, 1), (1.0, 0.0, 1), (1.0, math.nan, 1), (1.0, 1.0, -1)):
        with pytest.raises(ValueError):
            arrival_gaps(rate, n, burstiness=burstiness, seed=0)


# -- the fake server's load-dependent mode ------------------------------------------------------------------------


def send_only(sock: socket.socket, model: str, header: str | None = None) -> None:
    payload = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
    extra = f"x-fake: {header}\r\n".encode() if header else b""
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n%scontent-length: %d\r\n\r\n%s"
        % (extra, len(payload), payload)
    )


def test_slots_queue_the_requests_beyond_them() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=5, tokens=4)) as server:
        socks = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(3)]
        try:
            send_only(socks[0], "fake:slots=2,fault=stall,fault_after=1")  # holds its slot
            send_only(socks[1], "fake:fault=stall,fault_after=1", header="slots=2")  # the header works too
            wait_until(lambda: server.counters.running == 2)
            send_only(socks[2], "fake:slots=2")
            wait_until(lambda: server.counters.waiting == 1)
            assert server.counters.running == 2 and server.records()[2].started_s is None
            socks[0].close()  # frees a slot: the queued request runs and finishes
            wait_until(lambda: server.records()[2].done_s is not None)
            third = server.records()[2]
            assert third.started_s is not None and len(third.token_s) == 4
            assert server.counters.waiting == 0
        finally:
            for sock in socks:
                sock.close()


def test_bad_load_keys_are_refused() -> None:
    with serve_in_thread() as server, socket.create_connection(("127.0.0.1", server.port)) as sock:
        send_only(sock, "fake:slots=-1")
        assert sock.recv(65536).startswith(b"HTTP/1.1 400")


def server_ttft_ms(server: FakeServer) -> list[float]:
    return [(r.token_s[0] - r.received_s) * 1000 for r in server.records() if r.token_s]


def test_ttft_and_token_gaps_grow_with_load() -> None:
    # 4 slots, 10 tokens: a request takes 20 + 9 * (2 + 1 * 3) = 65 ms with 4 running, so 20 at once wait in five
    # waves and the middle one waits about 130 ms; alone, a request's first token comes after 20 ms.
    model = "fake:slots=4,tpot_per_running_ms=1,ttft_ms=20,tpot_ms=2,tokens=10"
    with serve_in_thread(keep_records=True) as server:
        settings = settings_for(
            server, model, concurrency=(1, 20), requests_per_level=20, timeouts=Timeouts(ttft_s=10, stall_s=5)
        )
        result = asyncio.run(run_probe(settings))
        alone, loaded = result.levels
        assert alone.completed == loaded.completed == 20
        assert alone.ttft_ms.p50 is not None and loaded.ttft_ms.p50 is not None
        assert loaded.ttft_ms.p50 > 3 * alone.ttft_ms.p50
        assert alone.tpot_ms.p50 is not None and loaded.tpot_ms.p50 is not None
        assert loaded.tpot_ms.p50 > 1.5 * alone.tpot_ms.p50  # 2 ms alone, 5 ms beside three others
        ttft = server_ttft_ms(server)  # the server's own account agrees
        assert statistics.median(ttft[20:]) > 3 * statistics.median(ttft[:20])
        # without the mode, the same 20 at once start together
        server.clear_records()
        plain = asyncio.run(run_probe(settings.model_copy(update={"model": "fake:ttft_ms=20,tpot_ms=2,tokens=10"})))
        assert plain.levels[1].ttft_ms.p50 is not None and plain.levels[1].ttft_ms.p50 < loaded.ttft_ms.p50 / 2


# -- the search against real Poisson levels -----------------------------------------------------------------------

SLOTS = 2
TTFT_MS, TPOT_MS, TOKENS, TPOT_PER_RUNNING_MS = 20.0, 5.0, 9, 5.0
LEVEL_REQUESTS, LEVEL_S, IN_FLIGHT = 30, 1.2, 48


class PoissonLevels:
    """`measure` for the search: one Poisson level of the probe's own Level per rate, on one client (as a run)."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.prompts = build_prompts(settings, LEVEL_REQUESTS)
        self.lean = LeanTransport(clock=time.perf_counter)
        self.client = make_client(settings, make_http(settings, IN_FLIGHT, self.lean))
        self.results: list[LevelResult] = []

    async def __call__(self, rate_rps: float) -> RateOutcome:
        settings = self.settings.model_copy(update={"request_rate_rps": (rate_rps,)})
        plan = LevelPlan(len(self.results), IN_FLIGHT, LEVEL_REQUESTS, rate_rps=rate_rps)
        level = Level(
            self.client, settings, self.prompts, plan, clock=time.perf_counter, progress=Progress(), lean=self.lean
        )
        started_at = datetime.now(UTC)
        await level.run()
        result = summarize_level(
            plan.index,
            plan.concurrency,
            level.samples,
            started_at=started_at,
            finished_at=datetime.now(UTC),
            duration_s=level.end_s - level.start_s,
            slo=settings.slo,
            request_rate_rps=rate_rps,
        )
        self.results.append(result)
        return RateOutcome.of_level(result)


def test_the_search_finds_the_server_capacity_with_real_poisson_levels() -> None:
    # With both slots busy a request takes TTFT + (TOKENS - 1) * (TPOT + TPOT_PER_RUNNING) = 100 ms: the server
    # serves at most 20 requests/s. At a quarter of that requests rarely wait (TTFT p50 about 20 ms, well within
    # 150 ms); at 1.5 times that a level's queue grows by 10 requests/s and its middle request waits about 250 ms.
    service_s = (TTFT_MS + (TOKENS - 1) * (TPOT_MS + TPOT_PER_RUNNING_MS * (SLOTS - 1))) / 1000
    capacity_rps = SLOTS / service_s
    slo = SloTargets(ttft_p50_ms=150, ttft_p99_ms=60_000, tpot_p50_ms=1000, max_failed_ratio=0.0)
    defaults = Behaviour(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, tokens=TOKENS)
    batching = Batching(slots=SLOTS, tpot_per_running_ms=TPOT_PER_RUNNING_MS)
    with serve_in_thread(defaults=defaults, batching=batching, keep_records=False) as server:
        settings = settings_for(
            server,
            duration_s=LEVEL_S,
            slo=slo,
            timeouts=Timeouts(connect_s=5, ttft_s=20, stall_s=10),
            seed=3,
        )

        async def go() -> tuple[RateSearch, list[LevelResult]]:
            measure = PoissonLevels(settings)
            try:
                found = await find_max_rate(
                    measure,
                    start_rps=capacity_rps / 4,
                    max_levels=10,
                    max_requests=400,
                    max_duration_s=120,
                    precision=0.25,
                )
            finally:
                await close_quietly(measure.client)
            return found, measure.results

        found, levels = asyncio.run(go())
    assert found.best_rate_rps is not None, found
    assert capacity_rps / 4 <= found.best_rate_rps < 1.5 * capacity_rps, found
    assert found.stop_reason == StopReason.CONVERGED, found
    assert [lv.request_rate_rps for lv in levels] == [lv.rate_rps for lv in found.levels]
    assert [lv.slo.met for lv in levels] == [lv.met_slo for lv in found.levels]
    assert all(lv.failed == 0 for lv in levels)
