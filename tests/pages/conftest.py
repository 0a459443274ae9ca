"""Fixtures the page tests share: the page's database, migrated, with the app's cached engine dropped."""

import pytest

from db import init_db, make_engine


@pytest.fixture
def engine(database_url: str) -> object:
    """The database the pages will open (DATABASE_URL), migrated; the app's cached engine is cleared to use it."""
    from ui.resources import get_engine

    get_engine.clear()
    engine = make_engine(database_url)
    init_db(engine)
    return engine
