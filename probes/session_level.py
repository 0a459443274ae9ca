"""Sessions (workload sessions): the run's conversations, checked before sending, and the level that holds them.

Every session starts at once and runs its turns one after another: turn k sends the whole history so far (the
server's own earlier answers included) plus the turn's new user message, after the think time (not before turn 1).
A failed turn ends its session. Each sample keeps its session and turn; the level reports figures per turn index
(probes/sessions.py), beside the usual percentiles and the server's prefix-cache hit ratio when /metrics has it.
"""

import asyncio
from pathlib import Path

from openai import AsyncOpenAI

from probes.client import Clock, send_turn
from probes.config import RunSettings
from probes.errors import ProbeSettingsError
from probes.level import Level, LevelPlan, SampleSink
from probes.progress import Progress
from probes.sdk import encode_body, request_body
from probes.session_synth import synthetic_conversations
from probes.sessions import (
    Conversation,
    SessionPlan,
    check_conversations,
    read_conversations,
)
from probes.transport import LeanTransport
from settings import Settings, get_settings

WARM_CONNECTIONS = 64  # opened before the level's clock; more sessions open theirs as they start


def session_plan(settings: RunSettings) -> SessionPlan:
    """The synthetic sessions of the settings (SessionError for absurd values).

    Chat turns ask for the run's max tokens; agent turns keep the variant's short outputs.
    """
    variant = settings.session_variant.value
    return SessionPlan(
        sessions=settings.sessions,
        turns=settings.turns,
        think_time_s=settings.think_time_s,
        variant="agent" if variant == "agent" else "chat",
        seed=settings.seed,
        max_tokens=None if variant == "agent" else settings.max_tokens,
    )


def check_sessions(settings: RunSettings, limits: Settings | None = None) -> int:
    """The requests the sessions send when every turn succeeds; refused before anything is sent.

    SessionError lists a conversations file's malformed lines; ProbeSettingsError when over the request cap.
    """
    limits = limits or get_settings()
    if settings.conversations_file:
        summary = check_conversations(
            Path(settings.conversations_file), limit=settings.sessions, max_turns=settings.turns
        )
        requests = summary.requests
    else:
        requests = session_plan(settings).requests
    total = requests + settings.warmup_requests
    if total > limits.probe_max_requests_per_run:
        raise ProbeSettingsError(
            f"these sessions would send {total} requests, over the cap of {limits.probe_max_requests_per_run}; "
            "give fewer sessions or turns (or raise PROBE_MAX_REQUESTS_PER_RUN)"
        )
    return requests


def conversations_of(settings: RunSettings) -> list[Conversation]:
    """The run's conversations: read from its file (at most `sessions`, cut to `turns`), else synthetic."""
    if settings.conversations_file:
        return list(
            read_conversations(
                Path(settings.conversations_file),
                limit=settings.sessions,
                max_turns=settings.turns,
                max_tokens=settings.max_tokens,
            )
        )
    return synthetic_conversations(session_plan(settings))


class SessionLevel(Level):
    """The sessions' one level: every conversation at once, each turn after the previous answer and the think time."""

    def __init__(
        self,
        client: AsyncOpenAI,
        settings: RunSettings,
        conversations: list[Conversation],
        *,
        clock: Clock,
        progress: Progress,
        on_sample: SampleSink | None = None,
        lean: LeanTransport | None = None,
    ) -> None:
        plan = LevelPlan(0, len(conversations), sum(c.turns for c in conversations))
        super().__init__(client, settings, [], plan, clock=clock, progress=progress, on_sample=on_sample, lean=lean)
        self.conversations = conversations
        self.sent = 0

    async def _prepare(self) -> None:
        """Connections open and idle before the level's clock (bodies are built turn by turn from the answers)."""
        if self.lean is not None:
            warm = min(self.plan.concurrency, WARM_CONNECTIONS)
            await self.lean.warm(self.settings.base_url, warm, self.settings.timeouts.connect_s)

    async def _dispatch(self) -> None:
        for conversation in self.conversations:
            task = asyncio.create_task(self._session(conversation))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def _session(self, conversation: Conversation) -> None:
        settings = self.settings
        max_tokens = conversation.max_tokens or settings.max_tokens
        while not conversation.done:
            turn = conversation.turn
            if turn > 1 and settings.think_time_s > 0:
                await asyncio.sleep(settings.think_time_s)
            if settings.duration_s is not None and self.clock() - self.start_s >= settings.duration_s:
                return
            body = request_body(settings, conversation.next_messages(turn), max_tokens=max_tokens)
            index = self.sent
            due_s = self.clock() - self.start_s
            self.sent += 1
            self.progress.update(sent=self.sent)
            sample, answer = await send_turn(
                self.client,
                settings,
                encode_body(body),
                max_tokens=max_tokens,
                level_index=self.plan.index,
                concurrency=self.plan.concurrency,
                index=index,
                level_start_s=self.start_s,
                clock=self.clock,
            )
            self._record(sample.model_copy(update={"session": conversation.index, "turn": turn}), due_s)
            if sample.ok:
                conversation.record_answer(turn, answer)
            else:
                conversation.stop()  # its later turns would send a history the server never answered
