"""The set-up the README names exists: `make .venv`, `make demo`, `make test`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("target", [".venv", "demo", "test", "check"])
def test_the_readme_targets_exist(target: str) -> None:
    dry = subprocess.run(
        ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert dry.returncode == 0, dry.stderr
