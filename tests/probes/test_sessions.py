"""Multi-turn sessions: growing histories, determinism, chat and agent shapes, conversations files, per-turn stats."""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from probes.errors import ProbeError, WorkloadError
from probes.models import TurnStats
from probes.session_synth import synthetic_conversations
from probes.sessions import (
    MAX_PROBLEMS,
    Conversation,
    SessionError,
    SessionPlan,
    check_conversations,
    estimate_tokens,
    read_conversations,
)
from probes.turn_stats import per_turn_stats
from probes.workloads import VOCABULARY


def answer(conversation: Conversation, turn: int) -> str:
    return f"answer of session {conversation.index} to turn {turn}: {' '.join(VOCABULARY[turn : turn + 5])}"


def play(conversation: Conversation) -> list[list[dict[str, str]]]:
    """Run every turn as a server would, answering with a known text; the messages sent at each turn."""
    sent = []
    while not conversation.done:
        turn = conversation.turn
        sent.append(conversation.next_messages(turn))
        conversation.record_answer(turn, answer(conversation, turn))
    return sent


# ---- growing histories ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["chat", "agent"])
def test_turn_k_sends_the_system_prompt_then_2k_minus_1_messages_with_the_previous_answers_verbatim(
    variant: str,
) -> None:
    plan = SessionPlan(sessions=3, turns=5, variant=variant, seed=7)  # type: ignore[arg-type]
    for conversation in synthetic_conversations(plan):
        sent = play(conversation)
        assert len(sent) == 5 and conversation.done and conversation.turn == 6
        for k, messages in enumerate(sent, start=1):
            assert messages[0] == {"role": "system", "content": conversation.system}
            rest = messages[1:]
            assert len(rest) == 2 * k - 1
            assert [m["role"] for m in rest] == ["user", "assistant"] * (k - 1) + ["user"]
            assert [m["content"] for m in rest[0::2]] == list(conversation.user_messages[:k])
            assert [m["content"] for m in rest[1::2]] == [answer(conversation, t) for t in range(1, k)]
            if k > 1:  # each turn is the previous turn's prompt, its answer, and one new user message
                previous = sent[k - 2]
                assert messages[: len(previous)] == previous
                assert messages[len(previous)] == {"role": "assistant", "content": answer(conversation, k - 1)}
        assert conversation.answers == tuple(answer(conversation, t) for t in range(1, 6))


def test_the_history_uses_the_servers_answers_whatever_they_are() -> None:
    conversation = Conversation(0, ["first", "second", "third"], "be brief")
    odd = ' {"tool": "x"}\n\n  trailing spaces  '
    conversation.next_messages(1)
    conversation.record_answer(1, odd)
    conversation.record_answer(2, "")  # an empty answer is still the server's answer
    assert conversation.next_messages(3) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": odd},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "third"},
    ]


def test_without_a_system_prompt_the_history_starts_with_the_first_user_message() -> None:
    conversation = Conversation(4, ["hello there", "and then"])
    assert conversation.next_messages(1) == [{"role": "user", "content": "hello there"}]
    conversation.record_answer(1, "hi")
    assert [m["role"] for m in conversation.next_messages(2)] == ["user", "assistant", "user"]


def test_history_tokens_grow_by_each_user_message_and_answer() -> None:
    conversation = Conversation(0, ["one two three", "four five"], "sys tem prompt")
    assert conversation.history_tokens_estimate == 3
    assert conversation.input_tokens_estimate(1) == 6
    conversation.record_answer(1, "an answer of five words")
    assert conversation.history_tokens_estimate == 3 + 3 + 5
    assert conversation.input_tokens_estimate(2) == 3 + 3 + 5 + 2


def test_turns_go_in_order_may_be_asked_again_and_a_stopped_session_sends_nothing() -> None:
    conversation = Conversation(2, ["a", "b", "c"])
    assert conversation.next_messages(1) == conversation.next_messages(1)  # a retry asks again
    with pytest.raises(ValueError, match="expects turn 1, not turn 2"):
        conversation.next_messages(2)
    with pytest.raises(ValueError, match="expects turn 1"):
        conversation.record_answer(2, "x")
    sent = conversation.next_messages(1)
    sent.append({"role": "user", "content": "the caller's own change"})
    assert len(conversation.next_messages(1)) == 1  # a fresh list each call
    conversation.record_answer(1, "x")
    assert conversation.turn == 2 and not conversation.done
    conversation.stop()
    assert conversation.done
    with pytest.raises(ValueError, match="stopped"):
        conversation.next_messages(2)
    finished = Conversation(0, ["only"])
    finished.record_answer(1, "done")
    assert finished.done
    with pytest.raises(ValueError, match="no turn"):
        finished.next_messages(2)
    with pytest.raises(ValueError):
        Conversation(0, [])


