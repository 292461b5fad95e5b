"""``orange task merge --ready``: merge every task that is ready, in order (DESIGN §10).

Ready: in a state that waits for a person and leads to the workflow's ``role: done``
state (``reviewing``), with every task it names in ``after`` merged, or merged before
it in this same train.  The order: dependencies first, else oldest first (created,
then id).  Each task is merged as ``orange task merge`` merges it (`merge_task`: the
merge, the push, the move to done); before that, its branch must merge cleanly into
the branch it merges into (`conflicts.against_base`), and the project's ``check``
command (``orange project update --check CMD``, local configuration) must pass on the
merged result, in a worktree of its own, before the branch it merges into moves.  The
train stops at the first task that would conflict or fails its check: that task is
named, and nothing of it is merged or pushed; the tasks before it stay merged.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from orange.engine import dependencies
from orange.engine.definitions import Definitions
from orange.engine.engine import Engine
from orange.errors import OrangeError
from orange.home import orange_home
from orange.ops.merge import merge_task
from orange.projects import Project
from orange.runtime import workspace
from orange.runtime.conflicts import against_base
from orange.runtime.git import GitFailed, git, git_ok
from orange.runtime.prepare import run_commands
from orange.store import listing
from orange.store.task import Task

CHECK_TIMEOUT = 3600.0  # seconds the check command may run on one merged result


class Train(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """What ``merge --ready`` did: the tasks merged (in order), each message, and why
    it stopped (empty: every ready task is merged) at which task (``conflict``: it
    would conflict); ``waiting``: ready tasks left out for a dependency that is neither
    merged nor in the train."""

    merged: list[str]
    messages: list[str]
    stopped: str
    waiting: dict[str, list[str]]
    stopped_at: str = ""
    conflict: bool = False


def ready_tasks(engine: Engine, project: Project) -> tuple[list[Task], dict[str, list[str]]]:
    """The ready tasks of ``project`` in the order to merge them, and the ready tasks
    left out with what each still waits for."""
    snap = engine.store.snapshot()
    known = Definitions(snap)
    ready: dict[str, Task] = {}
    for task in listing.tasks(snap):
        if not isinstance(task, Task) or task.project != project.name:
            continue
        workflow = known.of(task)
        if workflow is None or not known.task_trusted(task):
            continue
        done = workflow.done_state
        if (
            done
            and workflow.waits_for_human(task.status)
            and done in workflow.targets_from(task.status)
        ):
            ready[task.id] = task
    order: list[Task] = []
    waiting: dict[str, list[str]] = {}
    placed: set[str] = set()
    pending = sorted(ready.values(), key=lambda t: (t.str_field("created_at"), t.id))
    while pending:  # each round: the oldest task whose dependencies are all placed
        for task in pending:
            blockers = [
                dep for dep in dependencies.waiting_for(snap, known, task) if dep not in placed
            ]
            if not blockers:
                order.append(task)
                placed.add(task.id)
                pending.remove(task)
                break
        else:  # the rest wait for a task that is not ready (or for one another)
            for task in pending:
                waiting[task.id] = [d for d in dependencies.waiting_for(snap, known, task)
                                    if d not in placed]  # fmt: skip
            break
    return order, waiting


def merge_ready(engine: Engine, project: Project, *, say: Callable[[str], None]) -> Train:
    """Merge the ready tasks of ``project`` in order, stopping at the first that would
    conflict or fails the check (`Train`); ``say`` is told each step as it happens."""
    order, waiting = ready_tasks(engine, project)
    train = Train([], [], "", waiting)
    for task in order:
        current = engine.store.get(task.id)  # as it is now: an earlier merge moved others
        clash = against_base(engine.store, project, current)
        if clash is not None:
            stop = f"task {task.id} would conflict with {clash.text(most=10)}"
            return train._replace(stopped=stop, stopped_at=task.id, conflict=True)
        try:
            failed = run_check(project, current) if project.check else ""
            if failed:
                return train._replace(stopped=f"task {task.id}: {failed}", stopped_at=task.id)
            outcome = merge_task(
                engine, project, current, strategy=None, local=True, force=False, gh=None
            )
        except OrangeError as exc:  # a bad branch, unsaved work, a branch not here ...
            return train._replace(stopped=f"task {task.id}: {exc.message}", stopped_at=task.id)
        train.merged.append(task.id)
        for line in [f"task {task.id}: merged ({current.branch})", *outcome.messages]:
            train.messages.append(line)
            say(line)
    return train


def run_check(project: Project, task: Task) -> str:
    """Run the project's check command on ``task``'s branch merged into the branch it
    merges into, in a worktree of its own; what failed, or "" when it passed."""
    into = workspace.base_of(project, task)
    branch = workspace.branch_of(task)
    repo = Path(project.path)
    result = _merged_commit(repo, f"refs/heads/{into}", f"refs/heads/{branch}")
    log = orange_home() / "logs" / "checks" / f"{project.name}.log"
    place = Path(tempfile.mkdtemp(prefix="orange-check-"))
    try:
        git("worktree", "add", "--detach", "--quiet", str(place / "tree"), result, cwd=repo)
        try:
            run_commands([project.check], place / "tree", {}, log, what="check",
                         timeout=CHECK_TIMEOUT)  # fmt: skip
        except OrangeError as exc:
            return f"the check failed on {branch} merged into {into}: {exc.message} (see {log})"
    finally:
        git("worktree", "remove", "--force", str(place / "tree"), cwd=repo, check=False)
        shutil.rmtree(place, ignore_errors=True)
        git("worktree", "prune", cwd=repo, check=False)
    return ""


def _merged_commit(repo: Path, into: str, branch: str) -> str:
    """The commit ``branch`` merged into ``into`` would be (its tip when ``into`` can
    fast-forward to it); nothing moves."""
    old = git("rev-parse", into, cwd=repo)
    tip = git("rev-parse", branch, cwd=repo)
    if git_ok("merge-base", "--is-ancestor", old, tip, cwd=repo):
        return tip
    tree = git("merge-tree", "--write-tree", "--no-messages", old, tip, cwd=repo, check=False)
    if not tree or len(tree.splitlines()) > 1:
        raise GitFailed(["merge-tree", old, tip], 1, "the branches do not merge cleanly")
    message = "orange: the merged result the check runs on"
    return git("commit-tree", tree.splitlines()[0], "-p", old, "-p", tip, "-m", message,
               cwd=repo)  # fmt: skip
