"""The hook-action registry: workflow action names → small objects (STYLE §7).

An action runs in two phases (DESIGN §4):

- ``prepare`` runs before the status is written, inside the store's write lock.  It
  checks what it needs and prepares what is reversible, returning frontmatter fields to
  commit with the move (a workspace binding, an incremented counter).  Raising rejects
  the move and nothing is written.  It may run more than once for one move (the write
  is retried when the ref moved), so it must be idempotent.
- ``apply`` runs after the write.  A failure there does not roll back the move: the
  engine records it in ``attention``.

The engine is handed its registry by the composition root (`orange.compose`); it never
looks the runtime up.  The actions that touch the world (worktrees, tmux, gh, notify,
run_command) live in `orange.hooks`.  Every action is idempotent: nothing to do is
success.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from orange.engine.actionspec import ACTION_PARAMS
from orange.engine.fields import ENGINE_FIELDS
from orange.errors import HookFailed

if TYPE_CHECKING:
    from orange.engine.services import Services
    from orange.engine.workflow import HookSpec, Workflow
    from orange.store.store import C, Snapshot, TaskStore
    from orange.store.task import Task


class HookContext:
    """What an action sees.  In ``prepare``, ``task`` is the task as it will be
    committed so far; in ``apply``, the task as committed.  Of the engine that runs it,
    an action sees only ``services`` (`Services`: its store and project, prompts, a
    field write, a spawn), never the engine itself.  (A plain class, built on every
    move: see `orange.store.events.Change`.)"""

    __slots__ = (
        "before",
        "deferred",
        "messages",
        "options",
        "services",
        "snapshot",
        "spec",
        "task",
        "workflow",
    )

    def __init__(
        self,
        services: Services,
        spec: HookSpec,
        workflow: Workflow,
        before: Task,
        task: Task,
        options: Mapping[str, Any] | None = None,
        snapshot: Snapshot | None = None,
        messages: list[str] | None = None,
        deferred: list[Callable[[], None]] | None = None,
    ) -> None:
        self.services, self.spec, self.workflow = services, spec, workflow
        self.before, self.task = before, task
        self.options: Mapping[str, Any] = {} if options is None else options
        self.snapshot = snapshot
        self.messages: list[str] = [] if messages is None else messages
        self.deferred: list[Callable[[], None]] = [] if deferred is None else deferred

    def say(self, message: str) -> None:
        """A line for the user (the CLI prints it)."""
        self.messages.append(message)

    def defer(self, effect: Callable[[], None]) -> None:
        """Run ``effect`` after every other effect of this move and its records — for an
        effect that ends the calling process (an agent killing its own window)."""
        self.deferred.append(effect)


class NotReady(Exception):  # a request to the engine, not an error: never reaches a user
    """Raised by an action's ``prepare`` when the move needs work done before its commit
    that must not hold the store's write lock (a new worktree's setup commands, which may
    take minutes): the engine leaves the lock, calls ``ready`` — which either makes the
    next ``prepare`` pass or raises, having undone what it prepared, to reject the move
    with nothing written — and computes the move again (`commit_when_ready`); ``undo``
    takes back what ``ready`` did if the move is then not committed after all."""

    def __init__(self, ready: Callable[[], None], undo: Callable[[], None]) -> None:
        super().__init__("not ready")
        self.ready = ready
        self.undo = undo


_READY_TRIES = 3  # a second NotReady after `ready` means the ref moved meanwhile


def commit_when_ready(store: TaskStore, compute: Callable[[Snapshot], C]) -> C:
    """``store.commit(compute)``, doing between tries the work an action asked for with
    `NotReady`, outside the lock (one task's setup never stops every other writer)."""
    undo: list[Callable[[], None]] = []
    try:
        for _ in range(_READY_TRIES):
            try:
                return store.commit(compute)
            except NotReady as pending:
                undo.append(pending.undo)
                pending.ready()
        raise HookFailed("the move kept needing its worktree made ready; try again")
    except BaseException:
        for step in reversed(undo):
            step()
        raise


class LocalRelease(Protocol):
    """Handed to the engine by the composition root, like the registry: undoes this
    host's own recorded bindings of a task (kills its recorded tmux session, releases
    its recorded worktree) and says what it did.  Used by a human's cancel of a task
    whose definition is not trusted here, which runs none of that definition's hooks."""

    def __call__(self, engine: Services, task: Task, *, force: bool) -> list[str]: ...


class Action:
    """Base action: no preparation, no effect."""

    name = ""

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        return {}

    def apply(self, ctx: HookContext) -> None:
        return None


class Increment(Action):
    name = "increment"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        name = str(ctx.spec.get("field"))
        _check_writable(name)
        if ctx.task.fields.get(name) != ctx.before.fields.get(name):
            return {}  # already incremented in this move (a retried write)
        return {name: ctx.before.int_field(name) + 1}


class Reset(Action):
    """Set a counter back to 0 (a human's request for changes starts a new review
    cycle: ``review_round`` counts from 1 again)."""

    name = "reset"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        name = str(ctx.spec.get("field"))
        _check_writable(name)
        return {name: 0}


class SetField(Action):
    name = "set_field"

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        name = str(ctx.spec.get("field"))
        _check_writable(name)
        return {name: ctx.spec.get("value")}


def _check_writable(name: str) -> None:
    if name in ENGINE_FIELDS:
        raise HookFailed(f"a hook may not set {name!r}")


class Registry:
    """Action name → action, for exactly the names of `ACTION_PARAMS` (the vocabulary
    the loader checks workflows against), so a name can never be valid in a workflow
    and missing at run time."""

    def __init__(self, actions: Mapping[str, Action]) -> None:
        missing = sorted(ACTION_PARAMS.keys() - actions.keys())
        unknown = sorted(actions.keys() - ACTION_PARAMS.keys())
        if missing or unknown:
            raise ValueError(f"registry: missing actions {missing}, unknown actions {unknown}")
        self._actions = dict(actions)

    def get(self, name: str) -> Action:
        try:
            return self._actions[name]
        except KeyError:
            raise HookFailed(f"unknown hook action {name!r}") from None

    def names(self) -> set[str]:
        return set(self._actions)

    def replace(self, **actions: Action) -> Registry:
        return Registry({**self._actions, **actions})


class DeferredRegistry(Registry):
    """A registry whose table is built the first time an action is asked for: a move
    that runs no hook action (most of an agent's moves) never builds it."""

    def __init__(self, build: Callable[[], Registry]) -> None:
        self._build = build
        self._built: Registry | None = None

    def _table(self) -> Registry:
        if self._built is None:
            self._built = self._build()
        return self._built

    def get(self, name: str) -> Action:
        return self._table().get(name)

    def names(self) -> set[str]:
        return self._table().names()

    def replace(self, **actions: Action) -> Registry:
        return self._table().replace(**actions)


# The actions the engine provides itself: they only compute fields.  Every other name
# of `ACTION_PARAMS` is the runtime's (`orange.hooks.registry`).
ENGINE_ACTIONS: Mapping[str, Callable[[], Action]] = {
    "increment": Increment,
    "set_field": SetField,
    "reset": Reset,
}
