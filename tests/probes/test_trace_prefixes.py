"""Mooncake hash_ids end to end: a real replay against the local test server, whose prefix cache sees the sharing.

The unit tests of the prompt builder are in test_traces.py; here the requirement is proved through the wire. Requests
that share leading hash_ids (blocks of 512 tokens) send exactly those blocks as identical text, so the server's prefix
cache (the fake server's, in blocks of 16 words, read by the probe from /metrics) hits them; requests with different
ids share nothing. The fake server counts one token per word and has no chat template, so the calibrated prompts are
exactly the trace's input lengths and nothing but the trace's blocks can be shared.
"""

import asyncio
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fakeserver import PREFIX_BLOCK_WORDS, Behaviour, FakeServer, serve_in_thread
from probes import Timeouts
from probes.config import WorkloadKind
from probes.models import RunResult, RunStatus
from probes.runner import run_probe
from probes.trace_prompts import CALIBRATION_WORDS
from probes.traces import BLOCK_TOKENS
from tests.probes.conftest import settings_for

FILLER = 10  # tokens after the blocks: each request's own text
BLOCKS_3 = 3 * BLOCK_TOKENS + FILLER
QUICK = Behaviour(ttft_ms=3, tpot_ms=1, tokens=2)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A fresh server per test: its prefix cache starts empty; it records each prompt's text."""
    with serve_in_thread(defaults=QUICK, record_prompts=True) as fake:
        yield fake


def replay(server: FakeServer, tmp_path: Path, requests: Sequence[tuple[tuple[int, ...], int]]) -> RunResult:
    """Replay a Mooncake trace of (hash_ids, input tokens), 10 ms apart at speed 10, against the server."""
    lines = [
        json.dumps({"timestamp": 5_000 + 10 * i, "input_length": n, "output_length": 2, "hash_ids": list(ids)})
        for i, (ids, n) in enumerate(requests)
    ]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = settings_for(
        server,
        workload=WorkloadKind.TRACE,
        trace=str(trace),
        trace_speed=10.0,
        timeouts=Timeouts(connect_s=5, ttft_s=30, stall_s=30),  # generous: the 2 cores are shared
    )
    result = asyncio.run(run_probe(settings))
    assert result.status == RunStatus.COMPLETED, result.error
    assert not result.notes, result.notes  # calibrated: one token per word, as the fake server counts
    (level,) = result.levels
    assert level.requests == level.completed == len(requests)
    return result


def hit_ratio(result: RunResult) -> float:
    """The level's prefix-cache hit ratio, as the probe read it from the server's /metrics."""
    metrics = result.levels[0].server_metrics
    assert metrics is not None and metrics.prefix_cache_hit_ratio is not None, metrics
    return metrics.prefix_cache_hit_ratio


def prompts_by_line(server: FakeServer, result: RunResult) -> dict[int, list[str]]:
    """The words each trace line's request sent, as the server received them (the calibration requests left out)."""
    records = server.records()
    assert len(records) == len(CALIBRATION_WORDS) + len(result.samples)
    by_id = {r.request_id: r.prompt for r in records}
    out: dict[int, list[str]] = {}
    for sample in result.samples:
        assert sample.trace_line is not None and sample.server_request_id is not None, sample
        text = by_id[sample.server_request_id]  # the fake server's x-request-id names its record
        assert text is not None
        out[sample.trace_line] = text.split()
    return out


def blocks(words: list[str]) -> list[list[str]]:
    """The prompt cut into the trace's 512-token blocks (512 words: one token per word on this server)."""
    return [words[i : i + BLOCK_TOKENS] for i in range(0, len(words), BLOCK_TOKENS)]


def test_requests_sharing_hash_ids_hit_the_servers_prefix_cache(server: FakeServer, tmp_path: Path) -> None:
    n = 6
    result = replay(server, tmp_path, [((0, 1, 2), BLOCKS_3)] * n)
    prompts = prompts_by_line(server, result)
    assert [len(words) for words in prompts.values()] == [BLOCKS_3] * n
    first = prompts[1]
    for words in prompts.values():
        assert words[: 3 * BLOCK_TOKENS] == first[: 3 * BLOCK_TOKENS]  # the three blocks, word for word
    assert len({words[3 * BLOCK_TOKENS] for words in prompts.values()}) == n  # then each request's own text
    # The first request fills the cache; the other five find their 3 x 512 shared tokens in it, not the filler.
    expected = (n - 1) * 3 * BLOCK_TOKENS / (n * BLOCKS_3)
    assert hit_ratio(result) == pytest.approx(expected, abs=0.01)
    assert hit_ratio(result) > 0.8


def test_requests_with_different_hash_ids_share_nothing(server: FakeServer, tmp_path: Path) -> None:
    n = 6
    result = replay(server, tmp_path, [((3 * i, 3 * i + 1, 3 * i + 2), BLOCKS_3) for i in range(n)])
    prompts = prompts_by_line(server, result)
    assert len({words[0] for words in prompts.values()}) == n  # they differ from the first word
    # No template, no system prompt on this server: not one 16-word block is found twice.
    assert hit_ratio(result) == 0.0


def test_leading_equal_hash_ids_share_exactly_those_blocks(server: FakeServer, tmp_path: Path) -> None:
    ids = [(0, 1, 2), (0, 1, 3), (0, 4, 5), (6, 1, 2), (0, 1, 2)]
    last = 2 * BLOCK_TOKENS + 100  # shorter than its three blocks: the third is cut after 100 tokens
    result = replay(server, tmp_path, [(i, BLOCKS_3) for i in ids[:-1]] + [(ids[-1], last)])
    prompts = prompts_by_line(server, result)
    cut = {line: blocks(words) for line, words in prompts.items()}
    for a in range(1, len(ids) + 1):
        for b in range(a + 1, len(ids) + 1):
            common = 0
            while common < 3 and ids[a - 1][common] == ids[b - 1][common]:
                common += 1
            for k in range(common):  # equal leading ids: identical blocks (the cut one: identical as far as it goes)
                size = min(len(cut[a][k]), len(cut[b][k]))
                assert cut[a][k][:size] == cut[b][k][:size], (a, b, k)
            if common < 3:  # the first different id: different text from its first word on
                assert cut[a][common][0] != cut[b][common][0], (a, b, common)
    assert prompts[5] == prompts[1][:last]  # the cut request: the first one's leading text, as long as its input
    # Hits, in 16-word blocks of the server: block 0 is sent by four requests (three hit it), blocks 0+1 by three
    # (two hit), 0+1+2 by two (the second one's 100 tokens hit); line 4's blocks 1 and 2 come after block 6, so the
    # cache (keyed by everything before) never sees them as shared.
    hits = 3 * BLOCK_TOKENS + 2 * BLOCK_TOKENS + 100 // PREFIX_BLOCK_WORDS * PREFIX_BLOCK_WORDS
    sent = 4 * BLOCKS_3 + last
    assert hit_ratio(result) == pytest.approx(hits / sent, abs=1e-6)
