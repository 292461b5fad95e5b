"""The core hook actions (increment, set_field, notify, run_command) and the registry."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml

from orange.engine.actions import ENGINE_ACTIONS, Action, DeferredRegistry, HookContext, Registry
from orange.engine.actionspec import ACTION_PARAMS
from orange.engine.catalog import load_named
from orange.engine.decide import Outcome
from orange.engine.engine import Engine
from orange.engine.fields import ENGINE_FIELDS
from orange.engine.tasks import create_task
from orange.engine.workflow import HookSpec
from orange.errors import HookFailed, WorkflowError
from orange.home import orange_home
from orange.hooks.registry import full_registry, runtime_actions
from orange.runtime.github import GitHub
from orange.runtime.notices import Notices
from orange.runtime.tmux import Tmux
from orange.store.history import task_history
from orange.store.listing import all_tasks
from orange.store.task import Task
from tests.engine.conftest import Env
from tests.helpers import retry_until
from tests.recording import recording_registry


def write_workflow(hooks: list[dict[str, Any]], name: str = "hooks") -> str:
    """A user workflow whose ``pending -> working`` move runs ``hooks``."""
    doc = {
        "name": name,
        "version": 1,
        "states": {"pending": None, "working": None, "done": {"terminal": True}},
        "transitions": [
            {"from": "pending", "to": "working", "hooks": hooks},
            {"from": "working", "to": "done"},
        ],
    }
    folder = orange_home() / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return name


def move(env: Env, hooks: list[dict[str, Any]], summary: str = "do it", **fields: Any) -> Outcome:
    """Create a task (with ``fields``) under a workflow whose pending -> working move runs
    ``hooks``; move it and return the outcome."""
    workflow = load_named(write_workflow(hooks))
    task = create_task(env.store, env.project, workflow, summary=summary, extra=fields)
    return env.engine.transition(task.id, "working")


# increment and set_field -----------------------------------------------------------------


def test_increment_counts_from_zero_and_from_a_value(env: Env) -> None:
    first = move(env, [{"action": "increment", "field": "attempts"}])
    assert first.task.fields["attempts"] == 1
    assert env.get(first.task.id).fields["attempts"] == 1
    later = move(env, [{"action": "increment", "field": "attempts"}], attempts=4)
    assert env.get(later.task.id).fields["attempts"] == 5


@pytest.mark.parametrize(
    "value", ["build", 3, True, None], ids=["string", "integer", "boolean", "null"]
)
def test_set_field_sets_any_scalar(env: Env, value: object) -> None:
    outcome = move(env, [{"action": "set_field", "field": "phase", "value": value}])
    after = env.get(outcome.task.id)
    assert after.fields.get("phase") == value
    assert after.status == "working"


def test_field_changes_are_in_the_one_transition_commit(env: Env) -> None:
    outcome = move(
        env,
        [
            {"action": "increment", "field": "attempts"},
            {"action": "set_field", "field": "phase", "value": "build"},
        ],
    )
    history = task_history(env.store, outcome.task.id)
    assert [h.event for h in history] == ["task.created", "status.changed"]
    fields = history[-1].trailers["Orange-Fields"]
    assert "attempts" in fields and "phase" in fields


def _context(env: Env, spec: HookSpec) -> HookContext:
    task = env.make_task("pending")
    workflow = load_named("default")
    return HookContext(env.engine, spec, workflow, task, task)


# Every field only the engine writes: its protected ones, the task identity it sets at
# creation, and its bookkeeping (gate baseline, agent run, handled death).
ENGINE_OWNED = sorted(ENGINE_FIELDS)


@pytest.mark.parametrize("field", ENGINE_OWNED)
@pytest.mark.parametrize("action", ["set_field", "increment"])
def test_hooks_may_not_touch_engine_fields(env: Env, action: str, field: str) -> None:
    params = {"field": field, "value": "x"} if action == "set_field" else {"field": field}
    ctx = _context(env, HookSpec(action, MappingProxyType(params)))
    with pytest.raises(HookFailed, match=f"a hook may not set '{field}'"):
        ENGINE_ACTIONS[action]().prepare(ctx)


@pytest.mark.parametrize("field", sorted(ENGINE_FIELDS))
def test_loader_refuses_protected_fields(env: Env, field: str) -> None:
    with pytest.raises(WorkflowError, match="is changed only by the engine"):
        load_named(write_workflow([{"action": "set_field", "field": field, "value": "x"}]))


@pytest.mark.parametrize("field", ["project", "workflow_rev", "agent_run"])
def test_loader_refuses_every_engine_field(env: Env, field: str) -> None:
    with pytest.raises(WorkflowError):
        load_named(write_workflow([{"action": "set_field", "field": field, "value": "x"}]))


def test_a_hook_on_an_engine_field_never_moves_the_task(env: Env) -> None:
    """Refused at load (once the loader knows every engine field) or in prepare: either
    way nothing is written."""
    hooks = [{"action": "set_field", "field": "workflow_rev", "value": "0"}]
    with pytest.raises((WorkflowError, HookFailed)):
        move(env, hooks)
    statuses = {t.status for t in all_tasks(env.store) if isinstance(t, Task)}
    assert statuses <= {"pending"}
    assert all(
        h.event != "status.changed"
        for t in all_tasks(env.store)
        for h in task_history(env.store, t.id)
    )


# notify ------------------------------------------------------------------------------------


class Received:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []


@pytest.fixture
def webhook() -> Iterator[tuple[str, Received]]:
    """A tiny HTTP server on 127.0.0.1 that records what it is sent."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            received.requests.append((self.path, dict(self.headers), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def garbage_server() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that answers every request with something not HTTP."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.02)  # so the loop sees `stop` promptly
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(5)
            with conn:
                conn.recv(65536)
                conn.sendall(b"HELLO THERE\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def closed_port_url() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now: connection refused
    return f"http://127.0.0.1:{port}/hook"


def set_config(text: str) -> None:
    home = orange_home()
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.yml").write_text(text)


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH without notify-send."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


NOTIFY = [{"action": "notify", "message": "task needs you"}]


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(lambda: f"notify: {{webhook: '{closed_port_url()}'}}\n", id="closed-port"),
        pytest.param(lambda: "notify: {webhook: 'not a url'}\n", id="not-a-url"),
        pytest.param(lambda: "notify: {webhook: 'ftp://127.0.0.1:1/x'}\n", id="ftp-refused"),
        pytest.param(lambda: "notify: [this, is, no, mapping]\n", id="notify-not-a-mapping"),
        pytest.param(lambda: "notify: {webhook: [unclosed\n", id="broken-config-yaml"),
        pytest.param(lambda: "", id="no-webhook"),
    ],
)
def test_notify_never_fails_a_move(env: Env, bare_path: Path, config: Any) -> None:
    set_config(config())
    outcome = move(env, NOTIFY)
    assert outcome.hook_errors == []
    after = env.get(outcome.task.id)
    assert after.status == "working" and after.str_field("attention") == ""


