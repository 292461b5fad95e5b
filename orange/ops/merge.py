"""``orange task merge`` (seed 001 "The Merge Command"): merge, then move to done.

The command is the engine's caller, not a hook: it does the merge (or sees that the PR
was merged on GitHub), pushes the default branch, then asks the engine for the move to
``done``, whose hooks release the worktree, delete the remote branch and start the
next task.
"""

from __future__ import annotations

from pathlib import Path

from orange.engine import requests
from orange.engine.decide import Outcome
from orange.engine.engine import Engine
from orange.errors import IllegalTransition, InvalidInput
from orange.projects import Project
from orange.runtime import bindings, workspace
from orange.runtime.conflicts import against_base
from orange.runtime.git import GitFailed, git, git_ok
from orange.runtime.github import GitHub
from orange.runtime.snapshots import unsaved_work
from orange.store.task import Task

STRATEGIES = ("ff", "merge")


def merge_task(
    engine: Engine,
    project: Project,
    task: Task,
    *,
    strategy: str | None,
    local: bool,
    force: bool,
    gh: GitHub | None,
) -> Outcome:
    """Merge ``task`` (``local``: its branch here, pushed; else its pull request must
    be merged, read through ``gh``) and finish it."""
    if strategy is not None and strategy not in STRATEGIES:
        raise InvalidInput(f"unknown strategy {strategy!r}", hint="use --strategy ff or merge")
    done = engine.workflow(task).done_state
    if done is None or not engine.has_transition(task, done):
        targets = ", ".join(engine.workflow(task).targets_from(task.status))
        raise InvalidInput(
            f"task {task.id} is {task.status}; it cannot be merged from there",
            hint=f"from {task.status} it can go to: {targets or 'nowhere'}",
        )
    requests.check_may_move(engine, task, done, doing="merge")  # before git is touched
    _check_worktree(project, task, force=force)
    if task.str_field("pr_url") and not local:
        assert gh is not None, "a merge through a pull request reads it through gh"
        messages = _merged_on_github(gh, project, task.str_field("pr_url"))
    else:
        into = workspace.base_of(project, task)  # the task's base, else the default branch
        _refuse_conflict(engine, project, task)
        messages = [merge_locally(project, task.branch, strategy, into)]
        if workspace.has_origin(project.path):
            git("push", "--quiet", "origin", f"refs/heads/{into}", cwd=project.path)
            messages.append(f"pushed {into} to origin")
    outcome = requests.finish(engine, task.id, options={"force": force})
    outcome.messages[:0] = messages
    return outcome


def _refuse_conflict(engine: Engine, project: Project, task: Task) -> None:
    """A branch that would conflict with the branch it merges into is refused, in one
    line naming the files, before anything is merged."""
    clash = against_base(engine.store, project, task)
    if clash is not None:
        raise InvalidInput(
            f"task {task.id} would conflict with {clash.text(most=10)}",
            hint=f"`orange task rebase {task.id}` has its agent bring the branch up to date "
            f"and resolve them, or merge {clash.branch} into {task.branch} yourself",
        )


def rebase_task(engine: Engine, project: Project, task: Task) -> Outcome:
    """``orange task rebase``: send the task back to its agent (alive, or respawned by
    the move's hooks) to bring its branch up to date with the branch it merges into and
    resolve the conflicts, then return to review: a human's request for changes
    (`requests.request_changes`) whose message says so."""
    workflow = engine.workflow(task)
    if workflow.request_changes_target(task.status) is None:
        raise IllegalTransition(
            f"task {task.id} is {task.status}; only a task waiting for a person "
            "(in review, or stuck) can be sent back to bring its branch up to date",
            hint=f"see where it stands with `orange task show {task.id}`",
        )
    base = workspace.base_of(project, task)
    clash = against_base(engine.store, project, task)
    where = f" on {clash.file_list(most=50)}" if clash else ""
    message = (
        f"Bring branch {task.branch} up to date with {base}: in your worktree run "
        f"`git merge {base}` (or rebase onto it), resolve the conflicts{where}, run the "
        "tests and commit.  Then update ## Handoff and move the task back to review."
    )
    return requests.request_changes(engine, task.id, message)


