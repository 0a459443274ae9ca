"""The runner against the local fake server: known timing, token accounting, every fault, limits, cancellation."""

import asyncio
import json
import statistics
import threading
import time

import pytest

from fakeserver import Behaviour, serve_in_thread
from probes import (
    ErrorKind,
    ProbeRun,
    ProbeSettingsError,
    RunStatus,
    TokenSource,
    WorkloadError,
    WorkloadKind,
    check_connection,
    list_models,
    run_probe,
)
from probes.sink import MemorySink
from probes.workloads import SEED_PROMPTS, build_prompts
from settings import Settings
from tests.probes.conftest import SHORT_TIMEOUTS, settings_for
from tests.support import free_port, wait_until


def run(settings, **kwargs):
    return asyncio.run(run_probe(settings, **kwargs))


def test_sweep_measures_the_server_timing(fake) -> None:
    sink = MemorySink()
    settings = settings_for(
        fake, "fake:ttft_ms=40,tpot_ms=5,tokens=10", concurrency=(1, 4), requests_per_level=8, warmup_requests=2
    )
    result = run(settings, sink=sink)
    seen, levels = sink.sample_list, sink.levels
    assert result.status == RunStatus.COMPLETED and result.error is None
    assert [lv.concurrency for lv in result.levels] == [1, 4] and levels == result.levels
    assert len(seen) == 16 == len(result.samples)  # warm-up not counted
    for level in result.levels:
        assert level.completed == 8 and level.failed == 0
        assert 40 <= level.ttft_ms.p50 < 40 + 30
        # TPOT as the server really sent it (under load its timer slips; the probe must follow what was sent).
        sent = [server_tpot_ms(fake, s.server_request_id) for s in result.samples if s.level_index == level.index]
        assert abs(level.tpot_ms.p50 - statistics.median(sent)) < 1.0
        assert 0 < level.tpot_ms.p50 < 5 + 2
        assert level.output_tokens == 80 and level.token_source == TokenSource.USAGE
        assert level.output_tok_s > 0 and level.req_s > 0 and level.total_tok_s > level.output_tok_s
        assert level.itl_ms.count == 8 * 9
        assert level.server_metrics is not None and level.server_metrics.source == "vllm"
        assert level.server_metrics.after["generation_tokens"] - level.server_metrics.before["generation_tokens"] == 80
    sample = result.samples[0]
    assert sample.finish_reason == "stop" and sample.http_status == 200 and sample.server_request_id
    assert len(sample.chunk_ms) == 10 and sample.input_tokens and sample.output_tokens == 10
    assert result.best_concurrency_within_slo == 4


def server_tpot_ms(fake, request_id: str) -> float:
    """The server's own record of one response: time from its first to its last token, per gap."""
    record = next(r for r in fake.records() if r.request_id == request_id)
    return (record.token_s[-1] - record.token_s[0]) / (len(record.token_s) - 1) * 1000


def test_role_only_first_chunk_does_not_start_ttft(fake) -> None:
    result = run(settings_for(fake, "fake:ttft_ms=80,role_chunk=1,tokens=3"))
    assert all(s.ttft_ms >= 80 for s in result.samples)


def test_multi_token_chunks_and_missing_usage(fake) -> None:
    with_usage = run(settings_for(fake, "fake:tokens=12,tokens_per_chunk=3,tpot_ms=3"))
    s = with_usage.samples[0]
    assert s.token_source == TokenSource.USAGE and s.output_tokens == 12 and len(s.chunk_ms) == 4
    assert s.chunk_tokens == [3, 3, 3, 3] and len(s.itl_ms) == 9
    assert s.tpot_ms == pytest.approx(3, abs=1.0)
    continuous = run(settings_for(fake, "fake:tokens=12,tokens_per_chunk=3", continuous_usage_stats=True))
    assert continuous.samples[0].chunk_tokens == [3, 3, 3, 3]
    no_usage = run(settings_for(fake, "fake:tokens=12,tokens_per_chunk=3,usage=0"))
    s = no_usage.samples[0]
    assert s.token_source == TokenSource.CHUNKS and s.output_tokens == 4  # counted chunks, flagged
    assert no_usage.levels[0].token_source == TokenSource.CHUNKS


def test_reasoning_chunks_are_timed_separately(fake) -> None:
    s = run(settings_for(fake, "fake:reasoning_tokens=4,tokens=8,tpot_ms=5")).samples[0]
    assert s.reasoning_tokens == 4 and s.output_tokens == 8
    assert s.first_content_ms > s.reasoning_ms > s.ttft_ms


