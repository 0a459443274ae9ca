"""The DCGM exporter scraper of a run: a background task that reads GPU power at a fixed interval, never fatal."""

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import httpx2

from probes.power import PowerSample, parse_dcgm

SCRAPE_TIMEOUT_S = 3.0
MAX_EXPOSITION_BYTES = 8 << 20


async def read_power(client: httpx2.AsyncClient, url: str) -> list[PowerSample]:
    """One scrape: a sample per GPU, or one failed sample saying why (an error, a non-200, no power series)."""
    error: str
    try:
        response = await client.get(url, timeout=SCRAPE_TIMEOUT_S)
        at = datetime.now(UTC)
        if response.status_code != 200:
            error = f"HTTP {response.status_code}"
        elif len(response.content) > MAX_EXPOSITION_BYTES:
            error = f"answer over {MAX_EXPOSITION_BYTES} bytes"
        else:
            readings = parse_dcgm(response.text)
            if readings:
                return [
                    PowerSample(at=at, gpu=gpu, power_w=power, energy_mj=energy)
                    for gpu, (power, energy) in sorted(readings.items())
                ]
            error = "no DCGM_FI_DEV_POWER_USAGE or DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION series"
    except (httpx2.HTTPError, OSError, UnicodeDecodeError, ValueError) as exc:
        at = datetime.now(UTC)
        error = f"{type(exc).__name__}: {exc}"[:300]
    return [PowerSample(at=at, gpu="", error=error)]


class PowerMonitor:
    """Scrapes `url` once at start, every interval_s while the run goes on, and once more at stop().

    Each scrape's samples go to `report` (the run's sink) as they come and stay in `samples`. A failed scrape is a
    sample with its error: counted and reported, it never stops the run.
    """

    def __init__(
        self,
        url: str,
        interval_s: float,
        report: Callable[[Sequence[PowerSample]], None],
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self.interval_s = interval_s
        self.report = report
        self.samples: list[PowerSample] = []
        self._client = httpx2.AsyncClient(transport=transport, trust_env=False, follow_redirects=False)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> "PowerMonitor":
        """Start scraping in the background (on the running event loop)."""
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="dcgm-scraper")
        return self

    async def stop(self) -> list[PowerSample]:
        """Stop the background scrapes, take the last one (not when the run was cancelled), close; every sample."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        cancelling = (task := asyncio.current_task()) is not None and task.cancelling() > 0
        try:
            if not cancelling:
                await self._once()
        finally:
            await self._client.aclose()
        return self.samples

    async def _loop(self) -> None:
        """Reads on a fixed cadence (a slow read delays the next one, never crowds reads to catch up)."""
        clock = asyncio.get_running_loop().time
        due_s = clock()
        while True:
            await self._once()
            due_s = max(due_s + self.interval_s, clock())
            await asyncio.sleep(due_s - clock())

    async def _once(self) -> None:
        got = await read_power(self._client, self.url)
        self.samples.extend(got)
        with contextlib.suppress(Exception):  # a sink reports its own failures (probes/worker.py); scrapes go on
            self.report(got)
