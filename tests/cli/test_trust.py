"""Trust by content (DESIGN §8, issue 9 finding 1): a workflow definition a teammate
pushed runs nothing on this host until a human here trusts its text.

Two hosts share a bare repository: the teammate (their own ``$ORANGE_HOME``, where a
user workflow called ``minimal`` — the name of a shipped one — runs a command on
cancel and on two moves) creates a task and pushes ``refs/orange/tasks``; the victim
fetches it.  Everything runs through the real CLI, the real engine and the real
``run_command`` action, whose marker files are the observable effect.
"""

from __future__ import annotations

import io
import subprocess
import sys
import uuid
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest
import yaml

from orange.engine.forgery import RECORD, start_record
from orange.engine.records import Written
from orange.runtime import bindings, watcher
from orange.store import layout
from orange.store.store import Snapshot, TaskStore
from tests.conftest import Cli, Result, git, make_repo
from tests.helpers import retry_until

DATA = Path(__file__).parent / "data"


def evil_minimal(markers: Path) -> str:
    """The shipped ``minimal`` workflow (same name), changed to run commands: on
    ``pending -> cancelled``, on a new ``pending -> reviewing`` move, and when the
    monitor advances a dead worker's task (``working -> reviewing``)."""
    doc = yaml.safe_load(files("orange._workflows").joinpath("minimal.yml").read_text())
    for transition in doc["transitions"]:
        if (transition["from"], transition["to"]) == ("pending", "cancelled"):
            transition["hooks"] = [_touch(markers / "cancel-hook-ran")]
        if (transition["from"], transition["to"]) == ("working", "reviewing"):
            transition["hooks"] = [_touch(markers / "exit-rule-hook-ran")]
    doc["transitions"].append(
        {"from": "pending", "to": "reviewing", "hooks": [_touch(markers / "move-hook-ran")]}
    )
    doc["escalation"]["hooks"] = [_touch(markers / "escalation-hook-ran")]
    doc["exit_monitoring"] = {
        "rules": [
            {"status": "working", "has_artifact": {"section": "## Handoff"}, "then": "reviewing"},
            {"status": "working", "no_artifact": True, "action": "crash", "stuck_after": 1},
        ]
    }
    return yaml.safe_dump(doc, sort_keys=False)


def _touch(path: Path) -> dict[str, object]:
    return {"action": "run_command", "argv": ["touch", str(path)]}


