"""Finding workflows by name: shipped ones, user overrides in $ORANGE_HOME/workflows."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest

from orange.engine import catalog
from orange.errors import NotFound, WorkflowError


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("ORANGE_HOME", str(tmp_path / "orange"))
    catalog.clear_cache()
    yield tmp_path / "orange"
    catalog.clear_cache()


def test_lists_shipped_workflows() -> None:
    entries = catalog.list_workflows()
    assert [e.name for e in entries] == [
        "default",
        "fresh-worker",
        "minimal",
        "run-subtask",
        "self-review",
    ]
    assert not any(e.is_user for e in entries)
    assert all(Path(e.path).name == f"{e.name}.yml" for e in entries)


def test_loads_and_caches_shipped() -> None:
    first = catalog.load_named("default")
    assert first.name == "default"
    assert catalog.load_named("default") is first


def test_user_file_overrides_shipped(home: Path) -> None:
    folder = home / "workflows"
    folder.mkdir(parents=True)
    text = (files("orange._workflows") / "minimal.yml").read_text()
    (folder / "default.yml").write_text(text.replace("name: minimal", "name: mine"))
    (folder / "extra.yml").write_text(text)
    entries = {e.name: e for e in catalog.list_workflows()}
    assert entries["default"].is_user
    assert entries["default"].path == str(folder / "default.yml")
    assert entries["extra"].is_user
    assert not entries["minimal"].is_user
    assert catalog.load_named("default").name == "mine"


def test_edited_user_file_is_reloaded(home: Path) -> None:
    folder = home / "workflows"
    folder.mkdir(parents=True)
    path = folder / "mine.yml"
    text = (files("orange._workflows") / "minimal.yml").read_text()
    path.write_text(text)
    assert catalog.load_named("mine").version == 1
    path.write_text(text.replace("version: 1", "version: 22"))
    assert catalog.load_named("mine").version == 22


def test_broken_user_file_names_its_path(home: Path) -> None:
    folder = home / "workflows"
    folder.mkdir(parents=True)
    (folder / "bad.yml").write_text(
        "name: bad\nversion: 1\nstates: {a: {}}\ntransitions: []\nx: 1\n"
    )
    with pytest.raises(WorkflowError, match=r"bad\.yml: x: unknown key"):
        catalog.load_named("bad")


@pytest.mark.parametrize("name", ["nope", "../default", "", "default.yml/x"])
def test_unknown_name_lists_known(name: str) -> None:
    with pytest.raises(NotFound) as info:
        catalog.load_named(name)
    assert info.value.message == (
        f'unknown workflow "{name}" '
        "(known: default, fresh-worker, minimal, run-subtask, self-review)"
    )
