"""A grid never reads 'None': a column empty in every row is left out, another gap is a dash."""

from ui.tables import MISSING, without_gaps


def test_a_column_empty_everywhere_is_dropped_and_a_gap_is_a_dash() -> None:
    rows = [
        {"concurrency": 1, "request rate req/s": None, "TTFT p50 ms": 20.9, "output tok/s": 46.0},
        {"concurrency": 2, "request rate req/s": None, "TTFT p50 ms": None, "output tok/s": 1323.3},
    ]
    table = without_gaps(rows)
    assert list(table.columns) == ["concurrency", "TTFT p50 ms", "output tok/s"]
    assert list(table["TTFT p50 ms"]) == ["20.9", MISSING]
    assert list(table["output tok/s"]) == [46.0, 1323.3]  # no gap: still numbers, sorted as numbers
    assert list(table["concurrency"]) == [1, 2]


def test_no_rows_is_an_empty_table() -> None:
    assert without_gaps([]).empty
