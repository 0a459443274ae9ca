"""The README lists every URL parameter of every page, and states the two commands."""

import re

import pytest
from pydantic import BaseModel

from probes.form import ProbeForm, RunsView
from selector import AdviceRequest
from tco import TcoInputs
from tests.support import ROOT
from ui.params import aliases

README = (ROOT / "README.md").read_text(encoding="utf-8")

PAGE_MODELS: list[type[BaseModel]] = [TcoInputs, AdviceRequest, ProbeForm, RunsView]


@pytest.mark.parametrize("model", PAGE_MODELS, ids=lambda m: m.__name__)
def test_every_url_parameter_is_documented(model: type[BaseModel]) -> None:
    documented = set(re.findall(r"^\| `([a-z_0-9]+)` \|", README, flags=re.MULTILINE))
    missing = sorted(set(aliases(model).values()) - documented)
    assert not missing, f"README lacks URL parameters {missing} of {model.__name__}"


def test_the_two_commands_are_in_the_readme_and_ci_runs_the_test_one() -> None:
    assert "make run" in README and "make test" in README
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
