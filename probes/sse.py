"""The SSE reader: events split out of a streamed body, each output chunk recorded in the request's trace."""

import contextlib
import json
from collections.abc import Callable
from typing import Any

from probes.failures import RequestFailed
from probes.models import ErrorKind
from probes.timing import StreamTrace

DONE = b"[DONE]"


class SseReader:
    """Splits SSE events out of the body and records each output chunk in the trace.

    An event's time is the arrival of the read that completed it. feed() parses read by read; feed_bulk() parses
    many reads at once (one json.loads over all their events), for the lazy part of a stream. A data line that is not
    a JSON object, an error event and a stream past `overlength_at` tokens raise RequestFailed.
    """

    def __init__(
        self,
        trace: StreamTrace,
        chat: bool,
        overlength_at: int,
        on_first_token: Callable[[float], None] | None = None,
        *,
        keep_text: bool = False,
    ) -> None:
        self.trace = trace
        self.chat = chat
        self.overlength_at = overlength_at
        self.on_first_token = on_first_token
        self.first_token_s: float | None = None
        self.last_event_s = trace.sent_s
        self.now = trace.sent_s  # arrival of the last read
        self.done = False  # [DONE] seen
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self._buf = b""
        self._event_name = b""
        self.keep_text = keep_text  # keep the content (not the reasoning) for text(): a session's history needs it
        self._text: list[str] = []

    def text(self) -> str:
        """The answer's content received so far (empty unless keep_text)."""
        return "".join(self._text)

    def feed(self, now: float, data: bytes) -> None:
        """One read, parsed now."""
        self.now = now
        for event in self._split(data):
            payload = self._payload(event)
            if payload is not None:
                self._event(now, payload, _decode(payload), self._event_name)

    def feed_bulk(self, reads: list[tuple[float, bytes]]) -> None:
        """Many reads: events gathered first, their JSON decoded in one call (per event if that fails)."""
        found: list[tuple[float, bytes, bytes]] = []
        for now, data in reads:
            self.now = now
            for event in self._split(data):
                payload = self._payload(event)
                if payload is not None:
                    found.append((now, payload, self._event_name))
        if not found:
            return
        objs = _decode_all([p for _, p, _ in found if p != DONE])
        k = 0
        for now, payload, name in found:
            if payload == DONE:
                self._event(now, payload, None, name)
                continue
            obj = objs[k] if objs is not None else _decode(payload)
            k += 1
            self._event(now, payload, obj, name)

    def produced(self) -> int:
        """Output tokens so far (continuous usage when the server sends it, else chunks)."""
        cum = self.trace.chunk_cum_tokens
        if cum and cum[-1] is not None:
            return int(cum[-1])
        return len(self.trace.chunk_s)

    # -- framing -----------------------------------------------------------------------------------------------

    def _split(self, data: bytes) -> list[bytes]:
        if self._buf:
            data = self._buf + data
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n")
        events = data.split(b"\n\n")
        self._buf = events.pop()
        return events

    def _payload(self, event: bytes) -> bytes | None:
        if event.startswith(b"data:") and b"\n" not in event:  # the usual event: one data line
            return event[5:].lstrip(b" ")
        payload = None
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                piece = line[5:].lstrip(b" ")
                payload = piece if payload is None else payload + b"\n" + piece
            elif line.startswith(b"event:"):
                self._event_name = line[6:].strip()
        return payload

    # -- one event ---------------------------------------------------------------------------------------------

    def _event(self, now: float, payload: bytes, obj: Any, event_name: bytes) -> None:
        self.last_event_s = now
        if payload == DONE:
            self.done = True
            self.trace.end_s = now
            return
        if not isinstance(obj, dict):
            raise RequestFailed(ErrorKind.MALFORMED_SSE, f"a data line is not an object: {payload[:120]!r}")
        choices = obj.get("choices")
        if (obj.get("error") is not None and not choices) or event_name == b"error":
            err = obj.get("error", obj)
            msg = err.get("message", err) if isinstance(err, dict) else err
            raise RequestFailed(ErrorKind.STREAM_ERROR, f"error inside the stream: {msg}")
        added = self._choice(now, choices[0]) if choices else False
        cum = self.trace.chunk_cum_tokens
        usage = obj.get("usage")
        if usage:
            self.usage = usage
            if added:
                cum[-1] = usage.get("completion_tokens")
        produced = int(cum[-1]) if cum and cum[-1] is not None else len(cum)  # as produced(), inline: once per event
        if produced > self.overlength_at:
            raise RequestFailed(
                ErrorKind.OVERLENGTH, f"the stream ran past max_tokens ({produced} > {self.overlength_at})"
            )

    def _choice(self, now: float, choice: dict[str, Any]) -> bool:
        """Record the choice's output, if any; True when it carried some."""
        if self.chat:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            thought = delta.get("reasoning_content") or delta.get("reasoning")
        else:
            content = choice.get("text")
            thought = None
        finish = choice.get("finish_reason")
        if finish:
            self.finish = finish
        if not (content or thought):
            return False
        if content and self.keep_text:
            self._text.append(content)
        trace = self.trace
        trace.chunk_s.append(now)
        trace.chunk_chars.append(len(content or "") + len(thought or ""))
        trace.chunk_reasoning.append(not content)
        trace.chunk_cum_tokens.append(None)
        if self.first_token_s is None:
            self.first_token_s = now
            if self.on_first_token is not None:
                self.on_first_token(now)
        return True


def _decode(payload: bytes) -> Any:
    if payload == DONE:
        return None
    try:
        return json.loads(payload)
    except ValueError:
        raise RequestFailed(ErrorKind.MALFORMED_SSE, f"a data line is not JSON: {payload[:120]!r}") from None


def _decode_all(payloads: list[bytes]) -> list[Any] | None:
    """All payloads in one json.loads; None when that fails (then each is decoded on its own)."""
    if not payloads:
        return None
    objs: list[Any] | None = None
    with contextlib.suppress(ValueError):
        objs = json.loads(b"[" + b",".join(payloads) + b"]")
    if objs is None or len(objs) != len(payloads):
        return None
    return objs
