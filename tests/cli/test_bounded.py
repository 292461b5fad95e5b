"""A hostile TASK.md is one broken task, never a stopped command; bad input is one line
(DESIGN §8 "Parsing is bounded and isolated", "Input and output")."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from orange.store import cache, layout
from orange.store.events import Change
from orange.store.store import TaskStore
from tests.conftest import Cli, git, orange_bin

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)
HOSTILE = {
    "laughsaa": (f"id: laughsaa\n{LAUGHS}", "frontmatter uses YAML anchors or aliases"),
    "deepaaaa": ("id: deepaaaa\nx: " + "[" * 20000 + "]" * 20000 + "\n", "nested deeper than 32"),
    "dupaaaaa": ("id: dupaaaa\nstatus: pending\nstatus: done\n", "has the key 'status' twice"),
    "wideaaaa": ("id: wideaaaa\nsummary: '" + "x" * 70_000 + "'\n", "larger than 64 KiB"),
    "hugeaaaa": ("id: hugeaaaa\n", "TASK.md is larger than 1 MiB"),
}


@pytest.fixture
def project(cli: Cli, repo: Path) -> Path:
    cli.ok("project", "add", cwd=repo)
    return repo


def _plant(repo: Path) -> None:
    """Commit the hostile files next to the good task, as a push could."""
    writes: dict[str, bytes | None] = {}
    for task_id, (header, _why) in HOSTILE.items():
        body = "x" * (2 * 1024 * 1024) if task_id == "hugeaaaa" else ""
        writes[layout.task_path(task_id)] = f"---\n{header}---\n{body}".encode()
    TaskStore.open(repo).commit(lambda snap: Change("x", "test", "hostile", writes))


def _tip(repo: Path) -> str:
    return git(repo, "rev-parse", layout.TASKS_REF).strip()


def test_each_hostile_file_is_one_broken_task(cli: Cli, project: Path) -> None:
    good = str(cli.ok("task", "create", "good", "good task", "--no-spawn", "--json").json()["id"])
    _plant(project)
    listed = {t["id"]: t for t in cli.ok("task", "list", "--json").json()["tasks"]}
    assert set(listed) == {good, *HOSTILE}
    for task_id, (_header, why) in HOSTILE.items():
        assert why in listed[task_id]["error"], (task_id, listed[task_id])
        shown = cli("task", "show", task_id)
        assert shown.code == 1 and shown.err.count("\n") == 1 and why in shown.err
    cli.ok("task", "update", good[:4], "--summary", "still works")  # a prefix resolves
    assert cli.ok("task", "show", good, "--json").json()["summary"] == "still works"
    assert cli.ok("monitor", "--once").code == 0  # the monitor's pass keeps going


def test_a_write_over_the_limits_is_refused_and_writes_nothing(cli: Cli, project: Path) -> None:
    task_id = str(cli.ok("task", "create", "w", "w", "--no-spawn", "--json").json()["id"])
    before = _tip(project)
    long_text = "y" * (1024 * 1024 + 1)
    refused = cli("task", "edit", task_id, "--section", "Notes", "--file", "-", stdin=long_text)
    assert refused.code == 1 and "TASK.md would be larger than 1 MiB" in refused.err
    # Within the field policy's bound for one text (64 Ki characters), over the
    # frontmatter's with the other fields.
    wide = cli("task", "update", task_id, "--summary", "z" * 65_300)
    assert wide.code == 1 and "frontmatter would be larger than 64 KiB" in wide.err
    assert _tip(project) == before


@pytest.mark.parametrize(
    "args",
    [
        ("task", "update", "{id}", "--summary", "bad\udcff"),
        ("task", "create", "b2", "bad\udcff", "--no-spawn"),
        ("task", "edit", "{id}", "--section", "Notes", "--file", "{bad}"),
    ],
    ids=["summary", "create", "edit-file"],
)
def test_text_that_is_not_utf8_is_one_line_and_writes_nothing(
    cli: Cli, project: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    task_id = str(cli.ok("task", "create", "u", "u", "--no-spawn", "--json").json()["id"])
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9 \xff\n")
    before = _tip(project)
    result = cli(*(a.format(id=task_id, bad=bad) for a in args))
    assert result.code == 1, result.err
    assert result.err.count("\n") == 1 and "not UTF-8" in result.err
    assert _tip(project) == before
    assert cli.ok("task", "show", task_id, "--json").json()["summary"] == "u"


def test_an_empty_section_name_is_refused(cli: Cli, project: Path) -> None:
    task_id = str(cli.ok("task", "create", "e", "e", "--no-spawn", "--json").json()["id"])
    cli.ok("task", "edit", task_id, "--section", "Notes", "--file", "-", stdin="keep me\n")
    before = _tip(project)
    result = cli("task", "edit", task_id, "--section", "", "--file", "-", stdin="all gone\n")
    assert result.code == 1 and "is not a heading name" in result.err
    assert _tip(project) == before
    assert "keep me" in cli.ok("task", "show", task_id, "--json").json()["body"]


def test_a_misplaced_file_never_writes_the_task_it_names(cli: Cli, project: Path) -> None:
    victim = str(cli.ok("task", "create", "v", "victim", "--no-spawn", "--json").json()["id"])
    store = TaskStore.open(project)
    text = store.get(victim).render()
    path = layout.task_path("impostor")  # a folder whose TASK.md says `id: <victim>`
    store.commit(lambda snap: Change("x", "test", "misplaced", {path: text.encode()}))
    before = _tip(project)
    result = cli("task", "update", "impostor", "--summary", "hijacked")
    assert result.code == 1 and result.err.count("\n") == 1
    assert f"id {victim!r} does not match its directory" in result.err
    assert _tip(project) == before
    assert cli.ok("task", "show", victim, "--json").json()["summary"] == "victim"
    listed = {t["id"]: t for t in cli.ok("task", "list", "--json").json()["tasks"]}
    assert "does not match its directory" in listed["impostor"]["error"]
    cli.ok("task", "update", victim, "--summary", "mine")  # the real task still works


def test_control_characters_and_markup_in_task_data_are_shown_not_obeyed(
    cli: Cli, project: Path
) -> None:
    summary = "title \x1b]0;pwned\x07 \x1b[31mred [bold]loud[/bold]"
    task_id = str(cli.ok("task", "create", "esc", summary, "--no-spawn", "--json").json()["id"])
    for args in (("task", "list"), ("task", "show", task_id), ("task", "log", task_id)):
        out = cli.ok(*args).out
        assert "\x1b" not in out and "\x07" not in out, args
        assert "\\x1b]0;pwned\\x07" in out.replace("\n", ""), (args, out)
    assert "[bold]loud[/bold]" in cli.ok("task", "show", task_id).out
    assert cli.ok("task", "show", task_id, "--json").json()["summary"] == summary


def test_a_home_that_cannot_be_made_is_one_line(
    cli: Cli, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    monkeypatch.setenv("ORANGE_HOME", str(blocker / "orange"))
    result = cli("project", "add", cwd=repo)
    assert result.code == 1 and result.err.count("\n") == 1
    assert result.err.startswith(f"orange: Not a directory: {blocker / 'orange'}")


def test_a_directory_where_the_listing_cache_goes_lists_uncached(cli: Cli, project: Path) -> None:
    task_id = str(cli.ok("task", "create", "c", "c", "--no-spawn", "--json").json()["id"])
    for path in (project / ".git" / "orange").glob("cache*.sqlite3*"):
        path.unlink()
    cache.cache_path(project / ".git" / "orange").mkdir()
    assert [t["id"] for t in cli.ok("task", "list", "--json").json()["tasks"]] == [task_id]
    assert task_id in cli.ok("task", "list").out


def test_a_full_disk_is_one_line_and_half_writes_nothing(cli: Cli, project: Path) -> None:
    task_id = str(cli.ok("task", "create", "f", "f", "--no-spawn", "--json").json()["id"])
    before = _tip(project)

    def small_files() -> None:  # writes past 4 KiB fail with EFBIG, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    result = subprocess.run(
        [orange_bin(), "task", "update", task_id, "--summary", os.urandom(15_000).hex()],
        cwd=project,
        capture_output=True,
        text=True,
        preexec_fn=small_files,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.count("\n") == 1 and "File too large" in result.stderr
    assert _tip(project) == before
    assert cli.ok("task", "show", task_id, "--json").json()["summary"] == "f"
    assert git(project, "fsck", "--no-dangling").strip() == ""
