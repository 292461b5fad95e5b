"""What the agents' hottest commands build at start-up (issue 8, "Start-up: reach it
by structure"; `bench/startup_bench.py` measures the cost).

A dataclass is built by generated code in every process (about half a millisecond,
some 5 M instructions, each), so the value types these paths load are named tuples or
plain classes: none of the three builds a dataclass.  A regular expression compiled at
import costs 0.1 to 0.3 ms: a summary update's modules compile none.
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

# Run one command in a fresh interpreter, then list the dataclasses and compiled regular
# expressions Orange's loaded modules define, whether the workflow engine was loaded,
# and which of the modules a single task's update has no use for were (the listing
# cache and history index with sqlite3; git's subprocess helpers for a worktree;
# random; hashlib with OpenSSL; PyYAML, about 20 ms, for flat frontmatter).
PROBE = """\
import dataclasses, json, re, sys
from orange.cli.main import run
code = run(sys.argv[1:])
made = sorted(
    f"{module.__name__}.{name}"
    for module in list(sys.modules.values())
    if module.__name__.startswith("orange")
    for name, value in vars(module).items()
    if isinstance(value, type)
    and dataclasses.is_dataclass(value)
    and value.__module__ == module.__name__
)
patterns = sorted(
    f"{module.__name__}.{name}"
    for module in list(sys.modules.values())
    if module.__name__.startswith("orange")
    for name, value in vars(module).items()
    if isinstance(value, re.Pattern)
)
engine = "orange.engine.engine" in sys.modules
unused = ("sqlite3", "orange.store.cache", "orange.store.history", "subprocess", "random")
unused += ("hashlib", "textual", "orange.dashboard", "yaml")
loaded = [name for name in unused if name in sys.modules]
found = {"code": code, "dataclasses": made, "engine": engine, "loaded": loaded}
print(json.dumps({**found, "patterns": patterns}))
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


def test_hot_commands_build_no_dataclass(cli: Cli, repo: Path) -> None:
    workflows = Path(os.environ["ORANGE_HOME"]) / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    (workflows / "moves.yml").write_text(MOVES)
    cli.ok("project", "add", "--workflow", "moves", cwd=repo)
    task_id = cli.ok("task", "create", "b", "first", "--no-spawn", "--json").json()["id"]
    summary = _probe(repo, "task", "update", task_id, "--summary", "next")
    assert summary == {
        "code": 0,
        "dataclasses": [],
        "engine": False,
        "loaded": [],
        "patterns": [],  # no regular expression compiled at import (0.1 ms or more each)
    }

    listing = _probe(repo, "task", "list", "--json")
    assert listing["code"] == 0
    assert listing["dataclasses"] == []
    assert "textual" not in str(listing["loaded"]) and "dashboard" not in str(listing["loaded"])
    # The first listing parsed the committed workflow (to tell active statuses) and
    # kept it; after that, a listing reads flat frontmatter only
    assert "yaml" not in _probe(repo, "task", "list", "--json")["loaded"]

    move = _probe(repo, "task", "update", task_id, "--status", "planning")
    assert move["code"] == 0 and move["engine"] is True
    assert move["dataclasses"] == []
    assert "yaml" not in move["loaded"]  # the definition parsed before is kept
    assert "textual" not in str(move["loaded"]) and "dashboard" not in str(move["loaded"])


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
    del result["patterns"]  # held for a summary update only
    assert result == {"code": 0, "dataclasses": [], "engine": False, "loaded": ["subprocess"]}
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