def test_notify_survives_a_server_that_does_not_speak_http(
    env: Env, bare_path: Path, garbage_server: str
) -> None:
    set_config(f"notify: {{webhook: '{garbage_server}'}}\n")
    outcome = move(env, NOTIFY)
    assert outcome.hook_errors == []
    assert env.get(outcome.task.id).str_field("attention") == ""


def test_notify_posts_json_to_the_webhook(
    env: Env, bare_path: Path, webhook: tuple[str, Received]
) -> None:
    url, received = webhook
    set_config(f"notify:\n  webhook: {url}\n")
    outcome = move(env, NOTIFY, summary="ship it")
    assert outcome.hook_errors == []
    retry_until(lambda: received.requests)  # sent by a detached child
    assert len(received.requests) == 1
    path, headers, body = received.requests[0]
    assert path == "/hook"
    assert headers["Content-Type"] == "application/json"
    task = outcome.task
    assert json.loads(body) == {
        "event": "notify",
        "task": task.id,
        "project": task.project,
        "branch": task.branch,
        "summary": "ship it",
        "status": "working",
        "reason": "task needs you",
    }


def test_notify_default_text_names_task_status_and_summary(
    env: Env, bare_path: Path, webhook: tuple[str, Received]
) -> None:
    url, received = webhook
    set_config(f"notify: {{webhook: '{url}'}}\n")
    outcome = move(env, [{"action": "notify"}], summary="ship it")
    retry_until(lambda: received.requests)  # sent by a detached child
    text = json.loads(received.requests[0][2])["reason"]
    assert text == f"task {outcome.task.id} is now working: ship it"


def _fake_notify_send(folder: Path, exit_code: int) -> Path:
    log = folder / "calls.txt"
    script = folder / "notify-send"
    script.write_text(
        f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a" >> "{log}"; done\nexit {exit_code}\n'
    )
    script.chmod(0o755)
    return log


@pytest.mark.parametrize("exit_code", [0, 1], ids=["notify-send-ok", "notify-send-fails"])
def test_notify_uses_notify_send_when_present(
    env: Env, bare_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int
) -> None:
    monkeypatch.setenv("PATH", f"{bare_path}:/bin:/usr/bin")
    log = _fake_notify_send(bare_path, exit_code)
    outcome = move(env, NOTIFY, summary="s")
    assert outcome.hook_errors == []
    retry_until(lambda: log.is_file() and log.read_text().count("\n") >= 2)  # detached child
    text = f"task {outcome.task.id} (s) is working: task needs you"
    assert log.read_text().splitlines() == ["Orange", text]


# run_command -------------------------------------------------------------------------------

HOSTILE = "fix $(touch pwned) and `touch pwned2` ; touch pwned3 | \"q\" 'q' $HOME"


