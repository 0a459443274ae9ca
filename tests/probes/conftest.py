"""A fake OpenAI-compatible server on 127.0.0.1 for the probe tests, and settings pointing at it."""

from collections.abc import Iterator
from typing import Any

import pytest

from fakeserver import Behaviour, FakeServer, serve_in_thread
from probes import RunSettings, Timeouts

FAST = Behaviour(ttft_ms=20, tpot_ms=2, tokens=12)
SHORT_TIMEOUTS = Timeouts(connect_s=2, ttft_s=0.6, stall_s=0.3, overlength_extra_tokens=4)
GENEROUS_TIMEOUTS = Timeouts(connect_s=2, ttft_s=30, stall_s=30, overlength_extra_tokens=4)


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with serve_in_thread(defaults=FAST, max_running=None) as server:
        yield server


def settings_for(server: FakeServer, model: str = "fake", **changes: Any) -> RunSettings:
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": model,
        "concurrency": (1,),
        "requests_per_level": 2,
        "timeouts": GENEROUS_TIMEOUTS,
    }
    values.update(changes)
    return RunSettings(**values)
