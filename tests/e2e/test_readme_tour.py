"""The README's tour, run as written: every command of its shell blocks, in a fresh
repository with a HOME, ORANGE_HOME and tmux server of its own, with the `demo`
stand-in as the agent.  A tour command that stops working fails this test.

What the tour's own text makes a reader do is done here too: `ID` is the id the
tour's task got, and a block after `<!-- tour-test: wait until ID is STATUS -->` runs
once the task is there (the reader waits a few seconds).  A command whose comment says
`refused` must fail as a user error (exit 1) naming what its comment quotes; every
other command must succeed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, git, make_repo, orange_here
from tests.e2e.conftest import stop_everything
from tests.helpers import retry_until

README = REPO_ROOT / "README.md"
WAIT = re.compile(r"<!-- tour-test: wait until ID is (\S+) -->")
COMMENT = re.compile(r"\s#\s(.*)$")


@dataclass(frozen=True)
class Step:
    command: str  # one shell command, continuation lines joined
    comment: str  # what the tour says it does


@dataclass(frozen=True)
class Block:
    wait_for: str | None  # the status the task reaches before this block runs
    steps: tuple[Step, ...]


def tour_blocks(text: str) -> list[Block]:
    """The shell blocks of the README's "A 30-second tour" section."""
    section = text.split("\n## A 30-second tour\n", 1)[1].split("\n## ", 1)[0]
    blocks = []
    for match in re.finditer(r"(?:(<!--[^\n]*-->)\n)?```sh\n(.*?)```", section, re.S):
        wait = WAIT.fullmatch(match.group(1) or "")
        blocks.append(Block(wait.group(1) if wait else None, tuple(_steps(match.group(2)))))
    return blocks


def _steps(block: str) -> Iterator[Step]:
    command, comment = "", ""
    for line in block.splitlines():
        if command.endswith("\\"):
            command = command[:-1] + " " + line.strip()
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            comment += " " + line.strip().lstrip("#").strip()
            continue
        if command:
            yield Step(command, comment.strip())
        found = COMMENT.search(line)
        command = line[: found.start()].rstrip() if found else line.rstrip()
        comment = found.group(1) if found else ""
    if command:
        yield Step(command, comment.strip())


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A reader's machine: a new repository, no coding agent, Orange on PATH."""
    socket = f"orange-tour-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", socket)
    monkeypatch.setenv("ORANGE_MONITOR", "on")  # as for a user: the monitor starts
    bin_dir = str(Path(sys.executable).parent)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    repo = make_repo(tmp_path / "myapp")
    yield repo, socket
    stop_everything(repo, socket, tmp_path)


def test_the_tour_parses_into_the_commands_it_shows() -> None:
    blocks = tour_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2 and blocks[0].wait_for is None
    steps = [step for block in blocks for step in block.steps]
    edit = next(step for step in steps if "task edit" in step.command)
    assert edit.command.startswith("printf ") and "| orange task edit ID" in edit.command
    assert any(step.comment.startswith("refused") for step in steps)


def test_every_command_of_the_readme_tour_works(fresh: tuple[Path, str]) -> None:
    repo, _socket = fresh
    task_id = ""

    # The test's own looks at the task run in this process (`orange_here`): polled a
    # few times a second, a process each would cost more than the tour itself.
    def the_task() -> str:
        listed = orange_here("task", "list", "--all", "--json", cwd=repo).json()["tasks"]
        assert len(listed) == 1, listed
        return str(listed[0]["id"])

    def status() -> str:
        return str(orange_here("task", "show", task_id, "--json", cwd=repo).json()["status"])

    def reached(wanted: str) -> bool:
        return status() == wanted

    for block in tour_blocks(README.read_text(encoding="utf-8")):
        if block.wait_for:
            retry_until(partial(reached, block.wait_for), timeout=60, interval=0.2)
        for step in block.steps:
            if re.search(r"\bID\b", step.command):
                task_id = task_id or the_task()
            command = re.sub(r"\bID\b", task_id, step.command)
            ran = subprocess.run(
                ["bash", "-c", f"set -o pipefail; {command}"],
                cwd=repo,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            said = f"`{step.command}` -> {ran.returncode}\n{ran.stdout}{ran.stderr}"
            if step.comment.startswith("refused"):
                assert ran.returncode == 1, said
                for quoted in re.findall(r'"([^"]+)"', step.comment):
                    assert quoted in ran.stderr, said
            else:
                assert ran.returncode == 0, said

    # What the comments promise: the task was merged, with the stand-in's commit.
    assert status() == "done"
    assert "Add feature" in git(repo, "log", "--format=%s", "main")
    shown = orange_here("workflow", "validate", "my.yml", "--json", cwd=repo).json()
    assert shown["valid"] is True
