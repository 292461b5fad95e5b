"""The hook-action vocabulary a workflow may name, and each action's parameters.

`ACTION_PARAMS` is the single table of action names: the loader validates hook lists
against it, and a `orange.engine.actions.Registry` refuses to be built unless it
provides exactly these names (the runtime's table in `orange.hooks.registry`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Literal, NamedTuple

if TYPE_CHECKING:
    from orange.engine.workflow import HookSpec

ParamKind = Literal["prompt", "text", "field", "choice", "argv", "scalar"]


class Param(NamedTuple):  # not a dataclass: see `orange.engine.workflow`
    """One parameter of an action.

    ``kind``: ``prompt`` (a key of the workflow's ``prompts``), ``text`` (a string),
    ``field`` (a frontmatter field name), ``choice`` (one of ``choices``), ``argv`` (a
    non-empty list of strings) or ``scalar`` (string, integer, boolean or null).
    ``default`` is filled into `HookSpec.params` when the file omits the parameter.
    """

    kind: ParamKind
    required: bool = False
    choices: tuple[str, ...] = ()
    default: object = None


_NONE: Mapping[str, Param] = {}
_HARNESS = ("task", "review")
_PERMISSIONS = ("full", "reduced")

ACTION_PARAMS: Mapping[str, Mapping[str, Param]] = {
    "acquire_workspace": _NONE,
    "release_workspace": _NONE,
    "kill_session": _NONE,
    "spawn_next": _NONE,
    "push_branch": _NONE,
    "delete_remote_branch": _NONE,
    "create_pr": _NONE,
    "kill_reviewer": _NONE,
    "stop_agents": _NONE,
    "spawn_agent": {
        "prompt": Param("prompt", required=True),
        "harness": Param("choice", choices=_HARNESS, default="task"),
        "permissions": Param("choice", choices=_PERMISSIONS, default="full"),
        "increment": Param("field"),
        "window": Param("text", default="worker"),
    },
    "spawn_reviewer": {
        "prompt": Param("prompt", required=True),
        "harness": Param("choice", choices=_HARNESS, default="review"),
        "permissions": Param("choice", choices=_PERMISSIONS, default="reduced"),
    },
    "notify_worker": {"message": Param("prompt", required=True)},
    "increment": {"field": Param("field", required=True)},
    "reset": {"field": Param("field", required=True)},
    "set_field": {"field": Param("field", required=True), "value": Param("scalar", required=True)},
    "notify": {"message": Param("text")},
    "run_command": {"argv": Param("argv", required=True)},
}

# The actions that start an agent: a move running one begins a new agent run.
SPAWNING_ACTIONS = frozenset({"spawn_agent", "spawn_reviewer"})


def spawns(hooks: Iterable[HookSpec]) -> bool:
    """Whether the actions start an agent (a new agent run begins)."""
    return any(spec.action in SPAWNING_ACTIONS for spec in hooks)
