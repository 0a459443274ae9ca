"""The lean transport's timing: warm connections, kernel receive times, the send time, lazy parsing of long streams."""

import asyncio
import time

from fakeserver import Behaviour, serve_in_thread
from probes.client import make_client, make_http, send_request
from probes.connection import KERNEL_TIMESTAMPS
from probes.runner import run_probe
from probes.transport import LeanTransport
from probes.workloads import Prompt

from .conftest import settings_for


def test_warm_opens_idle_connections_that_the_level_reuses() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=5, tpot_ms=1, tokens=4)) as server:
        settings = settings_for(server, concurrency=(8,), requests_per_level=16)

        async def main() -> tuple[int, int]:
            lean = LeanTransport()
            opened = await lean.warm(settings.base_url, 8)
            again = await lean.warm(settings.base_url, 8)
            await lean.aclose()
            return opened, again

        assert asyncio.run(main()) == (8, 0)
        result = asyncio.run(run_probe(settings))
        assert result.levels[0].completed == 16


def test_arrival_times_lie_between_the_servers_send_and_the_clients_read() -> None:
    with serve_in_thread(defaults=Behaviour(ttft_ms=30, tpot_ms=3, tokens=40)) as server:
        settings = settings_for(server, max_tokens=40)

        async def main() -> tuple[float, object]:
            http = make_http(settings, 1)
            client = make_client(settings, http)
            sample = await send_request(
                client, settings, Prompt("hello"), level_index=0, concurrency=1, index=0, level_start_s=0.0
            )
            done_s = time.perf_counter()
            await client.close()
            return done_s, sample

        done_s, sample = asyncio.run(main())
        record = server.records()[-1]
    assert sample.ok and sample.output_tokens == 40 and len(sample.chunk_ms) == 40  # lazily parsed, all there
    sent_s = sample.start_s
    assert sent_s <= record.received_s  # the send time is taken as the request goes to the socket
    arrivals = [sent_s + ms / 1000 for ms in sample.chunk_ms]
    for arrived, token_sent in zip(arrivals, record.token_s, strict=True):
        # the in-thread server notes a token just after writing it; a GIL switch (5 ms) may fall in between
        assert token_sent - 0.006 <= arrived <= done_s
    server_ttft_ms = (record.token_s[0] - record.received_s) * 1000
    assert abs(sample.ttft_ms - server_ttft_ms) < 5
    if KERNEL_TIMESTAMPS:
        assert max(a - t for a, t in zip(arrivals, record.token_s, strict=True)) < 0.005
