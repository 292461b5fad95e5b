"""Forged task history: what a server with Orange's ``update`` hook rejects, and what
this host notices and restores (a ``--no-verify`` commit, ``git update-ref``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from orange import projects
from orange.engine.catalog import load_named
from orange.engine.edits import edit_body
from orange.engine.engine import Engine
from orange.engine.forgery import RECORD, start_record, verify_new
from orange.engine.loader import load_workflow
from orange.engine.tasks import create_task
from orange.engine.trust import trusted_here
from orange.runtime import watcher
from orange.store import layout
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.cli.test_bounded import HOSTILE
from tests.conftest import Cli, git, hermetic_env, make_repo
from tests.engine.test_seed000_table import PLAN
from tests.githooks.conftest import make_hub
from tests.helpers import retry_until
from tests.recording import recording_registry

PUSH = f"{layout.TASKS_REF}:{layout.TASKS_REF}"
# A valid workflow no Orange ships: anyone may move anything anywhere.
PERMISSIVE = """\
name: anything
version: 1
description: Every move allowed.
initial_statuses: [todo]
states:
  todo: {terminal: false, role: queue}
  doing: {terminal: false}
  done: {terminal: true, role: done}
  cancelled: {terminal: true, role: cancelled}
transitions:
  - {from: todo, to: doing}
  - {from: doing, to: done}
  - {from: todo, to: cancelled}
  - {from: doing, to: cancelled}
