"""Process-wide resources for the pages: one database engine per process, with its sweeper of interrupted runs."""

import streamlit as st

from db import Engine, init_db, make_engine, start_recovery, stop_sweeper
from settings import get_settings


def _release_engine(engine: Engine) -> None:
    """When the cached engine is dropped (cache cleared): stop its sweeper and close its pooled connections."""
    stop_sweeper(engine)
    engine.dispose()


@st.cache_resource(show_spinner=False, on_release=_release_engine)
def get_engine() -> Engine:
    """The engine for DATABASE_URL: schema migrated, runs of a dead process marked interrupted, a sweeper started.

    The sweeper keeps marking them (within db.INTERRUPTED_WITHIN_S) while this process runs.
    """
    engine = make_engine(get_settings().database_url)
    init_db(engine)
    start_recovery(engine)
    return engine
