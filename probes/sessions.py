"""Multi-turn session groundwork: synthetic chat and agent conversations, and a conversations file.

A session is one user holding a conversation of K turns. Turns are numbered from 1. Turn k sends the whole history so
far and one new user message: the system prompt (if any), then ``2k - 1`` user/assistant messages — every earlier user
message, each followed by the server's own answer to it, verbatim — and the new user message last. Answers recorded in
a file are never sent: the history is built from what the server actually answered, so each turn's prompt is exactly
the previous turn's prompt plus its answer plus the new message, the prefix a server's prefix cache can reuse.

Synthetic sessions (``SessionPlan`` -> ``synthetic_conversations`` in probes/session_synth.py), deterministic per seed:

- ``chat``: a short system prompt, user messages of ``user_tokens`` common words, ordinary outputs (``max_tokens``
  256 by default).
- ``agent``: a long tool-like context and short outputs: the system prompt holds tool JSON schemas (about
  ``system_tokens``, 2,048 by default), turn 1 states a task and every later user message carries a JSON tool result of
  about ``user_tokens`` (512 by default), so the context grows by thousands of tokens over a few turns while each
  answer is asked for in ``max_tokens`` 48.

Text is made of ``VOCABULARY`` words (about one token each). Every session of a run shares the run's system prompt
(as users of one product or agent do: the prefix cache may serve it across sessions); user messages differ per session
and turn, and each text depends only on (seed, session, turn). A new seed changes every text, which keeps an earlier
run's cache out. Sizes are ``estimate_tokens`` estimates, met exactly above a floor (the agent's instructions and first
tool schema, about 180 tokens; a tool result's JSON frame, about 40; the chat system prompt's first sentence, 13); the
agent's task (turn 1) is ``min(user_tokens, 48)``. The server's ``usage`` is the truth; ``Conversation``'s
``history_tokens_estimate`` and ``input_tokens_estimate(turn)`` are for display and planning only.

Sessions need the chat completions API (a list of messages); a completions endpoint cannot hold a conversation.

A conversations file is JSONL in the OpenAI messages format, one conversation per line::

    {"messages": [{"role": "system", "content": "..."}, {"role": "user", "content": "..."},
                  {"role": "assistant", "content": "..."}, {"role": "user", "content": "..."}]}

Roles are ``system`` (at most one, first), ``user`` and ``assistant``; ``content`` is a string (or a list of
``{"type": "text", "text": ...}`` parts). Each user message is one turn; assistant messages are read and dropped (the
server's answers take their place); a line needs at least one non-empty user message. Lines are numbered from 1 as in
an editor, blank lines are skipped, the file is UTF-8 (a byte-order mark is dropped, undecodable bytes make the line
malformed).

Use, in this order (nothing is sent before the check passed)::

    plan = SessionPlan(sessions=8, turns=4, think_time_s=1.0, variant="agent", seed=run_seed)  # SessionError: refuse
    conversations = synthetic_conversations(plan)       # or, from a file:
    summary = check_conversations(path, limit=8, max_turns=4)  # SessionError lists every malformed line: do not send
    # compare summary.requests (or plan.requests) with the per-run request cap
    conversations = list(read_conversations(path, limit=8, max_turns=4, max_tokens=None))  # streamed, in file order
    # each conversation runs as its own task: for turn 1..conversation.turns, wait plan.think_time_s (not before
    # turn 1), then
    messages = conversation.next_messages(conversation.turn)   # send with max_tokens=conversation.max_tokens
    conversation.record_answer(conversation.turn, content)     # the answer's content text (no reasoning), as received
    # a failed turn: conversation.stop() (the session ends; its later turns are not sent)
    # tag each sample with (conversation.index, turn); then probes/turn_stats.py's per_turn_stats([(turn, ttft_ms,
    # tpot_ms, e2e_ms, input_tokens), ...]) gives one TurnStats per turn index: turn 1 against later turns shows the
    # prefix cache
    # (``TurnStats``: turn, count, ttft_ms_p50, ttft_ms_p99, tpot_ms_p50, e2e_ms_p50, input_tokens_mean)

``check_conversations`` reads the whole file in one streaming pass and raises ``SessionError`` listing the first
``MAX_PROBLEMS`` problems with their line numbers (``line 3: message 2 has no role``); ``read_conversations`` raises at
the first bad line it meets (only if the file changed after the check).
"""

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from probes.errors import LineProblem, WorkloadError

