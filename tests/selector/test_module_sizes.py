"""selector/ and catalog/ read in one sitting: no module over 400 code lines, no function over 60 without a reason."""

import ast
from pathlib import Path

import pytest

from tests.support import ROOT

PINNED = ("selector", "catalog")
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
FILES = sorted(path for package in PINNED for path in (ROOT / package).rglob("*.py"))


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_lines(source: str) -> int:
    """Lines that are code: not blank, not a comment, not a docstring."""
    docstrings = _docstring_lines(ast.parse(source))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), start=1)
        if line.strip() and not line.strip().startswith("#") and number not in docstrings
    )


def long_functions(source: str) -> list[str]:
    """Functions over the limit with no comment on the line above their `def` (or decorators) saying why."""
    lines = source.splitlines()
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            said = top >= 2 and lines[top - 2].strip().startswith("#")
            if length > MAX_FUNCTION_LINES and not said:
                out.append(f"{node.name} ({length} lines)")
    return out


def test_the_counter_skips_docstrings_and_comments_and_sees_a_reason() -> None:
    source = '"""Doc."""\n\n# why\ndef f() -> None:\n    """Doc."""\n' + "    x = 1\n" * 70
    assert code_lines(source) == 71
    assert long_functions(source) == []
    assert long_functions(source.replace("# why\n", "")) == ["f (72 lines)"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_modules_and_functions_stay_small(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert code_lines(source) <= MAX_MODULE_LINES, f"{path.name}: over {MAX_MODULE_LINES} code lines"
    assert not long_functions(source), (
        f"over {MAX_FUNCTION_LINES} lines without a comment why: {long_functions(source)}"
    )
