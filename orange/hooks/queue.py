"""The ``spawn_next`` hook action: a released worktree starts this host's next queued
task (`orange.engine.localqueue`).  `start_next` serves `orange workspace gc` too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orange.engine import localqueue
from orange.engine.actions import Action, HookContext
from orange.engine.caller import ENGINE
from orange.engine.forgery import verify_new
from orange.engine.trust import trusted_here
from orange.errors import OrangeError
from orange.hooks.workspaces import project_of
from orange.runtime.workspace import PoolFull
from orange.store.events import default_actor

if TYPE_CHECKING:
    from orange.engine.services import Services


class SpawnNext(Action):
    """Start the first task of this host's queue (`orange.engine.localqueue`: created
    or taken here, in the order it entered this clone's ref, not parked) that waits in
    its workflow's queue state (``role: queue``, e.g. pending) in this project under a
    definition trusted here, if a worktree is free.  A teammate's pending task is in
    no queue of this host: it waits until someone takes it (DESIGN §8)."""

    name = "spawn_next"

    def apply(self, ctx: HookContext) -> None:
        project_of(ctx)
        ctx.messages.extend(start_next(ctx.services, skip=ctx.task.id))


def start_next(engine: Services, *, skip: str = "") -> list[str]:
    """Start the next queued task of ``engine``'s project, if a worktree is free (a
    release outside a move, `orange workspace gc`, calls it too); what to say.

    The commits new on the ref since the last verified one are replayed first (a fetch
    of the user's own may have brought them, and no sync or monitor pass has seen them
    yet): a forged step is restored and a legally deleted task's id leaves the queue
    before anything is picked (`orange.engine.forgery.verify_new`)."""
    if engine.project is None:
        return []
    said = verify_new(engine.store, trusted=trusted_here, actor=default_actor()).lines()[:1]
    queue = localqueue.queued(engine.store, engine.store.snapshot(), engine.project.name)
    for candidate in (task_id for task_id in queue if task_id != skip):
        try:
            # The engine starts the next task, whoever's move freed the worktree
            # (an agent may not move another task; spawn_next may).
            outcome = engine.spawn(candidate, caller=ENGINE)
        except PoolFull:
            break
        except OrangeError as exc:
            said.append(f"could not start pending task {candidate}: {exc}")
            continue
        said.append(f"started the next pending task {candidate}")
        said.extend(outcome.messages)
        break
    return said
