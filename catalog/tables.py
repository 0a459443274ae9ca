"""The one reader of the data files' CSV tables: rows as dicts, or validated into a typed (pydantic) row model.

Conventions the row models share through the helpers below: a list cell is ';'-separated, a flag is 'yes'/'no',
and a blank number cell means "none" (or a stated default).
"""

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

Row = TypeVar("Row", bound=BaseModel)


def read_rows(path: Path, *, comment: str = "") -> Iterator[dict[str, str]]:
    """Every row of a CSV file as a dict by column name; lines starting with `comment` (when given) are skipped."""
    with path.open(newline="", encoding="utf-8") as handle:
        lines = (line for line in handle if not (comment and line.startswith(comment)))
        yield from csv.DictReader(lines)


def load_table(path: Path, row_type: type[Row], *, comment: str = "") -> tuple[Row, ...]:
    """Every row of a CSV file validated as `row_type`, in file order (a bad cell names its row and column)."""
    return tuple(row_type.model_validate(row) for row in read_rows(path, comment=comment))


def split_list(value: object) -> object:
    """A ';'-separated cell as a tuple of its stripped, non-empty parts (other values pass through)."""
    return tuple(a.strip() for a in value.split(";") if a.strip()) if isinstance(value, str) else value


def yes_no(value: object) -> object:
    """A 'yes'/'no' cell as a bool (other values pass through)."""
    return value == "yes" if isinstance(value, str) else value


def blank_as(value: object, default: object) -> object:
    """A blank cell as `default` (None, 0, a format id); other values pass through."""
    return default if value == "" else value
