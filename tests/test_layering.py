"""The house's layering: packages never import Streamlit, only db/ knows SQLAlchemy, probes/ reaches db/ openly once."""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGES = ("tco", "selector", "perf", "probes", "db", "catalog", "i18n")
APP_CODE = ("app.py", "settings.py", "views", "ui", *PACKAGES)
SQL_LIBRARIES = ("sqlalchemy", "alembic", "psycopg", "sqlite3")
# The one module of probes/ that may wire the probe to the database: the command line's entry point.
PROBES_DB_ENTRY = "probes/__main__.py"


@dataclass(frozen=True)
class Import:
    """One import statement: the top-level module it names and where it stands."""

    module: str
    line: int
    top_level: bool  # at module level, not inside a function, class, try or if


def _python_files(*names: str) -> list[Path]:
    files: list[Path] = []
    for name in names:
        path = ROOT / name
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return files


def _imports(path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    top = {id(node) for node in tree.body}
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(alias.name.split(".")[0], node.lineno, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(Import(node.module.split(".")[0], node.lineno, id(node) in top))
    return found


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_checker_sees_imports_inside_functions_and_try_blocks(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("import os\ntry:\n    import streamlit\nexcept Exception:\n    pass\ndef f():\n    import db\n")
    found = {(i.module, i.top_level) for i in _imports(source)}
    assert found == {("os", True), ("streamlit", False), ("db", False)}


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_never_import_streamlit(package: str) -> None:
    offenders = [
        f"{_rel(path)}:{i.line}" for path in _python_files(package) for i in _imports(path) if i.module == "streamlit"
    ]
    assert not offenders, f"{package}/ must not import Streamlit: {offenders}"


def test_only_db_knows_sql() -> None:
    offenders = [
        f"{_rel(path)}:{i.line} imports {i.module}"
        for path in _python_files(*APP_CODE)
        if not _rel(path).startswith("db/")
        for i in _imports(path)
        if i.module in SQL_LIBRARIES
    ]
    assert not offenders, f"only db/ may import a database library: {offenders}"


def test_probes_reach_db_only_from_the_command_line_entry_point_at_its_top() -> None:
    uses = [(_rel(path), i) for path in _python_files("probes") for i in _imports(path) if i.module == "db"]
    elsewhere = [f"{name}:{i.line}" for name, i in uses if name != PROBES_DB_ENTRY]
    hidden = [f"{name}:{i.line}" for name, i in uses if name == PROBES_DB_ENTRY and not i.top_level]
    assert not elsewhere, f"probes/ may import db/ only in {PROBES_DB_ENTRY}: {elsewhere}"
    assert not hidden, f"{PROBES_DB_ENTRY} must import db/ at its top, not inside a function or a try: {hidden}"
    assert uses, f"{PROBES_DB_ENTRY} stores runs through db/; the check would be vacuous without that import"


def test_perf_needs_neither_a_database_nor_the_probe() -> None:
    """Estimates run anywhere: stored runs reach perf as plain Calibration objects, converted by the caller."""
    offenders = [
        f"{_rel(path)}:{i.line} imports {i.module}"
        for path in _python_files("perf")
        for i in _imports(path)
        if i.module in {"db", "probes", "ui", "views", *SQL_LIBRARIES}
    ]
    assert not offenders, f"perf/ must not reach the database or the probe: {offenders}"


def _imported_names(path: Path, package: str) -> list[tuple[str, str, int]]:
    """(module, name, line) of every `from <package>[.<module>] import <name>` in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node.module, alias.name, node.lineno)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
        if node.module.split(".")[0] == package
        for alias in node.names
    ]


def _names_from_catalog(module: str) -> set[str]:
    """The names a selector module takes from catalog/ (what importing them through selector would re-export)."""
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.is_file():
        path = ROOT / module.replace(".", "/") / "__init__.py"
    return {name for _, name, _ in _imported_names(path, "catalog")}


def test_catalog_is_the_bottom_layer() -> None:
    """catalog/ holds facts with sources: it reads no advice, estimate, probe, cost or database code."""
    offenders = [
        f"{_rel(path)}:{i.line} imports {i.module}"
        for path in _python_files("catalog")
        for i in _imports(path)
        if i.module in {"selector", "perf", "probes", "tco", "db", "ui", "views", "streamlit"}
    ]
    assert not offenders, f"catalog/ must not import the packages above it: {offenders}"


def test_facts_are_read_from_the_catalog_never_through_the_advisor() -> None:
    """Outside selector/ and views/, a name imported from selector/ is advice selector defines (advise, AdviceRequest,
    gates, memory fit, launch commands), never a catalog fact selector itself imports (a model, engine, format, KV
    type or GPU): those come from catalog/ directly. selector/ itself re-exports no catalog name.
    """
    offenders = [
        f"{_rel(path)}:{line} takes {name} from {module}"
        for path in _python_files(*(p for p in APP_CODE if p not in {"selector", "views"}), "bench", "scripts")
        for module, name, line in _imported_names(path, "selector")
        if name in _names_from_catalog(module)
    ]
    assert not offenders, f"read facts from catalog/, not through selector/: {offenders}"
    exported = _names_from_catalog("selector") & set(__import__("selector").__all__)
    assert not exported, f"selector/__init__ re-exports catalog names: {exported}"
    assert not [m for m in ("models", "engines", "quantization", "kvcache") if (ROOT / "selector" / f"{m}.py").exists()]
