"""A shared bare hub with Orange's ``update`` hook: pushed task history is replayed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orange import projects
from orange.engine.catalog import load_named
from orange.engine.edits import edit_body
from orange.engine.engine import Engine
from orange.engine.tasks import create_task
from orange.store import layout
from orange.store.store import TaskStore
from tests.conftest import git
from tests.engine.test_seed000_table import PLAN
from tests.recording import recording_registry

PUSH = f"{layout.TASKS_REF}:{layout.TASKS_REF}"


def push(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", "-q", "hub", PUSH], cwd=repo, capture_output=True, text=True, check=False
    )


@pytest.fixture
def store(repo: Path, hub: Path) -> TaskStore:
    projects.add(repo)
    git(repo, "remote", "add", "hub", str(hub))
    return TaskStore.open(repo)


def _tip(path: Path) -> str:
    return git(path, "rev-parse", "--verify", "-q", layout.TASKS_REF, check=False).strip()


def test_a_legal_history_lands(store: TaskStore, repo: Path, hub: Path) -> None:
    registry, _ = recording_registry()
    engine = Engine(store, projects.get("proj"), registry=registry)
    task = create_task(store, projects.get("proj"), load_named("default"), summary="shared")
    assert push(repo).returncode == 0  # a new ref
    engine.transition(task.id, "planning")
    edit_body(store, task.id, lambda t: t.body + PLAN, what="body")
    engine.transition(task.id, "working")
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert _tip(hub) == _tip(repo)


def test_an_illegal_move_is_rejected(store: TaskStore, repo: Path, hub: Path) -> None:
    task = create_task(store, projects.get("proj"), load_named("default"), summary="shared")
    assert push(repo).returncode == 0
    landed = _tip(hub)
    # forge a commit with plain git that moves the task pending -> done
    path = layout.task_path(task.id)
    text = git(repo, "show", f"{layout.TASKS_REF}:{path}").replace(
        "\nstatus: pending\n", "\nstatus: done\n"
    )
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=repo, input=text, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    index = {"GIT_INDEX_FILE": str(repo / ".git" / "forge-index")}
    subprocess.run(["git", "read-tree", layout.TASKS_REF], cwd=repo, env=_env(index), check=True)
    subprocess.run(
        ["git", "update-index", "--cacheinfo", f"100644,{blob},{path}"],
        cwd=repo, env=_env(index), check=True,
    )  # fmt: skip
    tree = subprocess.run(
        ["git", "write-tree"], cwd=repo, env=_env(index), capture_output=True, text=True,
        check=True,
    ).stdout.strip()  # fmt: skip
    forged = git(repo, "commit-tree", tree, "-p", layout.TASKS_REF, "-m", "done!").strip()
    git(repo, "update-ref", layout.TASKS_REF, forged)

    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: illegal transition pending -> done" in result.stderr
    assert _tip(hub) == landed


def test_a_rewrite_is_rejected(store: TaskStore, repo: Path, hub: Path) -> None:
    create_task(store, projects.get("proj"), load_named("default"), summary="one")
    create_task(store, projects.get("proj"), load_named("default"), summary="two")
    assert push(repo).returncode == 0
    landed = _tip(hub)
    git(repo, "update-ref", layout.TASKS_REF, f"{layout.TASKS_REF}^")
    result = subprocess.run(
        ["git", "push", "-q", "--force", "hub", PUSH],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "never rewritten" in result.stderr
    assert _tip(hub) == landed


def test_other_refs_are_not_checked(store: TaskStore, repo: Path, hub: Path) -> None:
    result = subprocess.run(
        ["git", "push", "-q", "hub", "main"], cwd=repo, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def _env(extra: dict[str, str]) -> dict[str, str]:
    import os

    return {**os.environ, **extra}
