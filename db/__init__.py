"""The database: engine, tables and every query (the only package that knows SQL)."""

from db import scenarios
from db.engine import init_db, make_engine, safe_url, session_factory
from db.scenarios import Scenario, delete_scenario, get_scenario, list_scenarios, save_scenario

__all__ = [
    "Scenario",
    "delete_scenario",
    "get_scenario",
    "init_db",
    "list_scenarios",
    "make_engine",
    "safe_url",
    "save_scenario",
    "scenarios",
    "session_factory",
]
