"""What the engine needs from the runtime, as protocols: the composition root
(`orange.compose`) hands it implementations from `orange.hooks`."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.ledger import Usage


class WorkingCopies(Protocol):
    """The agent's TASK.md working copy in its worktree (provided by the runtime)."""

    def take_in(self, task: Task) -> tuple[str, bool] | None:
        """(body to commit: the working copy merged with the ref, had a conflict), or
        None when the task has no working copy here."""

    def after_write(self, task: Task) -> None:
        """Bring the working copy up to date with the committed task."""


class AgentProbe(Protocol):
    def is_alive(self, task: Task, agent: str) -> bool:
        """Whether the task's agent (``worker`` or ``reviewer`` window) is running."""

    def started(self, task: Task) -> tuple[str, str] | None:
        """From this host's own record of the task: (the agent run it last started,
        the death it handled last as ``<run>@<status>`` or ""); None: no such record
        (then the ref's ``agent_run`` and ``dead_run`` are all there is)."""

    def handled(self, task: Task, death: str) -> None:
        """Record on this host that the death ``<run>@<status>`` was handled."""


class Notice(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """A moment a human is needed: ``event`` is ``waiting`` (the task entered a state
    that waits for a human) or ``attention`` (its ``attention`` was set); ``commit`` is
    the commit that made it so, the key that keeps one event from notifying twice."""

    event: str
    task: Task
    commit: str
    reason: str


class Notifier(Protocol):
    def send(self, notice: Notice) -> None:
        """Tell the human, once per (commit, event), without blocking or failing."""


class UsageSource(Protocol):
    def read(self, task: Task, since: str, until: str) -> Usage | None:
        """What the agent programs recorded for the task's worktree on this host from
        ``since`` to ``until`` (`orange.runtime.usage`); None: no worktree here, or no
        program of the task's harnesses whose usage can be read.  Never raises."""
