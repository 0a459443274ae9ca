"""Process-wide resources for the pages: one database engine per process."""

import streamlit as st
from sqlalchemy import Engine

from db import init_db, make_engine, recover_interrupted_runs, recover_orphaned_runs
from settings import get_settings


@st.cache_resource(show_spinner=False)
def get_engine() -> Engine:
    """The engine for DATABASE_URL: schema migrated, and probe runs left by a dead process marked interrupted."""
    engine = make_engine(get_settings().database_url)
    init_db(engine)
    recover_orphaned_runs(engine)
    recover_interrupted_runs(engine)
    return engine
