"""What a Ray worker hands the driver at each drain or stop: its finished requests and its counters (no ray import)."""

from dataclasses import dataclass, field

from probes.models import RequestSample


@dataclass
class Batch:
    """What a worker finished since the driver's last drain, and its counters so far (this level)."""

    samples: list[RequestSample] = field(default_factory=list)
    sent: int = 0
    finished: int = 0
    errors: int = 0
    cpu_s: float = 0.0  # process CPU time since the level started
    wall_s: float = 0.0  # wall time since the level started
    end_wall_s: float | None = None  # its wall clock when its last request finished (None: none yet)
    running: bool = False
