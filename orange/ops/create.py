"""Creating a task and starting its agent (``orange task create``).

The harnesses are checked before anything is written (an unknown harness or effort
creates nothing).  Then the task is created, and its agent started unless the caller
says not to or the task starts in a state that waits for a human.  A full pool is not
a failure: the task waits in its queue state for ``spawn_next``.  Any other spawn
failure leaves the task where it was created, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from orange.engine import dependencies
from orange.engine.catalog import load_named
from orange.engine.decide import Outcome, can_start
from orange.engine.engine import Engine
from orange.engine.ledger import BUDGET, budget_text
from orange.engine.tasks import create_task, initial_status
from orange.errors import InvalidInput, OrangeError
from orange.runtime import harness as harnesses
from orange.runtime.workspace import PoolFull, check_base
from orange.store.task import Task


@dataclass(frozen=True)
class Harnesses:
    """The agents of a new task: worker and reviewer harness, and their effort."""

    worker: str = ""
    reviewer: str = ""
    effort: str = ""
    review_effort: str = ""


@dataclass(frozen=True)
class Launch:
    """A created task (as created) and what became of starting it: ``started`` (the
    spawn's outcome), ``queued`` (why it waits for a workspace) or ``error`` (why it
    did not start); all None when it was not to be started.  ``waiting``: the tasks
    named with ``after`` not merged yet (it starts when they are)."""

    created: Task
    started: Outcome | None = None
    queued: str | None = None
    error: str | None = None
    waiting: tuple[str, ...] = ()  # the tasks it waits for (``after``), not started yet


def create_and_spawn(
    engine: Engine,
    *,
    summary: str,
    branch: str | None = None,
    context: str | None = None,
    status: str | None = None,
    agents: Harnesses = Harnesses(),
    spawn: bool = True,
    base: str | None = None,
    offline: bool = False,
    after: list[str] | None = None,
    budget: str | None = None,
    agents_elsewhere: bool = False,
) -> Launch:
    """Create a task in ``engine``'s project, then start its agent (``spawn``); its
    branch starts from ``base`` (checked to exist, after a fetch) when given; it waits
    for the tasks ``after`` names (ids or prefixes, refused when unknown); ``budget``:
    the dollars its recorded cost may reach (`orange.engine.ledger`)."""
    if engine.project is None:
        raise InvalidInput("a task is created in a registered project")
    workflow = load_named(engine.project.workflow)
    will_spawn = spawn and can_start(workflow, initial_status(workflow, status, summary))
    # A task another host starts runs that host's agents: checked there, not here.
    worker, reviewer = (
        (agents.worker, agents.reviewer)
        if agents_elsewhere
        else _check_harnesses(agents, will_spawn)
    )
    if base is not None:
        check_base(engine.project, base, [])  # a fetch that fails: the local refs decide
    extra: dict[str, object] = {"effort": agents.effort, "review_effort": agents.review_effort}
    extra |= {"base": base, "after": _dependencies(engine, after)}
    # The task's own budget, else the project's default (`orange project update --budget`).
    extra[BUDGET] = budget_text(budget) if budget is not None else engine.project.budget or None
    task = create_task(
        engine.store,
        engine.project,
        workflow,
        summary=summary,
        branch=branch,
        context=context,
        status=status,
        harness=worker,
        review_harness=reviewer,
        extra={key: value for key, value in extra.items() if value},
        park=not spawn,
    )
    if not will_spawn:
        return Launch(task)
    waiting = dependencies.unmerged(engine.store.snapshot(), task)
    if waiting:
        return Launch(task, waiting=tuple(waiting))
    try:
        outcome = engine.spawn(task.id, options={"offline": offline})
    except PoolFull as exc:
        return Launch(task, queued=exc.message)
    except OrangeError as exc:
        return Launch(task, error=str(exc))
    return Launch(task, started=outcome)


def _dependencies(engine: Engine, after: list[str] | None) -> list[str] | None:
    """The full ids of the tasks a new task waits for (None: none)."""
    if not after:
        return None
    name = engine.project.name if engine.project is not None else None
    return dependencies.resolve(engine.store, engine.store.snapshot(), after, project=name)


def _check_harnesses(agents: Harnesses, will_spawn: bool) -> tuple[str, str]:
    """The worker and reviewer harness names, each checked to exist (and to take the
    effort asked for) before anything is written."""
    worker = harnesses.resolve(agents.worker or None).name if agents.worker or will_spawn else ""
    reviewer = harnesses.review_name(agents.reviewer or None, worker) if worker else agents.reviewer
    if reviewer:
        harnesses.resolve(reviewer)
    if worker and agents.effort:
        harnesses.resolve(worker).check_effort(agents.effort)
    elif agents.effort:  # the harness is chosen when the task starts
        harnesses.check_some_effort(agents.effort)
    if reviewer and agents.review_effort:
        harnesses.resolve(reviewer).check_effort(agents.review_effort)
    elif agents.review_effort:
        harnesses.check_some_effort(agents.review_effort)
    return worker, reviewer
