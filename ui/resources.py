"""Process-wide resources for the pages: one database engine per process."""

import streamlit as st
from sqlalchemy import Engine

from db import init_db, make_engine
from settings import get_settings


@st.cache_resource(show_spinner=False)
def get_engine() -> Engine:
    """The engine for DATABASE_URL, with the schema created on first use."""
    engine = make_engine(get_settings().database_url)
    init_db(engine)
    return engine