def test_completions_api(fake) -> None:
    result = run(settings_for(fake, "fake:tokens=5", api="completions", workload="synthetic", input_tokens=64))
    assert result.levels[0].completed == 2 and result.samples[0].output_tokens == 5
    assert result.samples[0].input_tokens == 64


FAULTS = [
    ("401", ErrorKind.AUTH, False),
    ("404", ErrorKind.NOT_FOUND, False),
    ("429", ErrorKind.RATE_LIMITED, False),
    ("500", ErrorKind.SERVER_ERROR, False),
    ("reset", ErrorKind.STREAM_RESET, True),
    ("close", ErrorKind.STREAM_TRUNCATED, True),
    ("truncate", ErrorKind.STREAM_TRUNCATED, True),
    ("malformed", ErrorKind.MALFORMED_SSE, True),
    ("error_in_stream", ErrorKind.STREAM_ERROR, True),
    ("json_body", ErrorKind.NOT_STREAMED, False),
    ("never_end", ErrorKind.OVERLENGTH, True),
    ("stall", ErrorKind.STALL_TIMEOUT, True),
    ("no_headers", ErrorKind.TTFT_TIMEOUT, False),
    ("close_no_headers", ErrorKind.CLOSED_WITHOUT_RESPONSE, False),
    ("no_first_token", ErrorKind.TTFT_TIMEOUT, False),
]


def test_every_fault_ends_in_time_with_its_kind_and_partial_timings(fake) -> None:
    # all faults in one level, concurrently: each request ends within its own timeout, the run finishes
    start = time.perf_counter()

    async def all_faults():
        settings = [
            settings_for(
                fake,
                f"fake:fault={fault},tokens=12",
                max_tokens=8 if fault == "never_end" else 128,
                scrape_metrics=False,
                requests_per_level=1,
                timeouts=SHORT_TIMEOUTS,
            )
            for fault, _, _ in FAULTS
        ]
        return await asyncio.gather(*(run_probe(s) for s in settings))

    results = asyncio.run(all_faults())
    assert time.perf_counter() - start < 3.0  # TTFT timeout 0.6 s, stall 0.3 s
    for (fault, kind, partial), result in zip(FAULTS, results, strict=True):
        assert result.status == RunStatus.COMPLETED, fault
        s = result.samples[0]
        assert s.error_kind == kind, (fault, s.error)
        assert s.error and s.tpot_ms is None and s.e2e_ms is not None
        assert (len(s.chunk_ms) > 0) == partial, fault
        if partial:
            assert s.ttft_ms is not None
        assert result.levels[0].failed == 1 and result.levels[0].errors == {kind.value: 1}
    by_fault = {f: r.samples[0] for (f, _, _), r in zip(FAULTS, results, strict=True)}
    assert by_fault["429"].retry_after_s == 1 and by_fault["429"].http_status == 429
    assert by_fault["no_headers"].e2e_ms == pytest.approx(600, abs=100)
    assert 20 - 1 <= by_fault["close_no_headers"].e2e_ms < 600  # held ttft_ms (20) by the server, then closed
    assert by_fault["stall"].e2e_ms - by_fault["stall"].chunk_ms[-1] == pytest.approx(300, abs=100)


def test_a_single_1mib_sse_line_is_read(fake) -> None:
    s = run(settings_for(fake, "fake:fault=big_line,tokens=6")).samples[0]
    assert s.ok and s.output_tokens == 6 and len(s.chunk_ms) == 6


def test_refused_connection_fails_the_run_clearly(fake) -> None:
    settings = settings_for(fake, base_url=f"http://127.0.0.1:{free_port()}/v1")
    result = run(settings)
    assert result.status == RunStatus.FAILED and "cannot reach" in result.error and "connect" in result.error
    assert result.samples == [] and result.levels == []


def test_metrics_absent_is_tolerated() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4), metrics=False) as server:
        result = run(settings_for(server, concurrency=(1, 2)))
    assert result.status == RunStatus.COMPLETED
    assert all(lv.server_metrics is None and lv.completed == 2 for lv in result.levels)


def test_queueing_server_shows_in_ttft_and_slo() -> None:
    # one request at a time on the server: at concurrency 4, TTFT includes the wait for the others
    with serve_in_thread(defaults=Behaviour(ttft_ms=30, tpot_ms=1, tokens=5), max_running=1) as server:
        settings = settings_for(
            server,
            concurrency=(1, 4),
            requests_per_level=4,
            slo={"ttft_p50_ms": 60, "ttft_p99_ms": 200, "tpot_p50_ms": 50},
        )
        result = run(settings)
    low, high = result.levels
    assert low.slo.met and not high.slo.met
    assert high.ttft_ms.p50 > 2 * low.ttft_ms.p50
    assert result.best_concurrency_within_slo == 1


