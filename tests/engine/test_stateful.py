"""Random sequences of edits, moves and agent deaths never break the workflow."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from orange import projects
from orange.engine import requests
from orange.engine.catalog import load_named
from orange.engine.edits import edit_body
from orange.engine.engine import Engine
from orange.engine.fields import BASELINE_FIELD
from orange.engine.gates import check_gate
from orange.engine.tasks import create_task
from orange.errors import OrangeError
from orange.store import layout
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import make_repo
from tests.recording import recording_registry

SECTIONS = {
    "plan": "## Plan\n\nAPPROACH: {n}\n",
    "plan-empty": "## Plan\n\nnothing useful\n",
    "handoff": "## Handoff\n\nDONE: step {n}\n",
    "review-pass": "## Review\n\nVerdict: PASS\n\nok {n}\n",
    "review-fail": "## Review\n\n**Verdict: FAIL**\n\nfix {n}\n",
    "review-none": "## Review\n\nI think it is fine {n}\n",
}


class WorkflowMachine(RuleBasedStateMachine):
    workflow_name = "default"

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="orange-hyp-"))
        repo = make_repo(self.root / "proj")
        name = f"p{abs(hash(self.root)) % 10**6}"
        self.project = projects.add(repo, name=name)
        self.store = TaskStore.open(repo)
        registry, _ = recording_registry()
        self.engine = Engine(self.store, self.project, registry=registry)
        self.workflow = load_named(self.workflow_name)
        self.task_id = create_task(self.store, self.project, self.workflow, summary="s").id
        self.counter = 0
        self.checked_commits: set[str] = set()

    def teardown(self) -> None:
        projects.remove(self.project.name)
        shutil.rmtree(self.root, ignore_errors=True)

    def task(self) -> Task:
        return self.store.get(self.task_id)

    @rule(kind=st.sampled_from(sorted(SECTIONS)))
    def write_section(self, kind: str) -> None:
        self.counter += 1
        text = SECTIONS[kind].format(n=self.counter)
        heading = text.split("\n", 1)[0]

        def edit(task: Task) -> str:
            from orange.engine.gates import set_section

            return set_section(task.body, heading, text.split("\n", 1)[1])

        edit_body(self.store, self.task_id, edit, what=heading)

    @rule(to=st.sampled_from(["pending", "planning", "clarification", "working", "agent-review",
                              "reviewing", "stuck", "done", "cancelled"]))  # fmt: skip
    def update_status(self, to: str) -> None:
        self._try(lambda: self.engine.transition(self.task_id, to))

    @rule()
    def spawn(self) -> None:
        self._try(lambda: self.engine.spawn(self.task_id))

    @rule(message=st.sampled_from(["", "Please add a test"]))
    def request_changes(self, message: str) -> None:
        self._try(lambda: requests.request_changes(self.engine, self.task_id, message))

    @precondition(lambda self: True)
    @rule()
    def agent_dies(self) -> None:
        self._try(lambda: self.engine.handle_dead_session(self.task_id))

    def _try(self, action: object) -> None:
        try:
            action()  # type: ignore[operator]
        except OrangeError:
            pass

    @invariant()
    def every_commit_is_a_legal_step(self) -> None:
        repo = self.store.pygit
        ref = repo.references.get(layout.TASKS_REF)
        if ref is None:
            return
        path = layout.task_path(self.task_id)
        for commit in repo.walk(ref.target):
            key = str(commit.id)
            if key in self.checked_commits or not commit.parents:
                continue
            self.checked_commits.add(key)
            try:
                new = Task.parse(commit.tree[path].read_raw().decode(), where=path)
                old = Task.parse(commit.parents[0].tree[path].read_raw().decode(), where=path)
            except KeyError:
                continue
            if old.status == new.status:
                continue
            escalation = self.workflow.escalation
            candidates = self.workflow.transitions_between(old.status, new.status)
            if not candidates:
                assert escalation is not None and new.status == escalation.to, (old, new)
                assert "agent.crashed" in _previous_event(commit)
            else:
                passing = [t for t in candidates if t.when is None or t.when.holds(old.fields)]
                assert len(passing) == 1
                gate = passing[0].gate
                if gate is not None:
                    raw = old.fields.get(BASELINE_FIELD) or {}
                    assert check_gate(gate, new.body, raw).ok, (old.status, new.status)
                if old.status == "agent-review" and "FAIL" in str(gate and gate.verdict):
                    assert not (old.int_field("review_round") >= 2 and new.status == "working")
            assert new.int_field("crash_count") == 0


def _previous_event(commit: object) -> str:
    parent = commit.parents[0]  # type: ignore[attr-defined]
    return str(parent.message)


TestDefaultWorkflow = WorkflowMachine.TestCase
TestDefaultWorkflow.settings = settings(
    max_examples=25,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


class MinimalMachine(WorkflowMachine):
    workflow_name = "minimal"


TestMinimalWorkflow = MinimalMachine.TestCase
TestMinimalWorkflow.settings = TestDefaultWorkflow.settings
