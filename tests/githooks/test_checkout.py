"""Plain-git edits in a tasks checkout: the pre-commit checks, staleness, refresh,
and the hooks of a move carried out once by post-commit."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from orange import projects
from orange.engine import replay
from orange.engine.catalog import load_named
from orange.engine.edits import edit_body
from orange.engine.engine import Engine
from orange.engine.external import complete_external_move
from orange.engine.fields import BASELINE_FIELD
from orange.engine.tasks import create_task
from orange.engine.trust import trusted_here
from orange.githooks import checkout as taskscheckout
from orange.githooks import impl as hookimpl
from orange.store import layout
from orange.store.history import task_history
from orange.store.repo import open_repo
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import Cli, git
from tests.engine.test_seed000_table import FAIL, HANDOFF, PLAN
from tests.recording import recording_registry


@dataclass
class Env:
    repo: Path
    checkout: Path
    store: TaskStore
    engine: Engine  # hook actions recorded, not run: set-up moves without tmux

    def new_task(self, summary: str = "do it") -> Task:
        project = projects.get("proj")
        return create_task(self.store, project, load_named("default"), summary=summary)

    def append(self, task_id: str, text: str) -> None:
        edit_body(self.store, task_id, lambda t: t.body + text, what="body")

    def tip(self) -> str:
        return str(self.store.pygit.references[layout.TASKS_REF].target)

    def file(self, task_id: str) -> Path:
        return self.checkout / layout.task_path(task_id)

    def set_status(self, task_id: str, status: str) -> None:
        path = self.file(task_id)
        text = path.read_text()
        old = Task.parse(text, where="t").status
        path.write_text(text.replace(f"\nstatus: {old}\n", f"\nstatus: {status}\n", 1))

    def check(self) -> tuple[int, str]:
        """What pre-commit says about the edits, run in-process (fast)."""
        git(self.checkout, "add", "-A")
        problems = hookimpl.check_tasks_commit(open_repo(self.checkout))
        return (1 if problems else 0), "\n".join(problems)

    def commit(self, message: str = "hand edit", *, staged: bool = False) -> tuple[int, str]:
        """A real `git commit` (``-a`` unless only what is ``staged``): git runs the
        installed shims."""
        import subprocess

        result = subprocess.run(
            ["git", "commit", "-q", *([] if staged else ["-a"]), "-m", message],
            cwd=self.checkout,
            capture_output=True,
            text=True,
            check=False,
        )
        return result.returncode, result.stderr

    def refresh(self) -> None:
        taskscheckout.refresh(self.checkout)


@pytest.fixture
def env(cli: Cli, repo: Path, tmp_path: Path) -> Env:
    cli.ok("project", "add", cwd=repo)
    store = TaskStore.open(repo)
    registry, _ = recording_registry()
    engine = Engine(store, projects.get("proj"), registry=registry)
    checkout = tmp_path / "tasks"
    result = Env(repo, checkout, store, engine)
    result.new_task("first")  # the ref must exist before a checkout
    cli.ok("tasks", "checkout", str(checkout), cwd=repo)
    return result


def test_checkout_follows_the_tasks_ref_on_a_detached_head(env: Env) -> None:
    assert git(env.checkout, "symbolic-ref", "-q", "HEAD", check=False).strip() == ""
    assert git(env.checkout, "rev-parse", "HEAD").strip() == env.tip()
    assert git(env.checkout, "status", "--porcelain") == ""
    assert taskscheckout.recorded_tip(open_repo(env.checkout)) == env.tip()
    assert (env.repo / ".git" / "hooks" / "pre-commit").is_file()


def test_a_checkout_does_not_block_fetching_into_the_ref(
    cli: Cli, env: Env, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(env.repo), str(other))
    git(other, "fetch", "-q", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}")
    tree = git(other, "rev-parse", f"{layout.TASKS_REF}^{{tree}}").strip()
    theirs = git(other, "commit-tree", tree, "-p", layout.TASKS_REF, "-m", "theirs").strip()
    git(other, "update-ref", layout.TASKS_REF, theirs)
    git(env.repo, "fetch", "-q", str(other), f"{layout.TASKS_REF}:{layout.TASKS_REF}")
    assert env.tip() == theirs
    cli.ok("tasks", "refresh", str(env.checkout))
    assert git(env.checkout, "rev-parse", "HEAD").strip() == theirs
    assert taskscheckout.recorded_tip(open_repo(env.checkout)) == theirs


def test_refresh_never_drops_a_commit_that_is_not_on_the_ref(cli: Cli, env: Env) -> None:
    task = env.new_task()
    env.refresh()
    path = env.file(task.id)
    path.write_text(path.read_text() + "\n## Notes\n\nhooks off\n")
    git(env.checkout, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-am", "no hooks")
    mine = git(env.checkout, "rev-parse", "HEAD").strip()
    env.append(task.id, "\n## More\n\nwritten by Orange\n")
    result = cli("tasks", "refresh", str(env.checkout))
    assert result.code != 0
    assert "has commits not on refs/orange/tasks" in result.err
    assert "git merge refs/orange/tasks" in result.err
    assert git(env.checkout, "rev-parse", "HEAD").strip() == mine


def test_legal_move_commits_and_its_effects_run_once(env: Env) -> None:
    task = env.new_task()
    env.engine.transition(task.id, "planning")
    env.append(task.id, PLAN)
    env.refresh()
    env.set_status(task.id, "working")
    code, err = env.commit("start working")
    assert code == 0, err
    assert env.store.get(task.id).status == "working"
    assert "planning -> working carried out" in err
    # the commit was recorded as handled; the checkout followed Orange's write
    repo = open_repo(env.repo)
    handled = (repo.common_dir / "orange" / "external-moves").read_text().split()
    assert len(handled) == 1
    assert git(env.checkout, "status", "--porcelain") == ""
    assert taskscheckout.recorded_tip(open_repo(env.checkout)) == env.tip()
    # a second trigger does nothing
    tip = env.tip()
    assert hookimpl.handle_external_moves(repo, handled[0]) == []
    assert env.tip() == tip


def test_a_move_by_hand_after_an_agent_death_gets_the_bookkeeping_written(
    env: Env,
) -> None:
    """The agent died once in planning (crash_count 1); the human finishes the plan and
    moves the task on in the checkout, touching only ``status``: the move is legal, and
    pre-commit writes the count Orange writes on a move (0) instead of refusing it."""
    from orange.engine.monitoring import handle_dead_session

    task = env.new_task()
    env.engine.transition(task.id, "planning")
    handle_dead_session(env.engine, task.id)
    assert env.store.get(task.id).int_field("crash_count") == 1
    env.append(task.id, PLAN)
    env.refresh()
    env.set_status(task.id, "working")
    code, err = env.commit("plan done by hand")
    assert code == 0, err
    assert f"task {task.id}: crash_count 1 -> 0, as Orange writes it on a move" in err
    mine = git(env.checkout, "log", "--format=%H", "--grep=plan done by hand").strip()
    committed = Task.parse(
        git(env.checkout, "show", f"{mine}:{layout.task_path(task.id)}"), where="t"
    )
    assert (committed.status, committed.int_field("crash_count")) == ("working", 0)
    assert env.store.get(task.id).status == "working"
    assert git(env.checkout, "status", "--porcelain") == ""


def test_a_stale_count_is_not_rewritten_without_a_legal_move(env: Env) -> None:
    """Only a legal move gets its count written: an illegal one is refused as it was
    committed, and the staged file is left as the human staged it."""
    from orange.engine.monitoring import handle_dead_session

    task = env.new_task()
    env.engine.transition(task.id, "planning")
    handle_dead_session(env.engine, task.id)
    env.refresh()
    env.set_status(task.id, "reviewing")
    git(env.checkout, "add", "-A")
    code, err = env.commit("skip ahead", staged=True)
    assert code == 1
    assert f"task {task.id}: illegal transition planning -> reviewing" in err
    staged = git(env.checkout, "show", f":{layout.task_path(task.id)}")
    assert "crash_count: 1" in staged and "status: reviewing" in staged


def test_illegal_move_is_refused(env: Env) -> None:
    task = env.new_task()
    env.refresh()
    before = env.tip()
    env.set_status(task.id, "reviewing")
    code, err = env.commit()
    assert code == 1
    assert f"task {task.id}: illegal transition pending -> reviewing" in err
    assert env.tip() == before


def test_missing_gate_is_refused(env: Env) -> None:
    task = env.new_task()
    env.engine.transition(task.id, "planning")
    env.refresh()
    env.set_status(task.id, "working")
    code, err = env.check()
    assert code == 1
    assert f"task {task.id}:" in err and "## Plan" in err


def test_stale_gate_is_refused(env: Env) -> None:
    task = env.new_task()
    env.engine.transition(task.id, "planning")
    env.append(task.id, PLAN)
    env.engine.transition(task.id, "working")
    env.append(task.id, HANDOFF)
    env.engine.transition(task.id, "agent-review")
    env.append(task.id, FAIL)
    env.engine.transition(task.id, "working")
    env.refresh()
    env.set_status(task.id, "agent-review")  # the round-1 handoff, unchanged
    code, err = env.check()
    assert code == 1
    assert f"task {task.id}: working -> agent-review" in err and "## Handoff" in err


def test_broken_frontmatter_and_other_files_are_refused(env: Env) -> None:
    task = env.new_task()
    env.refresh()
    env.file(task.id).write_text("---\nid: [unclosed\n---\nbody\n")
    (env.checkout / "meta" / "workflows" / "default.yml").write_text("name: default\n")
    code, err = env.check()
    assert code == 1
    assert f"task {task.id}:" in err
    assert "meta/workflows/default.yml: only task files" in err


def test_body_edit_without_a_move_commits(env: Env) -> None:
    task = env.new_task()
    env.refresh()
    path = env.file(task.id)
    path.write_text(path.read_text() + "\n## Notes\n\nby hand\n")
    code, err = env.commit()
    assert code == 0, err
    assert "by hand" in env.store.get(task.id).body


def test_stale_checkout_is_refused_and_refresh_keeps_edits(cli: Cli, env: Env) -> None:
    one, two = env.new_task("one"), env.new_task("two")
    env.refresh()
    # a person edits task one; meanwhile Orange writes task two
    mine = env.file(one.id)
    mine.write_text(mine.read_text() + "\n## Notes\n\nmy uncommitted note\n")
    env.append(two.id, "\n## Notes\n\nwritten by Orange\n")
    code, err = env.commit()
    assert code == 1
    assert hookimpl.STALE in err
    assert "written by Orange" in env.store.get(two.id).body  # not reverted

    cli.ok("tasks", "refresh", str(env.checkout))
    assert "my uncommitted note" in mine.read_text()
    assert "written by Orange" in env.file(two.id).read_text()
    code, err = env.commit()
    assert code == 0, err
    assert "my uncommitted note" in env.store.get(one.id).body
    assert "written by Orange" in env.store.get(two.id).body


def test_refresh_conflict_keeps_both_versions(cli: Cli, env: Env) -> None:
    task = env.new_task()
    env.append(task.id, "\n## Notes\n\noriginal\n")
    env.refresh()
    path = env.file(task.id)
    path.write_text(path.read_text().replace("original", "mine"))
    edit_body(env.store, task.id, lambda t: t.body.replace("original", "theirs"), what="body")
    result = cli("tasks", "refresh", str(env.checkout))
    assert result.code == 1
    assert f"conflict in {layout.task_path(task.id)}" in result.err
    text = path.read_text()
    assert "mine" in text and "theirs" in text and "<<<<<<<" in text
    code, err = env.check()  # markers are never committed
    assert code == 1 and "conflict markers" in err


def test_refresh_json_reports_the_conflict_and_exits_1(cli: Cli, env: Env) -> None:
    task = env.new_task()
    env.append(task.id, "\n## Notes\n\noriginal\n")
    env.refresh()
    path = env.file(task.id)
    path.write_text(path.read_text().replace("original", "mine"))
    edit_body(env.store, task.id, lambda t: t.body.replace("original", "theirs"), what="body")
    result = cli("tasks", "refresh", str(env.checkout), "--json")
    assert result.code == 1
    refreshed = json.loads(result.out)
    assert refreshed["conflicts"] == [layout.task_path(task.id)]
    assert refreshed["new"] != refreshed["old"]


def test_an_agent_keeps_to_its_moves_and_its_task_with_plain_git_too(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    task, other = env.new_task(), env.new_task("someone else's")
    env.engine.transition(task.id, "planning")
    env.append(task.id, PLAN)
    env.engine.transition(task.id, "working")
    env.refresh()
    monkeypatch.setenv("ORANGE_AGENT_ROLE", "worker")
    monkeypatch.setenv("ORANGE_TASK_ID", task.id)
    env.set_status(task.id, "stuck")
    assert env.check() == (0, "")  # the worker's own move
    git(env.checkout, "commit", "-q", "--no-verify", "-m", "stuck")  # as pre-commit allowed
    assert env.tip() == git(env.checkout, "rev-parse", "HEAD").strip()  # post-commit carried it
    env.refresh()
    env.set_status(task.id, "reviewing")
    code, err = env.check()
    assert code == 1 and f"task {task.id}: stuck -> reviewing is a human move" in err
    git(env.checkout, "checkout", "--", ".")
    path = env.file(other.id)
    path.write_text(path.read_text().replace("someone else's", "mine now"))
    code, err = env.check()
    assert code == 1 and f"may edit only its own task, not task {other.id}" in err
    monkeypatch.delenv("ORANGE_AGENT_ROLE")  # a human may do both
    env.set_status(task.id, "reviewing")
    assert env.check() == (0, "")


def test_plain_git_move_is_in_the_task_history_with_actor_git(cli: Cli, env: Env) -> None:
    task = env.new_task()
    env.engine.transition(task.id, "planning")
    env.append(task.id, PLAN)
    env.refresh()
    env.set_status(task.id, "working")
    code, err = env.commit("start working by hand")
    assert code == 0, err
    mine = git(env.checkout, "log", "--format=%H", "--grep=start working by hand").strip()
    log = json.loads(cli.ok("task", "log", task.id, "--json", cwd=env.repo).out)["history"]
    by_hand = [h for h in log if h["commit"] == mine]
    assert [(h["actor"], h["event"], h["from"], h["to"]) for h in by_hand] == [
        ("git", "git.commit", "planning", "working")
    ]
    shown = json.loads(cli.ok("task", "show", task.id, "--json", cwd=env.repo).out)["history"]
    assert [h["commit"] for h in shown] == [h["commit"] for h in log]
    text = cli.ok("task", "log", task.id, cwd=env.repo).out
    assert f"{mine[:10]}" in text and " git " in text


def test_plain_git_move_is_followed_by_at_most_one_orange_commit(env: Env) -> None:
    """pending -> planning by hand: its hooks' fields and the new state's gate baseline
    are recorded in one commit after the user's (not "gates of" + "applied in")."""
    task = env.new_task()
    env.refresh()
    env.set_status(task.id, "planning")
    git(env.checkout, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-am", "plan it")
    git(env.checkout, "update-ref", layout.TASKS_REF, "HEAD")  # what post-commit does
    mine = env.tip()
    outcome = complete_external_move(env.engine, task)  # what post-commit runs, recorded
    assert outcome is not None and not outcome.hook_errors
    after = git(env.checkout, "log", "--format=%H", f"{mine}..refs/orange/tasks").split()
    assert len(after) == 1
    history = task_history(env.store, task.id)
    assert [(h.commit, h.actor) for h in history[-2:]] == [(mine, "git"), (after[0], "cli")]
    current = env.store.get(task.id)
    assert current.status == "planning" and current.str_field("workspace") == "proj--1"
    assert BASELINE_FIELD in current.fields
    found = replay.Checker(env.store.pygit, trusted_here).run(after[0], mine).found
    assert found == []


def test_a_start_by_hand_is_not_taken_for_a_stranded_one_while_its_hooks_run(
    env: Env,
) -> None:
    """pending -> planning committed in the checkout: the monitor may replay it before
    post-commit runs its hooks (it is woken by the ref's move); the move is this host's
    (the checkout's HEAD), so it is left to post-commit, never restored."""
    from orange.engine.forgery import verify_new

    task = env.new_task()
    env.refresh()
    env.set_status(task.id, "planning")
    git(env.checkout, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-am", "start it")
    git(env.checkout, "update-ref", layout.TASKS_REF, "HEAD")  # what the shim does
    found = verify_new(env.store, trusted=trusted_here, actor="monitor")  # the race
    assert found.restored == []
    assert env.store.get(task.id).status == "planning"
    outcome = complete_external_move(env.engine, task)  # what post-commit then runs
    assert outcome is not None and not outcome.hook_errors
    assert verify_new(env.store, trusted=trusted_here, actor="monitor").restored == []
    assert env.store.get(task.id).str_field("workspace") == "proj--1"
