"""The README lists every URL parameter of every page and states the two commands; the probe's tables of URL
parameters (README) and flags (docs/probe.md) state the defaults and limits of the one model they come from."""

import re

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from probes.cli import build_parser
from probes.cli_options import CliOptions
from probes.field_text import allowed_text, default_text, flag_of
from probes.form import ProbeForm, RunsView
from selector import AdviceRequest
from tco import TcoInputs
from tco.compare_inputs import CompareInputs
from tests.support import ROOT
from ui.params import aliases, field_alias, format_value

README = (ROOT / "README.md").read_text(encoding="utf-8")
PROBE_DOC = (ROOT / "docs" / "probe.md").read_text(encoding="utf-8")

PAGE_MODELS: list[type[BaseModel]] = [TcoInputs, AdviceRequest, CompareInputs, ProbeForm, RunsView]


@pytest.mark.parametrize("model", PAGE_MODELS, ids=lambda m: m.__name__)
def test_every_url_parameter_is_documented(model: type[BaseModel]) -> None:
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \|", README, flags=re.MULTILINE))
    missing = sorted(set(aliases(model).values()) - documented)
    assert not missing, f"README lacks URL parameters {missing} of {model.__name__}"


def test_the_two_commands_are_in_the_readme_and_ci_runs_the_test_one() -> None:
    assert "make run" in README and "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _table_rows(text: str, first_cell: str) -> dict[str, list[str]]:
    """Markdown table rows whose first cell is `<something matching first_cell>`: that name -> the other cells."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        found = re.match(rf"^\| `({first_cell})` \|(.*)\|$", line)
        if found:
            rows[found.group(1)] = [cell.strip() for cell in found.group(2).split("|")]
    return rows


def _states(cell: str, value: str) -> bool:
    """The cell states the value, maybe followed by an explanation: "none: closed loop", "1–100000 (the run ...)"."""
    cell = cell.replace("`", "")
    return cell == value or cell.startswith((f"{value} ", f"{value}:", f"{value},"))


def _allowed(field: FieldInfo) -> str | None:
    return None if field.annotation is bool else allowed_text(field)


def test_every_cli_flag_is_in_docs_probe_md_with_its_default_and_allowed_values() -> None:
    rows = _table_rows(PROBE_DOC, "--[a-z0-9-]+")
    flags = {flag_of(name, field): field for name, field in CliOptions.model_fields.items()}
    parsed = {a.option_strings[0] for a in build_parser()._actions if a.option_strings and a.dest != "help"}
    assert set(flags) == parsed  # the parser is built from the model, flag for field
    assert sorted(set(flags) - set(rows)) == [], "flags missing from docs/probe.md"
    assert sorted(set(rows) - set(flags)) == [], "docs/probe.md documents flags that do not exist"
    for flag, field in flags.items():
        default, allowed, _meaning = rows[flag]
        assert _states(default, default_text(field)), (
            f"{flag}: docs say default {default!r}, not {default_text(field)!r}"
        )
        expected = _allowed(field)
        if expected is None:
            assert allowed == "", f"{flag}: docs state limits {allowed!r} the flag does not have"
        else:
            assert _states(allowed, expected), f"{flag}: docs say {allowed!r}, the model allows {expected!r}"


def test_the_probe_page_parameters_state_their_defaults_and_allowed_values() -> None:
    section = README[README.index("## Live probe") : README.index("`/runs` lists every stored run")]
    rows = _table_rows(section, "[a-z_0-9]+")
    for name, field in ProbeForm.model_fields.items():
        alias = field_alias(name, field)
        _meaning, default, allowed = rows[alias]
        value = getattr(ProbeForm(), name)
        expected_default = "empty" if value in ("", None, ()) else format_value(value)
        assert _states(default, expected_default), f"`{alias}`: README says {default!r}, not {expected_default!r}"
        expected = allowed_text(field)
        if expected is not None:
            assert _states(allowed, expected), f"`{alias}`: README says {allowed!r}, the model allows {expected!r}"


@pytest.mark.parametrize(
    ("model", "start", "end"),
    [
        (CompareInputs, "## Compare options", "## Live probe"),
        (TcoInputs, "## The cost calculator", "## Engine advisor"),
    ],
    ids=["compare", "tco"],
)
def test_the_cost_pages_parameters_state_their_defaults(model: type[BaseModel], start: str, end: str) -> None:
    section = README[README.index(start) : README.index(end)]
    rows = _table_rows(section, "[a-z_0-9]+")
    for name, field in model.model_fields.items():
        alias = field_alias(name, field)
        _meaning, default, _allowed = rows[alias]
        value = getattr(model(), name)
        expected = "empty" if value in ("", None, ()) else format_value(value)
        assert _states(default, expected), f"`{alias}`: README says {default!r}, not {expected!r}"
