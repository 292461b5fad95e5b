"""``orange`` with no arguments and ``orange dashboard`` without a terminal."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import orange_bin, run_orange


def test_bare_orange_without_a_terminal_prints_help_not_the_dashboard(repo: Path) -> None:
    result = run_orange(cwd=repo)  # stdin and stdout are pipes: an agent calling orange
    assert result.code == 2
    assert "Usage: orange" in result.out + result.err and "dashboard" in result.out + result.err


def test_dashboard_for_an_unknown_project_is_a_one_line_error(repo: Path) -> None:
    result = run_orange("dashboard", "--project", "nope", cwd=repo)
    assert result.code == 1
    assert len(result.err.strip().splitlines()) == 1 and "nope" in result.err


def test_dashboard_without_a_terminal_exits_1_with_one_line(repo: Path) -> None:
    """Before, it waited for keys on a pipe until killed (the timeout only bounds a hang)."""
    run_orange("project", "add", cwd=repo)
    result = subprocess.run(
        [orange_bin(), "dashboard"], cwd=repo, stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a terminal" in lines[0], result.stderr
