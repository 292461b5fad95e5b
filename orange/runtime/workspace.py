"""The worktree pool: ``$ORANGE_HOME/workspaces/<project>--<n>``, created lazily.

The pool is derived state (DESIGN §2, §8): a workspace is bound exactly when this host's
local record names it for an active task whose ref still agrees (`orange.runtime.bindings`)
— a task that arrived in the ref naming a worktree here binds nothing.  Binding is
recorded and committed under the store's write lock, so two tasks never get one
worktree.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from orange.engine.definitions import Definitions
from orange.errors import HookFailed, InvalidInput
from orange.projects import Project
from orange.runtime import bindings, settingup, workcopy
from orange.runtime.git import GitFailed, git, git_ok
from orange.runtime.places import pool_name, workspace_path
from orange.store import listing
from orange.store.branches import check_branch_name
from orange.store.runfile import valid_run_id
from orange.store.store import Snapshot
from orange.store.task import Task

RUNS = "runs"  # <git-common-dir>/orange/runs/<id>/: a run's files on this host
RUN_WORKTREE = "worktree"  # in a run's folder: the run's own worktree
RUNNER_LOCK = "runner.lock"  # in a run's folder: held while a runner works on the run
# The self-review outcome file (seed 003) an agent writes in its worktree, and the one
# the stop hook writes beside it first (`orange.agent_hooks.stop`, which imports nothing).
OUTCOME_FILES = (".orange-task", ".orange-task.tmp")


def holders(snap: Snapshot, project: str) -> dict[str, str]:
    """Workspace name → id of the active task this host bound it to."""
    held: dict[str, str] = {}
    known = Definitions(snap)
    for task in listing.tasks(snap):
        if not isinstance(task, Task) or task.project != project:
            continue
        if not task.str_field("workspace") or not known.task_is_active(task):
            continue
        path = bindings.workspace_of(task)
        if path is not None:
            held[path.name] = task.id
    for mark in settingup.live(project):  # a slot being set up, its move not committed yet
        held.setdefault(mark.workspace, mark.task)
    return held


class Choice(NamedTuple):  # not a dataclass: see orange.engine.workflow
    name: str
    path: Path


def choose(snap: Snapshot, project: Project, task: Task) -> Choice:
    """The task's workspace: the one it holds, else the first free one in the pool."""
    current = bindings.workspace_of(task)
    if current is not None:
        return Choice(current.name, current)
    held = holders(snap, project.name)
    names = [pool_name(project.name, n) for n in range(1, project.pool_size + 1)]
    # The slot this task's own setup is readying first (the move computed again).
    for name in sorted(names, key=lambda name: held.get(name) != task.id):
        if held.get(name) in (None, task.id):
            return Choice(name, workspace_path(name))
    taken = ", ".join(f"{name} (task {task_id})" for name, task_id in sorted(held.items()))
    raise PoolFull(
        f"all {project.pool_size} workspaces of {project.name} are in use: {taken}",
        hint="finish or cancel one of those tasks, or raise the pool with "
        f"`orange project update {project.name} --pool-size N`",
    )


class PoolFull(HookFailed):
    """No free worktree: the task stays where it was."""


