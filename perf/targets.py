"""What the held-out validation must show (perf/data/model.toml [targets]) and which groups it judges."""

from perf.hardware import model_facts


def targets() -> dict[str, object]:
    """perf/data/model.toml [targets]."""
    value = model_facts()["targets"]
    assert isinstance(value, dict)
    return value


def coverage_range() -> tuple[float, float]:
    """The share of held-out measurements a band must hold: (coverage_low, coverage_high)."""
    t = targets()
    return float(str(t["coverage_low"])), float(str(t["coverage_high"]))


def judged(points: int, sources: int) -> bool:
    """Whether a group is large enough to be judged (`group_min_points` points and `group_min_sources` sources)."""
    t = targets()
    return points >= int(str(t["group_min_points"])) and sources >= int(str(t["group_min_sources"]))