SessionVariant = Literal["chat", "agent"]
Message = dict[str, str]

MAX_PROBLEMS = 20  # problems listed in a SessionError
ROLES = ("system", "user", "assistant")
# Per variant: system prompt tokens, tokens of each new user message (agent: the tool result), max_tokens per turn.
VARIANT_DEFAULTS: dict[str, tuple[int, int, int]] = {"chat": (48, 64, 256), "agent": (2048, 512, 48)}

_TOKEN = re.compile(
    r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"  # one CJK character or full-width sign
    r"|\d{1,3}"  # numbers, up to three digits a token
    r"|[^\W\d_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]+"  # a run of letters
    r"|[^\w\s]+|_"  # a run of punctuation
)
_UNDECODABLE = re.compile(r"[\udc80-\udcff]")


def estimate_tokens(text: str) -> int:
    """About the tokens a server counts in ``text``: one per common word, CJK character, 3 digits or punctuation run."""
    return len(_TOKEN.findall(text))


class SessionError(WorkloadError):
    """Sessions cannot be run; ``problems`` lists the first malformed lines, ``problem_count`` counts them all."""

    def __init__(self, message: str, problems: tuple[str, ...] = (), problem_count: int = 0) -> None:
        super().__init__(message)
        self.problems = problems
        self.problem_count = problem_count


# ---- conversation state ------------------------------------------------------------------------------------------


class Conversation:
    """One session's state: its user turns, the server's answers so far, and the messages of the next turn."""

    def __init__(
        self,
        index: int,
        user_messages: Sequence[str],
        system: str | None = None,
        *,
        max_tokens: int | None = None,
        line: int | None = None,
    ) -> None:
        if not user_messages:
            raise ValueError("a conversation needs at least one user message")
        self.index = index  # the session's number in the run, from 0
        self.line = line  # its line in a conversations file (None when synthetic)
        self.system = system or None
        self.user_messages = tuple(user_messages)
        self.max_tokens = max_tokens  # per turn; None: the run's setting
        self._answers: list[str] = []
        self._stopped = False
        self._history_tokens = estimate_tokens(self.system) if self.system else 0

    @property
    def turns(self) -> int:
        """Turns in the conversation (its user messages)."""
        return len(self.user_messages)

    @property
    def turn(self) -> int:
        """The next turn to send, from 1 (``turns + 1`` once every turn is answered)."""
        return len(self._answers) + 1

    @property
    def done(self) -> bool:
        """Every turn is answered, or the session was stopped."""
        return self._stopped or len(self._answers) >= self.turns

    @property
    def answers(self) -> tuple[str, ...]:
        """The server's answers so far, in turn order."""
        return tuple(self._answers)

    @property
    def history_tokens_estimate(self) -> int:
        """Estimated tokens of the history the next turn repeats: system prompt, earlier user messages and answers."""
        return self._history_tokens

    def input_tokens_estimate(self, turn: int) -> int:
        """Estimated prompt tokens of ``turn`` (the history plus its user message), before the chat template."""
        self._check(turn)
        return self._history_tokens + estimate_tokens(self.user_messages[turn - 1])

    def next_messages(self, turn: int) -> list[Message]:
        """The chat messages of ``turn`` (the next one): the whole history so far, then the turn's user message.

        A fresh list each call (the same content until ``record_answer``): a retry may ask again.
        """
        self._check(turn)
        messages = [{"role": "system", "content": self.system}] if self.system else []
        for user, answer in zip(self.user_messages, self._answers, strict=False):
            messages += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
        return [*messages, {"role": "user", "content": self.user_messages[turn - 1]}]

    def record_answer(self, turn: int, text: str) -> None:
        """Keep the server's answer to ``turn`` (its content, verbatim): the next turns send it as history."""
        self._check(turn)
        self._answers.append(text)
        self._history_tokens += estimate_tokens(self.user_messages[turn - 1]) + estimate_tokens(text)

    def stop(self) -> None:
        """End the session early (a failed turn): ``done`` becomes true, later turns are not sent."""
        self._stopped = True

    def _check(self, turn: int) -> None:
        if self._stopped:
            raise ValueError(f"session {self.index} was stopped")
        if turn != self.turn or turn > self.turns:
            expected = f"turn {self.turn}" if self.turn <= self.turns else "no turn (all answered)"
            raise ValueError(f"session {self.index} expects {expected}, not turn {turn}")

    def __repr__(self) -> str:
        return f"Conversation(index={self.index}, turn={self.turn}/{self.turns}, line={self.line})"


