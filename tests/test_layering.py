"""The house's layering: no Streamlit in packages, SQL only in db/, probes/ reaches db/ once, no import cycles."""

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGES = ("tco", "selector", "perf", "probes", "fakeserver", "db", "catalog", "i18n")
APP_CODE = ("app.py", "settings.py", "commands.py", "views", "ui", *PACKAGES)
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


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(names: tuple[str, ...]) -> dict[str, set[str]]:
    """Each module of the app's code and the modules of it that it imports (anywhere in the file, relative too)."""
    modules = {_module_name(path): path for path in _python_files(*names)}

    def known(name: str) -> str | None:  # the module itself, else the package that holds the name
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {known(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
                targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else known(base) for a in node.names}
        graph[name] = {target for target in targets if target is not None and target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: each group of modules that reach one another (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_cycle_finder_sees_cycles_through_function_imports_and_relative_imports(tmp_path: Path) -> None:
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}}
    assert _cycles(graph) == [["a.x", "a.y", "a.z"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_import_each_other() -> None:
    """Module-level and function-level imports both count: a cycle hidden in a function is still a cycle."""
    cycles = _cycles(_import_graph(APP_CODE))
    assert not cycles, "modules that import each other (directly or round a loop): " + "; ".join(
        " <-> ".join(group) for group in cycles
    )


def test_the_test_server_stands_alone_and_probes_reach_it_only_through_the_old_command() -> None:
    """fakeserver/ serves any client (no project package behind it); probes/ keeps only its old command."""
    project = {name.removesuffix(".py") for name in APP_CODE} - {"fakeserver"}
    inside = [
        f"{_rel(path)}:{i.line} imports {i.module}"
        for path in _python_files("fakeserver")
        for i in _imports(path)
        if i.module in project
    ]
    shim = "probes/fakeserver.py"
    outside = [
        f"{_rel(path)}:{i.line}"
        for path in _python_files(*APP_CODE)
        if not _rel(path).startswith("fakeserver/") and _rel(path) != shim
        for i in _imports(path)
        if i.module == "fakeserver"
    ]
    assert not inside, f"fakeserver/ must not import the project's packages: {inside}"
    assert not outside, f"only {shim} (the old command) may import fakeserver/ in the app's code: {outside}"