def test_request_rate_and_duration_bound(fake) -> None:
    start = time.perf_counter()
    result = run(
        settings_for(
            fake,
            "fake:tokens=2,ttft_ms=5",
            concurrency=(4,),
            requests_per_level=200,
            request_rate_rps=40.0,
            duration_s=0.5,
        )
    )
    elapsed = time.perf_counter() - start
    sent = result.levels[0].requests
    assert 5 <= sent <= 45 and elapsed < 2.5  # Poisson arrivals at ~40/s, cut after 0.5 s
    starts = [s.start_s for s in sorted(result.samples, key=lambda s: s.index)]
    assert starts[-1] < 0.6


def test_absurd_settings_are_refused(fake) -> None:
    limits = Settings(probe_max_concurrency=8, probe_max_requests_per_run=50)
    with pytest.raises(ProbeSettingsError, match="over the cap of 8"):
        run(settings_for(fake, concurrency=(1, 16)), limits=limits)
    with pytest.raises(ProbeSettingsError, match="at least 1"):
        run(settings_for(fake, requests_per_level=0), limits=limits)
    with pytest.raises(ProbeSettingsError, match="60 requests"):
        run(settings_for(fake, concurrency=(1, 2, 4), requests_per_level=20), limits=limits)
    with pytest.raises(ProbeSettingsError, match="link-local"):
        run(settings_for(fake, base_url="http://169.254.169.254/v1"), limits=limits)
    with pytest.raises(ProbeSettingsError, match="PROBE_ALLOWED_HOSTS"):
        run(settings_for(fake), limits=Settings(probe_allowed_hosts="gpu-box.internal"))
    sink = MemorySink()
    with pytest.raises(ProbeSettingsError):  # refused in the caller's thread, and the sink hears the run failed
        ProbeRun(settings_for(fake, concurrency=(1, 16)), sink=sink, limits=limits).start()
    assert sink.events == ["started", "failed"] and isinstance(sink.error, ProbeSettingsError)


def test_a_slow_sink_gets_the_requests_that_finished_meanwhile_in_one_batch(fake) -> None:
    """The sink thread hands over what queued up while the sink was busy: one call, not one per request."""
    release = threading.Event()

    class Slow(MemorySink):
        def samples(self, samples) -> None:
            if self.batches == 0:
                release.wait(20)  # the first write is slow: the rest of the run finishes meanwhile
            super().samples(samples)

    sink = Slow()
    settings = settings_for(fake, "fake:ttft_ms=1,tpot_ms=1,tokens=2", concurrency=(4,), requests_per_level=12)
    probe = ProbeRun(settings, sink=sink).start()
    wait_until(lambda: probe.progress().phase == "finished")
    release.set()
    assert probe.wait(20)
    result = probe.result()
    assert sink.sample_list == result.samples and len(result.samples) == 12
    assert sink.batches <= 3 and sink.events[-2:] == ["level", "finished"] and sink.result is result


def test_cancel_keeps_finished_samples(fake) -> None:
    sink = MemorySink()
    samples = sink.sample_list
    settings = settings_for(fake, "fake:ttft_ms=5,tpot_ms=20,tokens=10", concurrency=(2, 4), requests_per_level=40)
    probe = ProbeRun(settings, sink=sink).start()
    deadline = time.monotonic() + 10
    while len(samples) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    probe.cancel()
    assert probe.wait(5)
    result = probe.result()
    assert result.status == RunStatus.CANCELLED
    key = lambda sample: (sample.level_index, sample.index)  # noqa: E731
    # every finished one, through the sink (in whatever order they completed)
    assert 3 <= len(result.samples) < 40 and sorted(result.samples, key=key) == sorted(samples, key=key)
    assert all(s.ok for s in result.samples)  # requests in flight are dropped, not counted as failures
    assert len(result.levels) == 1 and result.levels[0].completed == len(samples)
    assert sink.result is result and sink.error is None and sink.events.count("finished") == 1
    assert probe.progress().status == RunStatus.CANCELLED


def test_progress_is_visible_while_running(fake) -> None:
    settings = settings_for(fake, "fake:ttft_ms=5,tpot_ms=5,tokens=4", concurrency=(1, 2), requests_per_level=6)
    probe = ProbeRun(settings).start()
    assert probe.wait(10)
    progress = probe.progress()
    assert progress.status == RunStatus.COMPLETED and progress.phase == "finished"
    assert progress.levels_total == 2 and len(progress.levels) == 2 and progress.finished == 6


