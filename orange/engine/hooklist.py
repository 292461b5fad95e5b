"""Hook lists of a workflow file, checked against the action vocabulary.

Each item is ``{action: NAME, ...params}``; the action must be in `ACTION_PARAMS`, every
parameter must be one it declares, of the declared kind, and a ``prompt`` parameter must
name a key of the workflow's ``prompts`` (seed 001 validation rule 4).  Defaults are
filled in so the runtime always sees every defaulted parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from orange.engine.actionspec import ACTION_PARAMS, Param
from orange.engine.fields import ENGINE_FIELDS
from orange.engine.policy import POLICY
from orange.engine.workflow import HookSpec
from orange.engine.yamldoc import Doc, describe, did_you_mean, join, known

_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_hooks(
    doc: Doc, prompts: Mapping[str, str], value: object, path: str
) -> tuple[HookSpec, ...]:
    """A hook list (``null`` is empty) as `HookSpec` values."""
    items = doc.sequence(value, path)
    return tuple(parse_hook(doc, prompts, item, join(path, i)) for i, item in enumerate(items))


def parse_hook(doc: Doc, prompts: Mapping[str, str], value: object, path: str) -> HookSpec:
    """One hook list item."""
    if not isinstance(value, dict):
        doc.fail(path, f"expected a mapping like {{action: kill_session}}, got {describe(value)}")
    if "action" not in value:
        doc.fail(join(path, "action"), "required key is missing")
    action = doc.string(value["action"], join(path, "action"))
    spec = ACTION_PARAMS.get(action)
    if spec is None:
        hint = did_you_mean(action, ACTION_PARAMS)
        doc.fail(
            join(path, "action"), f'unknown action "{action}" (known: {known(ACTION_PARAMS)}){hint}'
        )
    params: dict[str, object] = {}
    for key, raw in value.items():
        if key == "action":
            continue
        if key not in spec:
            takes = f"known: {known(spec)}" if spec else "it takes no parameters"
            doc.fail(
                join(path, str(key)),
                f"unknown parameter of {action} ({takes}){did_you_mean(str(key), spec)}",
            )
        params[key] = _param(doc, prompts, spec[key], raw, join(path, key))
    for key, param in spec.items():
        if key not in params:
            if param.required:
                doc.fail(join(path, key), f"{action} needs this parameter")
            if param.default is not None:
                params[key] = param.default
    if action in ("set_field", "increment", "reset"):
        _check_policy_field(doc, action, params, path)
    return HookSpec(action, MappingProxyType(params))


def _check_policy_field(doc: Doc, action: str, params: Mapping[str, object], path: str) -> None:
    """A field of the field policy keeps its rule when a workflow changes it: the host's
    own fields are never a workflow's, a count stays a count, and a value set must be one
    the field accepts (a workflow file may come from a teammate's push)."""
    name = str(params.get("field"))
    rule = POLICY.get(name)
    if rule is None:
        return
    if rule.owner == "host":
        doc.fail(join(path, "field"), f'"{name}" is set by the host that runs the task')
    if action == "set_field":
        problem = rule.check(params.get("value"))
        where, what = join(path, "value"), f"{name} {problem}"
    else:
        problem = rule.check(1)
        where, what = join(path, "field"), f'"{name}" is not a count ({action} counts)'
    if problem:
        doc.fail(where, what)


def _param(doc: Doc, prompts: Mapping[str, str], param: Param, value: object, path: str) -> object:
    if param.kind == "prompt":
        return doc.reference(value, path, prompts, "prompt")
    if param.kind == "text":
        return doc.string(value, path)
    if param.kind == "choice":
        if value not in param.choices:
            doc.fail(path, f"expected one of {', '.join(param.choices)}, got {value!r}")
        return value
    if param.kind == "field":
        name = doc.string(value, path)
        if not _FIELD.fullmatch(name):
            doc.fail(path, f'"{name}" is not a field name')
        if name in ENGINE_FIELDS:
            doc.fail(path, f'"{name}" is changed only by the engine')
        return name
    if param.kind == "argv":
        argv = doc.strings(value, path)
        if not argv:
            doc.fail(path, "expected a non-empty list of strings (program and arguments)")
        return tuple(argv)
    if value is not None and not isinstance(value, str | int | bool):
        doc.fail(path, f"expected a string, integer, true/false or null, got {describe(value)}")
    return value