# ---- synthetic plans -------------------------------------------------------------------------------------------------


def texts(plan: SessionPlan) -> list[tuple[str | None, tuple[str, ...]]]:
    return [(c.system, c.user_messages) for c in synthetic_conversations(plan)]


@pytest.mark.parametrize("variant", ["chat", "agent"])
def test_synthetic_sessions_are_deterministic_by_seed(variant: str) -> None:
    plan = SessionPlan(sessions=4, turns=3, variant=variant, seed=11)  # type: ignore[arg-type]
    assert texts(plan) == texts(SessionPlan(sessions=4, turns=3, variant=variant, seed=11))  # type: ignore[arg-type]
    other = texts(SessionPlan(sessions=4, turns=3, variant=variant, seed=12))  # type: ignore[arg-type]
    assert all(a[0] != b[0] and set(a[1]).isdisjoint(b[1]) for a, b in zip(texts(plan), other, strict=True))
    # a text depends on seed, session and turn only: more sessions or turns leave the first ones as they were
    longer = texts(SessionPlan(sessions=6, turns=5, variant=variant, seed=11))  # type: ignore[arg-type]
    assert [(s, u[:3]) for s, u in longer[:4]] == texts(plan)


@pytest.mark.parametrize("variant", ["chat", "agent"])
def test_sessions_share_the_system_prompt_but_not_their_user_messages(variant: str) -> None:
    conversations = synthetic_conversations(SessionPlan(sessions=5, turns=3, variant=variant, seed=3))  # type: ignore[arg-type]
    assert len({c.system for c in conversations}) == 1
    users = [u for c in conversations for u in c.user_messages]
    assert len(set(users)) == len(users) == 15
    assert [c.index for c in conversations] == [0, 1, 2, 3, 4]
    assert all(c.turns == 3 and c.line is None for c in conversations)


def test_chat_has_a_short_system_prompt_user_messages_of_the_asked_size_and_normal_outputs() -> None:
    plan = SessionPlan(sessions=2, turns=3, variant="chat", seed=1, user_tokens=80, system_tokens=40, max_tokens=300)
    for conversation in synthetic_conversations(plan):
        assert conversation.system is not None and estimate_tokens(conversation.system) == 40
        assert [estimate_tokens(u) for u in conversation.user_messages] == [80, 80, 80]
        assert all(w in VOCABULARY for w in conversation.user_messages[1].split()[5:])  # about one token a word
        assert conversation.max_tokens == 300
    default = synthetic_conversations(SessionPlan(sessions=1, turns=1))[0]
    assert default.system is not None and estimate_tokens(default.system) < 100
    assert default.max_tokens is not None and default.max_tokens >= 128
    assert synthetic_conversations(SessionPlan(sessions=1, turns=1, system_tokens=0))[0].system is None


def test_agent_has_thousands_of_tokens_of_tool_schemas_grows_by_tool_results_and_asks_for_short_outputs() -> None:
    agent = synthetic_conversations(SessionPlan(sessions=2, turns=4, variant="agent", seed=5))
    chat = synthetic_conversations(SessionPlan(sessions=2, turns=4, variant="chat", seed=5))
    conversation = agent[0]
    assert conversation.system is not None and estimate_tokens(conversation.system) >= 2000
    schemas = [json.loads(line) for line in conversation.system.splitlines() if line.startswith("{")]
    assert len(schemas) >= 10 and all(s["parameters"]["type"] == "object" for s in schemas)
    tools = {s["name"] for s in schemas}
    assert conversation.max_tokens is not None and conversation.max_tokens <= 64
    assert conversation.user_messages[0].startswith("Task 0:")
    for turn, message in enumerate(conversation.user_messages[1:], start=1):
        head, body, tail = message.split("\n")
        assert head == f"Result of tool call {turn}:" and tail == "Decide the next step."
        result = json.loads(body)
        assert result["call"] == turn and result["tool"] in tools and result["status"] == "ok"
        assert estimate_tokens(message) == 512
    inputs = []
    for turn in range(1, 5):
        inputs.append(conversation.input_tokens_estimate(turn))
        conversation.record_answer(turn, '{"tool": "tool_1", "arguments": {}}')
    assert inputs[0] > 2000 and all(b - a > 500 for a, b in itertools.pairwise(inputs))
    assert inputs[-1] > 3500  # thousands of tokens of context after a few turns
    assert estimate_tokens(chat[0].system or "") < estimate_tokens(conversation.system) / 10
    assert (chat[0].max_tokens or 0) > 2 * conversation.max_tokens
    sized = synthetic_conversations(
        SessionPlan(sessions=1, turns=2, variant="agent", user_tokens=1000, system_tokens=4000, max_tokens=32)
    )[0]
    assert estimate_tokens(sized.system or "") == 4000 and estimate_tokens(sized.user_messages[1]) == 1000
    assert sized.max_tokens == 32