def test_run_command_gets_task_values_as_environment_never_as_code(env: Env) -> None:
    script = (
        'printf "%s\\n%s\\n%s\\n%s\\n%s" "$ORANGE_TASK_SUMMARY" "$ORANGE_TASK_ID" '
        '"$ORANGE_FROM_STATUS" "$ORANGE_TASK_STATUS" "$ORANGE_TASK_BRANCH" > out.txt'
    )
    outcome = move(env, [{"action": "run_command", "argv": ["sh", "-c", script]}], HOSTILE)
    assert outcome.hook_errors == []
    out = env.repo / "out.txt"  # the command runs in the project's checkout
    summary, task_id, from_status, status, branch = out.read_text().split("\n")
    assert summary == HOSTILE
    assert (task_id, from_status, status) == (outcome.task.id, "pending", "working")
    assert branch == f"orange-tasks/{outcome.task.id}"
    leftovers = [p.name for p in env.repo.parent.rglob("pwned*")]
    assert leftovers == []


def test_run_command_argv_is_not_a_shell_line(env: Env) -> None:
    outcome = move(env, [{"action": "run_command", "argv": ["touch", "a b; touch pwned"]}])
    assert outcome.hook_errors == []
    assert (env.repo / "a b; touch pwned").exists()
    assert not (env.repo / "pwned").exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["sh", "-c", "echo it broke >&2; exit 3"], "run_command 'sh' exited 3: it broke"),
        (["/nonexistent/tool"], "run_command '/nonexistent/tool' could not run"),
    ],
    ids=["exits-nonzero", "not-found"],
)
def test_failing_run_command_keeps_the_move_and_sets_attention(
    env: Env, argv: list[str], says: str
) -> None:
    outcome = move(env, [{"action": "run_command", "argv": argv}])
    assert len(outcome.hook_errors) == 1 and says in outcome.hook_errors[0]
    after = env.get(outcome.task.id)
    assert after.status == "working"  # never rolled back
    assert says in after.str_field("attention")
    assert [h.event for h in task_history(env.store, after.id)][-2:] == [
        "status.changed",
        "hook.failed",
    ]


def test_a_later_hook_still_runs_after_a_failing_one(
    env: Env, bare_path: Path, webhook: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/bin:/usr/bin")
    url, received = webhook
    set_config(f"notify: {{webhook: '{url}'}}\n")
    outcome = move(
        env,
        [{"action": "run_command", "argv": ["false"]}, {"action": "notify", "message": "m"}],
    )
    assert [e.split(":")[0] for e in outcome.hook_errors] == ["run_command"]
    retry_until(lambda: received.requests)  # sent by a detached child
    assert len(received.requests) == 1


# The registry --------------------------------------------------------------------------------


def test_a_registry_must_provide_exactly_the_action_vocabulary() -> None:
    registry, _ = recording_registry()
    actions = {name: registry.get(name) for name in registry.names()}
    del actions["spawn_agent"]
    with pytest.raises(ValueError, match=r"missing actions \['spawn_agent'\]"):
        Registry(actions)
    with pytest.raises(ValueError, match=r"unknown actions \['launch_rockets'\]"):
        Registry({**actions, "spawn_agent": Action(), "launch_rockets": Action()})


def test_recording_registry_provides_every_action() -> None:
    registry, _ = recording_registry()
    assert registry.names() == set(ACTION_PARAMS)


def test_unknown_action_name_is_a_hook_failure() -> None:
    registry, _ = recording_registry()
    with pytest.raises(HookFailed, match="unknown hook action 'launch_rockets'"):
        registry.get("launch_rockets")


def test_the_full_registry_is_the_engines_actions_plus_the_runtimes() -> None:
    tmux = Tmux()
    registry = full_registry(tmux, GitHub, Notices())
    assert registry.names() == set(ACTION_PARAMS)
    runtime = runtime_actions(tmux, GitHub())
    names = {action.name for action in runtime}
    assert names | set(ENGINE_ACTIONS) | {"notify", "run_command"} == set(ACTION_PARAMS)
    for name in ENGINE_ACTIONS:
        assert type(registry.get(name)) is ENGINE_ACTIONS[name]
    for action in runtime:
        assert type(registry.get(action.name)) is type(action)


def test_a_deferred_registry_is_built_only_when_a_move_runs_an_action(env: Env) -> None:
    built: list[int] = []

    def build() -> Registry:
        built.append(1)
        return recording_registry()[0]

    workflow = load_named(write_workflow([], name="plain"))
    task = create_task(env.store, env.project, workflow, summary="no hooks")
    engine = Engine(env.store, env.project, registry=DeferredRegistry(build))
    assert engine.transition(task.id, "working").to_status == "working"
    assert built == []  # a move without hook actions never asks for one
    hooked = load_named(write_workflow([{"action": "increment", "field": "n"}], name="hooked"))
    other = create_task(env.store, env.project, hooked, summary="one hook")
    assert engine.transition(other.id, "working").task.fields["n"] == 1
    assert built == [1]
