"""Fake GPUs behind the test server: DCGM-exporter-style power that follows the load, and an exact energy counter."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# One device as dcgm-exporter labels it; the UUIDs are made up.
_LABELS = 'gpu="{index}",UUID="GPU-fake0000-0000-0000-0000-{index:012d}",device="nvidia{index}",modelName="Fake GPU"'


@dataclass
class GpuPower:
    """`gpus` GPUs sharing the running requests: each draws idle_w + per_request_w x running / gpus, at most max_w.

    The energy counter (mJ) adds each power level times the time it lasted, so between two scrapes it grows by exactly
    the integral of the power the server drew; the power gauge is the draw at the moment of the scrape.
    """

    gpus: int = 2
    idle_w: float = 60.0
    per_request_w: float = 40.0
    max_w: float = 700.0
    clock: Callable[[], float] = time.perf_counter
    running: int = 0
    energy_mj: list[float] = field(default_factory=list)
    since_s: float | None = None

    def power_w(self) -> float:
        """Each GPU's draw now."""
        return min(self.max_w, self.idle_w + self.per_request_w * self.running / self.gpus)

    def observe(self, running: int) -> None:
        """Account the energy drawn since the last change, then take the new number of running requests."""
        now = self.clock()
        if not self.energy_mj:
            self.energy_mj = [1_000_000.0 * (index + 1) for index in range(self.gpus)]  # since "boot"
        if self.since_s is not None:
            drawn_mj = self.power_w() * (now - self.since_s) * 1000.0
            self.energy_mj = [value + drawn_mj for value in self.energy_mj]
        self.since_s, self.running = now, running

    def text(self, running: int) -> str:
        """The exposition, as dcgm-exporter writes it: HELP and TYPE, then one line per GPU."""
        self.observe(running)
        power = self.power_w()
        lines = [
            "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).",
            "# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
            *(f"DCGM_FI_DEV_POWER_USAGE{{{_LABELS.format(index=i)}}} {power:.6f}" for i in range(self.gpus)),
            "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).",
            "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter",
            *(
                f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{_LABELS.format(index=i)}}} {self.energy_mj[i]:.0f}"
                for i in range(self.gpus)
            ),
        ]
        return "\n".join(lines) + "\n"
