"""What Orange itself writes to one task in one commit: the replay checker's rules.

The replay checker (`orange.engine.replay`) holds every commit to these.  A task file
may change in exactly the ways the engine changes it, judged from the task as it was
(``before``, its last legal state) and the task as committed (``after``):

- a **move** (status changed): a transition of the table whose ``when`` held on
  ``before`` and whose gate holds on the committed body, fresh against the baseline of
  the state left; or the workflow's escalation, only when the crash count reached the
  ``stuck_after`` of the state's counting exit rule after a recorded agent death.
  Either as the engine writes it (`plan_move` + `seal`: crash_count 0, dead_run
  cleared, the new state's gate baseline, a new agent run exactly when the hooks start
  an agent, and the fields its hook actions set), or bare, as a person commits it in
  a tasks checkout (only status moves, crash_count 0);
- a **death record** (`orange.engine.monitoring.record_death`): ``dead_run`` becomes
  ``<agent_run>@<status>`` and ``crash_count`` what the exit rules decide for the
  committed body, +1 at most;
- **hook fields** without a move (`Engine.run_actions`): the entry actions of the
  state (a task created there, no workspace yet), the respawn of its agent, or the
  hooks of the bare move that brought the task here (``hooks.applied``, once);
- a **gate baseline** set to the fingerprints of the committed body (what
  `orange.engine.external.start_gate_freshness` writes: it only makes gates harder),
  alone or with hook fields (``hooks.applied`` starts it with them);
- a **rename**: a new branch with a new tmux session name;
- anything else leaves every guarded field (`guarded`) as it was.

The agent id, the tmux session name, the workspace name and the host are decided on
the writing machine (a random token, a pool slot, the machine's name): the checker
accepts any non-empty text where the engine writes one, and checks only that the
field changes where, and only where, the engine changes it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from orange.engine.actionspec import spawns
from orange.engine.decide import resolve, respawn_spec, take_specs
from orange.engine.exitrules import Advance, Crash, Respawn, decide_dead_session
from orange.engine.fields import BASELINE_FIELD, DEAD_FIELD, RUN_FIELD, baseline
from orange.engine.gates import check_gate, fingerprints
from orange.engine.ledger import (
    BUDGET_HOOKS,
    LEDGER_FIELDS,
    OLD_BUDGET_HOOKS,
    Usage,
    ledger_problem,
    over_budget,
    without_ledger,
)
from orange.engine.policy import field_problem
from orange.engine.workflow import HookSpec, Transition, Workflow
from orange.errors import OrangeError
from orange.store.task import Task

BINDING_FIELDS = ("workspace", "host", "tmux_session")
COUNTED = ("crash_count", "review_round")
# The fields only the engine changes besides the identity: every commit is checked on
# each of them (plus the fields the workflow's own hooks set, see `guarded`).
GUARDED = (
    "status",
    *COUNTED,
    BASELINE_FIELD,
    RUN_FIELD,
    DEAD_FIELD,
    *BINDING_FIELDS,
    *LEDGER_FIELDS,
)
# Fields people and plain commands set (`task update`, `task edit`, `ack`, a PR url): a
# hook naming one of them does not make it engine-owned.
_PLAIN = frozenset({"summary", "branch", "pr_url", "attention", "updated_at", "harness"})

# What a field must hold after a step: a value, or one of these.
ANY = "<any text>"  # any non-empty text (a host, a pool slot, a session name)
NEW = "<a new agent run>"  # non-empty text, neither the run before nor the one that died
KEPT_OR_CLEARED = "<unchanged or cleared>"
PendingHooks = Callable[[], "tuple[Task, tuple[HookSpec, ...]] | None"]


def guarded(workflow: Workflow) -> tuple[str, ...]:
    """`GUARDED` plus the fields the workflow's hook actions count or set (worked out
    once per definition: the replay asks for every commit)."""
    known = _GUARDED.get(id(workflow))
    if known is not None and known[0] is workflow:
        return known[1]
    if len(_GUARDED) > 64:
        _GUARDED.clear()
    found = _guarded(workflow)
    _GUARDED[id(workflow)] = (workflow, found)
    return found


# id of a definition -> (it, its guarded fields); the definition is held, so its id is
# not reused while it is here.
_GUARDED: dict[int, tuple[Workflow, tuple[str, ...]]] = {}


def _guarded(workflow: Workflow) -> tuple[str, ...]:
    specs = [h for t in workflow.transitions for h in t.hooks]
    specs += [h for s in workflow.states.values() for h in s.on_enter]
    specs += list(workflow.escalation.hooks if workflow.escalation else ())
    named = [_hook_field(spec) for spec in specs]
    return tuple(dict.fromkeys([*GUARDED, *(n for n in named if n and n not in _PLAIN)]))


def _hook_field(spec: HookSpec) -> str | None:
    if spec.action in ("increment", "set_field", "reset"):
        return str(spec.get("field"))
    if spec.action == "spawn_agent" and spec.get("increment"):
        return str(spec.get("increment"))
    return None


def check_created(
    workflow: Workflow, task: Task, *, default_branches: Collection[str] = ()
) -> str | None:
    """A new task starts in an initial status with no counts and no engine records,
    every field one the field policy (`orange.engine.policy`) accepts (its branch
    judged against ``default_branches``, the repository's default branch)."""
    problem = field_problem(None, task.fields, guarded(workflow), default_branches=default_branches)
    if problem is not None:
        return problem
    if task.status not in workflow.initial_statuses:
        return f"created in {task.status!r}, not an initial status of {workflow.name}"
    for name in COUNTED:
        if task.int_field(name) != 0:
            return f"created with {name} {task.fields.get(name)!r}"
    for name in (BASELINE_FIELD, RUN_FIELD, DEAD_FIELD, *LEDGER_FIELDS):
        if task.fields.get(name) is not None:
            return f"created with {name} set"
    return None


def check_step(
    workflow: Workflow,
    before: Task,
    after: Task,
    pending: PendingHooks,
    claimed: Usage | None = None,
    *,
    default_branches: Collection[str] = (),
) -> str | None:
    """Why ``before -> after`` is not something Orange writes (None: it is).
    ``pending`` looks up the bare move whose hooks may still be applied; ``claimed``:
    the usage record the commit's trailers carry (`orange.engine.ledger`), which the
    ledger's totals must add up to (the rest of the step is judged without them);
    ``default_branches``: the repository's default branch, no task's branch."""
    problem = field_problem(
        before.fields, after.fields, guarded(workflow), default_branches=default_branches
    )
    if problem is not None:
        return problem
    problem = ledger_problem(before.fields, after.fields, claimed)
    if problem is not None:
        return problem
    spent = over_budget(after.fields) is not None  # the ledger as this commit leaves it
    after = Task(without_ledger(after.fields, before.fields), after.body, after.blob_id)
    if after.status not in workflow.states:
        return f"{after.status!r} is not a status of workflow {workflow.name}"
    if before.status != after.status:
        return check_move(workflow, before, after, spent=spent)
    return _check_in_place(workflow, before, after, pending)


def check_move(workflow: Workflow, before: Task, after: Task, *, spent: bool = False) -> str | None:
    """``spent``: the task's recorded cost, with this commit's record, passed its
    budget (the budget's stop is legal, `orange.engine.decide.resolve`)."""
    src, dst = before.status, after.status
    if workflow.is_terminal(src):
        return f"moved out of terminal status {src}"
    moves, refusal = _legal_moves(workflow, before, after)
    if spent and workflow.escalation is not None and workflow.escalation.to == dst:
        moves += [Transition(from_=src, to=dst, hooks=h) for h in (BUDGET_HOOKS, OLD_BUDGET_HOOKS)]
    problems = [_bookkeeping(workflow, t, before, after) for t in moves]
    if not moves:
        return refusal
    if None in problems:
        return None
    return f"{src} -> {dst}: {problems[0]}"


def _legal_moves(workflow: Workflow, before: Task, after: Task) -> tuple[list[Transition], str]:
    """The transitions that make ``before -> after`` legal, or why there is none."""
    src, dst = before.status, after.status
    moves: list[Transition] = []
    escalation = workflow.escalation
    escalating = escalation is not None and escalation.to == dst
    if escalating and src in workflow.active_states() and crash_limit_reached(workflow, before):
        assert escalation is not None
        moves.append(Transition(from_=src, to=dst, hooks=escalation.hooks))
    candidates = workflow.transitions_between(src, dst)
    passing = [t for t in candidates if t.when is None or t.when.holds(before.fields)]
    refusal = f"illegal transition {src} -> {dst}"
    if candidates and not passing:
        refusal = f"{src} -> {dst} needs " + " or ".join(str(t.when) for t in candidates if t.when)
    elif not candidates and escalation is not None and escalation.to == dst:
        refusal = (
            f"escalation {src} -> {dst} without the agent deaths its exit rule counts "
            f"(crash_count {before.int_field('crash_count')})"
        )
    for transition in passing:
        gate = transition.gate
        result = check_gate(gate, after.body, baseline(before)) if gate else None
        if result is None or result.ok:
            moves.append(transition)
        else:
            refusal = f"{src} -> {dst}: {result.message}"
    return moves, refusal


def crash_limit_reached(workflow: Workflow, task: Task) -> bool:
    """Whether the death of the task's current agent run was recorded and its count
    reached the ``stuck_after`` of a counting exit rule of its state."""
    if task.str_field(DEAD_FIELD) != f"{task.str_field(RUN_FIELD)}@{task.status}":
        return False
    limits = [
        rule.stuck_after
        for rule in workflow.rules_for(task.status)
        if rule.action in ("crash", "respawn") and rule.stuck_after is not None
    ]
    return any(task.int_field("crash_count") >= limit for limit in limits)


def _bookkeeping(workflow: Workflow, move: Transition, before: Task, after: Task) -> str | None:
    """None when ``after`` holds what the engine writes with ``move`` (or what a bare,
    plain-git move of the status holds), else the first field that does not."""
    full: dict[str, Any] = {
        "status": after.status,
        "crash_count": 0,
        DEAD_FIELD: None,
        BASELINE_FIELD: fingerprints(after.body, workflow.gated_sections(after.status)),
        RUN_FIELD: NEW if spawns(move.hooks) else before.fields.get(RUN_FIELD),
    }
    _hook_effects(move.hooks, before, full)
    problem = _mismatch(guarded(workflow), full, before, after)
    bare = {"status": after.status, "crash_count": 0, DEAD_FIELD: KEPT_OR_CLEARED}
    if problem is None or _mismatch(guarded(workflow), bare, before, after) is None:
        return None
    return problem


def _hook_effects(specs: Iterable[HookSpec], origin: Task, expected: dict[str, Any]) -> None:
    """The fields the actions' ``prepare`` sets (`orange.hooks`,
    `orange.engine.actions`); ``origin`` is the task the actions count from."""
    for spec in specs:
        match spec.action:
            case "acquire_workspace":
                expected.update(workspace=ANY, host=ANY)
            case "release_workspace":
                expected["workspace"] = None
            case "spawn_agent" | "spawn_reviewer":
                expected["tmux_session"] = ANY
            case "kill_session":
                expected["tmux_session"] = None
            case "set_field":
                expected[str(spec.get("field"))] = spec.get("value")
            case "reset":
                expected[str(spec.get("field"))] = 0
        counted = _hook_field(spec) if spec.action not in ("set_field", "reset") else None
        if counted:
            expected[counted] = origin.int_field(counted) + 1


def _mismatch(
    names: Iterable[str], expected: dict[str, Any], before: Task, after: Task
) -> str | None:
    for name in names:
        was, value = before.fields.get(name), after.fields.get(name)
        want = expected.get(name, was)
        if want is ANY:
            ok = isinstance(value, str) and bool(value)
        elif want is NEW:  # never the run whose death is recorded: a rewind hides the next
            handled = str(before.fields.get(DEAD_FIELD) or "").rpartition("@")[0]
            ok = isinstance(value, str) and bool(value) and value not in (was, handled)
        elif want is KEPT_OR_CLEARED:
            ok = value in (was, None)
        else:
            ok = value == want
        if not ok:
            shown = "unchanged" if want is was else f"{want!r}" if want is not None else "empty"
            return f"{name} is {value!r} (Orange writes {shown} here)"
    return None


def _check_in_place(
    workflow: Workflow, before: Task, after: Task, pending: PendingHooks
) -> str | None:
    names = guarded(workflow)
    changed = [n for n in names if before.fields.get(n) != after.fields.get(n)]
    if not changed:
        return None
    renamed = before.branch != after.branch and before.str_field("tmux_session")
    if changed == ["tmux_session"] and renamed and after.str_field("tmux_session"):
        return None  # a branch rename renames its live session
    fresh = fingerprints(after.body, workflow.gated_sections(after.status))
    sealed = after.fields.get(BASELINE_FIELD) == fresh
    if changed == [BASELINE_FIELD] and sealed:
        return None
    if DEAD_FIELD in changed:
        return _check_death(workflow, before, after, changed)
    for specs, origin in _action_candidates(workflow, before, pending):
        run = NEW if spawns(specs) else before.fields.get(RUN_FIELD)
        expected: dict[str, Any] = {RUN_FIELD: run}
        if sealed:  # the gate baseline may be started in the same commit (hooks.applied)
            expected[BASELINE_FIELD] = fresh
        _hook_effects(specs, origin, expected)
        if _mismatch(names, expected, before, after) is None:
            return None
    return (
        f"{', '.join(changed)} changed in {before.status} without a move, a recorded "
        "agent death or a hook action that sets it"
    )


def _action_candidates(
    workflow: Workflow, task: Task, pending: PendingHooks
) -> Iterable[tuple[tuple[HookSpec, ...], Task]]:
    """The actions `Engine.run_actions` may run on ``task`` without moving it, with the
    task their counters count from: the state's entry actions (a task created there, no
    workspace yet), the respawn of its agent, the hooks of the bare move that brought
    it here."""
    state = workflow.states[task.status]
    if state.on_enter and not task.str_field("workspace"):
        yield state.on_enter, task
    if state.respawn_prompt and task.str_field("workspace"):
        yield (respawn_spec(workflow, task.status),), task
    if task.str_field("workspace"):  # a take by another host (`orange.engine.taking`)
        yield take_specs(workflow, task.status), task
    found = pending()
    if found is not None:
        origin, hooks = found
        yield hooks, origin


def _check_death(workflow: Workflow, before: Task, after: Task, changed: list[str]) -> str | None:
    run = f"{before.str_field(RUN_FIELD)}@{before.status}"
    if after.fields.get(DEAD_FIELD) != run:
        return f"dead_run is {after.fields.get(DEAD_FIELD)!r}; a death is recorded as {run!r}"
    others = [n for n in changed if n not in (DEAD_FIELD, "crash_count")]
    if others:
        return f"{', '.join(others)} changed with a recorded agent death"
    decision = decide_dead_session(workflow, before.fields, after.body, baseline(before))
    expected = before.int_field("crash_count")
    match decision:
        case Advance():
            return f"an agent death recorded where the exit rules of {before.status} advance"
        case Crash(crash_count=count) | Respawn(count_crash=True, crash_count=count):
            expected = count
    if after.fields.get("crash_count") != expected:
        return (
            f"crash_count is {after.fields.get('crash_count')!r}; after this agent death "
            f"the exit rules of {before.status} count {expected}"
        )
    return None


def move_hooks(workflow: Workflow, before: Task, to: str) -> tuple[HookSpec, ...] | None:
    """The hooks of the move ``before -> to`` (a table move, else the escalation), as
    `orange.engine.external` finds them; None when it is not a move."""
    for escalation in (False, True):
        try:
            return resolve(workflow, before, to, escalation=escalation).hooks
        except OrangeError:
            continue
    return None
