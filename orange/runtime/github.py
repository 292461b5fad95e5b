"""Pull requests through ``gh`` (a fake on PATH in tests): the adapter `GitHub`, one per
process, handed out by the composition root (`orange.compose.gh`)."""

from __future__ import annotations

import json
import shutil
import subprocess

from orange.engine.gates import section
from orange.engine.ledger import cost_summary
from orange.errors import HookFailed, InvalidInput
from orange.projects import Project
from orange.runtime import workspace
from orange.runtime.git import git, no_git_env
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


# A check run's conclusions (and a status context's states) that mean it failed.
_FAILED = {"FAILURE", "ERROR", "CANCELLED", "TIMED_OUT", "ACTION_REQUIRED", "STARTUP_FAILURE"}
_PASSED = {"SUCCESS", "NEUTRAL", "SKIPPED"}


def checks_mark(rollup: list[object]) -> str:
    """One mark for a pull request's checks (gh's ``statusCheckRollup``): a check run
    has a status and, once completed, a conclusion; a status context has a state."""
    results = set()
    for check in rollup:
        if not isinstance(check, dict):
            continue
        if "state" in check:  # a commit status context
            results.add(str(check["state"]).upper())
        elif str(check.get("status", "")).upper() != "COMPLETED":
            results.add("PENDING")
        else:
            results.add(str(check.get("conclusion", "")).upper())
    if results & _FAILED:
        return "✗"
    if not results:
        return ""
    return "✓" if results <= _PASSED else "⏳"


class GitHub:
    """Pull requests of a project on GitHub, through ``gh``."""

    def pr_state(self, project: Project, url: str) -> str:
        """OPEN, MERGED or CLOSED."""
        return _gh("pr", "view", url, "--json", "state", "--jq", ".state", cwd=project.path).upper()

    def pr_view(self, project: Project, url: str) -> tuple[str, str]:
        """(OPEN, MERGED or CLOSED; the checks: ``✓`` all passed, ``✗`` one failed, ``⏳``
        some still running, '' none) of the pull request at ``url``."""
        out = _gh("pr", "view", url, "--json", "state,statusCheckRollup", cwd=project.path)
        try:
            data = json.loads(out)
            state = str(data["state"]).upper()
            rollup = data.get("statusCheckRollup") or []
        except (ValueError, KeyError, TypeError, AttributeError):
            raise HookFailed(f"gh printed no pull request state (got {out[:80]!r})") from None
        return state, checks_mark(rollup if isinstance(rollup, list) else [])

    def create_pr(self, project: Project, task: Task) -> str:
        """Push the branch and open a PR (title: summary; body: ## Handoff and, when usage
        was recorded, a line of what it cost); returns its URL."""
        if not workspace.has_origin(project.path):
            raise InvalidInput(f"{project.name} has no remote named origin", hint="add one first")
        if shutil.which("gh") is None:
            raise InvalidInput("the GitHub CLI `gh` is not installed", hint="install gh and log in")
        branch = workspace.branch_of(task)
        git("push", "--quiet", "--set-upstream", "origin", f"refs/heads/{branch}", cwd=project.path)
        body = section(task.body, "## Handoff") or task.summary
        spent = cost_summary(task.fields)
        if spent:
            body = f"{body.rstrip()}\n\n{spent}"
        out = _gh(
            "pr",
            "create",
            "--title",
            task.summary or branch,
            "--body",
            body,
            "--head",
            branch,
            "--base",
            workspace.base_of(project, task),
            cwd=project.path,
        )
        url = out.splitlines()[-1].strip() if out else ""
        if not url.startswith("http"):
            raise HookFailed(f"gh did not print a PR url (got {out!r})")
        return url
