"""The per-request timer: ends a request whose first token is late (TTFT timeout) or whose stream stalls."""

import asyncio
from collections.abc import Callable

from probes.config import Timeouts
from probes.models import ErrorKind

EARLY_S = 0.0005  # a timer that fires this close to its due time counts as due


class Watchdog:
    """One lazy timer per request: the TTFT limit until the first token, then the stall limit between events.

    arm() it inside an asyncio.timeout(None) block; when a limit passes, `kind` says which and the block times out.
    `activity` returns the time of the latest sign of life of the stream (an event, or a data line the transport saw).
    """

    def __init__(self, timeouts: Timeouts, sent_s: float, clock: Callable[[], float]) -> None:
        self.ttft_s = timeouts.ttft_s
        self.stall_s = timeouts.stall_s
        self.sent_s = sent_s
        self.clock = clock
        self.first_token_s: float | None = None
        self.activity: Callable[[], float] | None = None
        self.kind: ErrorKind | None = None
        self._cm: asyncio.Timeout | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._loop = asyncio.get_running_loop()

    def arm(self, cm: asyncio.Timeout) -> None:
        """Start the TTFT timer; on expiry, cm is rescheduled to now."""
        self._cm = cm
        self._handle = self._loop.call_later(self.ttft_s, self._check)

    def first_token(self, now: float) -> None:
        """The first output token came at `now`: from here the stall limit applies."""
        if self.first_token_s is None:
            self.first_token_s = now
            if self._handle is not None:
                self._handle.cancel()
            self._handle = self._loop.call_later(self.stall_s, self._check)

    def disarm(self) -> None:
        """The request is over."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def message(self) -> str:
        """What the limit that fired means."""
        if self.kind == ErrorKind.TTFT_TIMEOUT:
            return f"no first token within {self.ttft_s:g} s"
        return f"no data between two events within {self.stall_s:g} s"

    def _check(self) -> None:
        now = self.clock()
        if self.first_token_s is not None:
            last = self.activity() if self.activity is not None else self.first_token_s
            due, kind = max(last, self.first_token_s) + self.stall_s, ErrorKind.STALL_TIMEOUT
        else:
            due, kind = self.sent_s + self.ttft_s, ErrorKind.TTFT_TIMEOUT
        if now >= due - EARLY_S:
            self.kind = kind
            assert self._cm is not None
            self._cm.reschedule(self._loop.time())
            self._handle = None
        else:
            self._handle = self._loop.call_later(due - now, self._check)
