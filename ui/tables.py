"""Tables as a grid shows them: a missing number reads as a dash, never 'None'; a column with nothing is left out."""

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

MISSING = "—"


def without_gaps(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The rows as a table: columns empty in every row dropped (a rate in a concurrency run), other gaps a dash.

    A grid draws a missing value as the word 'None'; a column with a gap is shown as text, its numbers as written.
    """
    frame = pd.DataFrame(list(rows))
    if frame.empty:
        return frame
    frame = frame.drop(columns=[c for c in frame.columns if frame[c].isna().all()])
    for column in frame.columns:
        if frame[column].isna().any():
            frame[column] = [_cell(value) for value in frame[column]]
    return frame


def _cell(value: object) -> object:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return MISSING
    return f"{value:,g}" if isinstance(value, float) else str(value)
