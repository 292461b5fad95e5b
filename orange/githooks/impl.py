"""What Orange's git hooks do: ``orange hook-impl NAME ARGS...`` (DESIGN §6).

The shims in ``git-hooks/`` only find ``orange`` and call this.

- ``pre-commit``: in a tasks checkout (HEAD is ``refs/orange/tasks``) the staged tree
  must be a legal step from the tip: the checkout is not behind the ref, each status
  change is a transition of the task's committed workflow whose ``when`` and fresh
  gate hold (the replay checker's rules), only task files change.  In any other
  checkout of a registered project (a task worktree), Orange's own files (the agent's
  TASK.md copy, harness settings) may not be committed unless the project tracks them.
- ``post-commit`` (tasks checkout only): never trusting that pre-commit ran (``git
  commit --no-verify`` skips it), first replay what is new on the ref
  (`orange.engine.forgery.verify_new`: a forged step is restored, with ``attention``),
  then carry out, once, the hooks of the status changes just committed
  (`orange.engine.external.complete_external_move`) only if the commit is legal.
- ``pre-merge-commit`` (tasks checkout only): a clean ``git merge`` is exactly the
  sync's merge (`orange.githooks.premerge`).
- ``post-merge`` (tasks checkout only, once the shim carried the merge to the ref):
  replay what is new, then carry out, once, the hooks still pending of the moves the
  merge brought in, for the tasks bound to this host, and release this host's bindings
  of the tasks it brought in ended or bound elsewhere (as a sync does).
- ``reference-transaction``: git itself moved ``refs/orange/*``; wake the monitor
  (`orange.githooks.wake`).
- ``update``: the server side, in `orange.githooks.server`.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from orange import compose
from orange.compose import build_engine
from orange.engine import localqueue, orphans, replay
from orange.engine.caller import from_env
from orange.engine.decide import resolve
from orange.engine.definitions import TreeView, definition
from orange.engine.external import complete_external_move
from orange.engine.fields import IDENTITY_FIELDS
from orange.engine.forgery import verify_new
from orange.engine.trust import trusted_here
from orange.errors import NotPermitted, OrangeError
from orange.githooks import bookkeeping, mergedriver, premerge, server
from orange.githooks import checkout as taskscheckout
from orange.githooks.wake import reference_transaction
from orange.home import host_name
from orange.projects import find_for_repo
from orange.runtime.git import git
from orange.store.lock import exclusive
from orange.store.repo import GitRepo, open_repo
from orange.store.store import TaskStore
from orange.store.task import Task
from orange.store.treediff import Listings, changed_blobs, changed_files
from orange.sync.effects import release_ended

if TYPE_CHECKING:
    import pygit2

    from orange.projects import Project

STALE = (
    "the tasks checkout is behind refs/orange/tasks (Orange wrote since); run: orange tasks refresh"
)
UNPUBLISHED = "the tasks checkout has commits not on refs/orange/tasks; run: orange tasks refresh"
# Files Orange puts in a task worktree (the agent's TASK.md copy, harness settings):
# never part of the project's history unless the project tracks them itself.
PROTECTED_FILES = ("TASK.md", "ORANGE-TASK.md", "opencode.json", ".orange-task")
PROTECTED_DIRS = (".claude/", ".pi/", ".codex/", ".opencode/", ".orange-task/")
_CONFLICT_MARKERS = ("<<<<<<< ", ">>>>>>> ")


def run(name: str, args: Sequence[str], cwd: Path | None = None) -> int:
    """Run hook ``name``; the exit code for git."""
    handlers: dict[str, Callable[[Path, Sequence[str]], int]] = {
        "pre-commit": pre_commit,
        "post-commit": post_commit,
        "pre-merge-commit": premerge.pre_merge_commit,
        "post-merge": post_merge,
        "reference-transaction": reference_transaction,
        "update": server.update,
        "merge-driver": mergedriver.merge_driver,
    }
    handler = handlers.get(name)
    if handler is None:
        print(f"orange hook-impl: unknown hook {name!r}", file=sys.stderr)
        return 2
    if cwd is None:
        try:
            cwd = Path.cwd()
        except FileNotFoundError:
            return 0  # the repository went away under a background hook: nothing to guard
    return handler(cwd, args)


# pre-commit --------------------------------------------------------------------------
def pre_commit(cwd: Path, args: Sequence[str] = ()) -> int:
    repo = open_repo(cwd)
    if taskscheckout.is_tasks_checkout(repo):
        problems = check_tasks_commit(repo)
        if problems and problems[0] not in (STALE, UNPUBLISHED):
            problems = _with_move_bookkeeping(repo, problems)
    else:
        problems = check_worktree_commit(repo)
    for problem in problems:
        print(f"orange: {problem}", file=sys.stderr)
    return 1 if problems else 0


def check_tasks_commit(repo: GitRepo) -> list[str]:
    """Why the staged tree of a tasks checkout cannot be committed ([] if it can)."""
    tip = taskscheckout.tasks_tip(repo)
    if tip != taskscheckout.recorded_tip(repo):
        return [STALE]
    if taskscheckout.head_commit(repo) != tip:
        return [UNPUBLISHED]

    parent, staged = _staged_step(repo, tip)
    return check_tree_change(repo.pygit, parent, staged, tip)


def _staged_step(repo: GitRepo, tip: str | None) -> tuple[pygit2.Tree | None, pygit2.Tree]:
    """The tree at ``tip`` (None: no ref yet) and the tree git is about to commit."""
    assert repo.workdir is not None
    pygit = repo.pygit
    staged = pygit[git("write-tree", cwd=repo.workdir, env=_index_env())].peel(pygit2.Tree)
    return (None if tip is None else pygit[tip].peel(pygit2.Tree)), staged


def _with_move_bookkeeping(repo: GitRepo, problems: list[str]) -> list[str]:
    """The problems once the counts a move sets are written (`bookkeeping`): [] and the
    rewrite kept, or the original problems with the index as it was staged."""
    parent, staged = _staged_step(repo, taskscheckout.tasks_tip(repo))
    rewrites = bookkeeping.count_rewrites(repo.pygit, parent, staged)
    if not rewrites:
        return problems
    bookkeeping.stage(repo, rewrites, _index_env(), undo=False)
    if check_tasks_commit(repo):
        bookkeeping.stage(repo, rewrites, _index_env(), undo=True)
        return problems
    for rewrite in rewrites:
        print(f"orange: {rewrite.note}", file=sys.stderr)
    return []


def check_tree_change(
    pygit: pygit2.Repository,
    parent: pygit2.Tree | None,
    staged: pygit2.Tree,
    tip_id: str | None = None,
) -> list[str]:
    """The replay checker's rules for one step ``parent`` → ``staged``, plus what a
    hand edit may not do (touch anything but task files, change fixed fields)."""

    problems: list[str] = []
    # The shard-skipping walk: what a commit costs, not what the tasks tree holds.
    listings = Listings(pygit)
    for path in changed_blobs(pygit, parent, staged, listings):
        if not path.startswith("tasks/"):
            problems.append(f"{path}: only task files (tasks/*/*/TASK.md) can change here")
    checker = replay.Checker(pygit, trusted_here)
    tip = pygit[tip_id].peel(pygit2.Commit) if tip_id is not None else None
    for path, old, new in changed_files(pygit, parent, staged, listings):
        if not path.startswith("tasks/"):
            continue
        task_id = path.split("/")[2] if path.count("/") >= 3 else path
        try:
            # A definition not trusted here is left to the host's trust mark.
            reason = checker.check_change(staged, tip, path, old, new)[0]
            reason = reason or _hand_edit_problem(old, new) or _agent_problem(staged, old, new)
        except OrangeError as exc:
            reason = exc.message
        except UnicodeDecodeError:
            reason = f"{path}: not UTF-8 text"
        if reason:
            problems.append(f"task {task_id}: {reason}")
    return problems


def _agent_problem(staged: pygit2.Tree, old: bytes | None, new: bytes | None) -> str | None:
    """What an agent (``ORANGE_AGENT_ROLE`` in the committing process's environment)
    may not do with plain git either: change another task, or take a move its role may
    not (`orange.engine.caller`)."""
    caller = from_env(os.environ)
    if caller.kind != "agent" or old is None:
        return None
    before = Task.parse(old.decode("utf-8"), where="before")
    try:
        caller.check_own(before.id, "edit")
        after = None if new is None else Task.parse(new.decode("utf-8"), where="after")
        if after is not None and after.status != before.status:
            rev = before.str_field("workflow_rev")
            workflow = definition(TreeView(staged), before.workflow, rev)
            caller.check_move(workflow, before, resolve(workflow, before, after.status))
    except NotPermitted as exc:
        return str(exc)
    return None


def _hand_edit_problem(old: bytes | None, new: bytes | None) -> str | None:
    if new is None:
        return None
    text = new.decode("utf-8")
    if any(line.startswith(_CONFLICT_MARKERS) for line in text.splitlines()):
        return "has conflict markers; resolve them first"
    if old is None:
        return None
    before = Task.parse(old.decode("utf-8"), where="before")
    after = Task.parse(text, where="after")
    changed = [f for f in sorted(IDENTITY_FIELDS) if before.fields.get(f) != after.fields.get(f)]
    if changed:
        return f"{', '.join(changed)} cannot be changed"
    return None


def check_worktree_commit(repo: GitRepo) -> list[str]:
    """Orange's files staged in a checkout of a registered project ([] if none)."""

    top = repo.workdir
    if top is None or find_for_repo(repo) is None:
        return []
    env = _index_env()
    staged = git("diff", "--cached", "--name-only", "-z", "--diff-filter=ACMR", cwd=top, env=env)
    protected = [p for p in staged.split("\0") if p and _is_protected(p)]
    if not protected:
        return []
    tracked: set[str] = set()
    if not repo.pygit.head_is_unborn:
        listed = git("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *protected, cwd=top)
        tracked = set(listed.split("\0"))
    return [
        f"{path} is Orange's file, not the project's; unstage it: "
        f"git rm --cached {shlex.quote(path)}"
        for path in protected
        if path not in tracked
    ]


def _is_protected(path: str) -> bool:
    return path in PROTECTED_FILES or path.startswith(PROTECTED_DIRS)


def _index_env() -> dict[str, str]:
    """The index git is committing (``commit -a``/``commit PATHS`` use a temporary one)."""
    index = os.environ.get("GIT_INDEX_FILE")
    return {"GIT_INDEX_FILE": os.path.abspath(index)} if index else {}


# post-commit -------------------------------------------------------------------------
def post_commit(cwd: Path, args: Sequence[str] = ()) -> int:
    repo = open_repo(cwd)
    if not taskscheckout.is_tasks_checkout(repo):
        return 0
    head = taskscheckout.head_commit(repo)
    if head is None or head != taskscheckout.tasks_tip(repo):
        return 0  # the shim did not carry the commit to the ref: nothing to do here
    taskscheckout.record_tip(repo, head)
    for line in [*check_new_commits(repo, head), *flag_orphans(repo)]:
        print(f"orange: {line}", file=sys.stderr)
    if taskscheckout.tasks_tip(repo) != head:  # the hooks wrote: follow them
        assert repo.workdir is not None
        taskscheckout.refresh(repo.workdir)
    return 0


def post_merge(cwd: Path, args: Sequence[str] = ()) -> int:
    """``post-merge OLD``: OLD is the tip the checkout had before the merge."""
    repo = open_repo(cwd)
    head = taskscheckout.head_commit(repo)
    if not taskscheckout.is_tasks_checkout(repo) or head is None or len(args) != 1:
        return 0
    if head != taskscheckout.tasks_tip(repo) or find_for_repo(repo) is None:
        return 0
    found = verify_new(TaskStore(repo), trusted=trusted_here, actor="git-hook")
    lines = found.lines()
    if not found.restored:
        lines += handle_external_moves(repo, head, lambda: merged_moves(repo, head, args[0]))
        lines += ended_elsewhere(repo, head, args[0])
        lines += flag_orphans(repo)
    for line in lines:
        print(f"orange: {line}", file=sys.stderr)
    if taskscheckout.tasks_tip(repo) != head:  # the hooks wrote: follow them
        assert repo.workdir is not None
        taskscheckout.refresh(repo.workdir)
    return 0


def flag_orphans(repo: GitRepo) -> list[str]:
    """This host's tasks left waiting for a task the commit or merge cancelled get
    ``attention`` (`orange.engine.orphans`)."""
    project = find_for_repo(repo)
    if project is None:
        return []
    store = TaskStore(repo)
    return orphans.flag(store, lambda: build_engine(project, actor="git-hook", store=store))


def ended_elsewhere(repo: GitRepo, head: str, old: str) -> list[str]:
    """Release this host's bindings of the tasks the merge (``old`` → ``head``) ended
    or bound to another host, as a sync does (`orange.sync.effects`): a teammate's
    ``orange task cancel`` ran the move's hooks on their host, so none is pending
    here.  Once: the released binding is no longer this host's."""
    project = find_for_repo(repo)
    if project is None:
        return []
    pygit = repo.pygit
    before, after = pygit[old].peel(pygit2.Tree), pygit[head].peel(pygit2.Tree)
    paths = changed_blobs(pygit, before, after)
    tasks = {p.split("/")[2] for p in paths if p.startswith("tasks/") and p.count("/") >= 3}
    return release_ended(project, TaskStore(repo), sorted(tasks), tmux=compose.tmux)


def merged_moves(repo: GitRepo, head: str, old: str) -> list[Task]:
    """The moves a merge brought in (``old`` → ``head``) whose hooks are still to run
    and whose task is bound to this host and was created or taken here: each task as it
    was before its move."""
    pygit = repo.pygit
    commit = pygit[head].peel(pygit2.Commit)
    checker = replay.Checker(pygit, trusted_here)
    here = host_name()
    # Created or taken here: the ``host`` a push names is data, never enough (DESIGN §8).
    ours = localqueue.positions(TaskStore(repo))
    moves = []
    for path, _, new in changed_files(pygit, pygit[old].peel(pygit2.Tree), commit.tree):
        if new is None or not path.startswith("tasks/"):
            continue
        try:
            after = Task.parse(new.decode("utf-8"), where=path)
            pending = checker.pending(commit, path)
        except (OrangeError, UnicodeDecodeError):
            continue
        if pending is not None and after.str_field("host") == here and after.id in ours:
            moves.append(pending[0])
    return moves


def check_new_commits(repo: GitRepo, head: str) -> list[str]:
    """Replay what is new on the ref (restoring a forgery), then run the hooks of
    ``head``'s moves only if ``head`` itself is legal; what was done, for the user."""
    if find_for_repo(repo) is None:
        return []
    found = verify_new(TaskStore(repo), trusted=trusted_here, actor="git-hook")
    lines = found.lines()
    if found.restored:  # judged from a forged parent, head's own moves prove nothing
        return [*lines, "no hooks run for this commit"]
    commit = repo.pygit[head].peel(pygit2.Commit)
    parent = str(commit.parents[0].id) if commit.parents else None
    found_here = replay.Checker(repo.pygit, trusted_here).run(head, parent).found
    illegal = [v for v in found_here if not v.untrusted]
    if illegal:
        return lines or [f"forged: {v}; no hooks run" for v in illegal]
    return lines + handle_external_moves(repo, head)


def handle_external_moves(
    repo: GitRepo, commit_id: str, select: Callable[[], list[Task]] | None = None
) -> list[str]:
    """Run, once on this host, the hooks of the status changes made by ``commit_id``
    (a plain-git commit of the tasks ref; ``select``: which, when not all of its
    moves).  Returns what was done, for the user."""

    project = find_for_repo(repo)
    if project is None:
        return []
    pygit = repo.pygit
    commit = pygit[commit_id].peel(pygit2.Commit)
    with exclusive(repo.orange_dir() / "external-moves.lock"):
        record = repo.orange_dir() / "external-moves"
        handled = set(record.read_text().split()) if record.is_file() else set()
        if commit_id in handled:
            return []
        moves = select() if select is not None else moved_tasks(pygit, commit)
        with record.open("a") as handle:
            handle.write(f"{commit_id}\n")
        return [_complete(repo, project, before) for before in moves]


def moved_tasks(pygit: pygit2.Repository, commit: pygit2.Commit) -> list[Task]:
    """The tasks whose status ``commit`` changes, as they were in its first parent."""

    parent = commit.parents[0].tree if commit.parents else None
    moved = []
    for path, old, new in changed_files(pygit, parent, commit.tree):
        if old is None or new is None or not path.startswith("tasks/"):
            continue
        try:
            before = Task.parse(old.decode("utf-8"), where=path)
            after = Task.parse(new.decode("utf-8"), where=path)
        except (OrangeError, UnicodeDecodeError):
            continue
        if before.status != after.status:
            moved.append(before)
    return moved


def _complete(repo: GitRepo, project: Project, before: Task) -> str:
    engine = build_engine(project, actor="git-hook", store=TaskStore(repo))
    try:
        outcome = complete_external_move(engine, before)
    except OrangeError as exc:
        return f"task {before.id}: could not run the hooks of the move: {exc}"
    if outcome is None:
        return f"task {before.id}: no hooks to carry out (it moved on, or the move is not one)"
    errors = f" (failed: {'; '.join(outcome.hook_errors)})" if outcome.hook_errors else ""
    return f"task {before.id}: {outcome.from_status} -> {outcome.to_status} carried out{errors}"
