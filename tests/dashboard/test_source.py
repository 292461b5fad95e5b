"""The dashboard's rows after a change it reads itself (shard by shard, not through the
store's cache) are the rows the store's cache lists."""

from __future__ import annotations

from pathlib import Path

from orange import projects
from orange.dashboard.source import Source
from orange.runtime import watcher
from orange.runtime.tmux import Tmux
from orange.store import layout, listing
from orange.store.events import Change
from orange.store.store import TaskStore
from tests.conftest import copy_task_folder, damage, git
from tests.dashboard.conftest import put_task
from tests.hostile import BOMB_TASK, BROKEN, hostile_writes

MANY = 200


def test_copies_and_names_that_are_not_utf8_read_after_a_change_are_broken(
    project: Path,
) -> None:
    put_task(project, "good01")
    source = Source([projects.get("proj")], Tmux())
    source.refresh()  # the first read: every row, from the store's cache
    shard = layout.shard("good01").encode()
    copy_task_folder(project, "good01", [(shard, b"go\xffod"), (b"\xfe\xfd", b"good01")])
    assert source.refresh()  # only the changed shards, read by the dashboard
    rows = {row.key: row for row in source.rows()}
    listed = listing.entries(TaskStore.open(project).snapshot())
    assert set(rows) == {f"proj:{entry.task_dir}" for entry in listed}
    good = rows[f"proj:{layout.task_dir('good01')}"]
    assert good.task is not None and not good.broken
    copies = [row for key, row in rows.items() if row is not good]
    assert len(copies) == 2
    for row in copies:  # each a broken row, not a second good01, as the listing says
        assert row.task is None
        task_dir = row.key.removeprefix("proj:")
        assert row.broken == f"{task_dir}/TASK.md: id 'good01' does not match its directory"


def test_a_task_whose_objects_are_damaged_is_a_broken_row_after_a_change(project: Path) -> None:
    """A task git cannot read from this clone's objects (its file, its folder, its
    shard) is one broken row when the dashboard reads its shard again, not a dashboard
    that stops; in the words of the listing."""
    put_task(project, "good01")
    source = Source([projects.get("proj")], Tmux())
    source.refresh()
    put_task(project, "file01")
    put_task(project, "fold01")
    put_task(project, "shrd01")
    shard = layout.task_dir("shrd01").rsplit("/", 1)[0]
    assert len({layout.shard(t) for t in ("good01", "file01", "fold01", "shrd01")}) == 4
    places = (layout.task_path("file01"), layout.task_dir("fold01"), shard)
    objects = [git(project, "rev-parse", f"{layout.TASKS_REF}:{p}").strip() for p in places]
    held = [damage(project, oid) for oid in objects]
    assert source.refresh()
    rows = {row.key.removeprefix("proj:"): row for row in source.rows()}
    assert rows[layout.task_dir("good01")].task is not None
    reasons = {
        layout.task_dir("file01"): f"{layout.task_path('file01')}: TASK.md cannot be read: ",
        layout.task_dir("fold01"): f"{layout.task_path('fold01')}: its folder cannot be read: ",
        shard: f"{shard}/TASK.md: its shard cannot be read: ",
    }
    assert set(rows) == {layout.task_dir("good01"), *reasons}
    for task_dir, reason in reasons.items():
        assert rows[task_dir].task is None
        assert rows[task_dir].broken.startswith(reason)
    for oid, content in zip(objects, held, strict=True):  # repaired, then a change
        damage(project, oid, content)
    put_task(project, "next01")
    assert source.refresh()
    rows = {row.key.removeprefix("proj:"): row for row in source.rows()}
    assert shard not in rows
    for task_id in ("file01", "fold01", "shrd01"):  # each read again, whole
        assert rows[layout.task_dir(task_id)].task is not None


def test_a_hostile_push_is_broken_rows_by_both_readers(project: Path) -> None:
    """Every bomb of the bounded reader, a file that is not text, a task under an alias
    bomb naming a session here, and many tasks: read after a change (the dashboard's own
    read) and at start-up (the store's cache), each hostile file is one broken row, the
    rest are rows, and the agents' column and the bomb task's workflow answer."""
    put_task(project, "good01")
    source = Source([projects.get("proj")], Tmux())
    source.refresh()
    store = TaskStore.open(project)
    writes: dict[str, bytes | None] = dict(hostile_writes(store.get("good01"), MANY))
    store.commit(lambda snap: Change("x", "test", "hostile", writes))
    many = {f"many{n:04d}" for n in range(MANY)}
    for reader in (source, Source([projects.get("proj")], Tmux())):
        assert reader.refresh()
        rows = {row.id or row.key.rsplit("/", 1)[-1]: row for row in reader.rows()}
        assert set(rows) == {"good01", BOMB_TASK, *BROKEN, *many}
        for task_id, why in BROKEN.items():
            assert rows[task_id].task is None and why in rows[task_id].broken, rows[task_id]
        assert all(rows[t].task is not None for t in ["good01", BOMB_TASK, *many])
        assert reader.workflow(rows[BOMB_TASK]) is None
        assert reader.agents() == {}


def test_the_header_says_when_a_person_stopped_the_monitor(project: Path) -> None:
    """A stopped monitor stays stopped until `orange monitor start`: the header says
    "stopped", not the "off" of a monitor that exited when no task was active."""
    source = Source([projects.get("proj")], Tmux())
    assert source.header().monitor == "monitor off"
    watcher.stop()
    assert source.header().monitor == "monitor stopped"
