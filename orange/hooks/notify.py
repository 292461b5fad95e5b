"""The ``notify`` action: tell the human (terminal bell, desktop, webhook)."""

from __future__ import annotations

import sys

from orange.engine.actions import Action, HookContext
from orange.runtime.notices import Notices


class Notify(Action):
    """Tell the human: terminal bell, a desktop notification, the configured webhook
    (`orange.runtime.notices`).

    Never blocks a move and never fails one: the desktop and webhook are sent from a
    detached child process, every channel best effort.
    """

    name = "notify"

    def __init__(self, notices: Notices) -> None:
        self.notices = notices

    def apply(self, ctx: HookContext) -> None:
        task = ctx.task
        text = str(ctx.spec.get("message") or "")
        text = text or f"task {task.id} is now {task.status}: {task.summary}"
        if sys.stderr.isatty():
            sys.stderr.write("\a")
            sys.stderr.flush()
        try:
            self.notices.tell("notify", task, text)
        except OSError:  # no process could be started: the move stands
            pass
