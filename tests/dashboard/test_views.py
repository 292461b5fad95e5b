"""Live updates and the views of a task (Esc comes back from each)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Markdown, Static

from orange.dashboard.views import DiffView, PoolView, TaskFileView, TextView
from orange.runtime import settingup
from orange.store.store import TaskStore
from tests.conftest import Cli, git
from tests.dashboard.conftest import app_for, commit_on_branch, drive, put_task, table_text


async def _until(pilot: Any, check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)
        await pilot.pause()


def test_a_task_created_from_the_cli_shows_without_a_restart(project: Path, cli: Cli) -> None:
    app = app_for(project, poll=True)

    async def script(pilot: Any) -> None:
        assert table_text(app) == []
        cli.ok("task", "create", "from-cli", "made elsewhere", "--no-spawn", cwd=project)
        await _until(pilot, lambda: [r[2] for r in table_text(app)] == ["from-cli"])

    drive(app, script)


def test_one_changed_task_redraws_only_its_cells(project: Path) -> None:
    put_task(project, "aaaa0001", status="working", summary="first")
    put_task(project, "aaaa0002", status="working", updated_at="2026-01-02T10:00:00+00:00")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        before = app.source.feeds[0].rows["proj:" + _dir("aaaa0002")]
        put_task(project, "aaaa0001", status="working", summary="renamed")
        app.watch_refs()
        assert table_text(app)[0][-1] == "renamed"
        assert app.source.feeds[0].rows["proj:" + _dir("aaaa0002")] is before  # not rebuilt

    drive(app, script)


def test_a_task_that_moves_up_is_moved_not_all_rows_added_again(project: Path) -> None:
    put_task(project, "aaaa0001", status="working", updated_at="2026-01-03T10:00:00+00:00")
    put_task(project, "aaaa0002", status="working", updated_at="2026-01-02T10:00:00+00:00")
    put_task(project, "aaaa0003", status="working", updated_at="2026-01-01T10:00:00+00:00")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        table = app.query_one("#table", DataTable)
        assert [r[0] for r in table_text(app)] == ["aaaa0001", "aaaa0002", "aaaa0003"]
        await pilot.press("down")  # the cursor on aaaa0002
        kept = dict(table.rows)  # the table's own row records
        put_task(project, "aaaa0003", status="working", summary="now",
                 updated_at="2026-01-04T10:00:00+00:00")  # fmt: skip
        app.watch_refs()
        assert [r[0] for r in table_text(app)] == ["aaaa0003", "aaaa0001", "aaaa0002"]
        assert table_text(app)[0][-1] == "now"
        assert table.row_count == 3
        assert table.cursor_row == 2  # still on aaaa0002
        assert all(table.rows[key] is row for key, row in kept.items())  # moved, not re-added

    drive(app, script)


def _dir(task_id: str) -> str:
    from orange.store.layout import task_path

    return task_path(task_id).rsplit("/", 1)[0]


def test_v_shows_task_md_and_l_its_history_and_esc_comes_back(project: Path) -> None:
    put_task(project, "aaaa0001", status="working")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("v")
        assert isinstance(app.screen, TaskFileView)
        assert app.screen.query_one(Markdown).source.startswith("## Context")
        await pilot.press("escape", "l")
        assert isinstance(app.screen, TextView)
        assert "task aaaa0001: set up" in str(app.screen.query_one("#body", Static).render())
        await pilot.press("escape")
        assert app.screen.query_one("#table", DataTable) is not None

    drive(app, script)


def test_w_shows_the_pool_and_o_without_a_session_is_one_line(project: Path, cli: Cli) -> None:
    put_task(project, "aaaa0001", status="working")
    put_task(project, "aaaa0002", status="pending")
    cli.ok("project", "update", "--port-base", "4000", cwd=project)
    settingup.write("proj", settingup.Mark("aaaa0002", "proj--1", os.getpid()))
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("o")
        assert "has no tmux session on this host" in str(app.query_one("#message", Static).render())
        await pilot.press("w")
        assert isinstance(app.screen, PoolView)
        rows = app.screen.query_one("#pool", DataTable)
        shown = [[str(cell) for cell in rows.get_row_at(i)] for i in range(rows.row_count)]
        assert [(row[0], row[1], row[2], row[-1]) for row in shown] == [
            ("proj--1", "setting up", "aaaa0002", "4000"),
            ("proj--2", "not created", "", "4010"),
        ]
        await pilot.press("escape")

    drive(app, script)


def test_diff_comments_on_two_hunks_go_as_one_request_changes(project: Path) -> None:
    commit_on_branch(project, {"a.py": "".join(f"line {n}\n" for n in range(1, 30))})
    put_task(project, "aaaa0001", status="reviewing", branch="work", workflow="default")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("D")
        view = app.screen
        assert isinstance(view, DiffView)
        table = view.query_one("#diff", DataTable)
        await pilot.press("j")  # j/k move here as in every dashboard view
        assert table.cursor_row == 1  # the hunk header: the whole hunk
        await pilot.press("c", *"split this", "enter")
        await pilot.press("j", "j", "j", "j", "k")
        assert table.cursor_row == 4  # a line: "+line 3"
        await pilot.press("c", *"rename", "enter", "s")
        await pilot.pause()
        assert "reviewing -> working" in str(view.query_one("#message", Static).render())

    drive(app, script)
    task = TaskStore.open(project).get("aaaa0001")
    feedback = task.body.split("## Feedback", 1)[1]
    assert feedback.count("- a.py:") == 2
    assert "- a.py:1\n    > +line 1" in feedback and "split this" in feedback
    assert "- a.py:3\n    > +line 3\n  rename" in feedback


def test_the_bell_rings_when_a_task_starts_waiting_for_a_human(project: Path) -> None:
    put_task(project, "aaaa0001", status="working")
    app = app_for(project)
    rings: list[bool] = []
    app.bell = lambda: rings.append(True)  # type: ignore[method-assign]

    async def script(pilot: Any) -> None:
        put_task(project, "aaaa0001", status="working", summary="still working")
        app.watch_refs()
        assert rings == []
        put_task(project, "aaaa0001", status="reviewing")  # waits_for_human in minimal
        app.watch_refs()
        assert rings == [True]

    drive(app, script)


def test_p_shows_the_pull_request_of_a_task_that_has_one(project: Path) -> None:
    put_task(project, "aaaa0001", status="reviewing", pr_url="https://example.com/pr/7")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "p open PR" in str(app.query_one("#keys", Static).render())
        await pilot.press("p")
        assert "https://example.com/pr/7" in str(app.query_one("#message", Static).render())

    drive(app, script)


def test_the_branch_column_shows_commits_ahead_and_lines_changed(project: Path) -> None:
    git(project, "checkout", "-q", "-b", "work")
    (project / "a.py").write_text("one\ntwo\n")
    git(project, "add", "a.py")
    git(project, "commit", "-qm", "a")
    (project / "README.md").write_text("")
    git(project, "commit", "-qam", "b")
    git(project, "checkout", "-q", "main")
    put_task(project, "aaaa0001", status="working", branch="work")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        app.watch_branches()
        await _until(pilot, lambda: table_text(app)[0][7] == "2 +2 -1")

    drive(app, script)


def test_a_task_that_would_conflict_is_marked_with_the_files_in_its_detail(
    project: Path,
) -> None:
    for branch in ("one", "two"):
        git(project, "checkout", "-q", "-b", branch, "main")
        (project / "README.md").write_text(f"# edited on {branch}\n")
        git(project, "commit", "-qam", branch)
    git(project, "checkout", "-q", "main")
    put_task(project, "aaaa0001", status="working", branch="one")
    put_task(project, "aaaa0002", status="working", branch="two")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        app.watch_branches()
        await _until(pilot, lambda: [r[7] for r in table_text(app)] == ["1 +1 -1 ✗"] * 2)
        app.query_one("#table", DataTable).move_cursor(row=0)
        await pilot.pause()
        first = table_text(app)[0][0]
        other = "aaaa0002" if first == "aaaa0001" else "aaaa0001"
        expected = f"would conflict with task {other} ({'two' if first == 'aaaa0001' else 'one'})"
        assert f"✗ {expected} on README.md" in app.lines["detail"]

    drive(app, script)


def test_the_detail_line_names_the_tasks_a_task_waits_for(project: Path) -> None:
    put_task(project, "aaaa0001", status="working")
    put_task(project, "aaaa0002", status="pending", after=["aaaa0001", "zzzz0009"])
    app = app_for(project)

    async def script(pilot: Any) -> None:
        rows = [r[0] for r in table_text(app)]
        app.query_one("#table", DataTable).move_cursor(row=rows.index("aaaa0002"))
        await _until(pilot, lambda: "after" in app.lines.get("detail", ""))
        assert app.lines["detail"].endswith("after aaaa0001 (working), zzzz0009 (gone)")

    drive(app, script)


def test_the_pr_column_shows_the_pull_requests_state(
    project: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    fakes = Path(__file__).parents[1] / "e2e" / "fakes"  # the fake gh of the e2e tests
    monkeypatch.setenv("PATH", f"{fakes}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GH_DIR", str(tmp_path))
    (tmp_path / "state").write_text("MERGED\n")
    put_task(project, "aaaa0001", status="reviewing", pr_url="https://github.com/o/p/pull/7")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        app.watch_branches()
        await _until(pilot, lambda: table_text(app)[0][8] == "#7 merged")

    drive(app, script)


CHECKS = {
    "✓": [{"status": "COMPLETED", "conclusion": "SUCCESS"}, {"state": "SUCCESS"}],
    "⏳": [{"status": "COMPLETED", "conclusion": "SUCCESS"}, {"status": "IN_PROGRESS"}],
    "✗": [{"status": "IN_PROGRESS"}, {"status": "COMPLETED", "conclusion": "FAILURE"}],
}


def test_an_open_pull_request_shows_its_checks(
    project: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    fakes = Path(__file__).parents[1] / "e2e" / "fakes"
    monkeypatch.setenv("PATH", f"{fakes}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GH_DIR", str(tmp_path))
    put_task(project, "aaaa0001", status="reviewing", pr_url="https://github.com/o/p/pull/7")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        for mark, checks in CHECKS.items():
            (tmp_path / "checks.json").write_text(json.dumps(checks))
            app.watch_branches()
            await _until(pilot, lambda mark=mark: table_text(app)[0][8] == f"#7 open {mark}")
        (tmp_path / "checks.json").unlink()  # no checks at all: no mark
        app.watch_branches()
        await _until(pilot, lambda: table_text(app)[0][8] == "#7 open")

    drive(app, script)


def _on_a_release_branch(project: Path) -> None:
    """``release`` one commit past main, ``work`` one commit past release."""
    git(project, "checkout", "-q", "-b", "release")
    (project / "RELEASE").write_text("1.0\n")
    git(project, "add", "RELEASE")
    git(project, "commit", "-qm", "release")
    git(project, "checkout", "-q", "-b", "work")
    (project / "a.py").write_text("one\ntwo\n")
    git(project, "add", "a.py")
    git(project, "commit", "-qm", "a")
    git(project, "checkout", "-q", "main")


def test_a_task_with_a_base_is_counted_and_diffed_against_it(project: Path) -> None:
    _on_a_release_branch(project)
    put_task(project, "aaaa0001", status="reviewing", branch="work", base="release")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        app.watch_branches()
        await _until(pilot, lambda: table_text(app)[0][7] == "1 +2 -0")
        await pilot.press("D")
        view = app.screen
        assert isinstance(view, DiffView)
        assert "diff against release" in view.title_text
        paths = {line.path for line in view.lines}
        assert paths == {"a.py"}  # not release's own RELEASE file

    drive(app, script)


def test_a_task_whose_worktree_is_being_set_up_shows_it(project: Path) -> None:
    put_task(project, "aaaa0001", status="pending")
    put_task(project, "aaaa0002", status="pending", updated_at="2026-01-02T10:00:00+00:00")
    settingup.write("proj", settingup.Mark("aaaa0001", "proj--1", os.getpid()))
    app = app_for(project)

    async def script(pilot: Any) -> None:
        app.watch_agents()
        await pilot.pause()
        assert [(r[0], r[3]) for r in table_text(app)] == [
            ("aaaa0001", "setting up"),
            ("aaaa0002", "-"),
        ]
        settingup.clear("proj", "aaaa0001")
        app.watch_agents()
        await pilot.pause()
        assert [r[3] for r in table_text(app)] == ["-", "-"]

    drive(app, script)


def test_t_shows_the_dependency_tree_of_the_tasks_shown(project: Path, cli: Cli) -> None:
    ids: dict[str, str] = {}
    for name, after in (("base", ""), ("second", "base"), ("other", ""), ("last", "second")):
        extra = ("--after", f"{ids[after]},{ids['other']}") if name == "last" else ()
        extra = ("--after", ids[after]) if after and not extra else extra
        made = cli.ok("task", "create", name, f"the {name}", "--no-spawn", *extra, "--json",
                      cwd=project)  # fmt: skip
        ids[name] = str(json.loads(made.out)["id"])
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("t")
        assert isinstance(app.screen, TextView)
        lines = str(app.screen.query_one("#body", Static).render()).splitlines()
        assert [re.sub(r"(\w) .*", r"\1", line) for line in lines] == [
            ids["base"],
            f"└─ {ids['second']}",
            f"  └─ {ids['last']}",
            ids["other"],
            f"└─ ^ {ids['last']}",
        ]
        assert lines[0].split("  ")[1] == "pending (parked)"
        assert lines[1].strip().split("  ")[1] == f"pending (waiting for {ids['base']})"
        second, other = ids["second"], ids["other"]
        assert lines[2].strip().split("  ")[1] == f"pending (waiting for {second}, {other})"
        await pilot.press("escape")
        assert not isinstance(app.screen, TextView)


def test_the_cost_column_and_s_for_the_projects_stats(project: Path) -> None:
    ledger = {
        "tokens": {"in": 1200, "out": 80, "cache": 0},
        "usage_through": "2026-01-02T11:00:00Z",
    }
    put_task(
        project, "aaaa0001", status="working", cost_usd="1.500000", budget_usd="5.00", **ledger
    )
    put_task(
        project, "aaaa0002", status="working", cost_usd="0.000000", cost_unknown=True, **ledger
    )
    put_task(project, "aaaa0003", status="pending")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        table = app.query_one("#table", DataTable)
        rows = [table.get_row_at(i) for i in range(3)]
        costs = {str(row[0]): str(row[-2]) for row in rows}
        assert costs == {"aaaa0001": "$1.50/5.00", "aaaa0002": "unknown", "aaaa0003": ""}
        await pilot.press("s")
        assert isinstance(app.screen, TextView)
        shown = str(app.screen.query_one("#body", Static).render())
        assert "tasks: 3 started, 0 done, 0 cancelled" in shown
        await pilot.press("escape")
        assert app.screen.query_one("#table", DataTable) is not None

    drive(app, script)
