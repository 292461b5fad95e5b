"""The hook actions that bind and release a pool worktree (DESIGN §4, §5): binding
checks the branch out and makes the worktree ready (`orange.runtime.ready`) before the
move is committed; releasing tears it down and resets it after the agent is stopped."""

from __future__ import annotations

import os
from typing import Any

from orange.engine.actions import Action, HookContext, NotReady
from orange.errors import HookFailed, OrangeError
from orange.home import host_name
from orange.projects import Project
from orange.runtime import bindings, ready, settingup, snapshots, workcopy, workspace
from orange.runtime import harness as harnesses
from orange.store.task import Task


def project_of(ctx: HookContext) -> Project:
    if ctx.services.project is None:
        raise HookFailed("this action needs a registered project")
    return ctx.services.project


class AcquireWorkspace(Action):
    name = "acquire_workspace"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        project = project_of(ctx)
        task = ctx.task
        assert ctx.snapshot is not None
        if task.project != project.name:
            raise HookFailed(f"task {task.id} names project {task.project!r}, not {project.name}")
        choice = workspace.choose(ctx.snapshot, project, task)
        workspace.ensure_worktree(project, choice.path)
        base = workspace.base_of(project, task)
        workspace.checkout_branch(project, choice.path, task.branch, ctx.messages, base)
        excludes = (workcopy.COPY, workcopy.ALT_COPY, *harnesses.EXCLUDES)
        workspace.add_excludes(project, excludes)
        bound = task.with_fields(workspace=choice.name, host=host_name())
        workcopy.write_fresh(bound, choice.path)
        if workcopy.copy_name(choice.path) != workcopy.COPY:
            ctx.say(
                f"note: {project.name} tracks its own TASK.md; Orange's task file in "
                f"{choice.name} is {workcopy.ALT_COPY}"
            )
        for name in {task.str_field("harness"), task.str_field("review_harness")} - {""}:
            try:
                harnesses.resolve(name).setup(choice.path)
            except OrangeError:
                pass  # spawning reports a missing harness with its own clear error
        if bindings.workspace_of(task) is None:  # newly bound: made ready first
            readying(project, task, choice)
        # Recorded before the commit, under the store's lock, so the next task's choice
        # sees the worktree taken; a move that is then not committed leaves a record
        # the ref does not agree with, which counts for nothing (`bindings`).
        bindings.record(task.project, task.id, workspace=choice.name)
        return {"workspace": choice.name, "host": host_name()}

    def apply(self, ctx: HookContext) -> None:
        settingup.clear(ctx.task.project, ctx.task.id)  # committed: no longer setting up


def readying(project: Project, task: Task, choice: workspace.Choice) -> None:
    """Unless this process already made the slot ready for the task, mark it as being
    set up (the slot stays taken while the lock is let go) and have the engine run the
    setup outside the lock (`NotReady`), then compute the move again."""
    mark = settingup.read(project.name, task.id)
    if mark is not None and mark.ready and (mark.workspace, mark.pid) == (choice.name, os.getpid()):
        return
    if not ready.needs_readying(project, choice.name):
        return
    settingup.write(project.name, settingup.Mark(task.id, choice.name, os.getpid()))
    raise NotReady(
        lambda: ready.make_ready(project, task.id, choice.name, choice.path),
        lambda: ready.undo(project, task.id, choice.path),
    )


class ReleaseWorkspace(Action):
    """Unbind the worktree; never spawns; never loses work (DESIGN §5)."""

    name = "release_workspace"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        # Only a worktree this host bound: a `workspace` from the ref alone is never
        # reset (the field is cleared, nothing on disk is touched).
        path = bindings.workspace_of(ctx.before)
        if path is None or not path.is_dir():
            return {"workspace": None} if ctx.before.str_field("workspace") else {}

        project = project_of(ctx)
        base = workspace.base_of(project, ctx.before)
        unsaved = snapshots.unsaved_work(project, path, ctx.before.branch, base=base)
        if unsaved:
            if not ctx.options.get("force"):
                raise HookFailed(
                    f"task {ctx.before.id} has unsaved work in {path}: {unsaved}",
                    # `task update` has no --force: name the commands that have one.
                    hint=f"commit and merge or push it; `orange task cancel {ctx.before.id} "
                    f"--force` or `orange task merge {ctx.before.id} --force` saves it under "
                    f"refs/orange/snapshots/{ctx.before.id}/ first",
                )
            ref = snapshots.save(project, path, ctx.before)
            ctx.say(
                f"saved the work of task {ctx.before.id} as {ref} "
                f"(restore it with `orange task restore {ctx.before.id}`)"
            )
        return {"workspace": None}

    def apply(self, ctx: HookContext) -> None:
        path = bindings.workspace_of(ctx.before)
        failed = None
        if path is not None and path.is_dir():
            # After the agent is stopped (kill_session comes first), before the reset;
            # a failure is reported (attention) once the release is done.
            failed = ready.tear_down(project_of(ctx), ctx.before.id, path)
            workspace.reset(project_of(ctx), path)
        bindings.record(ctx.before.project, ctx.before.id, workspace="")
        if failed:
            raise HookFailed(f"{failed}; workspace {path and path.name} was released anyway")
