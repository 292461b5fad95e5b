"""What the engine's collaborators may ask of the engine that runs them: a hook action
(`orange.engine.actions.HookContext.services`), the claim of a task and the share of its
branch (`orange.engine.claims`), this host's local release of a task.

`orange.engine.engine.Engine` is the one implementation.  Naming the few services here,
below the engine, keeps every collaborator to them (mypy holds an action to this
protocol, not to the whole engine) and keeps the engine above the modules it calls: no
import runs back up to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from orange.engine.caller import Caller
    from orange.engine.decide import Outcome
    from orange.projects import Project
    from orange.store.store import TaskStore
    from orange.store.task import Task


class Services(Protocol):
    @property
    def store(self) -> TaskStore:
        """The project's task store."""

    @property
    def project(self) -> Project | None:
        """The project, when the engine was built for one."""

    @property
    def project_path(self) -> str | None: ...

    def build_prompt(self, task: Task, key: str) -> str:
        """The workflow's prompt ``key`` filled with ``task``'s fields."""

    def set_fields(self, task_id: str, fields: dict[str, Any], event: str, what: str) -> Task:
        """Commit ``fields`` on the task (no move): a hook action's result, say."""

    def record_left(self, task_id: str, holder: Task) -> object:
        """After an agent of the task was ended: commit what its program wrote since
        the task's last usage record, read from the worktree ``holder`` names."""

    def spawn(
        self,
        task_id: str,
        *,
        options: Mapping[str, Any] | None = None,
        caller: Caller | None = None,
    ) -> Outcome:
        """Start a task's agent (a queued task started when a worktree is freed)."""
