"""Who asks for a change: a human, the engine, or the agent of one task (DESIGN §8).

Orange starts every agent with ``ORANGE_TASK_ID`` and ``ORANGE_AGENT_ROLE`` (``worker``
or ``reviewer``) in its environment.  A command run from such a process is that agent:

- it acts only on its own task (``ORANGE_TASK_ID``): it may not move, ack, cancel,
  delete, merge, request changes on or edit another task;
- it moves its task only along transitions whose ``by:`` lists its role, so a worker
  cannot write its own ``Verdict: PASS`` and take the reviewer's move.

``ORANGE_AGENT_ROLE`` wins over every other variable: ``ORANGE_ACTOR`` or anything else
never turns an agent process into a human.  A role that is neither ``worker`` nor
``reviewer`` (or empty) is still an agent, one that may take no move: a process that
says it is an agent but not which is given the least, never the most.  An agent
without ``ORANGE_TASK_ID`` owns no task.  A command without ``ORANGE_AGENT_ROLE`` is a
human's; the monitor (exit rules, escalation) and ``spawn_next`` act as the engine.

It runs only the commands an agent needs on its own task (`AGENT_COMMANDS`,
`Caller.check_command`): nothing that changes this host's configuration, trust,
projects, hooks, monitor, runs or workspaces.  The CLI asks before it parses a command,
and the permissions Orange writes into a harness's settings allow the same list.

The composition root (`orange.compose`) reads the environment once with `from_env` and
hands the result to the engine; every rule is checked here, in the core.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

from orange.errors import NotPermitted

if TYPE_CHECKING:
    from orange.engine.workflow import Mover, Transition, Workflow
    from orange.store.task import Task

AGENT_ROLES = ("worker", "reviewer")
ROLE_VARIABLE = "ORANGE_AGENT_ROLE"
TASK_VARIABLE = "ORANGE_TASK_ID"

# The commands (their path under `orange`) an agent's process may run, DESIGN §8
# "Agents are confined to their own task": reading tasks, and changing its own along its
# role's moves (`check_own`, `check_move` still hold for each) -- what the shipped
# prompts, skills and stop hooks name -- and the git hooks git runs in the agent's own
# commits and pushes.  Every other command is a human's: it changes this host's trust,
# projects, hooks, monitor, runs or workspaces, starts processes, or acts for a human.
AGENT_COMMANDS: tuple[str, ...] = (
    "task show",
    "task list",
    "task log",
    "task peek",
    "task update",
    "task edit",
    "task complete",
    "task stuck",
    "hook-impl",
)


class Caller(NamedTuple):  # not a dataclass: built on every command (engine.workflow)
    """``kind`` human, engine or agent; an agent has its ``role`` and ``task_id`` as
    its environment gave them (possibly empty)."""

    kind: Literal["human", "engine", "agent"]
    role: str = ""
    task_id: str = ""

    @property
    def mover(self) -> Mover | None:
        """The name ``by:`` lists this caller under (None: an agent of no known role)."""
        if self.kind == "human":
            return "human"
        if self.kind == "engine":
            return "engine"
        if self.role == "worker":
            return "worker"
        return "reviewer" if self.role == "reviewer" else None

    def __str__(self) -> str:
        if self.kind != "agent":
            return "a human" if self.kind == "human" else "the engine"
        role = f"{self.role} agent" if self.mover else f"agent of unknown role {self.role!r}"
        return f"the {role} of task {self.task_id}" if self.task_id else f"a {role} with no task"

    def check_command(self, command: str) -> None:
        """An agent runs only `AGENT_COMMANDS`; ``command`` is its path under
        ``orange`` (``workflow trust``)."""
        if self.kind == "agent" and command not in AGENT_COMMANDS:
            raise NotPermitted(
                f"an agent may not run `orange {command}` ({ROLE_VARIABLE} is set: {self})",
                hint="a human must run it",
            )

    def check_own(self, task_id: str, doing: str) -> None:
        """An agent may ``doing`` (cancel, edit ...) only its own task."""
        if self.kind == "agent" and task_id != self.task_id:
            raise NotPermitted(
                f"{self} may {doing} only its own task, not task {task_id}",
                hint=f"ask a human to {doing} task {task_id}",
            )

    def check_move(self, workflow: Workflow, task: Task, transition: Transition) -> None:
        """The caller may take ``transition`` of ``task`` (its ``by:`` lists it)."""
        self.check_own(task.id, "move")
        mover = self.mover
        if mover is not None and mover in transition.by:
            return
        move = f"{transition.from_} -> {transition.to}"
        message = f"{move} is {_phrase(transition.by)}; {self} may not take it"
        if "human" in transition.by and self.kind != "human":
            command = _command(workflow, task.id, transition.to)
            raise NotPermitted(message, hint=f"ask a human to run: {command}")
        takers = " or ".join(_name(who) for who in transition.by)
        raise NotPermitted(message, hint=f"only {takers} takes it")


def from_env(environ: Mapping[str, str]) -> Caller:
    """The caller a command run with ``environ`` is (see the module docstring)."""
    if ROLE_VARIABLE in environ:
        return Caller("agent", environ[ROLE_VARIABLE].strip(), environ.get(TASK_VARIABLE, ""))
    return HUMAN


HUMAN = Caller("human")
ENGINE = Caller("engine")


def _name(who: str) -> str:
    return {"human": "a human", "engine": "the engine"}.get(who, f"the {who}")


def _phrase(by: tuple[str, ...]) -> str:
    """``a human move``, ``a reviewer or engine move``, ``an engine move``."""
    words = " or ".join(by)
    return f"{'an' if words[:1] in 'aeiou' else 'a'} {words} move"


def _command(workflow: Workflow, task_id: str, to: str) -> str:
    """The command a human runs to take the move to ``to``."""
    if to == workflow.cancelled_state:
        return f"orange task cancel {task_id}"
    if to == workflow.done_state:
        return f"orange task merge {task_id}"
    return f"orange task update {task_id} --status {to}"