def _check_worktree(project: Project, task: Task, *, force: bool) -> None:
    """The task's worktree holds its branch, and (unless ``force``) no unsaved work."""
    worktree = bindings.workspace_of(task)
    if worktree is None or not worktree.is_dir():
        return
    current = git("symbolic-ref", "--quiet", "--short", "HEAD", cwd=worktree, check=False)
    if current and current != task.branch:
        # Merging task.branch would leave the work on `current` behind (and the
        # release would then refuse over it, after main had already moved).
        raise InvalidInput(
            f"the worktree of task {task.id} is on branch {current}, not {task.branch}",
            hint=f"adopt it with `orange task update {task.id} --branch` run there "
            f"(ORANGE_TASK_ID={task.id}), or `--branch {current}`, then merge again",
        )
    dirty = "" if force else unsaved_work(project, worktree, task.branch, commits=False)
    if dirty:
        raise InvalidInput(
            f"task {task.id} has {dirty} in {worktree}",
            hint="commit them first, or pass --force to snapshot them",
        )


def _merged_on_github(gh: GitHub, project: Project, url: str) -> list[str]:
    """The task's pull request must be merged; then the default branch is fetched."""
    state = gh.pr_state(project, url)
    if state == "OPEN":
        raise InvalidInput(
            f"the pull request {url} is still open",
            hint="merge it on GitHub first, or merge locally with --local",
        )
    if state != "MERGED":
        raise InvalidInput(
            f"the pull request {url} is {state.lower()}",
            hint="reopen it, or merge locally with --local",
        )
    messages = [f"pull request merged on GitHub: {url}"]
    if workspace.has_origin(project.path):
        _try_fetch(project, messages)
    return messages


def _try_fetch(project: Project, messages: list[str]) -> None:
    try:
        git("fetch", "--quiet", "origin", cwd=project.path)
    except GitFailed as exc:
        messages.append(f"warning: could not fetch origin: {exc.message}")


def merge_locally(
    project: Project, branch: str, strategy: str | None, into: str | None = None
) -> str:
    """Merge ``branch`` into ``into`` (the default branch); returns what was done."""
    repo = project.path
    default = into or project.default_branch
    if not git_ok("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", cwd=repo):
        raise InvalidInput(f"branch {branch} does not exist here", hint="nothing to merge")
    target = f"refs/heads/{default}"
    if not git_ok("rev-parse", "--verify", "--quiet", target, cwd=repo):
        raise InvalidInput(f"the branch to merge into, {default}, does not exist here")
    old = git("rev-parse", target, cwd=repo)
    tip = git("rev-parse", f"refs/heads/{branch}", cwd=repo)
    if git_ok("merge-base", "--is-ancestor", tip, old, cwd=repo):
        return f"{branch} is already merged into {default}"
    can_ff = git_ok("merge-base", "--is-ancestor", old, tip, cwd=repo)
    fast_forward = strategy == "ff" or (strategy is None and can_ff)
    if fast_forward and not can_ff:
        raise InvalidInput(
            f"{default} cannot be fast-forwarded to {branch} (they have diverged)",
            hint="use --strategy merge, or rebase the branch",
        )
    message = f"Merge branch '{branch}'"
    checkout = workspace.checked_out_in(project, default)
    if checkout is not None:
        return _merge_in_checkout(checkout, branch, default, fast_forward, message)
    if fast_forward:
        git("update-ref", "-m", f"orange: fast-forward to {branch}", target, tip, old, cwd=repo)
        return f"fast-forwarded {default} to {branch}"
    result = git("merge-tree", "--write-tree", "--no-messages", old, tip, cwd=repo, check=False)
    tree = result.splitlines()[0] if result else ""
    if not tree or len(result.splitlines()) > 1:
        raise InvalidInput(
            f"{branch} does not merge cleanly into {default}",
            hint="merge or rebase it in the task's worktree first",
        )
    commit = git("commit-tree", tree, "-p", old, "-p", tip, "-m", message, cwd=repo)
    git("update-ref", "-m", f"orange: merge {branch}", target, commit, old, cwd=repo)
    return f"merged {branch} into {default} ({commit[:10]})"


def _merge_in_checkout(
    checkout: Path, branch: str, default: str, fast_forward: bool, message: str
) -> str:
    if git("status", "--porcelain", "--untracked-files=no", cwd=checkout):
        raise InvalidInput(
            f"{default} is checked out in {checkout} with uncommitted changes",
            hint="commit or stash them, then merge again",
        )
    if fast_forward:
        git("merge", "--quiet", "--ff-only", f"refs/heads/{branch}", cwd=checkout)
        return f"fast-forwarded {default} to {branch} in {checkout}"
    try:
        git("merge", "--quiet", "--no-ff", "-m", message, f"refs/heads/{branch}", cwd=checkout)
    except GitFailed:
        git("merge", "--abort", cwd=checkout, check=False)
        raise InvalidInput(
            f"{branch} does not merge cleanly into {default}",
            hint="merge or rebase it in the task's worktree first",
        ) from None
    return f"merged {branch} into {default} in {checkout}"
