"""The layer contracts in pyproject.toml (run by `make check`) see what they must.

The contracts are checked against a copy of the package with one forbidden import
planted in it: inside a function, where an import-hygiene test that only imports
modules would never notice it.
"""

from __future__ import annotations

import ast
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
        ("orange/engine/fields.py", "from orange.hooks import tmux", "the engine never imports"),
        ("orange/store/layout.py", "from orange import home", "the store imports nothing"),
        ("orange/hooks/git.py", "import typer", "no core package imports a UI library"),
        ("orange/hooks/git.py", "from orange.monitor import loop", "drivers above"),
    ],
    ids=["engine->hooks", "store->home", "hooks->typer", "hooks->monitor"],
)
def test_a_function_level_import_across_a_layer_breaks_a_contract(
    tree: Path, module: str, planted: str, contract: str
) -> None:
    path = tree / module
    original = path.read_text()
    path.write_text(f"{original}\n\ndef _planted() -> None:\n    {planted}  # noqa\n")
    try:
        result = _lint(tree)
    finally:
        path.write_text(original)
    assert result.returncode == 1, result.stdout
    broken = result.stdout.split("Broken contracts", 1)[1]
    assert contract in broken


def _function_imports(path: Path) -> list[tuple[int, bool]]:
    """(line, explained) for each run of import statements inside a function: a run
    is explained by a comment on the line above it or on one of its lines."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines))
    runs: list[tuple[int, bool]] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        blocks = [
            getattr(block, name)
            for block in ast.walk(function)
            for name in ("body", "orelse", "finalbody")
            if isinstance(getattr(block, name, None), list)
        ]
        in_run = False
        for node in (statement for block in blocks for statement in block):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                in_run = False
                continue
            span = lines[node.lineno - 1 : node.end_lineno]
            commented = any("#" in line for line in span)
            if in_run:
                runs[-1] = (runs[-1][0], runs[-1][1] or commented)
            else:
                above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
                runs.append((node.lineno, commented or above.startswith("#")))
            in_run = True
    return runs


def test_every_import_inside_a_function_says_why() -> None:
    unexplained = [
        f"{path.relative_to(REPO_ROOT)}:{line}"
        for path in sorted((REPO_ROOT / "orange").rglob("*.py"))
        for line, explained in _function_imports(path)
        if not explained
    ]
    assert unexplained == []


def test_no_module_over_400_lines_and_no_function_over_50() -> None:
    too_long = []
    for path in sorted((REPO_ROOT / "orange").rglob("*.py")):
        text = path.read_text()
        name = path.relative_to(REPO_ROOT)
        if text.count("\n") > 400:
            too_long.append(f"{name}: {text.count(chr(10))} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 50:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    assert too_long == []