"""


def push(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "push", "-q", "hub", PUSH], cwd=repo, capture_output=True, text=True, check=False
    )


def tip(path: Path) -> str:
    return git(path, "rev-parse", "--verify", "-q", layout.TASKS_REF, check=False).strip()


def forge(repo: Path, writes: dict[str, str | None], message: str = "forged") -> str:
    """A commit on the tasks ref made with plain git (no Orange), moving the ref with
    ``git update-ref``; returns its id."""
    index = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "forge-index")}

    def run(*args: str, stdin: str | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, env=index, input=stdin, capture_output=True, text=True,
            check=True,
        ).stdout.strip()  # fmt: skip

    run("read-tree", layout.TASKS_REF)
    for path, text in writes.items():
        if text is None:
            run("update-index", "--force-remove", path)
        else:
            blob = run("hash-object", "-w", "--stdin", stdin=text)
            run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = run("commit-tree", run("write-tree"), "-p", layout.TASKS_REF, "-m", message)
    git(repo, "update-ref", layout.TASKS_REF, commit)
    return commit


def task_text(repo: Path, task_id: str) -> str:
    return git(repo, "show", f"{layout.TASKS_REF}:{layout.task_path(task_id)}")


def forge_fields(repo: Path, task_id: str, **fields: object) -> str:
    task = Task.parse(task_text(repo, task_id), where="forge").with_fields(**fields)
    return forge(repo, {layout.task_path(task_id): task.render()})


def engine_for(repo: Path, hub: Path) -> Engine:
    project = projects.add(repo)
    start_record(TaskStore.open(repo))  # as `orange project add` does
    git(repo, "remote", "add", "hub", str(hub))
    return Engine(TaskStore.open(repo), project, registry=recording_registry()[0])


@pytest.fixture
def engine(repo: Path, hub: Path) -> Engine:
    return engine_for(repo, hub)


def planning_task(engine: Engine) -> Task:
    assert engine.project is not None
    task = create_task(engine.store, engine.project, load_named("default"), summary="shared")
    engine.transition(task.id, "planning")
    return engine.store.get(task.id)


class Landed(NamedTuple):
    """A clone whose task in planning has landed on the hub (both at ``tip``)."""

    repo: Path
    hub: Path
    task: Task
    tip: str


@pytest.fixture(scope="module")
def landing(tmp_path_factory: pytest.TempPathFactory) -> Landed:
    """`Landed`, built once for a module's tests: a project, a task moved to planning
    and a push through the server hook cost about a second of CPU each time."""
    root = tmp_path_factory.mktemp("landing")
    with pytest.MonkeyPatch.context() as monkeypatch:
        hermetic_env(root, monkeypatch)
        repo, hub = make_repo(root / "proj"), make_hub(root)
        task = planning_task(engine_for(repo, hub))
        assert push(repo).returncode == 0
        return Landed(repo, hub, task, tip(hub))


@pytest.fixture
def landed(landing: Landed) -> Landed:
    """`landing` as it was built: whatever a test before this one forged in the clone or
    got the hub to take is undone (the server hook keeps nothing but the ref)."""
    for path in (landing.repo, landing.hub):
        git(path, "update-ref", layout.TASKS_REF, landing.tip)
    return landing


# The server -------------------------------------------------------------------------
def test_crash_bump_escalation_and_review_skip_are_rejected_at_the_bump(landed: Landed) -> None:
    repo, hub, task = landed.repo, landed.hub, landed.task
    bump = forge_fields(repo, task.id, crash_count=2)
    forge_fields(repo, task.id, status="stuck", crash_count=0)
    forge_fields(repo, task.id, status="reviewing")

    result = push(repo)
    assert result.returncode != 0
    said = [line.removeprefix("remote: ").strip() for line in result.stderr.splitlines()]
    lines = [line for line in said if line.startswith("task ")]
    assert lines == [
        f"task {task.id}: crash_count changed in planning without a move, a recorded agent "
        f"death or a hook action that sets it (commit {bump[:10]})"
    ]
    assert tip(hub) == landed.tip


def test_escalation_needs_the_crashes_the_exit_rule_counts(landed: Landed) -> None:
    repo, task = landed.repo, landed.task
    # One agent death recorded as the monitor records it: legal ...
    died = f"{task.str_field('agent_run')}@planning"
    forge_fields(repo, task.id, crash_count=1, dead_run=died)
    # ... but planning's crash rule escalates at the second (stuck_after: 2).
    forge_fields(repo, task.id, status="stuck", crash_count=0)
    result = push(repo)
    assert result.returncode != 0
    assert (
        f"task {task.id}: escalation planning -> stuck without the agent deaths its exit "
        "rule counts (crash_count 1)"
    ) in result.stderr


def test_a_workflow_switch_is_rejected(engine: Engine, repo: Path, hub: Path) -> None:
    assert engine.project is not None
    task = planning_task(engine)
    other = create_task(engine.store, engine.project, load_named("minimal"), summary="other")
    assert push(repo).returncode == 0
    forge_fields(repo, task.id, workflow="minimal", workflow_rev=other.fields["workflow_rev"])
    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: workflow, workflow_rev cannot change" in result.stderr


def test_deleting_an_active_task_is_rejected(landed: Landed) -> None:
    repo, task = landed.repo, landed.task
    forge(repo, {layout.task_path(task.id): None})
    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: deleted while planning; only a cancelled or done" in result.stderr


def test_a_definition_the_server_does_not_trust_is_rejected_until_it_does(
    cli: Cli, engine: Engine, repo: Path, hub: Path, tmp_path: Path
) -> None:
    assert engine.project is not None
    workflow = load_workflow(PERMISSIVE, "anything.yml")
    task = create_task(engine.store, engine.project, workflow, summary="mine")
    result = push(repo)
    assert result.returncode != 0
    assert "meta/workflows/anything.yml: the definition is not trusted here" in result.stderr
    assert f"task {task.id}: workflow 'anything': its committed definition" in result.stderr
    assert tip(hub) == ""

    trusted = tmp_path / "server-workflows"
    trusted.mkdir()
    (trusted / "anything.yml").write_text(PERMISSIVE)
    cli.ok("hooks", "install", "--server", str(hub), "--trusted-workflows", str(trusted))
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert tip(hub) == tip(repo)


def test_trusted_workflows_must_be_a_directory(cli: Cli, hub: Path, tmp_path: Path) -> None:
    result = cli("hooks", "install", "--server", str(hub), "--trusted-workflows", "nowhere")
    assert result.code == 1
    assert "--trusted-workflows nowhere: not a directory" in result.err.strip().splitlines()[0]
    assert git(hub, "config", "--get", "orange.trustedWorkflows", check=False) == ""


def test_a_forgery_restored_on_this_host_is_accepted(engine: Engine, repo: Path, hub: Path) -> None:
    task = planning_task(engine)
    assert push(repo).returncode == 0
    forged = forge_fields(repo, task.id, status="working")  # no plan written
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert [v.commit for v in found.restored] == [forged]
    restored = engine.store.get(task.id)
    assert restored.status == "planning"
    assert forged[:10] in restored.str_field("attention")
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert tip(hub) == tip(repo)


def test_an_older_installation_starts_verifying_at_its_tip(repo: Path) -> None:
    """A project registered before this check has no record: its history (written by an
    older Orange) is taken as it is, never rewritten; what comes later is replayed."""
    project = projects.add(repo)  # no start_record: as an older Orange registered it
    engine = Engine(TaskStore.open(repo), project, registry=recording_registry()[0])
    task = planning_task(engine)
    old = forge_fields(repo, task.id, status="working")  # judged illegal today
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert found.restored == [] and found.tip == old
    assert engine.store.get(task.id).status == "working"
    later = forge_fields(repo, task.id, status="planning", crash_count=5)
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert [v.commit for v in found.restored] == [later]
    assert engine.store.get(task.id).int_field("crash_count") == 0


@pytest.mark.parametrize("task_id", sorted(HOSTILE))
def test_a_hostile_task_file_is_rejected_by_the_server(landed: Landed, task_id: str) -> None:
    """Finding 3 at the server: billion laughs, deep nesting, duplicate keys, an
    oversized frontmatter or file — each rejected with its one-line reason."""
    repo, hub = landed.repo, landed.hub
    header, why = HOSTILE[task_id]
    body = "x" * (2 * 1024 * 1024) if task_id == "hugeaaaa" else ""
    forge(repo, {layout.task_path(task_id): f"---\n{header}---\n{body}"})
    result = push(repo)
    assert result.returncode != 0
    said = [line.removeprefix("remote: ").strip() for line in result.stderr.splitlines()]
    lines = [line for line in said if line.startswith(f"task {task_id}:")]
    assert len(lines) == 1 and why in lines[0], said
    assert tip(hub) == landed.tip


# This host ---------------------------------------------------------------------------
MARKED = """\
name: marked
version: 1
description: A move whose hook leaves a mark.
initial_statuses: [todo]
states:
  todo: {terminal: false, role: queue}
  doing: {terminal: false}
  done: {terminal: true, role: done}
  cancelled: {terminal: true, role: cancelled}
