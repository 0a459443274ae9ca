"""Rooms small enough to read in one sitting: modules up to 400 code lines, functions up to 60, or a comment why."""

import ast
from dataclasses import dataclass
from pathlib import Path

from tests.support import ROOT

APP_CODE = (
    "app.py",
    "settings.py",
    "catalog",
    "db",
    "fakeserver",
    "i18n",
    "perf",
    "probes",
    "selector",
    "tco",
    "ui",
    "views",
)
MAX_MODULE_CODE_LINES = 400
MAX_FUNCTION_LINES = 60
# The word that opens the one-line comment which keeps a long module or function: "# long: <why it must be so>".
WHY = "# long:"


@dataclass(frozen=True)
class Oversize:
    """One room over its limit: where, what and how long."""

    where: str
    lines: int

    def __str__(self) -> str:
        return f"{self.where} ({self.lines} lines)"


def _sources() -> list[Path]:
    files: list[Path] = []
    for name in APP_CODE:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(p for p in sorted(path.rglob("*.py")) if "migrations" not in p.parts)
    return files


def code_lines(text: str) -> int:
    """Lines that hold code or docstrings: neither blank nor a comment alone."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def _explained(lines: list[str], first_line: int) -> bool:
    """A `# long:` comment on the line above the definition (or above its decorators)."""
    above = first_line - 2
    return above >= 0 and lines[above].strip().startswith(WHY)


def long_modules() -> list[Oversize]:
    """Modules over the limit without a `# long:` comment at their top level."""
    found = []
    for path in _sources():
        text = path.read_text()
        said = any(line.startswith(WHY) for line in text.splitlines())  # at the module's own level
        if code_lines(text) > MAX_MODULE_CODE_LINES and not said:
            found.append(Oversize(path.relative_to(ROOT).as_posix(), code_lines(text)))
    return found


def long_functions() -> list[Oversize]:
    """Functions over the limit, counted from the `def` line to their last line, without a `# long:` comment."""
    found = []
    for path in _sources():
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES and not _explained(lines, start):
                found.append(Oversize(f"{path.relative_to(ROOT).as_posix()}::{node.name}", length))
    return found


def test_the_counter_skips_blanks_and_comments() -> None:
    assert code_lines('"""Doc."""\n\n# note\nx = 1\n    # indented note\ny = 2\n') == 3


def test_no_module_over_its_limit_without_a_reason() -> None:
    offenders = long_modules()
    assert not offenders, (
        f"modules over {MAX_MODULE_CODE_LINES} code lines; split them by concept or put "
        f"a '{WHY} <why>' line at their top level: " + ", ".join(map(str, offenders))
    )


def test_no_function_over_its_limit_without_a_reason() -> None:
    offenders = long_functions()
    assert not offenders, (
        f"functions over {MAX_FUNCTION_LINES} lines; split them into stages or put "
        f"'{WHY} <why>' on the line above: " + ", ".join(map(str, offenders))
    )
