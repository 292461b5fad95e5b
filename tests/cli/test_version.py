"""`orange --version`, as Python CLI users expect it (with --json, one object)."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from tests.conftest import Cli, run_orange


def test_version_prints_the_installed_version(tmp_path: Path) -> None:
    ran = run_orange("--version", cwd=tmp_path)
    assert (ran.code, ran.out, ran.err) == (0, f"orange {version('orange')}\n", "")
    as_json = run_orange("--version", "--json", cwd=tmp_path)
    assert as_json.code == 0 and as_json.json() == {"version": version("orange")}


def test_help_lists_the_version_option(cli: Cli) -> None:
    result = cli("--help")
    assert "--version" in result.out
