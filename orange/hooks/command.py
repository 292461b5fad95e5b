"""The ``run_command`` action: run an argv from the workflow file, no shell."""

from __future__ import annotations

import os
import subprocess

from orange.engine.actions import Action, HookContext
from orange.errors import HookFailed


class RunCommand(Action):
    """Run an argv from the workflow file; task values arrive as environment variables,
    never spliced into the command line."""

    name = "run_command"

    def apply(self, ctx: HookContext) -> None:
        argv = [str(part) for part in ctx.spec.get("argv") or []]  # type: ignore[attr-defined]
        task = ctx.task
        env = dict(os.environ)
        for key, value in task.fields.items():
            if isinstance(value, str | int) and not isinstance(value, bool):
                env[f"ORANGE_TASK_{key.upper()}"] = str(value)
        env["ORANGE_TASK_ID"] = task.id
        env["ORANGE_FROM_STATUS"] = ctx.before.status
        workdir = ctx.services.project_path
        try:
            result = subprocess.run(
                argv, env=env, cwd=workdir, capture_output=True, text=True, timeout=300
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise HookFailed(f"run_command {argv[0]!r} could not run: {exc}") from None
        if result.returncode != 0:
            tail = " ".join(result.stderr.split())[-200:]
            raise HookFailed(f"run_command {argv[0]!r} exited {result.returncode}: {tail}")
