"""What a fake response does: per-request timing and faults, the load-dependent mode, and the server's record of it."""

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

FAULTS = frozenset(
    {
        "",
        "401",
        "404",
        "429",
        "500",
        "reset",
        "close",
        "truncate",
        "malformed",
        "error_in_stream",
        "json_body",
        "big_line",
        "never_end",
        "stall",
        "no_headers",
        "close_no_headers",
        "no_first_token",
    }
)
MID_STREAM_FAULTS = frozenset({"reset", "close", "truncate", "malformed", "error_in_stream", "stall"})
WORDS = (" alpha", " beta", " gamma", " delta", " eps", " zeta", " eta", " theta")


@dataclass(frozen=True)
class Behaviour:
    """Timing and faults of one response (server defaults, overridden per request)."""

    ttft_ms: float = 20.0  # from the request's arrival to the first output token
    tpot_ms: float = 2.0  # between two consecutive tokens
    tokens: int = 16  # output tokens (capped by the request's max_tokens)
    tokens_per_chunk: int = 1
    usage: bool = True  # honour stream_options.include_usage
    role_chunk: bool = True  # a role-only first chunk, sent with the headers
    reasoning_tokens: int = 0  # reasoning_content tokens before the content
    fault: str = ""
    fault_after: int = -1  # tokens sent before a mid-stream fault; -1: half of the tokens
    fault_every: int = 1  # the fault hits every N-th request (by the server's request number); the others are served
    retry_after_s: int = 1

    @classmethod
    def parse(cls, spec: str, base: "Behaviour") -> "Behaviour":
        """Apply ``key=value,key=value`` over base; unknown keys raise ValueError."""
        changes: dict[str, Any] = {}
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        for part in spec.split(","):
            if not part.strip():
                continue
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in kinds:
                raise ValueError(f"unknown fake behaviour key {key!r}")
            kind = kinds[key]
            if kind in (bool, "bool"):
                changes[key] = value.strip().lower() in ("1", "true", "yes", "on")
            elif kind in (int, "int"):
                changes[key] = int(value)
            elif kind in (float, "float"):
                changes[key] = float(value)
            else:
                changes[key] = value.strip()
        result = dataclasses.replace(base, **changes)
        if result.fault not in FAULTS:
            raise ValueError(f"unknown fault {result.fault!r}")
        return result


@dataclass(frozen=True)
class Batching:
    """The load-dependent mode of a response (see fakeserver/__init__.py); the defaults leave the server as it was."""

    slots: int | None = None  # at most this many requests running at once (None: no cap of its own)
    tpot_per_running_ms: float = 0.0  # added to every token gap per other request running

    @property
    def on(self) -> bool:
        """True when this mode changes anything."""
        return self.slots is not None or self.tpot_per_running_ms > 0

    @classmethod
    def split(cls, spec: str, base: "Batching") -> tuple[str, "Batching"]:
        """(the spec without this mode's keys, for Behaviour.parse; base with them applied). Bad values raise."""
        rest: list[str] = []
        slots, per_running = base.slots, base.tpot_per_running_ms
        for part in spec.split(","):
            key, _, value = part.partition("=")
            key = key.strip()
            if key == "slots":
                n = int(value)
                if n < 0:
                    raise ValueError("slots must be 0 (no cap) or more")
                slots = n or None
            elif key == "tpot_per_running_ms":
                per_running = float(value)
                if not 0 <= per_running < float("inf"):
                    raise ValueError("tpot_per_running_ms must be 0 or more")
            else:
                rest.append(part)
        return ",".join(rest), cls(slots, per_running)


@dataclass
class RequestRecord:
    """The server's own account of one request (perf_counter seconds)."""

    request_id: str
    model: str
    fault: str
    received_s: float
    started_s: float | None = None  # when it left the waiting queue (max_running)
    headers_s: float | None = None
    token_s: list[float] = field(default_factory=list)  # send time of each output chunk
    chunk_tokens: list[int] = field(default_factory=list)
    done_s: float | None = None
    prompt: str | None = None  # the prompt's text, only when the server records prompts (FakeServer record_prompts)

    def as_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return dataclasses.asdict(self)


def prompt_tokens(req: dict[str, Any]) -> int:
    """The prompt's token count as the server counts it: its words."""
    return len(prompt_text(req).split())


def prompt_text(req: dict[str, Any]) -> str:
    """The prompt's text: the messages' contents joined by newlines, or the completion prompt."""
    if "messages" in req:
        parts = []
        for msg in req.get("messages") or []:
            content = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return "\n".join(parts)
    prompt = req.get("prompt", "")
    return prompt if isinstance(prompt, str) else " ".join(map(str, prompt))


def error_body(message: str, kind: str, code: Any) -> bytes:
    """An OpenAI-style error body."""
    return json.dumps({"error": {"message": message, "type": kind, "code": code, "param": None}}).encode()
