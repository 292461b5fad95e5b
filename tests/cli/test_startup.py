"""What a command loads at start-up where loading more would change what happens: git's
reference-transaction hook must not outlive the command that started it, and a command
off the fast path builds only its own group.  What start-up costs, and which choices
buy it (named tuples instead of dataclasses, no pattern compiled at import), is
measured by `bench/startup_bench.py`, not pinned here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import Cli

# A user workflow whose moves run no hooks (as the bench's `bench-moves`).
MOVES = """\
name: moves
version: 1
description: Two states and hook-free moves between them.
initial_statuses: [pending]
states:
  pending:
    terminal: false
  planning:
    terminal: false
  cancelled:
    terminal: true
transitions:
  - {from: pending, to: planning, hooks: []}
  - {from: planning, to: pending, hooks: []}
  - {from: pending, to: cancelled, hooks: []}
  - {from: planning, to: cancelled, hooks: []}
"""

# Run one command in a fresh interpreter, then say whether the workflow engine was
# loaded and which of the modules the command has no use for were.
PROBE = """\
import json, sys
from orange.cli.main import run
code = run(sys.argv[1:])
engine = "orange.engine.engine" in sys.modules
unused = ("sqlite3", "orange.store.cache", "orange.store.history", "subprocess", "random")
unused += ("hashlib", "textual", "orange.dashboard", "yaml")
loaded = [name for name in unused if name in sys.modules]
print(json.dumps({"code": code, "engine": engine, "loaded": loaded}))
"""


def _probe(repo: Path, *args: str, probe: str = PROBE) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", probe, *args],
        cwd=repo,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_the_reference_transaction_hook_loads_neither_typer_nor_the_engine(
    cli: Cli, repo: Path
) -> None:
    """Git starts `orange hook-impl reference-transaction` for every fetch or update-ref
    touching ``refs/orange/*``: a whole Orange with typer took a second of CPU each,
    enough under load to outlive the command that started it.  It still wakes the
    monitor."""
    cli.ok("project", "add", cwd=repo)
    probe = PROBE.replace('unused += ("hashlib",', 'unused += ("typer", "hashlib",')
    result = _probe(repo, "hook-impl", "reference-transaction", "committed", probe=probe)
    # subprocess stays: it starts a monitor when none runs
    assert result == {"code": 0, "engine": False, "loaded": ["subprocess"]}
    assert (repo / ".git" / "orange" / "wake").read_text().count("\n") == 1


def test_a_command_loads_only_its_own_command_modules(repo: Path) -> None:
    """Off the fast path, `orange monitor stop` builds typer with the monitor's group
    alone: the other command modules (the dashboard's Textual, `orange run`, the task
    commands) cost it nothing.  Help and a mistyped name still see every command."""
    probe = PROBE.replace(
        'unused += ("hashlib",',
        'unused += ("orange.cli.task", "orange.cli.run", "orange.cli.project", "hashlib",',
    )
    result = _probe(repo, "monitor", "stop", probe=probe)
    assert result["code"] == 0
    assert not [n for n in result["loaded"] if n.startswith(("orange.cli", "orange.dash", "text"))]
    listed = subprocess.run(
        [sys.executable, "-m", "orange", "--help"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert all(f"  {name} " in listed for name in ("dashboard", "task", "run", "monitor"))
    typo = subprocess.run(
        [sys.executable, "-m", "orange", "monitr", "stop"], cwd=repo, capture_output=True, text=True
    )
    assert typo.returncode == 2 and "Did you mean 'monitor'?" in typo.stderr
