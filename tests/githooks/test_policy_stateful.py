"""The field policy over random sessions: sequences of real operations (create, status
moves, body edits, field updates, syncs with a hub running Orange's server hook) mixed
with a teammate's forged commits of every kind (each field of the policy table bent:
an engine or host field changed without its event, an identity field changed or
removed, an illegal value, an unknown key; a deleted active task, a file that is not
text, a file outside ``tasks/``), pushed by hand.

After every step: a forged push was refused and left the hub's ref where it was; the
clone that holds the forgery (as a fetch or ``git update-ref`` brings it) restores it,
each field the forgery bent back at its last legal value; the hub accepts every sync;
and the history at the clone's tip replays clean with every task's fields within the
policy.  ``HYPOTHESIS_PROFILE=long`` runs more and longer sessions."""

from __future__ import annotations

import os
import subprocess
import unittest
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from orange import projects
from orange.engine.catalog import load_named
from orange.engine.edits import edit_body, update_fields
from orange.engine.engine import Engine
from orange.engine.fields import BASELINE_FIELD, DEAD_FIELD, RUN_FIELD
from orange.engine.forgery import start_record, verify_new
from orange.engine.gates import set_section
from orange.engine.ledger import BUDGET, COST, THROUGH, TOKENS
from orange.engine.policy import POLICY, field_problem
from orange.engine.replay import Checker
from orange.engine.steps import guarded
from orange.engine.tasks import create_task
from orange.engine.trust import trusted_here
from orange.errors import OrangeError
from orange.githooks import shims as githooks
from orange.store import layout, listing
from orange.store.store import TaskStore
from orange.store.task import STRING_FIELDS, Task
from orange.sync.sync import sync
from tests.conftest import git, make_repo
from tests.githooks.test_forgery import push, tip
from tests.hostile import commit_by_hand
from tests.recording import recording_registry

DROP, BUMP = object(), object()  # a bend that removes the field, one that counts it up

# One bend of a task's frontmatter per entry, each one no Orange write makes: a field of
# the engine or the host changed without the event that changes it (a legal value
# otherwise), an identity field changed or removed, a value its check refuses, a field
# nobody writes.  Every field of the policy table is bent at least once.
BENDS: dict[str, tuple[str, Any]] = {
    "status to one the workflow lacks": ("status", "bogus"),
    "status emptied": ("status", ""),
    "review_round up": ("review_round", BUMP),
    "crash_count up": ("crash_count", BUMP),
    "crash_count negative": ("crash_count", -1),
    "baseline set": (BASELINE_FIELD, {"## Plan": "0" * 12}),
    # (A new agent_run alone is what a respawn records: legal, see the module's end.)
    "agent_run not text": (RUN_FIELD, ["forged-run"]),
    "dead_run set": (DEAD_FIELD, "forged-run@planning"),
    "tokens set": (TOKENS, {"in": 5, "out": 5, "cache": 0}),
    "cost set": (COST, "12.50"),
    "usage_through set": (THROUGH, "2030-01-01T00:00:00Z"),
    "cost_unknown set": ("cost_unknown", True),  # without the record that finds it
    "host moved": ("host", "teammate"),
    "workspace moved": ("workspace", "proj--7"),
    "tmux_session set": ("tmux_session", "proj/x"),
    "id changed": ("id", "zzzz9999"),
    "id removed": ("id", DROP),
    "project changed": ("project", "elsewhere"),
    "project removed": ("project", DROP),
    "workflow changed": ("workflow", "minimal"),
    "workflow_rev changed": ("workflow_rev", "0123456789"),
    "base changed": ("base", "release"),
    "created_at changed": ("created_at", "2000-01-01T00:00:00Z"),
    "created_at removed": ("created_at", DROP),
    "run set": ("run", "aaaaaaaa"),
    "subtask set": ("subtask", "s1"),
    "branch an option": ("branch", "--receive-pack=/x"),
    "branch HEAD": ("branch", "HEAD"),
    "branch the default one": ("branch", "main"),  # the branch the task merges into
    "harness not a name": ("harness", "a b"),
    "review_harness not a name": ("review_harness", "-x"),
    "effort a list": ("effort", [1, 2]),
    "review_effort a mapping": ("review_effort", {"a": [1]}),
    "updated_at not a time": ("updated_at", "yesterday"),
    "after not ids": ("after", ["NOT AN ID"]),
    "after twice": ("after", ["aaaaaaaa", "aaaaaaaa"]),
    "budget not money": (BUDGET, "-1"),
    "unknown key": ("priority", "high"),
    "unknown key, a hook's name": ("hooks", [1]),
}
# Text fields bound only by length (64 Ki characters, the frontmatter's own size) have
# no illegal value a TASK.md can hold, and a known text field reads back as text
# whatever was pushed (a list, a number: the store's normalisation), so it is no
# forgery; a person may set them to anything.
FREE_TEXT = {"summary", "attention", "pr_url"}
_UNBENT = set(POLICY) - FREE_TEXT - {name for name, _ in BENDS.values()}
assert not _UNBENT, f"fields of the policy the sessions never bend: {_UNBENT}"
assert all(isinstance(v, str) or v is DROP for n, v in BENDS.values() if n in STRING_FIELDS)


