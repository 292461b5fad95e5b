"""Which task keys the dashboard offers for a task (seed 001 "Keybinding Adaptation").

Computed from the task's workflow — its status roles, its moves and who may take
them — never from status names, and only moves a human may take.
"""

from __future__ import annotations

from typing import NamedTuple

from orange.dashboard.rows import Row
from orange.engine.decide import can_start
from orange.engine.workflow import Workflow
from orange.hosts.holdings import served
from orange.hosts.roster import by_reported

# Task keys (shown only where the selected task's workflow has the move) and views.
TASK_KEYS = (
    ("m", "merge"),
    ("x", "cancel"),
    ("r", "request_changes"),
    ("a", "ack"),
    ("d", "delete"),
    ("p", "pr"),
    ("h", "to_host"),
)
VIEW_KEYS = (
    ("v", "task"),
    ("l", "log"),
    ("o", "output"),
    ("D", "diff"),
    ("w", "pool"),
    ("t", "tree"),
    ("s", "stats"),
)


class Key(NamedTuple):
    key: str  # the Textual key name
    action: str  # the app's action
    label: str


def _human_move(workflow: Workflow, status: str, to: str | None) -> bool:
    return to is not None and "human" in workflow.movers(status, to)


def task_keys(
    workflow: Workflow | None, row: Row, agent: str, *, has_branch: bool = True
) -> list[Key]:
    """The keys for ``row`` (its agent's state ``agent``: ``alive``, ``exited ...``,
    ``no agent`` or '' when this host runs none; ``has_branch``: its branch exists
    here, so a PR can be made of it)."""
    if workflow is None or row.task is None:
        return []  # broken or unreadable: only looked at here
    to_host = Key("h", "to_host", "run on host")
    if row.host:  # bound on another host: attached to over SSH where it is registered
        if workflow.is_terminal(row.status):
            return []
        remote = [Key("enter", "attach", "attach")] if by_reported(row.host) else []
        return [*remote, to_host] if served(row.project) else remote
    status = row.status
    keys: list[Key] = []
    enter = enter_action(workflow, row, agent)
    if enter is not None:
        keys.append(Key("enter", enter, enter))
        if served(row.project):  # start it, or move it, there
            keys.append(to_host)
    if _human_move(workflow, status, workflow.done_state):
        keys.append(Key("m", "merge", "merge"))
    if workflow.request_changes_target(status) is not None:
        keys.append(Key("r", "request_changes", "request changes"))
    if _human_move(workflow, status, workflow.cancelled_state):
        keys.append(Key("x", "cancel", "cancel"))
    if row.attention:
        keys.append(Key("a", "ack", "acknowledge"))
    if row.task.str_field("pr_url") and not workflow.is_terminal(status):
        keys.append(Key("p", "pr", "open PR"))
    elif has_branch and not workflow.is_terminal(status):  # no branch yet: nothing to push
        keys.append(Key("p", "pr", "create PR"))
    if workflow.is_terminal(status):
        keys.append(Key("d", "delete", "delete"))
    return keys


def enter_action(workflow: Workflow, row: Row, agent: str) -> str | None:
    """``attach`` a live agent, ``respawn`` a dead one its state can restart, ``spawn``
    a task whose state starts an agent and that has none here; else None."""
    if row.task is None or workflow.is_terminal(row.status):
        return None
    if agent == "alive":
        return "attach"
    state = workflow.states.get(row.status)
    if agent and state is not None and state.respawn_prompt:
        return "respawn"
    if not agent and can_start(workflow, row.status):
        return "spawn"
    return "attach" if agent else None


def passed_review(workflow: Workflow, row: Row) -> bool:
    """Whether merging needs no second thought: the task waits for a human in a state
    that leads to the done role (the review hand-over); anywhere else, ask first."""
    return workflow.waits_for_human(row.status) and _human_move(
        workflow, row.status, workflow.done_state
    )