# ---- synthetic sessions ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionPlan:
    """N synthetic users with K turns each; token sizes and ``max_tokens`` left None take the variant's defaults."""

    sessions: int
    turns: int
    think_time_s: float = 0.0  # wait after an answer before the next turn (not before turn 1)
    variant: SessionVariant = "chat"
    seed: int = 0
    user_tokens: int | None = None  # each new user message (agent: the tool result it carries)
    system_tokens: int | None = None
    max_tokens: int | None = None  # per turn

    def __post_init__(self) -> None:
        problems = []
        if self.variant not in get_args(SessionVariant):
            problems.append(f"the session variant must be chat or agent (got {self.variant!r})")
        if self.sessions < 1:
            problems.append(f"sessions must be 1 or more (got {self.sessions})")
        if self.turns < 1:
            problems.append(f"turns must be 1 or more (got {self.turns})")
        if not (math.isfinite(self.think_time_s) and self.think_time_s >= 0):
            problems.append(f"the think time must be 0 s or more (got {self.think_time_s})")
        for name in ("user_tokens", "system_tokens", "max_tokens"):
            value = getattr(self, name)
            if value is not None and value < (0 if name == "system_tokens" else 1):
                problems.append(f"{name} must be {0 if name == 'system_tokens' else 1} or more (got {value})")
        if problems:
            raise SessionError("; ".join(problems), tuple(problems), len(problems))

    @property
    def requests(self) -> int:
        """Requests the plan sends when every turn succeeds."""
        return self.sessions * self.turns

    @property
    def resolved(self) -> tuple[int, int, int]:
        """(system_tokens, user_tokens, max_tokens) with the variant's defaults filled in."""
        system, user, out = VARIANT_DEFAULTS[self.variant]
        return (
            system if self.system_tokens is None else self.system_tokens,
            user if self.user_tokens is None else self.user_tokens,
            out if self.max_tokens is None else self.max_tokens,
        )


# ---- conversations files -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Row:
    line: int
    system: str | None
    users: tuple[str, ...]