def ensure_worktree(project: Project, path: Path, base: str | None = None) -> None:
    """Create the worktree at ``path``, detached at ``base`` (default: the project's
    default branch), if it is missing: every worktree Orange makes, the pool's and a
    run's (`run_worktrees`), is made here."""
    if (path / ".git").exists():
        return
    if path.exists() and any(path.iterdir()):
        raise HookFailed(
            f"{path} exists but is not a worktree of {project.name}", hint="move it away"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    git("worktree", "prune", cwd=project.path)
    if base is None:
        has_default = _has_ref(project.path, project.default_branch)
        base = project.default_branch if has_default else "HEAD"
    git("worktree", "add", "--detach", str(path), base, cwd=project.path)


def run_worktrees(project: Project) -> list[tuple[str, Path]]:
    """The worktrees of this host's runs of ``project`` (run id, path), oldest first:
    where a run's architect reads the code and its waves are merged."""
    root = project.repo().orange_dir() / RUNS
    found = []
    for folder in root.iterdir() if root.is_dir() else ():
        path = folder / RUN_WORKTREE
        if valid_run_id(folder.name) and (path / ".git").exists():
            found.append((folder.stat().st_mtime, folder.name, path))
    return [(run_id, path) for _, run_id, path in sorted(found)]


def base_of(project: Project, task: Task) -> str:
    """The branch ``task`` starts from and merges into: its ``base`` (set at creation
    with ``--base``; checked again here, since the ref is shared data), else the
    project's default branch."""
    base = task.str_field("base")
    if not base:
        return project.default_branch
    try:
        return check_branch_name(base)
    except InvalidInput as exc:
        raise HookFailed(f"task {task.id} has a bad base: {exc.message}") from None


def branch_of(task: Task) -> str:
    """The task's branch, checked again before git sees it: the ref is shared data, and a
    pushed name like ``--delete`` or ``+main`` would be read as something else."""
    try:
        return check_branch_name(task.branch)
    except InvalidInput as exc:
        raise HookFailed(f"task {task.id} has a bad branch: {exc.message}") from None


def check_base(project: Project, base: str, say: list[str]) -> None:
    """At ``task create --base``: the branch exists here or on origin (fetched first)."""
    check_branch_name(base)
    if has_origin(project.path):
        try:
            git("fetch", "--quiet", "origin", cwd=project.path)
        except GitFailed as exc:
            say.append(f"warning: could not fetch origin ({exc.message}); using local refs")
    if not (
        _has_ref(project.path, f"refs/heads/{base}")
        or _has_ref(project.path, f"refs/remotes/origin/{base}")
    ):
        raise InvalidInput(
            f"no branch {base!r} in {project.name}, here or on origin",
            hint="give an existing branch to --base (see `git branch -a`)",
        )


def checkout_branch(
    project: Project, path: Path, branch: str, say: list[str], base: str | None = None
) -> None:
    """Put ``branch`` in the worktree: the local branch, else the remote one, else a new
    branch from the up-to-date ``base`` (default: the default branch)."""
    try:
        check_branch_name(branch)
    except InvalidInput as exc:
        raise HookFailed(f"cannot check out a bad branch: {exc.message}") from None
    current = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=path, check=False)
    if current == branch:
        return
    elsewhere = checked_out_in(project, branch)
    if elsewhere is not None and elsewhere.resolve() != path.resolve():
        raise HookFailed(
            f"branch {branch} is checked out in {elsewhere}",
            hint="switch that checkout to another branch first",
        )
    # Untracked files count too: in a worktree being bound they are the leftover work of
    # a task that ended without releasing it, and must not end up in this task's branch.
    leftover = git("status", "--porcelain", cwd=path)
    if leftover:
        count = len(leftover.splitlines())
        raise HookFailed(
            f"workspace {path.name} has {count} uncommitted change{'s' if count != 1 else ''} "
            f"left by an earlier task; cannot switch to {branch}",
            hint="run `orange workspace gc` (with --force to save that work first)",
        )
    remote = has_origin(project.path)
    if remote:
        try:
            git("fetch", "--quiet", "origin", cwd=project.path)
        except GitFailed as exc:
            say.append(f"warning: could not fetch origin ({exc.message}); using local refs")
    try:
        if _has_ref(project.path, f"refs/heads/{branch}"):
            git("checkout", "--quiet", branch, "--", cwd=path)
        elif remote and _has_ref(project.path, f"refs/remotes/origin/{branch}"):
            git("checkout", "--quiet", "-b", branch, "--track", f"origin/{branch}", cwd=path)
        else:
            start = _fresh_base(project, remote, base or project.default_branch)
            git("checkout", "--quiet", "--no-track", "-b", branch, start, cwd=path)
    except GitFailed as exc:
        raise HookFailed(f"could not check out {branch} in {path.name}: {exc.message}") from None


def _fresh_base(project: Project, remote: bool, base: str) -> str:
    """Where a new branch starts: ``base`` as up to date as it gets here.

    ``origin/<base>`` when the local branch is missing or only behind it (someone
    else pushed); the local branch when it has commits of its own (ahead or diverged),
    which a new task must not silently leave out.
    """
    local = f"refs/heads/{base}"
    tracking = f"refs/remotes/origin/{base}"
    if not remote or not _has_ref(project.path, tracking):
        return base
    if not _has_ref(project.path, local):
        return tracking
    if git_ok("merge-base", "--is-ancestor", local, tracking, cwd=project.path):
        return tracking
    return local


def checked_out_in(project: Project, branch: str) -> Path | None:
    listing = git("worktree", "list", "--porcelain", cwd=project.path)
    worktree = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            worktree = Path(line.removeprefix("worktree "))
        elif line == f"branch refs/heads/{branch}" and worktree is not None:
            return worktree
    return None


def has_origin(repo: str | Path) -> bool:
    return "origin" in git("remote", cwd=repo).split()


def _has_ref(repo: str | Path, ref: str) -> bool:
    return git_ok("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=repo)


def add_excludes(project: Project, entries: tuple[str, ...]) -> None:
    """Add entries to the repository's ``info/exclude``, each once."""
    common = Path(git("rev-parse", "--git-common-dir", cwd=project.path))
    if not common.is_absolute():
        common = Path(project.path) / common
    exclude = common / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    existing = exclude.read_text().splitlines() if exclude.exists() else []
    missing = [e for e in entries if e not in existing]
    if missing:
        text = exclude.read_text() if exclude.exists() else ""
        if text and not text.endswith("\n"):
            text += "\n"
        exclude.write_text(text + "".join(f"{e}\n" for e in missing))


def reset(project: Project, path: Path) -> None:
    """Return a worktree to the pool: detached at the default branch, clean, no task file
    and no outcome file (`git clean` keeps excluded files: the next task there would
    first be told about this one's outcome).

    Callers make sure nothing unsaved is in it first (never lose work).
    """

    base = project.default_branch if _has_ref(project.path, project.default_branch) else "HEAD"
    git("checkout", "--quiet", "--force", "--detach", base, cwd=path)
    git("clean", "-fdq", cwd=path)
    workcopy.remove(path)
    for name in OUTCOME_FILES:
        (path / name).unlink(missing_ok=True)
