"""Task keys: offered from the workflow's roles and moves, acted through the engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from textual.widgets import Input, Select, Static

from orange.store.listing import all_tasks
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import git
from tests.dashboard.conftest import NO_ENDS, add_workflow, app_for, drive, put_task


def _keys(app: Any) -> str:
    return str(app.query_one("#keys", Static).render())


def _message(app: Any) -> str:
    return str(app.query_one("#message", Static).render())


def _status(repo: Path, task_id: str) -> str:
    return TaskStore.open(repo).get(task_id).status


def test_merge_and_cancel_keys_follow_the_done_and_cancelled_roles(project: Path) -> None:
    add_workflow("noends", NO_ENDS)
    put_task(project, "aaaa0001", status="reviewing", updated_at="2026-01-02T11:59:00+00:00")
    put_task(project, "aaaa0002", status="reviewing", workflow="noends")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "m merge" in _keys(app) and "x cancel" in _keys(app)  # minimal: both roles
        await pilot.press("j")
        assert "m merge" not in _keys(app) and "x cancel" not in _keys(app)
        await pilot.press("m")
        assert "no merge here" in _message(app)
        await pilot.press("x")
        assert "no cancel here" in _message(app)
        assert len(app.screen_stack) == 1  # nothing asked

    drive(app, script)
    assert _status(project, "aaaa0002") == "reviewing"


def test_x_asks_and_only_yes_cancels(project: Path) -> None:
    put_task(project, "aaaa0001", status="reviewing")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("x")
        await pilot.press("n")
        assert _status(project, "aaaa0001") == "reviewing"
        await pilot.press("x")
        await pilot.press("y")
        await pilot.pause()
        assert "reviewing -> cancelled" in _message(app)

    drive(app, script)
    assert _status(project, "aaaa0001") == "cancelled"


def test_m_merges_a_reviewed_task_and_a_failed_merge_is_one_line_that_changes_nothing(
    project: Path,
) -> None:
    put_task(project, "aaaa0001", status="reviewing", branch="ready")
    put_task(
        project,
        "aaaa0002",
        status="reviewing",
        branch="missing",
        updated_at="2026-01-02T11:30:00+00:00",
    )
    git(project, "branch", "ready")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("m")  # aaaa0002 first (newer): its branch does not exist
        assert _message(app).startswith("error: ") and "\n" not in _message(app)
        await pilot.press("j", "m")
        await pilot.pause()
        assert "reviewing -> done" in _message(app)

    drive(app, script)
    assert _status(project, "aaaa0001") == "done"
    assert _status(project, "aaaa0002") == "reviewing"


def test_r_sends_the_text_as_request_changes(project: Path) -> None:
    put_task(project, "aaaa0001", status="reviewing", workflow="default", harness="fake")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "r request changes" in _keys(app)
        await pilot.press("r")
        await pilot.press(*"use a set")
        await pilot.press("enter")
        await pilot.pause()
        assert "reviewing -> working" in _message(app)

    drive(app, script)
    task = TaskStore.open(project).get("aaaa0001")
    assert task.status == "working"
    assert "use a set" in task.body.split("## Feedback", 1)[1]


def test_a_acknowledges_attention_and_d_deletes_after_asking(project: Path) -> None:
    put_task(project, "aaaa0001", status="reviewing", attention="hook failed: boom")
    put_task(project, "aaaa0002", status="done", updated_at="2026-01-01T00:00:00+00:00")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "a acknowledge" in _keys(app) and "d delete" not in _keys(app)
        assert "! hook failed: boom" in str(app.query_one("#detail", Static).render())
        await pilot.press("a")
        await pilot.pause()
        assert "attention cleared" in _message(app)
        await pilot.press("f", "j")  # all: the done task is second
        assert "d delete" in _keys(app)
        await pilot.press("d", "y")
        await pilot.pause()
        assert "deleted task aaaa0002" in _message(app)

    drive(app, script)
    store = TaskStore.open(project)
    assert store.get("aaaa0001").str_field("attention") == ""
    assert store.snapshot().task("aaaa0002") is None


def test_c_creates_a_task_from_the_form(project: Path) -> None:
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("c")
        await pilot.press(*"new-thing")
        await pilot.press("tab", *"make it")
        assert app.screen.query_one("#harness", Select).value == "fake"  # the installed one
        app.screen.query_one("#status", Select).value = "reviewing"  # waits: no agent
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "created task" in _message(app)

    drive(app, script)
    tasks = [t for t in all_tasks(TaskStore.open(project)) if isinstance(t, Task)]
    assert [(t.branch, t.summary, t.status) for t in tasks] == [
        ("new-thing", "make it", "reviewing")
    ]


def test_y_inside_tmux_puts_the_id_in_the_buffer_of_the_tmux_it_runs_in(
    project: Path, monkeypatch: Any
) -> None:
    put_task(project, "aaaa0001", status="working")
    # The user's own tmux: not the server Orange runs agents on (the demo's case).
    user = ["tmux", "-L", f"{os.environ['ORANGE_TMUX_SOCKET']}-user"]
    subprocess.run([*user, "new-session", "-d", "-s", "mine"], check=True)
    try:
        shown = [*user, "display-message", "-p", "#{socket_path}"]
        path = subprocess.run(shown, capture_output=True, text=True, check=True).stdout.strip()
        monkeypatch.setenv("TMUX", f"{path},1,0")
        app = app_for(project)
        app.copy_to_clipboard = lambda text: None  # type: ignore[method-assign]

        async def script(pilot: Any) -> None:
            await pilot.press("y")
            assert _message(app) == "copied aaaa0001"

        drive(app, script)
        buffer = subprocess.run([*user, "show-buffer"], capture_output=True, text=True)
        assert buffer.stdout == "aaaa0001"
    finally:
        subprocess.run([*user, "kill-server"], capture_output=True, check=False)


def test_y_copies_the_id_and_help_lists_every_key(project: Path) -> None:
    put_task(project, "aaaa0001", status="working")
    app = app_for(project)
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign,assignment]

    async def script(pilot: Any) -> None:
        await pilot.press("y")
        await pilot.press("question_mark")
        text = str(app.screen.query_one("#help", Static).render())
        for key in ("Enter", "m  merge", "x  cancel", "r  request", "D  diff", "w  workspace"):
            assert key in text
        await pilot.press("escape")
        await pilot.press("slash")
        assert app.focused is app.query_one("#filter", Input)

    drive(app, script)
    assert copied == ["aaaa0001"]


# A workflow whose done state is reachable before any review.
QUICK = """\
name: quick
version: 1
description: Straight to done.
initial_statuses: [pending]
states:
  pending: {terminal: false}
  done: {terminal: true, role: done}
  cancelled: {terminal: true, role: cancelled}
