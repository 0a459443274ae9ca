"""Process-wide resources for the pages: one database engine per process, with its sweeper of interrupted runs."""

import streamlit as st

from db import Engine, init_db, make_engine, start_recovery, stop_sweeper
from settings import get_settings
from tco.price_refresh import current_book
from tco.prices import PriceBook


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


PRICE_BOOK_TTL_S = 60  # another replica's refresh reaches this one within a minute


@st.cache_resource(show_spinner=False, ttl=PRICE_BOOK_TTL_S)
def price_book() -> PriceBook:
    """The prices in use: the shipped snapshot, with the last refresh stored in the database over it."""
    return current_book(get_engine())
