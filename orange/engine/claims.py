"""Claiming a task before its agent starts: one task, one runner (DESIGN §7).

On a project with a sync remote, a move that binds a task to this host (a spawn, a
``pending -> planning`` whose hooks start an agent) is committed first, then claimed —
its binding commit pushed to the remote — and only then carried out.  The claim is a
collaborator the composition root hands the engine (`orange.sync.claim`): the engine
knows only this protocol.  A claim that lost to another host's leaves the task bound
there: the engine carries out nothing (the claim released what this host took) and
says so.  A claim that cannot be made refuses the start (the claim undid it).

Task branches travel too: a move into a state that waits for a human pushes the task's
branch to the sync remote (`BranchShare`, also handed in), after the move's effects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from orange.engine import localqueue
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.decide import Outcome
    from orange.engine.services import Services
    from orange.engine.workflow import Workflow

OFFLINE = "offline"  # the move's option: start without a claim


class Claim(Protocol):
    def __call__(self, engine: Services, task: Task, commit: str) -> str | None:
        """Claim ``task`` (as committed by ``commit``) for this host: None when it is
        this host's (or the project has no sync remote); a line saying where it runs
        when another host claimed it first.  Raises, the start undone, when the remote
        cannot be reached."""


class BranchShare(Protocol):
    def __call__(self, engine: Services, task: Task) -> str | None:
        """Push ``task``'s branch to the sync remote, never forced; a warning line
        when that failed (never an error: the move stands)."""


def share_waiting(
    share: BranchShare | None, engine: Services, workflow: Workflow, before: Task, after: Task
) -> str | None:
    """A task that entered a state waiting for a human has its branch pushed, so a
    teammate can review, diff and merge it; what went wrong, to say."""
    if share is None or before.status == after.status:
        return None
    if not workflow.waits_for_human(after.status) or not after.branch:
        return None
    return share(engine, after)


def binds(before: Task, after: Task) -> bool:
    """Whether a move binds the task anew: a workspace or host it did not have."""
    if not after.str_field("workspace"):
        return False
    return (before.str_field("workspace"), before.str_field("host")) != (
        after.str_field("workspace"),
        after.str_field("host"),
    )


def claimed(
    claim: Claim | None,
    engine: Services,
    before: Task,
    after: Task,
    commit: str | None,
    options: Mapping[str, Any],
    outcome: Outcome,
) -> bool:
    """Claim a move that binds the task; False (said in ``outcome``) when it lost.  A
    binding this host made and kept puts the task in this host's queue (`localqueue`):
    should it return to its queue state, this host may start it again."""
    if commit is None or not binds(before, after):
        return True
    if claim is not None and not options.get(OFFLINE):
        lost = claim(engine, after, commit)
        if lost is not None:
            outcome.messages.append(lost)
            outcome.task = engine.store.get(after.id)
            return False
    localqueue.enter(engine.store, after.id)
    return True
