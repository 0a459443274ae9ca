"""The database: engine, tables, every query and the probe's recorder (the only package that knows SQL)."""

from sqlalchemy import Engine

from db import calibration, imports, prices, recorder, run_queries, scenarios
from db.calibration import CalibrationLevel, CalibrationRun, calibration_runs
from db.engine import init_db, make_engine, safe_url, session_factory
from db.imports import ImportStoreError, StoredImport, import_of, imports_of, is_imported, store_imported
from db.prices import StoredPrice, replace_prices, stored_prices
from db.reaper import INTERRUPTED_WITHIN_S, start_recovery, stop_sweeper
from db.recorder import RunRecorder, confirm_served_model, delete_run
from db.recovery import recover_interrupted_runs, recover_orphaned_runs
from db.run_queries import StoredRun, get_run, list_runs, model_confirmed
from db.scenarios import Scenario, delete_scenario, get_scenario, list_scenarios, save_scenario

__all__ = [
    "INTERRUPTED_WITHIN_S",
    "CalibrationLevel",
    "CalibrationRun",
    "Engine",
    "ImportStoreError",
    "RunRecorder",
    "Scenario",
    "StoredImport",
    "StoredPrice",
    "StoredRun",
    "calibration",
    "calibration_runs",
    "confirm_served_model",
    "delete_run",
    "delete_scenario",
    "get_run",
    "get_scenario",
    "import_of",
    "imports",
    "imports_of",
    "init_db",
    "is_imported",
    "list_runs",
    "list_scenarios",
    "make_engine",
    "model_confirmed",
    "prices",
    "recorder",
    "recover_interrupted_runs",
    "recover_orphaned_runs",
    "replace_prices",
    "run_queries",
    "safe_url",
    "save_scenario",
    "scenarios",
    "session_factory",
    "start_recovery",
    "stop_sweeper",
    "store_imported",
    "stored_prices",
]
