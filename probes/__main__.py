"""`python -m probes`: the command line, storing each run in DATABASE_URL (the one place probes/ reaches db/)."""

import sys
from collections.abc import Sequence
from typing import TextIO

from commands import run_command
from db import RunRecorder, get_run, init_db, make_engine, start_recovery, store_imported
from probes.cli import run_cli
from probes.config import RunSettings
from probes.export_cli import COMMAND as EXPORT
from probes.export_cli import run_export
from probes.import_cli import run_import
from probes.importers.base import ImportedRun
from probes.models import RunResult
from probes.process_run import CHILD_COMMAND, serve_child
from probes.sink import RunSink
from settings import get_settings


def _open_database() -> RunRecorder:
    """The recorder of DATABASE_URL's database (schema migrated, stale runs marked interrupted)."""
    engine = make_engine(get_settings().database_url)
    init_db(engine)
    start_recovery(engine)  # runs of dead processes marked now, and swept while this one runs
    return RunRecorder(engine)


def open_recorder(settings: RunSettings, err: TextIO) -> RunSink | None:
    """The run's sink: the database's recorder; None, with a warning, when the database cannot be used."""
    try:
        return _open_database()
    except Exception as exc:  # any database failure: storage is a convenience here, the JSON file is the result
        print(f"warning: the run will not be stored in the database: {exc}", file=err)
        return None


def store_file(runs: list[ImportedRun]) -> list[str] | None:
    """Store one imported file's runs in DATABASE_URL's database, in one transaction (None: imported before)."""
    engine = make_engine(get_settings().database_url)
    init_db(engine)
    try:
        return store_imported(engine, runs)
    finally:
        engine.dispose()


def load_stored_run(run_id: str) -> RunResult | None:
    """A stored run of DATABASE_URL's database, with its requests (None: no such run)."""
    engine = make_engine(get_settings().database_url)
    try:
        init_db(engine)
        return get_run(engine, run_id)
    finally:
        engine.dispose()


def _child_recorder(database_url: str) -> RunSink:
    """The sink of a run in a child process: the recorder of its parent's database (migrated and swept there)."""
    return RunRecorder(make_engine(database_url))


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """The command line (runs stored in the database unless --no-db; `import` and `export` subcommands); exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["import"]:
        return run_import(args[1:], out, err, store=store_file)
    if args[:1] == [EXPORT]:
        return run_export(args[1:], load_stored_run, out, err)
    if args[:1] == [CHILD_COMMAND] and len(args) == 2 and args[1].isdigit():  # a page's probe (probes/process_run)
        return serve_child(int(args[1]), open_sink=_child_recorder)
    return run_cli(args, out, err, open_sink=open_recorder)


if __name__ == "__main__":
    run_command(main)
