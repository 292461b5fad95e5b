"""This host's binding records: where they are valid, and crash-safe writes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from orange.home import orange_home
from orange.runtime import bindings
from orange.runtime.places import pool_path, workspaces_root
from orange.store.task import Task


class Name(NamedTuple):
    id: str
    name: str


OUTSIDE = [
    Name("dotdot", "../outside"),
    Name("dotdot-after-a-pool-name", "proj--1/../../outside"),
    Name("inside-a-pool-member", "proj--1/sub"),
    Name("absolute", "/tmp/outside"),
    Name("another-project", "other--1"),
    Name("not-a-number", "proj--x"),
    Name("no-number", "proj--"),
    Name("empty", ""),
    Name("unicode-digit", "proj--\u0661"),
]


@pytest.mark.parametrize("case", OUTSIDE, ids=[c.id for c in OUTSIDE])
def test_a_name_that_is_not_a_pool_member_has_no_path(case: Name) -> None:
    assert pool_path("proj", case.name) is None


def test_a_pool_member_has_its_path_unless_it_leads_outside(tmp_path: Path) -> None:
    assert pool_path("proj", "proj--12") == workspaces_root() / "proj--12"
    workspaces_root().mkdir(parents=True)
    (workspaces_root() / "proj--3").symlink_to(tmp_path)
    assert pool_path("proj", "proj--3") is None


def _task(**fields: Any) -> Task:
    base = {"id": "t1", "project": "proj", "status": "working", "host": "testhost"}
    return Task(fields={**base, **fields}, body="")


def test_a_binding_needs_the_record_and_the_ref_to_agree() -> None:
    bound = _task(workspace="proj--1", tmux_session="proj/b")
    assert (bindings.workspace_of(bound), bindings.session_of(bound)) == (None, None)
    bindings.record("proj", "t1", workspace="proj--1", session="proj/b")
    assert bindings.workspace_of(bound) == workspaces_root() / "proj--1"
    assert bindings.session_of(bound) == "proj/b"
    for other in (
        _task(workspace="proj--2", tmux_session="proj/c"),  # the ref moved on
        _task(workspace="proj--1", tmux_session="proj/b", host="elsewhere"),
        _task(workspace="proj--1", tmux_session="proj/b", project="other"),
    ):
        assert (bindings.workspace_of(other), bindings.session_of(other)) == (None, None)


BAD_RECORDS = [
    Name("cut-short", '{"task": "t1", "workspace": "proj-'),
    Name("not-json", "\x00\x01garbage"),
    Name("a-list", '["t1", "proj--1"]'),
    Name("another-task", '{"task": "t2", "workspace": "proj--1"}'),
    Name("a-number", '{"task": "t1", "workspace": 7}'),
    Name("empty-file", ""),
]


@pytest.mark.parametrize("case", BAD_RECORDS, ids=[c.id for c in BAD_RECORDS])
def test_a_record_that_does_not_parse_is_no_record(case: Name) -> None:
    folder = bindings.project_dir("proj")
    folder.mkdir(parents=True)
    (folder / "t1").write_text(case.name)
    assert bindings.read("proj", "t1") is None
    assert bindings.workspace_of(_task(workspace="proj--1")) is None
    assert bindings.all_records("proj") == []


def test_an_id_that_could_name_another_file_gets_no_record() -> None:
    bindings.record("proj", "../t1", workspace="proj--1")
    assert bindings.read("proj", "../t1") is None
    assert not (orange_home() / "bindings").exists()


def test_a_write_that_fails_half_way_keeps_the_old_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bindings.record("proj", "t1", workspace="proj--1")

    def dies_before_it_is_on_disk(fd: int) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patched, pytest.raises(OSError):
        patched.setattr(os, "fsync", dies_before_it_is_on_disk)
        bindings.record("proj", "t1", session="proj/b")
    assert bindings.read("proj", "t1") == bindings.Binding("t1", workspace="proj--1")
    assert sorted(p.name for p in bindings.project_dir("proj").iterdir()) == ["t1"]


def test_a_record_left_with_nothing_bound_is_removed() -> None:
    bindings.record("proj", "t1", workspace="proj--1", session="proj/b", run="r")
    bindings.record("proj", "t1", session="", run="")
    assert bindings.read("proj", "t1") == bindings.Binding("t1", workspace="proj--1")
    bindings.record("proj", "t1", workspace="")
    assert not (bindings.project_dir("proj") / "t1").exists()
