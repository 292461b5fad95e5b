"""Snapshots of the main screen, the create form, the host dialog and the diff view
(fixed ids and times: the same picture on every run).  `pytest --snapshot-update` records them anew
after a deliberate change of the look."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from textual.widgets import DataTable

from tests.dashboard.conftest import app_for, commit_on_branch, put_broken, put_task


def _tasks(repo: Path) -> None:
    put_task(repo, "aaaa0001", status="working", summary="add the parser",
             updated_at="2026-01-02T11:57:00+00:00", crash_count=1)  # fmt: skip
    put_task(repo, "aaaa0002", status="reviewing", summary="fix the login bug",
             attention="hook failed: notify", review_round=2,
             updated_at="2026-01-02T11:30:00+00:00")  # fmt: skip
    put_task(repo, "aaaa0003", status="working", summary="on a laptop", host="laptop",
             workspace="proj--1", updated_at="2026-01-01T08:00:00+00:00")  # fmt: skip
    put_broken(repo, "bbbb0001")


def test_main_screen(project: Path, snap_compare: Any) -> None:
    _tasks(project)
    assert snap_compare(app_for(project), terminal_size=(120, 16))


def test_main_screen_at_80_columns(project: Path, snap_compare: Any) -> None:
    _tasks(project)
    assert snap_compare(app_for(project), terminal_size=(80, 24))


def test_create_form(project: Path, snap_compare: Any) -> None:
    assert snap_compare(app_for(project), press=["c", *"new-parser"], terminal_size=(100, 24))


def test_host_dialog(project: Path, snap_compare: Any) -> None:
    # Registered hosts as `orange host add` and `host check` leave them (local
    # configuration): one ready, one unreachable, one not set up for this project.
    put_task(project, "aaaa0001", summary="add the parser")
    box = {
        "name": "box",
        "target": "me@box",
        "reports_as": "boxhost",
        "projects": {"proj": "proj"},
        "pools": {"proj": 2},
        "agents": ["claude", "demo"],
    }
    far = {
        **box,
        "name": "far",
        "target": "far",
        "reports_as": "farhost",
        "unreachable_since": "2026-01-02T11:40:00Z",
    }
    other = {**box, "name": "other", "target": "other", "reports_as": "o", "projects": {}}
    hosts = {"hosts": [box, far, other]}
    (Path(os.environ["ORANGE_HOME"]) / "hosts.json").write_text(json.dumps(hosts))
    assert snap_compare(app_for(project), press=["h"], terminal_size=(100, 16))


def test_diff_view(project: Path, snap_compare: Any) -> None:
    parser = "def parse(text):\n    return text.split()\n"
    commit_on_branch(
        project,
        {"README.md": "# project\n\nNow with a parser.\n", "parse.py": parser},
        message="parser",
    )
    put_task(project, "aaaa0001", status="reviewing", branch="work")

    async def select_a_line(pilot: Any) -> None:
        await pilot.press("D")
        pilot.app.screen.query_one("#diff", DataTable).move_cursor(row=3)

    assert snap_compare(app_for(project), run_before=select_a_line, terminal_size=(100, 20))