def test_api_key_is_used_but_never_exported() -> None:
    key = "sk-test-VERY-SECRET-123"
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=3), api_key=key) as server:
        good = run(settings_for(server, api_key=key))
        bad = run(settings_for(server, api_key="wrong"))
        assert asyncio.run(list_models(server.base_url, key)) == ["fake"]
    assert good.levels[0].completed == 2
    assert bad.samples[0].error_kind == ErrorKind.AUTH
    for result in (good, bad):
        dumped = (
            result.model_dump_json() + repr(result) + str(result.settings) + json.dumps(result.model_dump(mode="json"))
        )
        assert key not in dumped and "wrong" not in dumped


def test_credentials_in_the_url_are_never_serialised(fake) -> None:
    settings = settings_for(fake, base_url="http://user:pw@gpu-box:8000/v1?api_key=sk-1&team=a", api_key="sk-2")
    assert settings.endpoint == "http://gpu-box:8000/v1?team=a"
    dumped = settings.model_dump_json() + repr(settings) + str(settings.model_dump())
    assert "pw" not in dumped and "sk-1" not in dumped and "sk-2" not in dumped and "gpu-box:8000" in dumped


def test_list_models_and_connection_check(fake) -> None:
    assert asyncio.run(list_models(fake.base_url)) == ["fake"]
    ok = asyncio.run(check_connection(fake.base_url, None, "fake"))
    assert ok.ok and ok.models == ["fake"] and ok.ttft_ms is not None
    unknown = asyncio.run(check_connection(fake.base_url, None, "other"))
    assert not unknown.ok and "not served" in unknown.message
    down = asyncio.run(check_connection(f"http://127.0.0.1:{free_port()}/v1", None, "fake"))
    assert not down.ok and "cannot connect" in down.message


def test_workloads(tmp_path, fake) -> None:
    assert len(SEED_PROMPTS) == 8 and len(set(SEED_PROMPTS)) == 8
    synthetic = build_prompts(settings_for(fake, workload="synthetic", input_tokens=300), 10)
    assert len(synthetic) == 10 and all(len(p.user.split()) == 300 for p in synthetic)
    shared = build_prompts(settings_for(fake, workload="shared_prefix", shared_prefix_tokens=200), 4)
    assert len({p.system for p in shared}) == 1 and len({p.user for p in shared}) == 4
    assert len(build_prompts(settings_for(fake, workload=WorkloadKind.CODE_JSON), 1)) == 8
    good = tmp_path / "p.jsonl"
    good.write_text(
        '{"prompt": "a"}\n\n{"system": "s", "prompt": "b"}\n{"messages": [{"role": "user", "content": "c"}]}\n',
        encoding="utf-8",
    )
    assert [p.user for p in build_prompts(settings_for(fake, workload="file", prompt_file=str(good)), 1)] == [
        "a",
        "b",
        "c",
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(WorkloadError, match="line 2"):
        build_prompts(settings_for(fake, workload="file", prompt_file=str(bad)), 1)
    with pytest.raises(WorkloadError, match="cannot read"):
        build_prompts(settings_for(fake, workload="file", prompt_file=str(tmp_path / "missing.jsonl")), 1)


def test_shared_prefix_shows_in_the_prefix_cache_metrics(fake) -> None:
    result = run(
        settings_for(
            fake,
            "fake:tokens=2",
            workload="shared_prefix",
            shared_prefix_tokens=256,
            requests_per_level=4,
            concurrency=(1,),
        )
    )
    assert result.levels[0].server_metrics.prefix_cache_hit_ratio > 0.5


def test_httpx_transport_seam_gives_the_same_figures(fake) -> None:
    """Any httpx2 transport can be injected; without the lean transport, arrival times are taken per read."""
    import httpx2

    settings = settings_for(fake, "fake:ttft_ms=30,tpot_ms=4,tokens=6", concurrency=(2,), requests_per_level=4)
    result = run(settings, transport=httpx2.AsyncHTTPTransport())
    level = result.levels[0]
    assert level.completed == 4 and 30 <= level.ttft_ms.p50 < 60 and level.tpot_ms.p50 == pytest.approx(4, abs=1.5)
    faulty = run(settings_for(fake, "fake:fault=reset,tokens=6"), transport=httpx2.AsyncHTTPTransport())
    assert faulty.samples[0].error_kind == ErrorKind.STREAM_RESET


def test_tls_error_is_reported_as_such(fake) -> None:
    # https against a plain-HTTP server: the handshake fails, the endpoint cannot be reached (kind tls)
    result = run(settings_for(fake, base_url=f"https://127.0.0.1:{fake.port}/v1"))
    assert result.status == RunStatus.FAILED and "(tls)" in result.error
