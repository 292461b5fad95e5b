"""The hook actions that reach the project's remote: ``push_branch``,
``delete_remote_branch`` (both with a full ``refs/heads/`` name, never a pattern) and
``create_pr`` (through `gh`, `orange.runtime.github`)."""

from __future__ import annotations

from orange.engine.actions import Action, HookContext
from orange.errors import HookFailed
from orange.hooks.workspaces import project_of
from orange.runtime import workspace
from orange.runtime.git import git
from orange.runtime.github import GitHub


class PushBranch(Action):
    name = "push_branch"

    def apply(self, ctx: HookContext) -> None:
        project = project_of(ctx)
        if not workspace.has_origin(project.path):
            raise HookFailed("no remote named origin to push to")
        branch = workspace.branch_of(ctx.task)
        git("push", "--quiet", "origin", f"refs/heads/{branch}", cwd=project.path)


class DeleteRemoteBranch(Action):
    name = "delete_remote_branch"

    def apply(self, ctx: HookContext) -> None:
        project = project_of(ctx)
        ref = f"refs/heads/{workspace.branch_of(ctx.task)}"  # a full ref: never a pattern
        if not workspace.has_origin(project.path):
            return
        if not git("ls-remote", "origin", ref, cwd=project.path):
            return
        git("push", "--quiet", "origin", "--delete", ref, cwd=project.path)


class CreatePr(Action):
    name = "create_pr"

    def __init__(self, gh: GitHub) -> None:
        self.gh = gh

    def apply(self, ctx: HookContext) -> None:

        url = self.gh.create_pr(project_of(ctx), ctx.task)
        ctx.services.set_fields(ctx.task.id, {"pr_url": url}, "task.updated", "pr_url")
        ctx.say(f"opened {url}")