def bent(fields: dict[str, Any], bend: str) -> dict[str, Any]:
    name, value = BENDS[bend]
    out = dict(fields)
    if value is DROP:
        out.pop(name, None)
    elif value is BUMP:
        out[name] = int(out.get(name) or 0) + 1
    else:
        out[name] = value
    return out


# Forgeries of a whole file: (what the restore leaves at the path: the legal file, or
# nothing).
FILES = ["delete an active task", "TASK.md not text", "a file outside tasks/"]

SECTIONS = ["## Plan", "## Notes", "## Handoff", "## Review"]
TEXTS = ["APPROACH: a\nTOUCHING: b", "DONE: it", "Verdict: PASS", "Verdict: FAIL", "note"]
UPDATES: list[dict[str, Any]] = [
    {"summary": "new words"},
    {"attention": "look"},
    {"attention": None},
    {"branch": "feature/renamed"},
    {BUDGET: "3.00"},
    {"harness": "other"},
]
GUARDED_DEFAULT = guarded(load_named("default"))
STATUSES = ["planning", "working", "reviewing", "stuck", "done", "cancelled", "pending"]


@dataclass
class _World:
    """One clone with its project and engine, and a hub with the server hook: shared
    by the examples of a test (a repository per example costs more than its steps)."""

    repo: Path
    hub: Path
    store: TaskStore
    engine: Engine


_worlds: dict[str, _World] = {}


def _world() -> _World:
    home = os.environ["ORANGE_HOME"]  # per test (the hermetic fixture)
    if home not in _worlds:
        root = Path(home).parent
        repo = make_repo(root / "stateful-proj")
        hub = root / "stateful-hub.git"
        git(root, "init", "-q", "--bare", str(hub))
        githooks.install_server_hook(hub)
        project = projects.add(repo, name="proj")
        store = TaskStore.open(repo)
        start_record(store)
        git(repo, "remote", "add", "hub", str(hub))
        engine = Engine(store, project, registry=recording_registry()[0])
        _worlds[home] = _World(repo, hub, store, engine)
    return _worlds[home]


