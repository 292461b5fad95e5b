"""Pull requests through ``gh`` (a fake on PATH in tests)."""

from __future__ import annotations

import shutil
import subprocess

from orange.engine.gates import section
from orange.errors import HookFailed, InvalidInput
from orange.hooks import workspace
from orange.hooks.git import git, no_git_env
from orange.projects import Project
from orange.store.task import Task


def _gh(*args: str, cwd: str) -> str:
    if shutil.which("gh") is None:
        raise InvalidInput("the GitHub CLI `gh` is not installed", hint="install gh and log in")
    result = subprocess.run(
        ["gh", *args], cwd=cwd, env=no_git_env(), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        tail = " ".join(result.stderr.split())[-300:]
        raise HookFailed(f"`gh {args[0]} {args[1] if len(args) > 1 else ''}` failed: {tail}")
    return result.stdout.strip()


def pr_state(project: Project, url: str) -> str:
    """OPEN, MERGED or CLOSED."""
    return _gh("pr", "view", url, "--json", "state", "--jq", ".state", cwd=project.path).upper()


def create_pr(project: Project, task: Task) -> str:
    """Push the branch and open a PR (title: summary; body: ## Handoff); returns its URL."""
    if not workspace.has_origin(project.path):
        raise InvalidInput(f"{project.name} has no remote named origin", hint="add one first")
    if shutil.which("gh") is None:
        raise InvalidInput("the GitHub CLI `gh` is not installed", hint="install gh and log in")
    git(
        "push", "--quiet", "--set-upstream", "origin", f"refs/heads/{task.branch}", cwd=project.path
    )
    body = section(task.body, "## Handoff") or task.summary
    out = _gh(
        "pr",
        "create",
        "--title",
        task.summary or task.branch,
        "--body",
        body,
        "--head",
        task.branch,
        "--base",
        workspace.base_of(project, task),
        cwd=project.path,
    )
    url = out.splitlines()[-1].strip() if out else ""
    if not url.startswith("http"):
        raise HookFailed(f"gh did not print a PR url (got {out!r})")
    return url
