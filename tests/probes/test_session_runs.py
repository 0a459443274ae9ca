"""Sessions wired end to end against the local test server: growing histories on the wire, per-turn figures,
a failed turn ending its session, a conversations file, refusals before sending, and the CLI's JSON."""

import asyncio
import io
import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakeserver import WORDS, Behaviour, FakeServer, serve_in_thread
from probes.__main__ import main
from probes.cli import EXIT_OK, EXIT_USAGE
from probes.config import ApiKind, SessionVariant, WorkloadKind
from probes.errors import ProbeSettingsError
from probes.export import samples_csv, turns_csv
from probes.models import RunResult, RunStatus
from probes.runner import run_probe
from probes.sessions import SessionError, estimate_tokens
from settings import Settings
from tests.probes.conftest import settings_for

QUICK = Behaviour(ttft_ms=3, tpot_ms=1, tokens=6)
ANSWER = "".join(WORDS[i % len(WORDS)] for i in range(QUICK.tokens))  # what the fake server answers, verbatim


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A fresh server per test (its request numbers and prefix cache start at zero); it records each prompt."""
    with serve_in_thread(defaults=QUICK, record_prompts=True) as fake:
        yield fake


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def sessions(server: FakeServer, model: str = "fake", **changes: object) -> RunResult:
    values: dict[str, object] = {"workload": WorkloadKind.SESSIONS, "sessions": 3, "turns": 3}
    values.update(changes)
    return asyncio.run(run_probe(settings_for(server, model, **values)))


def test_every_turn_resends_the_history_with_the_servers_answers_and_the_prompt_grows(server: FakeServer) -> None:
    result = sessions(server)
    assert result.status == RunStatus.COMPLETED and len(result.levels) == 1
    (level,) = result.levels
    assert level.concurrency == 3 and level.requests == 9 and level.completed == 9
    by_session: dict[int, list[tuple[int, int]]] = {}
    for sample in result.samples:
        assert sample.session is not None and sample.turn is not None and sample.input_tokens is not None
        by_session.setdefault(sample.session, []).append((sample.turn, sample.input_tokens))
    assert sorted(by_session) == [0, 1, 2]
    for turns in by_session.values():
        assert [t for t, _ in sorted(turns)] == [1, 2, 3]
        sizes = [n for _, n in sorted(turns)]
        assert sizes[0] < sizes[1] < sizes[2]
    # On the wire: each turn's prompt is the previous turn's prompt, then the server's answer, then a new message.
    prompts = [r.prompt or "" for r in server.records()]
    assert len(prompts) == 9
    for later in prompts:
        earlier = [p for p in prompts if p != later and later.startswith(p + "\n")]
        if not earlier:
            continue  # a first turn
        previous = max(earlier, key=len)
        assert later[len(previous) :].startswith("\n" + ANSWER + "\n"), later[len(previous) :][:80]
    assert sum(1 for p in prompts if any(q != p and p.startswith(q + "\n") for q in prompts)) == 6  # turns 2 and 3
    # Figures per turn, and the server's prefix cache sees the repeated histories.
    assert level.turns is not None
    assert [(t.turn, t.count, t.failed) for t in level.turns] == [(1, 3, 0), (2, 3, 0), (3, 3, 0)]
    means = [t.input_tokens_mean or 0 for t in level.turns]
    assert means[0] < means[1] < means[2]
    assert level.server_metrics is not None and (level.server_metrics.prefix_cache_hit_ratio or 0) > 0.3
    assert result.best_concurrency_within_slo is None  # one level of sessions, not a concurrency sweep


def test_the_agent_variant_sends_a_long_tool_context_and_asks_for_short_answers(server: FakeServer) -> None:
    result = sessions(server, "fake:tokens=100", session_variant=SessionVariant.AGENT, sessions=2, turns=2)
    assert result.status == RunStatus.COMPLETED and result.levels[0].completed == 4
    prompts = {(s.session, s.turn): s for s in result.samples}
    records = [r.prompt or "" for r in server.records()]
    first = [estimate_tokens(p) for p in records if "Result of tool call" not in p]
    later = [estimate_tokens(p) for p in records if "Result of tool call" in p]
    assert len(first) == len(later) == 2
    assert min(first) > 1900  # about 2,048 tokens of tool schemas, shared by both sessions
    assert min(later) > max(first) + 400  # then a tool result of about 512 tokens per turn
    assert all("Tools (JSON schemas)" in p for p in records)
    assert {s.output_tokens for s in prompts.values()} == {48}  # the server could say 100: agents ask for 48


def test_a_failed_turn_ends_its_session_and_the_others_go_on(server: FakeServer) -> None:
    result = sessions(server, "fake:fault=500,fault_every=3", sessions=2, turns=3)
    assert result.status == RunStatus.COMPLETED
    failed = [s for s in result.samples if not s.ok]
    assert len(failed) == 1 and failed[0].error_kind == "server_error" and failed[0].turn == 2
    stopped = failed[0].session
    assert sorted(s.turn or 0 for s in result.samples if s.session == stopped) == [1, 2]  # turn 3 never sent
    assert sorted(s.turn or 0 for s in result.samples if s.session != stopped) == [1, 2, 3]
    turns = {t.turn: t for t in result.levels[0].turns or []}
    assert (turns[2].count, turns[2].failed) == (1, 1) and turns[3].count == 1


def test_a_conversations_file_gives_the_users_turns_and_the_server_answers_them(
    server: FakeServer, tmp_path: Path
) -> None:
    path = tmp_path / "conversations.jsonl"
    lines = [
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is a GPU?"},
                {"role": "assistant", "content": "RECORDED ANSWER never sent"},
                {"role": "user", "content": "And a TPU?"},
                {"role": "user", "content": "Cut: past the turn limit"},
            ]
        },
        {"messages": [{"role": "user", "content": "One turn only"}]},
        {"messages": [{"role": "user", "content": "Past the sessions limit"}]},
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    result = sessions(server, conversations_file=str(path), sessions=2, turns=2)
    assert result.status == RunStatus.COMPLETED
    assert sorted((s.session, s.turn) for s in result.samples) == [(0, 1), (0, 2), (1, 1)]
    prompts = sorted(r.prompt or "" for r in server.records())
    assert prompts == sorted(
        [
            "Be brief.\nWhat is a GPU?",
            f"Be brief.\nWhat is a GPU?\n{ANSWER}\nAnd a TPU?",
            "One turn only",
        ]
    )


def test_sessions_are_refused_before_anything_is_sent(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(ProbeSettingsError, match="chat API"):
        sessions(server, api=ApiKind.COMPLETIONS)
    with pytest.raises(ProbeSettingsError, match="request rates"):
        sessions(server, request_rate_rps=(2.0,))
    limits = Settings(probe_max_requests_per_run=8)
    with pytest.raises(ProbeSettingsError, match="9 requests, over the cap of 8"):
        asyncio.run(run_probe(settings_for(server, workload=WorkloadKind.SESSIONS, sessions=3, turns=3), limits=limits))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": [{"role": "bot", "content": "x"}]}\nnot json\n', encoding="utf-8")
    with pytest.raises(SessionError, match=r"line 1.*line 2"):
        sessions(server, conversations_file=str(bad))
    assert server.records() == []


def test_the_cli_runs_sessions_and_writes_turns_and_sample_tags(server: FakeServer, tmp_path: Path) -> None:
    output = tmp_path / "run.json"
    code, _, err = cli(
        *("--base-url", server.base_url, "--model", "fake", "--workload", "sessions", "--sessions", "2"),
        *("--turns", "3", "--think-time-s", "0.05", "--no-db", "--output", str(output)),
    )
    assert code == EXIT_OK, err
    assert "2 sessions: 6/6 ok" in err and "TTFT p50 by turn" in err and "sessions held, SLO met" in err
    data = json.loads(output.read_text())
    assert data["settings"]["workload"] == "sessions" and data["settings"]["think_time_s"] == 0.05
    assert [t["turn"] for t in data["levels"][0]["turns"]] == [1, 2, 3]
    assert sorted((s["session"], s["turn"]) for s in data["samples"]) == [(s, t) for s in (0, 1) for t in (1, 2, 3)]
    # The think time separates an answer from the session's next turn.
    for session in (0, 1):
        mine = sorted((s for s in data["samples"] if s["session"] == session), key=lambda s: s["turn"])
        for before, after in itertools.pairwise(mine):
            assert after["start_s"] >= before["start_s"] + before["e2e_ms"] / 1000 + 0.05 - 0.002
    result = RunResult.model_validate(data)
    assert samples_csv(result).splitlines()[0].split(",")[-2:] == ["session", "turn"]
    assert turns_csv(result).splitlines()[0].startswith("level_index,turn,count,failed,ttft_ms_p50")
    assert len(turns_csv(result).splitlines()) == 4
    code, _, err = cli(
        "--base-url", server.base_url, "--model", "fake", "--workload", "sessions", "--api", "completions"
    )
    assert code == EXIT_USAGE and "chat API" in err
