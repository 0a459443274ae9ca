"""Every database test ends with no sweeper thread left running (none may outlive the database it sweeps)."""

import threading
from collections.abc import Iterator

import pytest

from db.reaper import stop_all_sweepers


@pytest.fixture(autouse=True)
def _no_sweeper_left() -> Iterator[None]:
    yield
    stop_all_sweepers()
    left = [t.name for t in threading.enumerate() if t.name == "db-sweeper" and t.is_alive()]
    assert not left, f"sweeper threads outlived their test: {left}"
