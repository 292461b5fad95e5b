"""The frontmatter fields the engine owns, named once.

Only the engine writes these: neither ``orange task update`` nor a hook action
(``increment``, ``set_field``) nor a hand edit in a tasks checkout may change them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from orange.store.store import now_iso
from orange.store.task import Task

BASELINE_FIELD = "gate_baseline"  # fingerprints of gated sections when the state began
RUN_FIELD = "agent_run"  # a token per agent start: deaths are handled once per run
DEAD_FIELD = "dead_run"  # "<run>@<status>": the death last handled

# What a task is (set at creation, never changed) ...
# ``base``: the branch the task's branch starts from and merges into (`task create --base`).
# ``created_at``: when; ``run`` and ``subtask``: the `orange run` a subtask belongs to.
IDENTITY_FIELDS = frozenset(
    {"id", "project", "workflow", "workflow_rev", "base", "created_at", "run", "subtask"}
)
# ... and everything the engine alone changes: the status and its bookkeeping.
# The ledger's totals (`orange.engine.ledger.LEDGER_FIELDS`, named here as text: this
# module is on the hot paths, the ledger's Decimal is not).
ENGINE_FIELDS = IDENTITY_FIELDS | {
    "status",
    BASELINE_FIELD,
    RUN_FIELD,
    DEAD_FIELD,
    "tokens",
    "cost_usd",
    "usage_through",
    "cost_unknown",
}


def baseline(task: Task) -> Mapping[str, str]:
    """The gate-freshness fingerprints recorded when the task entered its state."""
    value = task.fields.get(BASELINE_FIELD)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def run_token() -> str:
    """A new ``agent_run`` value: the time and a few random bytes."""
    return f"{now_iso()}-{os.urandom(3).hex()}"