def test_a_plan_counts_its_requests_and_refuses_absurd_values_all_at_once() -> None:
    assert SessionPlan(sessions=8, turns=4, think_time_s=1.5).requests == 32
    with pytest.raises(SessionError) as caught:
        SessionPlan(sessions=0, turns=0, think_time_s=-1, variant="voice", user_tokens=0)  # type: ignore[arg-type]
    assert isinstance(caught.value, WorkloadError) and isinstance(caught.value, ProbeError)
    assert caught.value.problem_count == 5
    for words in ("variant", "sessions", "turns", "think time", "user_tokens"):
        assert words in str(caught.value)
    with pytest.raises(SessionError, match="think time"):
        SessionPlan(sessions=1, turns=1, think_time_s=math.nan)


def test_token_estimates_count_words_numbers_cjk_and_punctuation() -> None:
    assert estimate_tokens("the of and to") == 4
    assert estimate_tokens("") == 0
    assert estimate_tokens('{"a": 1}') == 5  # {" a ": 1 }
    assert estimate_tokens("1234567") == 3
    assert estimate_tokens("你好，世界") == 5


# ---- conversations files ---------------------------------------------------------------------------------------------


def write(tmp_path: Path, lines: list[str] | str, name: str = "conversations.jsonl") -> Path:
    path = tmp_path / name
    text = lines if isinstance(lines, str) else "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def line(*messages: tuple[str, object]) -> str:
    return json.dumps({"messages": [{"role": r, "content": c} for r, c in messages]}, ensure_ascii=False)


GOOD = [
    line(("system", "You are terse."), ("user", "Hi"), ("assistant", "RECORDED 1"), ("user", "Why?")),
    "",
    line(("user", "只有一个问题"), ("user", "and a second one straight after")),
    line(("user", [{"type": "text", "text": "parts "}, {"type": "text", "text": "joined"}]), ("assistant", None)),
    line(("system", "S"), ("user", "a"), ("assistant", "b"), ("user", "c"), ("assistant", "d"), ("user", "e")),
]