class Hosts:
    """The teammate's and the victim's clones of one bare repository, each with its
    own ``$ORANGE_HOME``; ``cli`` runs as whichever host was entered last."""

    def __init__(self, root: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.cli = cli
        self.monkeypatch = monkeypatch
        self.markers = root / "markers"
        self.markers.mkdir()
        self.bare = root / "shared.git"
        git(root, "init", "-q", "--bare", str(self.bare))
        self.mate = make_repo(root / "mate")
        git(self.mate, "remote", "add", "origin", str(self.bare))
        git(self.mate, "push", "-q", "origin", "main")
        self.victim = root / "victim"
        git(root, "clone", "-q", str(self.bare), str(self.victim))

    def enter(self, who: str) -> Path:
        home = self.root / f"home-{who}"
        self.monkeypatch.setenv("ORANGE_HOME", str(home))
        repo = self.mate if who == "mate" else self.victim
        self.monkeypatch.chdir(repo)
        return home

    def pushed_task(self, workflow_text: str) -> str:
        """The teammate creates a pending task under ``workflow_text`` and pushes; the
        victim fetches it and registers the project.  Returns the task id."""
        home = self.enter("mate")
        (home / "workflows").mkdir(parents=True)
        (home / "workflows" / "minimal.yml").write_text(workflow_text)
        self.cli.ok("project", "add", "--name", "proj", "--workflow", "minimal")
        task_id = self.cli.ok("task", "create", "evil", "Harmless", "--no-spawn", "--json").json()
        git(self.mate, "push", "-q", "origin", layout.TASKS_REF)
        self.enter("victim")
        git(self.victim, "fetch", "-q", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}")
        self.cli.ok("project", "add", "--name", "proj")
        return str(task_id["id"])

    def tip(self) -> str:
        return git(self.victim, "rev-parse", layout.TASKS_REF).strip()

    def refused(self, *args: str) -> Result:
        """A command that must be refused here: exit 1, one line, nothing written."""
        before = self.tip()
        result = self.cli(*args)
        assert result.code == 1, f"{args} -> {result.code}\n{result.err}{result.out}"
        assert result.err.count("\n") == 1 and result.err.startswith("orange: "), result.err
        assert self.tip() == before
        return result

    def status(self, task_id: str) -> str:
        return str(self.cli.ok("task", "show", task_id, "--json").json()["status"])


@pytest.fixture
def hosts(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Hosts:
    return Hosts(tmp_path, cli, monkeypatch)


@pytest.fixture
def evil(hosts: Hosts) -> str:
    return hosts.pushed_task(evil_minimal(hosts.markers))


def test_cancel_moves_an_untrusted_task_without_running_its_hooks(hosts: Hosts, evil: str) -> None:
    hosts.cli.ok("task", "cancel", evil, "--yes")
    assert hosts.status(evil) == "cancelled"
    assert not (hosts.markers / "cancel-hook-ran").exists()


def test_moves_of_an_untrusted_task_are_refused_with_the_command_to_trust_it(
    hosts: Hosts, evil: str
) -> None:
    refused = hosts.refused("task", "update", evil, "--status", "reviewing")
    assert "not trust" in refused.err and "`orange workflow trust minimal`" in refused.err
    hosts.refused("task", "spawn", evil)
    assert hosts.status(evil) == "pending"
    assert not (hosts.markers / "move-hook-ran").exists()


def test_the_fast_path_refuses_too(hosts: Hosts, evil: str) -> None:
    """``task update --status`` as agents run it: a process of its own, the fast path."""
    result = subprocess.run(
        [sys.executable, "-m", "orange", "task", "update", evil, "--status", "reviewing"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1 and "orange workflow trust minimal" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not (hosts.markers / "move-hook-ran").exists()


def test_trusting_shows_the_difference_from_the_local_definition_then_moves_run(
    hosts: Hosts, evil: str
) -> None:
    shown = hosts.cli.ok("workflow", "trust", "minimal", "--yes").out
    assert "--- local shipped minimal.yml" in shown
    assert f"+    - touch\n+    - {hosts.markers / 'move-hook-ran'}\n" in shown
    assert "trusted " in shown
    hosts.cli.ok("task", "update", evil, "--status", "reviewing")
    assert (hosts.markers / "move-hook-ran").exists()
    again = hosts.cli.ok("workflow", "trust", "minimal", "--yes").out
    assert again.startswith("nothing to trust")


def test_trust_asks_and_a_no_records_nothing(
    hosts: Hosts, evil: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    result = hosts.cli.ok("workflow", "trust", "minimal")
    assert "trust this minimal definition on this host?" in result.out
    assert "left 1 definition(s) untrusted" in result.out
    hosts.refused("task", "update", evil, "--status", "reviewing")
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    hosts.cli.ok("workflow", "trust", "minimal")
    hosts.cli.ok("task", "update", evil, "--status", "reviewing")


def test_without_a_terminal_and_without_yes_trust_refuses(hosts: Hosts, evil: str) -> None:
    refused = hosts.refused("workflow", "trust", "minimal")
    assert "--yes" in refused.err
    assert hosts.cli.ok("workflow", "trust", "--list", "--json").json() == {"trusted": []}


def test_list_and_revoke(hosts: Hosts, evil: str) -> None:
    hosts.cli.ok("workflow", "trust", "minimal", "--yes")
    listed = hosts.cli.ok("workflow", "trust", "--list", "--json").json()["trusted"]
    assert [(e["name"], len(e["digest"])) for e in listed] == [("minimal", 64)]
    assert listed[0]["source"].startswith("refs/orange/tasks:meta/workflows/minimal.yml")
    assert listed[0]["digest"] in hosts.cli.ok("workflow", "trust", "--list").out
    revoked = hosts.cli.ok("workflow", "trust", "--revoke", listed[0]["digest"][:12]).out
    assert revoked.startswith(f"revoked {listed[0]['digest'][:12]} (minimal)")
    hosts.refused("task", "update", evil, "--status", "reviewing")
    hosts.cli.ok("workflow", "trust", "minimal", "--yes")
    hosts.cli.ok("workflow", "trust", "--revoke", "minimal")
    assert hosts.cli.ok("workflow", "trust", "--list", "--json").json() == {"trusted": []}


@pytest.mark.parametrize(
    "args",
    [
        pytest.param((), id="nothing-to-trust"),
        pytest.param(("minimal", "--list"), id="name-and-list"),
        pytest.param(("--revoke", "0123456789abcdef"), id="revoke-unknown-hash"),
        pytest.param(("--revoke", "nosuch"), id="revoke-unknown-name"),
        pytest.param(("nosuch", "--yes"), id="unknown-committed-name"),
    ],
)
def test_bad_input_is_one_line(hosts: Hosts, evil: str, args: tuple[str, ...]) -> None:
    hosts.refused("workflow", "trust", *args)


def test_an_unknown_name_is_said_before_any_question(hosts: Hosts, evil: str) -> None:
    result = hosts.cli("workflow", "trust", "nosuch")  # no terminal, no --yes
    assert result.code == 1
    assert "no workflow 'nosuch' is committed" in result.err


def test_trusting_a_file(hosts: Hosts, evil: str) -> None:
    copy = hosts.root / "reviewed.yml"
    copy.write_text(evil_minimal(hosts.markers))
    shown = hosts.cli.ok("workflow", "trust", str(copy), "--yes").out
    # No local workflow is called `reviewed`: the whole text is shown.
    assert f"== {copy} (sha256 " in shown and f"    - {hosts.markers / 'move-hook-ran'}\n" in shown
    hosts.cli.ok("task", "update", evil, "--status", "reviewing")


def test_list_and_show_mark_the_untrusted_task(
    hosts: Hosts, evil: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # the table on one line per row
    trusted_id = hosts.cli.ok("task", "create", "fine", "Fine", "--no-spawn", "--json").json()["id"]
    table = hosts.cli.ok("task", "list").out
    assert "untrusted" in table and "orange workflow trust minimal" in table
    for args in (("--json",), ("--json", "--body")):
        tasks = {t["id"]: t for t in hosts.cli.ok("task", "list", *args).json()["tasks"]}
        assert tasks[evil]["trusted"] is False
        assert "trusted" not in tasks[trusted_id]
    assert hosts.cli.ok("task", "show", evil, "--json").json()["trusted"] is False
    assert "trusted" not in hosts.cli.ok("task", "show", trusted_id, "--json").json()
    shown = hosts.cli.ok("task", "show", evil).out
    assert "untrusted:" in shown and "orange workflow trust minimal" in shown
    # The mark is this host's: never committed, and the teammate's host has none.
    assert "trusted" not in git(hosts.victim, "show", f"{layout.TASKS_REF}:{_path(evil)}")
    hosts.enter("mate")
    assert "untrusted" not in hosts.cli.ok("task", "list").out


def test_editing_your_own_workflow_file_leaves_your_tasks_running(hosts: Hosts) -> None:
    home = hosts.enter("victim")
    (home / "workflows").mkdir(parents=True)
    mine = home / "workflows" / "minimal.yml"
    mine.write_text(evil_minimal(hosts.markers))
    hosts.cli.ok("project", "add", "--name", "proj", "--workflow", "minimal")
    task_id = hosts.cli.ok("task", "create", "mine", "Mine", "--no-spawn", "--json").json()["id"]
    mine.write_text(mine.read_text().replace("Worker implements", "A worker implements"))
    hosts.cli.ok("task", "update", task_id, "--status", "reviewing")
    assert (hosts.markers / "move-hook-ran").exists()


def test_a_task_under_an_earlier_shipped_definition_keeps_running(hosts: Hosts) -> None:
    """A shipped workflow changed after the task was created (simulated: the task was
    created under the earlier shipped ``minimal``, committed by a teammate, so this host
    never recorded it): its hash is in the shipped list, so it still moves here."""
    task_id = hosts.pushed_task((DATA / "minimal-shipped-earlier.yml").read_text())
    assert "trusted" not in hosts.cli.ok("task", "show", task_id, "--json").json()
    hosts.cli.ok("task", "cancel", task_id, "--yes")
    assert hosts.status(task_id) == "cancelled"


@pytest.fixture
def tmux_socket(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    socket = f"orange-test-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", socket)
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


@pytest.mark.parametrize("handoff", [True, False], ids=["exit-rule", "escalation"])
def test_the_monitor_leaves_a_dead_untrusted_task_alone(
    hosts: Hosts, tmux_socket: str, handoff: bool
) -> None:
    """The teammate's task names a tmux session on the victim's host whose agent is
    gone; with a Handoff the exit rule would advance it, without one the crash rule
    would escalate it: both run hooks of the pushed definition."""
    evil = hosts.pushed_task(evil_minimal(hosts.markers))
    hosts.enter("mate")
    store = TaskStore.open(hosts.mate)
    body = "\n## Handoff\n\nDONE: everything\n" if handoff else ""
    fields: dict[str, object] = {
        "status": "working",
        "tmux_session": "proj/evil",
        "host": "testhost",
    }
    store.commit(lambda snap: _forged(snap, evil, fields, body))
    git(hosts.mate, "push", "-q", "origin", layout.TASKS_REF)
    hosts.enter("victim")
    git(hosts.victim, "fetch", "-q", "origin", f"+{layout.TASKS_REF}:{layout.TASKS_REF}")
    # A session this host recorded for the task (it trusted the definition once and a
    # human revoked it since), and the commit taken as verified (the forgery check
    # would otherwise put the hand-written status back first): the binding and forgery
    # rules let the monitor look; trust is what stops it.
    bindings.record("proj", evil, session="proj/evil")
    start_record(TaskStore.open(hosts.victim))
    tip = hosts.tip()
    report = hosts.cli.ok("monitor", "--once", "--json").json()
    assert report["dead"] == 1
    assert report["actions"] == [
        f"task {evil} (proj, working): session gone: left alone: its workflow "
        "definition is not trusted on this host"
    ]
    assert hosts.tip() == tip and hosts.status(evil) == "working"
    assert sorted(p.name for p in hosts.markers.iterdir()) == []


def _forged(snap: Snapshot, task_id: str, fields: dict[str, object], body: str) -> Written:
    task = snap.task(task_id)
    assert task is not None
    new = task.with_fields(**fields).with_body(body)
    return Written(
        task_id=task_id,
        event="task.updated",
        subject=f"task {task_id}: forged",
        writes={task.path: new.render().encode()},
        task=new,
    )


def _path(task_id: str) -> str:
    return layout.task_path(task_id)


class _Terminal(io.StringIO):
    """Standard input that says it is a terminal, with the answers to prompts."""

    def isatty(self) -> bool:
        return True


def test_a_plain_git_move_of_an_untrusted_task_runs_no_hook(hosts: Hosts, evil: str) -> None:
    """The move, legal in the pushed definition, is committed with plain git in a tasks
    checkout: pre-commit refuses it (the checker trusts what this host trusts); forced
    past it with --no-verify, post-commit carries out no hook."""
    checkout = hosts.root / "tasks"
    hosts.cli.ok("tasks", "checkout", str(checkout))
    path = checkout / _path(evil)
    path.write_text(path.read_text().replace("\nstatus: pending\n", "\nstatus: reviewing\n", 1))

    def commit(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "commit", "-q", "-a", *extra, "-m", "hand move"],
            cwd=checkout,
            capture_output=True,
            text=True,
            check=False,
        )

    refused = commit()
    assert refused.returncode == 1
    assert "its committed definition is not trusted here" in refused.stderr
    result = commit("--no-verify")
    assert result.returncode == 0, result.stderr
    assert f"task {evil}: could not run the hooks of the move: task {evil} runs" in result.stderr
    assert "orange workflow trust minimal" in result.stderr
    assert not (hosts.markers / "move-hook-ran").exists()


def test_a_fetch_runs_nothing_a_teammate_pushed(
    hosts: Hosts, tmux_socket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding 1, the zero-click path: a pushed workflow with a ``run_command`` hook, a
    task in a status whose exit rule advances it and a ``host``/``tmux_session`` naming
    this machine.  The victim only fetches: git's reference-transaction hook starts the
    monitor, which verifies the fetched commits; its record that it handled them is
    what the test waits for, then no hook of the pushed definition has run.  Three
    rules stop it, each proven alone elsewhere: the hand-made move is restored as a
    forgery, no local record binds the session, the definition is not trusted here."""
    evil = hosts.pushed_task(evil_minimal(hosts.markers))
    hosts.enter("mate")
    store = TaskStore.open(hosts.mate)
    fields: dict[str, object] = {
        "status": "working",
        "tmux_session": "proj/evil",
        "host": "testhost",
    }
    store.commit(lambda snap: _forged(snap, evil, fields, "\n## Handoff\n\nDONE: all\n"))
    git(hosts.mate, "push", "-q", "origin", layout.TASKS_REF)
    pushed = git(hosts.mate, "rev-parse", layout.TASKS_REF).strip()

    hosts.enter("victim")
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    record = hosts.victim / ".git" / "orange" / RECORD
    try:
        # Plain git, as a user (or their editor) fetches: nothing else is run.
        git(hosts.victim, "fetch", "-q", "origin", f"{layout.TASKS_REF}:{layout.TASKS_REF}")

        def handled() -> bool:
            seen = record.read_text().strip() if record.is_file() else ""
            return seen == hosts.tip() and seen != pushed  # verified, the restore too

        retry_until(handled, timeout=30)
    finally:
        retry_until(lambda: watcher.stop() or not watcher.is_running(), timeout=30)
    assert sorted(p.name for p in hosts.markers.iterdir()) == []
    assert git(hosts.victim, "rev-parse", f"{hosts.tip()}~1").strip() == pushed
    restored = hosts.cli.ok("task", "show", evil, "--json").json()
    assert restored["status"] == "pending"
    assert f"forged change in commit {pushed[:10]}" in restored["attention"]
