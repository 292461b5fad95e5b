"""The layer contracts in pyproject.toml (run by `make check`) see what they must.

The contracts are checked against a copy of the package with one forbidden import
planted in it: inside a function, where an import-hygiene test that only imports
modules would never notice it.  A planted import back up to a module's importer
(`orange.engine.notices` importing the engine that imports it) is a cycle inside a
package, which the acyclic-siblings contract refuses.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

LINT = str(Path(sys.executable).with_name("lint-imports"))


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LINT, "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("layers")
    shutil.copytree(REPO_ROOT / "orange", root / "orange")
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_package_keeps_its_layers(tree: Path) -> None:
    result = _lint(tree)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("orange/engine/fields.py", "from orange.runtime import tmux", "the engine never imports"),
        ("orange/store/layout.py", "from orange import home", "the store imports nothing"),
        ("orange/runtime/git.py", "import typer", "no core package imports a UI library"),
        ("orange/runtime/git.py", "from orange.monitor import loop", "drivers above"),
        ("orange/engine/notices.py", "from orange.engine import engine", "no import cycle"),
        ("orange/dashboard/views.py", "from orange.dashboard import app", "no import cycle"),
        ("orange/agent_hooks/stop.py", "from orange import errors", "drivers above"),
        ("orange/engine/loader.py", "from orange.engine import gates", "reading workflows"),
        ("orange/engine/gates.py", "from orange.engine import replay", "deciding a move"),
        ("orange/engine/steps.py", "from orange.engine import taking", "checking history makes"),
    ],
    ids=[
        "engine->runtime",
        "store->home",
        "runtime->typer",
        "runtime->monitor",
        "notices->engine",
        "views->app",
        "agent_hooks->errors",
        "loader->gates",
        "gates->replay",
        "steps->taking",
    ],
)
def test_a_function_level_import_across_a_layer_breaks_a_contract(
    tree: Path, module: str, planted: str, contract: str
) -> None:
    planted_code = f"def _planted() -> None:\n    {planted}  # noqa\n"
    assert contract in _broken_with(tree, module, planted_code)


def test_an_import_only_for_type_checking_is_an_import(tree: Path) -> None:
    """A cycle through a ``TYPE_CHECKING`` import is a cycle: the engine's actions
    naming the engine for their annotations is what `orange.engine.services` is for."""
    planted = "import typing\n\nif typing.TYPE_CHECKING:\n    from orange.engine import engine\n"
    assert "no import cycle" in _broken_with(tree, "orange/engine/notices.py", planted)


def _broken_with(tree: Path, module: str, planted: str) -> str:
    """The broken contracts `lint-imports` reports with ``planted`` appended to
    ``module`` (taken out again after)."""
    path = tree / module
    original = path.read_text()
    path.write_text(f"{original}\n\n{planted}")
    try:
        result = _lint(tree)
    finally:
        path.write_text(original)
    assert result.returncode == 1, result.stdout
    return result.stdout.split("Broken contracts", 1)[1]