def test_a_good_file_gives_its_user_turns_and_system_prompt_and_drops_the_recorded_answers(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    summary = check_conversations(path)
    assert summary.conversations_in_file == summary.conversations == 4
    assert summary.requests == 2 + 2 + 1 + 3 and summary.turns_max == 3 and summary.with_system == 2
    conversations = list(read_conversations(path, max_tokens=64))
    assert [c.line for c in conversations] == [1, 3, 4, 5]  # the blank line 2 is skipped but counted
    assert [c.index for c in conversations] == [0, 1, 2, 3]
    assert [c.user_messages for c in conversations] == [
        ("Hi", "Why?"),
        ("只有一个问题", "and a second one straight after"),
        ("parts joined",),
        ("a", "c", "e"),
    ]
    assert [c.system for c in conversations] == ["You are terse.", None, None, "S"]
    assert all(c.max_tokens == 64 for c in conversations)
    first = conversations[0]
    first.record_answer(1, "the server's own words")
    sent = first.next_messages(2)
    assert [m["content"] for m in sent] == ["You are terse.", "Hi", "the server's own words", "Why?"]
    assert all("RECORDED" not in m["content"] for c in conversations for m in c.next_messages(c.turn))


def test_limit_and_max_turns_select_conversations_and_cut_turns(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    summary = check_conversations(path, limit=2, max_turns=1)
    assert (summary.conversations_in_file, summary.conversations, summary.requests) == (4, 2, 2)
    got = list(read_conversations(path, limit=2, max_turns=1))
    assert [(c.line, c.user_messages) for c in got] == [(1, ("Hi",)), (3, ("只有一个问题",))]
    with pytest.raises(SessionError, match="limit must be 1 or more"):
        check_conversations(path, limit=0)


def test_a_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + line(("user", "hello")).encode())
    assert [c.user_messages for c in read_conversations(path)] == [("hello",)]


BAD = [
    line(("user", "fine")),  # 1
    "{not json",  # 2
    json.dumps({"messages": [{"content": "who am I"}]}),  # 3: missing role
    line(("system", "only a system prompt"), ("assistant", "and an answer")),  # 4: no user message
    json.dumps(["a", "list"]),  # 5
    json.dumps({"prompt": "the prompt file's format"}),  # 6: no messages
    line(("user", "a"), ("tool", "result")),  # 7
    line(("user", "a"), ("system", "late")),  # 8
    line(("user", "   ")),  # 9
    line(("user", 42)),  # 10
    json.dumps({"messages": []}),  # 11
    line(("user", "fine too"), ("assistant", "ok")),  # 12
]


def test_a_malformed_file_lists_every_problem_with_its_line_number_before_anything_is_sent(tmp_path: Path) -> None:
    path = write(tmp_path, BAD)
    with pytest.raises(SessionError) as caught:
        check_conversations(path)
    error = caught.value
    assert isinstance(error, WorkloadError) and error.problem_count == 10
    assert [p.split(":")[0] for p in error.problems] == [f"line {n}" for n in range(2, 12)]
    expected = {
        2: "not JSON",
        3: "message 1 has no role",
        4: "no user message",
        5: "not a JSON object",
        6: "missing messages",
        7: "role 'tool'",
        8: "message 2 is a system message",
        9: "message 1 (user) is empty",
        10: "message 1 (user) has no text content",
        11: "messages is not a non-empty list",
    }
    for problem, (number, words) in zip(error.problems, expected.items(), strict=True):
        assert problem.startswith(f"line {number}: ") and words in problem, problem
    assert "put tool results in a user message" in error.problems[5]
    message = str(error)
    assert message.startswith("conversations.jsonl: 10 malformed lines: line 2: not JSON")
    # streaming reads what precedes the first bad line, then stops there
    reader = read_conversations(path)
    assert next(reader).user_messages == ("fine",)
    with pytest.raises(SessionError, match="line 2: not JSON"):
        next(reader)


def test_problems_are_listed_up_to_a_cap_and_all_counted(tmp_path: Path) -> None:
    path = write(tmp_path, ["oops"] * (MAX_PROBLEMS + 5))
    with pytest.raises(SessionError) as caught:
        check_conversations(path)
    assert caught.value.problem_count == MAX_PROBLEMS + 5 and len(caught.value.problems) == MAX_PROBLEMS
    assert "(and 5 more)" in str(caught.value)
    with pytest.raises(SessionError) as few:
        check_conversations(path, max_problems=3)
    assert len(few.value.problems) == 3 and few.value.problem_count == MAX_PROBLEMS + 5


def test_undecodable_bytes_make_their_line_malformed(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(line(("user", "ok")).encode() + b"\n" + line(("user", "caf\xe9")).encode("latin-1") + b"\n")
    with pytest.raises(SessionError, match="line 2: not UTF-8 text"):
        check_conversations(path)


def test_an_empty_or_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match="has no conversation"):
        check_conversations(write(tmp_path, "\n\n  \n"))
    with pytest.raises(SessionError, match="cannot read the conversations file"):
        check_conversations(tmp_path / "missing.jsonl")


# ---- per-turn statistics ---------------------------------------------------------------------------------------------


def test_per_turn_stats_against_numpy_on_hand_made_samples() -> None:
    turn1 = [(1, 900.0, 20.0, 3000.0, 2100), (1, 1100.0, 22.0, 3200.0, 2100), (1, 1000.0, None, 3100.0, 2100)]
    turn2 = [(2, t, 18.0 + i, 2000.0, 2600 + i) for i, t in enumerate([200.0, 180.0, 260.0, 240.0])]
    turn4 = [(4, None, None, None, None)]  # completed but not measured: counted, no statistic
    got = per_turn_stats([*turn2, *turn4, *turn1])
    assert [s.turn for s in got] == [1, 2, 4] and [s.count for s in got] == [3, 4, 1]
    first, second, fourth = got
    assert first.ttft_ms_p50 == pytest.approx(1000.0)
    assert first.ttft_ms_p99 == pytest.approx(float(np.percentile([900, 1100, 1000], 99)))
    assert first.tpot_ms_p50 == pytest.approx(21.0) and first.e2e_ms_p50 == pytest.approx(3100.0)
    assert first.input_tokens_mean == pytest.approx(2100.0)
    ttfts = [200.0, 180.0, 260.0, 240.0]
    assert second.ttft_ms_p50 == pytest.approx(float(np.percentile(ttfts, 50))) == pytest.approx(220.0)
    assert second.ttft_ms_p99 == pytest.approx(float(np.percentile(ttfts, 99)))
    assert second.tpot_ms_p50 == pytest.approx(float(np.percentile([18, 19, 20, 21], 50)))
    assert second.input_tokens_mean == pytest.approx(2601.5)
    assert fourth == TurnStats(turn=4, count=1)
    assert (second.ttft_ms_p50 or 0) < (first.ttft_ms_p50 or 0)  # what the page shows: later turns hit the cache
    assert per_turn_stats([]) == []
    assert set(first.model_dump()) == {
        "turn",
        "count",
        "failed",
        "ttft_ms_p50",
        "ttft_ms_p99",
        "tpot_ms_p50",
        "e2e_ms_p50",
        "input_tokens_mean",
    }
