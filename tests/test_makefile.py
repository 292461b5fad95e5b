"""The set-up the README names exists: `make .venv`, `make demo`, `make test`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("target", [".venv", "demo", "test", "check", "test-agents"])
def test_each_target_the_readme_names_makes_the_environment(target: str, tmp_path: Path) -> None:
    # A copy of the Makefile in an empty directory: as on a fresh clone, before any make.
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    dry = subprocess.run(
        ["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert dry.returncode == 0, dry.stderr
    assert "-m venv .venv" in dry.stdout and "pip install" in dry.stdout


def test_make_test_runs_the_property_tests_ci_profile_whatever_the_shell_names(
    tmp_path: Path,
) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "test"],  # under `make test` too
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HYPOTHESIS_PROFILE": "long"},
    )
    runs = [line for line in dry.stdout.splitlines() if "pytest" in line]
    assert runs == ["HYPOTHESIS_PROFILE=ci .venv/bin/pytest -n 2"]


def test_every_package_is_in_the_distribution() -> None:
    # `pip install -e` finds every package by path; a plain install takes only those
    # pyproject.toml lists, so a package missing there is missing for users.
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "orange").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found - listed == set()


def test_the_license_is_an_spdx_expression_with_its_file() -> None:
    # The table form (`license = {text = ...}`) is deprecated by setuptools, which stops
    # building it after 2027-02-18; PEP 639's string and license-files replace it.
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert [f for f in project["license-files"] if (ROOT / f).is_file()] == ["LICENSE"]