transitions:
  - {from: pending, to: done, by: [human], hooks: []}
  - {from: pending, to: cancelled, by: [human], hooks: []}
"""


def test_m_asks_first_when_the_task_has_not_passed_review(project: Path) -> None:
    add_workflow("quick", QUICK)
    put_task(project, "aaaa0001", status="pending", workflow="quick", branch="ready")
    git(project, "branch", "ready")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("m")
        assert "has not passed review" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        assert _status(project, "aaaa0001") == "pending"
        await pilot.press("m", "y")
        await pilot.pause()

    drive(app, script)
    assert _status(project, "aaaa0001") == "done"


def test_enter_spawns_a_queued_task(project: Path) -> None:
    put_task(project, "aaaa0001", status="pending", harness="fake")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "Enter spawn" in _keys(app)
        await pilot.press("enter")
        await pilot.pause()
        assert "pending -> working" in _message(app)

    drive(app, script)
    assert _status(project, "aaaa0001") == "working"


def test_the_footer_says_which_key_comes_back_from_an_attach(
    project: Path, monkeypatch: Any
) -> None:
    put_task(project, "aaaa0001", status="working", tmux_session="proj-aaaa0001")
    socket = os.environ["ORANGE_TMUX_SOCKET"]
    subprocess.run(["tmux", "-L", socket, "new-session", "-d", "-s", "other"], check=True)
    path = subprocess.run(
        ["tmux", "-L", socket, "display-message", "-p", "#{socket_path}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    app = app_for(project)

    async def script(pilot: Any) -> None:
        app.agents = {app.shown_rows[0].key: "alive"}
        monkeypatch.delenv("TMUX", raising=False)
        app.show_keys()
        assert "Enter attach (detach returns)" in _keys(app)  # tmux attach, then detach
        monkeypatch.setenv("TMUX", f"{path},1,0")  # inside tmux on the agents' server
        app.show_keys()
        assert "Enter attach (prefix L returns)" in _keys(app)

    drive(app, script)


def test_enter_follows_the_agent_attach_a_live_one_respawn_a_dead_one(project: Path) -> None:
    put_task(project, "aaaa0001", status="working", workflow="default",
             tmux_session="proj-aaaa0001")  # fmt: skip
    app = app_for(project)

    async def script(pilot: Any) -> None:
        key = app.shown_rows[0].key
        for agent, label in (("alive", "Enter attach"), ("exited 1", "Enter respawn")):
            app.agents = {key: agent}
            app.show_keys()
            assert label in _keys(app)

    drive(app, script)


GH = Path(__file__).parents[1] / "e2e" / "fakes" / "gh"


def test_p_creates_a_pr_for_a_task_without_one_and_keeps_its_url(
    project: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(project, "remote", "add", "origin", str(origin))
    git(project, "push", "-q", "origin", "main")
    git(project, "branch", "feature/aaaa0001")
    bin_dir, gh_dir = tmp_path / "gh-bin", tmp_path / "gh-state"
    bin_dir.mkdir()
    gh_dir.mkdir()
    shutil.copy(GH, bin_dir / "gh")
    monkeypatch.setenv("FAKE_GH_DIR", str(gh_dir))
    monkeypatch.setenv("FAKE_GH_URL", "https://github.com/example/proj/pull/42")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    put_task(project, "aaaa0001", status="reviewing")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "p create PR" in _keys(app)
        await pilot.press("p")
        await pilot.pause()
        assert _message(app) == "task aaaa0001: opened https://github.com/example/proj/pull/42"
        assert "p open PR" in _keys(app)

    drive(app, script)
    calls = [json.loads(line) for line in (gh_dir / "calls.jsonl").read_text().splitlines()]
    assert [call[:2] for call in calls] == [["pr", "create"]]
    assert calls[0][calls[0].index("--head") + 1] == "feature/aaaa0001"
    task = TaskStore.open(project).get("aaaa0001")
    assert task.str_field("pr_url") == "https://github.com/example/proj/pull/42"
    assert git(origin, "rev-parse", "feature/aaaa0001") == git(project, "rev-parse", "main")


def test_no_pr_is_offered_for_a_task_whose_branch_does_not_exist(project: Path) -> None:
    put_task(project, "aaaa0001", status="pending")  # never started: no branch yet
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "PR" not in _keys(app)
        await pilot.press("p")  # not a key of this task: nothing happens
        await pilot.pause()
        assert "PR" not in _message(app)
        git(project, "branch", "feature/aaaa0001")  # once it exists, it can become a PR
        app.show_keys()
        assert "p create PR" in _keys(app)

    drive(app, script)


def test_the_create_form_never_picks_the_demo_stand_in_for_the_person() -> None:
    """With only the demo stand-in installed the harness is left blank (Orange picks,
    as `orange task create` does); a real agent installed is the one offered first."""
    from textual.app import App

    from orange.dashboard.screens import CreateScreen, NewTask

    made: list[NewTask | None] = []

    class Host(App[None]):
        def __init__(self, harnesses: list[str]) -> None:
            super().__init__()
            self.harnesses = harnesses

        def on_mount(self) -> None:
            self.push_screen(CreateScreen(self.harnesses, ["pending"]), made.append)

    async def fill(pilot: Any) -> None:
        await pilot.press(*"b", "tab", *"s", "ctrl+s")
        await pilot.pause()

    for harnesses in (["demo"], ["codex", "demo"]):
        drive(Host(harnesses), fill)  # type: ignore[arg-type]
    assert [new.harness if new else None for new in made] == ["", "codex"]