class PolicySession(RuleBasedStateMachine):
    tasks = Bundle("tasks")

    def __init__(self) -> None:
        super().__init__()
        self.world = _world()
        self.repo, self.store, self.engine = self.world.repo, self.world.store, self.world.engine
        self.n = 0

    # A teammate's forgeries (first: the simplest sessions Hypothesis tries forge) ------
    @rule(task_id=tasks, bend=st.sampled_from(sorted(BENDS)))
    def forge_field(self, task_id: str, bend: str) -> None:
        event(f"forged: {bend}")
        path = layout.task_path(task_id)
        legal = Task.parse(self._text(path), where="legal")
        fields = bent(dict(legal.fields), bend)
        if fields == legal.fields:
            return  # the task holds that value already: nothing to forge
        self._forge_and_restore(
            {path: Task(fields=fields, body=legal.body).render().encode()}, path
        )
        restored = Task.parse(self._text(path), where="restored")
        assert _kept(restored) == _kept(legal), bend

    @rule(task_id=tasks, kind=st.sampled_from(FILES))
    def forge_file(self, task_id: str, kind: str) -> None:
        event(f"forged: {kind}")
        path = layout.task_path(task_id)
        legal = self._text(path)
        if kind == "delete an active task":
            if self.store.get(task_id).status in ("done", "cancelled"):
                return  # deleting an ended task is legal
            writes: dict[str, bytes | None] = {path: None}
        elif kind == "TASK.md not text":
            writes = {path: b"---\nid: \xff\n---\n"}
        else:
            path = f"notes/{task_id}.txt"
            writes, legal = {path: b"hello"}, ""
        self._forge_and_restore(writes, path)
        now = git(self.repo, "ls-tree", "--name-only", layout.TASKS_REF, "--", path)
        if not legal:
            assert now == "", kind  # removed: it had no legal state
            return
        was, restored = Task.parse(legal, where="legal"), Task.parse(self._text(path), where=path)
        assert (_kept(restored), restored.body) == (_kept(was), was.body), kind

    # Real operations -----------------------------------------------------------------
    @initialize(target=tasks)
    def a_planning_task(self) -> str:
        """Every session starts with a task whose agent started (its run recorded)."""
        assert self.engine.project is not None
        task = create_task(self.store, self.engine.project, load_named("default"), summary="s")
        self.engine.transition(task.id, "planning")
        return task.id

    @rule(target=tasks, summary=st.sampled_from(["", "fix it", "a b c"]))
    def create(self, summary: str) -> str:
        assert self.engine.project is not None
        task = create_task(
            self.store, self.engine.project, load_named("default"), summary=summary, park=True
        )
        return task.id

    @rule(task_id=tasks, to=st.sampled_from(STATUSES))
    def move(self, task_id: str, to: str) -> None:
        try:
            self.engine.transition(task_id, to)
            event(f"moved to {to}")
        except OrangeError:
            pass  # refused: the invariant checks the ref holds only legal steps

    @rule(task_id=tasks, heading=st.sampled_from(SECTIONS), text=st.sampled_from(TEXTS))
    def edit(self, task_id: str, heading: str, text: str) -> None:
        self.n += 1
        body = f"{text}\n\n({self.n})"
        edit_body(self.store, task_id, lambda t: set_section(t.body, heading, body), "edit")

    @rule(task_id=tasks, changes=st.sampled_from(UPDATES))
    def update(self, task_id: str, changes: dict[str, Any]) -> None:
        try:
            update_fields(self.store, task_id, dict(changes))
        except OrangeError:
            pass  # a branch another task holds

    @rule()
    def sync_with_hub(self) -> None:
        sync(self.store, "hub")
        assert tip(self.world.hub) == tip(self.repo)

    def _forge_and_restore(self, writes: dict[str, bytes | None], path: str) -> None:
        sync(self.store, "hub")  # the hub holds everything legal first
        legal = tip(self.world.hub)
        forged = commit_by_hand(self.repo, writes, message="a teammate's commit")
        result = push(self.repo)
        assert result.returncode != 0, ("accepted by the server", path)
        assert tip(self.world.hub) == legal
        found = verify_new(self.store, trusted=trusted_here, actor="monitor")
        assert [v.commit for v in found.restored] == [forged], path

    def _text(self, path: str) -> str:
        shown = subprocess.run(
            ["git", "show", f"{layout.TASKS_REF}:{path}"],
            cwd=self.repo, capture_output=True, text=True, errors="surrogateescape", check=True,
        )  # fmt: skip
        return shown.stdout

    # After every step ------------------------------------------------------------------
    @invariant()
    def the_history_replays_clean_within_the_policy(self) -> None:
        head = tip(self.repo)
        if not head:
            return
        checker = Checker(self.store.pygit, trusted_here).run(head)
        assert checker.open == [], [str(v) for v in checker.open]
        for task in listing.tasks(self.store.snapshot()):
            assert isinstance(task, Task), task
            assert field_problem(None, task.fields, GUARDED_DEFAULT) is None, task.fields


def _kept(task: Task) -> dict[str, Any]:
    """The fields that hold a value (null and absent are one), but the two a restore
    writes itself."""
    return {
        k: v
        for k, v in task.fields.items()
        if v is not None and k not in ("attention", "updated_at")
    }


# A push runs the server hook (a process): few, short sessions in CI; the long profile
# runs nineteen times as many.
SETTINGS = settings(
    max_examples=max(4, settings().max_examples // 4),
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _runs(machine: type[PolicySession]) -> type[unittest.TestCase]:
    class Runs(machine.TestCase):  # type: ignore[name-defined,misc]
        settings = SETTINGS

        def runTest(self) -> None:
            run_state_machine_as_test(machine, settings=self.settings)

        runTest.is_hypothesis_test = True  # type: ignore[attr-defined]  # as Hypothesis's own

    return Runs


TestPolicySessions = _runs(PolicySession)


# Found by these sessions and left legal: a pushed commit that changes only a task's
# ``agent_run`` to a new value is what the respawn of its agent records, and the replay
# cannot tell which host respawned it.  Its worst effect is that the monitor of the
# host running the task counts an agent death it already handled once more (a step
# towards ``stuck``, which a teammate may take by hand anyway); a rewind to the run
# whose death is recorded is refused (`orange.engine.steps`).
