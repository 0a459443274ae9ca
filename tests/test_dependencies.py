"""The optional Ray group is pinned alike wherever it is installed from (pip's extra and the Makefile's file)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _requirements(name: str) -> list[str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def test_the_ray_extra_and_requirements_ray_pin_the_same_release() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extra["ray"] == _requirements("requirements-ray.txt")