transitions:
  - from: todo
    to: doing
    gate: {section: "## Plan"}
    hooks:
      - action: run_command
        argv: [touch, MARKER]
  - {from: doing, to: done}
  - {from: todo, to: cancelled}
  - {from: doing, to: cancelled}
"""


def test_a_no_verify_commit_runs_no_hooks_and_is_restored(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    user_dir = tmp_path / "home" / "orange" / "workflows"
    user_dir.mkdir(parents=True)
    (user_dir / "marked.yml").write_text(MARKED.replace("MARKER", str(marker)))
    project = projects.add(repo)
    store = TaskStore.open(repo)
    start_record(store)  # as `orange project add` does
    task = create_task(store, project, load_named("marked"), summary="guarded")
    checkout = tmp_path / "tasks"
    cli.ok("tasks", "checkout", str(checkout), cwd=repo)
    path = checkout / layout.task_path(task.id)
    text = path.read_text().replace("\nstatus: todo\n", "\nstatus: doing\n")
    path.write_text(text + "\n## Notes\n\nmy words stay\n")  # no "## Plan": gate fails
    result = subprocess.run(
        ["git", "commit", "-q", "--no-verify", "-a", "-m", "skip the gate"],
        cwd=checkout, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "forged:" in result.stderr
    after = store.get(task.id)
    assert after.status == "todo"
    assert "my words stay" in after.body
    assert "forged change in commit" in after.str_field("attention")
    assert not marker.exists()  # post-commit ran (it restored) and ran no hook
    record = (repo / ".git" / "orange" / RECORD).read_text().strip()
    assert record == tip(repo)


def test_update_ref_forgery_is_noticed_by_the_monitor(
    cli: Cli, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", str(tmp_path / "tmux.sock"))
    cli.ok("project", "add", cwd=repo)  # installs the reference-transaction shim
    project = projects.get("proj")
    store = TaskStore.open(repo)
    task = create_task(store, project, load_named("default"), summary="watched")
    edit_body(store, task.id, lambda t: t.body + PLAN, what="body")
    try:
        forged = forge_fields(repo, task.id, status="reviewing")  # git runs the shim
        record = repo / ".git" / "orange" / RECORD

        def verified() -> str | None:
            seen = record.read_text().strip() if record.is_file() else ""
            return seen if seen and seen == tip(repo) and seen != forged else None

        retry_until(verified, timeout=30)
    finally:
        retry_until(lambda: watcher.stop() or not watcher.is_running(), timeout=30)
    after = store.get(task.id)
    assert after.status == "pending"
    assert f"forged change in commit {forged[:10]}" in after.str_field("attention")
    assert PLAN.strip() in after.body


def test_a_trusted_definition_saved_with_crlf_line_endings_is_still_trusted(
    cli: Cli, engine: Engine, repo: Path, hub: Path, tmp_path: Path
) -> None:
    # The same file on the workstation and the server, saved with Windows line endings:
    # Orange commits the text as it reads it, and the server must trust that text.
    crlf = PERMISSIVE.replace("\n", "\r\n").encode()
    local = tmp_path / "anything.yml"
    local.write_bytes(crlf)
    assert engine.project is not None
    workflow = load_workflow(local.read_text(encoding="utf-8"), str(local))
    create_task(engine.store, engine.project, workflow, summary="mine")
    trusted = tmp_path / "server-workflows"
    trusted.mkdir()
    (trusted / "anything.yml").write_bytes(crlf)
    cli.ok("hooks", "install", "--server", str(hub), "--trusted-workflows", str(trusted))
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert tip(hub) == tip(repo)


# A bare start without its hooks ------------------------------------------------------
def pending_task(engine: Engine) -> Task:
    assert engine.project is not None
    return create_task(engine.store, engine.project, load_named("default"), summary="queued")


def test_a_bare_start_without_its_hooks_is_refused_by_the_server(
    engine: Engine, repo: Path, hub: Path
) -> None:
    """pending -> planning with the status alone: no workspace, no agent, and no host
    that will ever run them (the task is bound to none)."""
    task = pending_task(engine)
    assert push(repo).returncode == 0
    landed = tip(hub)
    bare = forge_fields(repo, task.id, status="planning")
    result = push(repo)
    assert result.returncode != 0
    assert (
        f"task {task.id}: pending -> planning was committed with plain git and its hooks "
        f"never ran (no workspace acquired, no agent started)"
    ) in result.stderr
    assert f"(commit {bare[:10]})" in result.stderr
    assert tip(hub) == landed


def test_a_bare_start_that_arrives_without_its_hooks_is_restored(
    engine: Engine, repo: Path, hub: Path
) -> None:
    task = pending_task(engine)
    bare = forge_fields(repo, task.id, status="planning")  # as a fetch from a peer brings it
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert [v.commit for v in found.restored] == [bare]
    restored = engine.store.get(task.id)
    assert restored.status == "pending"
    assert f"forged change in commit {bare[:10]}" in restored.str_field("attention")
    assert verify_new(engine.store, trusted=trusted_here, actor="monitor").restored == []
    result = push(repo)  # the bare move and its restore: repaired, accepted
    assert result.returncode == 0, result.stderr
    assert tip(hub) == tip(repo)


def test_a_bare_start_put_back_by_hand_is_accepted(engine: Engine, repo: Path, hub: Path) -> None:
    task = pending_task(engine)
    forge_fields(repo, task.id, status="planning")
    forge_fields(repo, task.id, status="pending")
    assert verify_new(engine.store, trusted=trusted_here, actor="monitor").restored == []
    assert push(repo).returncode == 0


def test_a_restore_names_every_file_it_removes(engine: Engine, repo: Path) -> None:
    """Eight broken files pushed with a forged move: the restore commit and the warning
    name each file, not only the first task."""
    task = planning_task(engine)
    broken = {f"tasks/zz/broken{n}/TASK.md": f"---\nid: [broken{n}\n---\n" for n in range(8)}
    forge(repo, {**broken, "stray.txt": "not a task"})
    forged = forge_fields(repo, task.id, status="working")
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert forged in {v.commit for v in found.restored}
    message = git(repo, "log", "-1", "--format=%B", layout.TASKS_REF)
    subject = message.splitlines()[0]
    warning = found.warning()
    assert warning is not None and warning == found.lines()[0]
    for path in [*broken, "stray.txt"]:
        assert path in subject and path in warning and path in message
    assert f"restored task {task.id}" in subject and f"restored task {task.id}" in warning
    assert git(repo, "ls-tree", "-r", "--name-only", layout.TASKS_REF).count("broken") == 0


@pytest.mark.parametrize("ref", ["refs/orange/taskforce", "refs/orange/tasks2", "refs/orange/x/y"])
def test_the_server_refuses_any_other_ref_under_refs_orange(
    engine: Engine, repo: Path, hub: Path, ref: str
) -> None:
    planning_task(engine)
    result = subprocess.run(
        ["git", "push", "-q", "hub", f"{layout.TASKS_REF}:{ref}"],
        cwd=repo, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert f"{ref}: only {layout.TASKS_REF} is shared under refs/orange/" in result.stderr
    assert git(hub, "for-each-ref", "refs/orange/").strip() == ""
    assert push(repo).returncode == 0  # the tasks themselves, and a branch, still go
    git(repo, "push", "-q", "hub", f"{layout.TASKS_REF}:refs/heads/elsewhere")