def _content(value: object) -> str | None:
    """A message's text: a string, or a list of text parts joined; None when it is neither."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in value
    ):
        return "".join(str(p["text"]) for p in value)
    return None


def _row(line: int, text: str) -> _Row | LineProblem:
    if _UNDECODABLE.search(text):
        return LineProblem(line, "not UTF-8 text")
    try:
        obj = json.loads(text)
    except ValueError as exc:
        return LineProblem(line, f"not JSON ({exc})")
    if not isinstance(obj, dict):
        return LineProblem(line, 'not a JSON object (expected {"messages": [...]})')
    messages = obj.get("messages")
    if not isinstance(messages, list) or not messages:
        return LineProblem(line, "missing messages" if messages is None else "messages is not a non-empty list")
    system: str | None = None
    users: list[str] = []
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, dict):
            return LineProblem(line, f"message {number} is not an object")
        if "role" not in message:
            return LineProblem(line, f"message {number} has no role")
        role = message["role"]
        if role not in ROLES:
            hint = "; put tool results in a user message" if role == "tool" else ""
            return LineProblem(line, f"message {number} has the role {role!r}, not one of {', '.join(ROLES)}{hint}")
        if role == "assistant":
            continue  # the server's answers replace it
        content = _content(message.get("content"))
        if content is None:
            return LineProblem(line, f"message {number} ({role}) has no text content")
        if role == "system":
            if number != 1:
                return LineProblem(line, f"message {number} is a system message; only the first may be")
            system = content or None
        elif not content.strip():
            return LineProblem(line, f"message {number} (user) is empty")
        else:
            users.append(content)
    if not users:
        return LineProblem(line, "no user message")
    return _Row(line, system, tuple(users))


def _rows(path: Path) -> Iterator[_Row | LineProblem]:
    try:
        handle = path.open(encoding="utf-8-sig", errors="surrogateescape")
    except OSError as exc:
        raise SessionError(f"cannot read the conversations file {path}: {exc.strerror or exc}") from exc
    with handle:
        for line, text in enumerate(handle, start=1):
            if text.strip():
                yield _row(line, text)


@dataclass(frozen=True)
class ConversationSummary:
    """What ``check_conversations`` found: the file's conversations and the selection's turns and sizes (estimated)."""

    path: Path
    conversations_in_file: int
    conversations: int  # selected (limit)
    requests: int  # user turns of the selection (max_turns applied): requests sent when every turn succeeds
    turns_max: int
    with_system: int
    system_tokens_mean: float  # estimate, over the conversations that have a system prompt (0 without)
    user_tokens_mean: float  # estimate, per user turn


def _selection(limit: int | None, max_turns: int | None) -> None:
    problems = [
        f"{name} must be 1 or more (got {v})"
        for name, v in (("limit", limit), ("max_turns", max_turns))
        if v is not None and v < 1
    ]
    if problems:
        raise SessionError("; ".join(problems), tuple(problems), len(problems))


def check_conversations(
    path: Path | str, *, limit: int | None = None, max_turns: int | None = None, max_problems: int = MAX_PROBLEMS
) -> ConversationSummary:
    """Validate the whole file in one streaming pass and summarise the first ``limit`` conversations.

    Raises SessionError, listing the first ``max_problems`` malformed lines with their numbers (and counting all),
    when any line is malformed or the file has no conversation. Nothing should be sent before this passed.
    """
    path = Path(path)
    _selection(limit, max_turns)
    problems: list[str] = []
    problem_count = in_file = kept = requests = turns_max = with_system = 0
    system_tokens = user_tokens = 0
    for item in _rows(path):
        if isinstance(item, LineProblem):
            problem_count += 1
            if len(problems) < max_problems:
                problems.append(str(item))
            continue
        in_file += 1
        if limit is not None and kept >= limit:
            continue
        kept += 1
        users = item.users[:max_turns]
        requests += len(users)
        turns_max = max(turns_max, len(users))
        user_tokens += sum(estimate_tokens(u) for u in users)
        if item.system:
            with_system += 1
            system_tokens += estimate_tokens(item.system)
    if problem_count:
        more = f" (and {problem_count - len(problems)} more)" if problem_count > len(problems) else ""
        raise SessionError(
            f"{path.name}: {problem_count} malformed line{'s' * (problem_count > 1)}{more}: {'; '.join(problems)}",
            tuple(problems),
            problem_count,
        )
    if not in_file:
        raise SessionError(f'{path.name} has no conversation (one {{"messages": [...]}} object per line)')
    return ConversationSummary(
        path=path,
        conversations_in_file=in_file,
        conversations=kept,
        requests=requests,
        turns_max=turns_max,
        with_system=with_system,
        system_tokens_mean=system_tokens / with_system if with_system else 0.0,
        user_tokens_mean=user_tokens / requests,
    )


def read_conversations(
    path: Path | str, *, limit: int | None = None, max_turns: int | None = None, max_tokens: int | None = None
) -> Iterator[Conversation]:
    """Stream the first ``limit`` conversations in file order, each cut to ``max_turns`` user turns.

    Call ``check_conversations`` first (this raises SessionError at a bad line). ``index`` counts from 0 in the
    selection, ``line`` is the file line; every turn asks for ``max_tokens`` (None: the run's setting).
    """
    path = Path(path)
    _selection(limit, max_turns)
    for kept, item in enumerate(_rows(path)):
        if isinstance(item, LineProblem):
            raise SessionError(f"{path.name} {item}", (str(item),), 1)
        if limit is not None and kept >= limit:
            return
        yield Conversation(kept, item.users[:max_turns], item.system, max_tokens=max_tokens, line=item.line)


__all__ = [
    "MAX_PROBLEMS",
    "ROLES",
    "VARIANT_DEFAULTS",
    "Conversation",
    "ConversationSummary",
    "Message",
    "SessionError",
    "SessionPlan",
    "SessionVariant",
    "check_conversations",
    "estimate_tokens",
    "read_conversations",
]
