"""The workflow's part of the sync merge (DESIGN §7): which statuses are terminal and
which fields follow a task's status, handed to the store's pure merge.

A definition read here only says which statuses are terminal, from the text committed
in either side's tree; it decides nothing that runs on this host (DESIGN §8).
"""

from __future__ import annotations

from collections.abc import Sequence

import pygit2

from orange.engine.definitions import TreeView, definition_text, parse_committed
from orange.engine.policy import POLICY
from orange.engine.steps import COUNTED
from orange.errors import OrangeError
from orange.store.syncmerge import Plan, Walked, plan
from orange.store.task import Task
from orange.store.taskmerge import Rules

# Read from the one field policy: every field the engine owns besides the status is the
# status's bookkeeping (counts, gate baseline, agent runs, the ledger's totals) and comes
# with it from the side whose status wins; the host's fields are one binding, taken whole.
FOLLOW_STATUS = frozenset(
    {*COUNTED, *(name for name, rule in POLICY.items() if rule.owner == "engine")} - {"status"}
)
BINDING_FIELDS = tuple(name for name, rule in POLICY.items() if rule.owner == "host")


def rules_for(trees: Sequence[pygit2.Tree]) -> Rules:
    """The merge's rules, reading definitions from ``trees`` (the first that has one)."""
    views = [TreeView(tree) for tree in trees]

    def terminal(task: Task) -> bool:
        for view in views:
            try:
                text = definition_text(view, task.workflow, task.str_field("workflow_rev"))
                if text is not None:
                    return parse_committed(text, task.workflow).is_terminal(task.status)
            except (OrangeError, UnicodeDecodeError):
                continue
        return False

    return Rules(terminal=terminal, follow_status=FOLLOW_STATUS, binding=BINDING_FIELDS)


def plan_merge(
    repo: pygit2.Repository,
    ours: pygit2.Commit,
    theirs: pygit2.Commit,
    walked: Walked | None = None,
) -> Plan:
    """How ``theirs`` merges into ``ours``: the same answer on every host (``walked``:
    what the replay's walk over the commits before found, `orange.store.syncmerge`)."""
    return plan(repo, ours, theirs, rules_for((ours.tree, theirs.tree)), walked)
