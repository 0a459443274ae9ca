"""The fit: deterministic, stored as data, and within its held-out target."""

import pytest

from perf.coefficients import build, feature_rows, load_coefficients
from perf.fit import Row, fit_theta
from perf.validate import median_ape

TARGET = 0.25


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    return feature_rows()


def test_fitting_twice_gives_the_same_coefficients(rows: list[Row]) -> None:
    sample = rows[::7]
    assert fit_theta(sample) == fit_theta(list(sample))


def test_the_stored_coefficients_are_what_the_fit_set_gives(rows: list[Row]) -> None:
    fresh, _ = build(rows)
    stored = load_coefficients()
    assert fresh.families == stored.families, "run `make perf-model` to refresh perf/data/coefficients.json"
    assert fresh.bands == stored.bands


def test_held_out_median_error_meets_the_target(rows: list[Row]) -> None:
    _, predictions = build(rows)
    tpot, _, tok_s = median_ape(predictions)
    assert tpot <= TARGET, f"held-out TPOT median error {tpot:.1%}"
    assert tok_s <= TARGET, f"held-out throughput median error {tok_s:.1%}"
    assert len({p.row.point.group for p in predictions}) >= 30
