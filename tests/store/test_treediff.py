"""The shard-skipping tree walk reports what libgit2's whole-tree diff reports.

The reference is the replay checker's former ``changed_files`` (a pygit2
``diff_to_tree`` of the two root trees), run on generated pairs of trees written as raw
objects into a real repository: additions, deletions, modifications, mode changes,
files in the root, ``tasks/``, ``meta/`` and ``runs/``, a tree where a blob was and a
blob where a tree was, links, gitlinks (to an object present and to one missing) and
names that are not UTF-8; and histories of such trees walked a commit after another
with one `Listings`, as the replay and a merge's plan walk them.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any, NamedTuple

import pygit2
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from orange.store.syncmerge import changed_tasks, folder_tasks
from orange.store.treediff import Listings, changed_blobs, changed_files
from tests.conftest import examples

BLOB, EXEC, LINK, GITLINK, TREE = 0o100644, 0o100755, 0o120000, 0o160000, 0o040000
MISSING = bytes(range(20))  # a gitlink to a commit this repository does not hold

Spec = dict[bytes, Any]  # name -> (mode, content) or a Spec for a subtree


def old_changed_files(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree
) -> Iterator[tuple[str, bytes | None, bytes | None]]:
    """The replay checker's ``changed_files`` before the walk replaced it."""
    diff = new.diff_to_tree(swap=True) if old is None else old.diff_to_tree(new)
    for delta in diff.deltas:
        added = delta.status == pygit2.enums.DeltaStatus.ADDED
        deleted = delta.status == pygit2.enums.DeltaStatus.DELETED
        path = delta.old_file.path if deleted else delta.new_file.path
        old_data = None if added else repo[delta.old_file.id].read_raw()
        new_data = None if deleted else repo[delta.new_file.id].read_raw()
        yield path, old_data, new_data


def old_changed_blobs(old: pygit2.Tree, new: pygit2.Tree) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for delta in old.diff_to_tree(new).deltas:
        if delta.status == pygit2.enums.DeltaStatus.DELETED:
            found[delta.old_file.path] = None
        else:
            found[delta.new_file.path] = str(delta.new_file.id)
    return found


def write_tree(repo: pygit2.Repository, spec: Spec) -> pygit2.Tree:
    """``spec`` as a raw tree object, entries in git's order (a tree sorts as "name/")."""
    entries = []
    for name, value in spec.items():
        if isinstance(value, dict):
            mode, oid = TREE, write_tree(repo, value).id.raw
        else:
            mode, content = value
            if mode == GITLINK:
                oid = MISSING if content is None else repo.create_blob(content).raw
            else:
                oid = repo.create_blob(content).raw
        key = name + b"/" if mode == TREE else name
        entries.append((key, b"%o %s\0" % (mode, name) + oid))
    raw = b"".join(entry for _, entry in sorted(entries))
    return repo[repo.odb.write(pygit2.enums.ObjectType.TREE, raw)].peel(pygit2.Tree)


def outcome(results: Iterator[Any]) -> tuple[list[Any], str | None]:
    """What an iterator yields, and the exception that ended it (if any)."""
    got: list[Any] = []
    try:
        for item in results:
            got.append(item)
    except Exception as exc:  # the old diff reads a missing gitlink target: KeyError
        return got, type(exc).__name__
    return got, None


NAMES = [b"a", b"a.b", b"a-1", b"b", b"\xff\xfeA", b"TASK.md"]
ROOT = [b"tasks", b"meta", b"runs", b"README", b"a"]
LEAF = st.one_of(
    st.tuples(st.sampled_from([BLOB, EXEC, LINK]), st.sampled_from([b"1", b"2", b""])),
    st.tuples(st.just(GITLINK), st.sampled_from([b"1", None])),
)


def specs(names: list[bytes], depth: int) -> st.SearchStrategy[Spec]:
    child = LEAF if depth == 0 else st.one_of(LEAF, specs(NAMES, depth - 1))
    return st.dictionaries(st.sampled_from(names), child, max_size=4)


def mutated(base: Spec, draw: Any) -> Spec:
    """``base`` with some entries changed, dropped or added: pairs that share subtrees."""
    out: Spec = {}
    for name, value in base.items():
        roll = draw(st.integers(0, 5))
        if roll == 0:
            continue
        if roll == 1:
            out[name] = draw(st.one_of(LEAF, specs(NAMES, 1)))
        elif roll == 2 and isinstance(value, dict):
            out[name] = mutated(value, draw)
        else:
            out[name] = value
    for name, value in draw(st.dictionaries(st.sampled_from(NAMES), LEAF, max_size=2)).items():
        out.setdefault(name, value)
    return out


@st.composite
def tree_pairs(draw: Any) -> tuple[Spec | None, Spec]:
    base = draw(specs(ROOT, 3))
    old = None if draw(st.integers(0, 9)) == 0 else base
    return old, mutated(base, draw)


@pytest.fixture(scope="module")
def pygit(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("treediff")), bare=True)


@examples(400, suppress_health_check=[HealthCheck.too_slow])
@given(pair=tree_pairs())
def test_walk_reports_what_the_whole_tree_diff_reports(
    pygit: pygit2.Repository, pair: tuple[Spec | None, Spec]
) -> None:
    old = None if pair[0] is None else write_tree(pygit, pair[0])
    new = write_tree(pygit, pair[1])
    assert outcome(changed_files(pygit, old, new)) == outcome(old_changed_files(pygit, old, new))
    if old is not None:
        assert changed_blobs(pygit, old, new) == old_changed_blobs(old, new)


class Case(NamedTuple):
    id: str
    old: Spec
    new: Spec


CASES = [
    Case("added-task", {b"tasks": {}}, {b"tasks": {b"ab": {b"t1": {b"TASK.md": (BLOB, b"1")}}}}),
    Case("deleted-run", {b"runs": {b"r": {b"RUN.md": (BLOB, b"1")}}}, {b"runs": {}}),
    Case("modified-meta", {b"meta": {b"schema": (BLOB, b"1")}},
         {b"meta": {b"schema": (BLOB, b"2")}}),
    Case("root-file", {}, {b"README": (BLOB, b"1")}),
    Case("mode-change", {b"x": (BLOB, b"1")}, {b"x": (EXEC, b"1")}),
    Case("tree-where-a-blob-was", {b"a": (BLOB, b"1"), b"a.b": (BLOB, b"1")},
         {b"a": {b"x": (BLOB, b"1")}, b"a.b": (BLOB, b"1")}),
    Case("blob-where-a-tree-was", {b"a": {b"x": (BLOB, b"1")}, b"a-1": (BLOB, b"2")},
         {b"a": (BLOB, b"1"), b"a-1": (BLOB, b"1")}),
    Case("link-where-a-blob-was", {b"a": (BLOB, b"1")}, {b"a": (LINK, b"1")}),
    Case("gitlink", {b"a": (BLOB, b"1")}, {b"a": (GITLINK, b"1"), b"b": (GITLINK, None)}),
    Case("non-utf8-name", {b"\xff": (BLOB, b"1")}, {b"\xff": (BLOB, b"2"), b"\xfe/": (BLOB, b"")}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_named_cases(pygit: pygit2.Repository, case: Case) -> None:
    old, new = write_tree(pygit, case.old), write_tree(pygit, case.new)
    got = outcome(changed_files(pygit, old, new))
    assert got[0], "the case changes something"
    assert got == outcome(old_changed_files(pygit, old, new))
    assert changed_blobs(pygit, old, new) == old_changed_blobs(old, new)


# Histories: trees large enough that the walk compares them as bytes (a tree whose bytes
# differ from another's only inside entry ids shares its layout) and keeps the shards by
# path, changed a step at a time as commits change them, some steps keeping a tree's
# length while changing a mode or a name (which the byte comparison must not miss).
FOLDERS = [b"%08d" % n for n in range(24)]  # names of one length: a rename keeps it
SHARDS = [b"%02x" % n for n in range(12)]
SAME_LENGTH = {BLOB: LINK, LINK: BLOB, EXEC: BLOB}  # modes written with six digits


def task_tree(draw: Any) -> Spec:
    shards: Spec = {shard: {} for shard in SHARDS}
    for folder in FOLDERS[:18]:  # one shard of some 600 bytes, the others small
        shards[SHARDS[0]][folder] = {b"TASK.md": (BLOB, b"0")}
    shards[SHARDS[1]][b"file"] = (BLOB, b"0")
    for shard in SHARDS[2:]:
        shards[shard][draw(st.sampled_from(FOLDERS))] = {b"TASK.md": (BLOB, b"0")}
    return {b"tasks": shards, b"meta": {b"schema": (BLOB, b"1")}}


def step(spec: Spec, draw: Any) -> Spec:
    """``spec`` after one commit's change."""
    tasks = dict(spec[b"tasks"])
    shard = draw(st.sampled_from(SHARDS[:4]))
    entries = dict(tasks[shard])
    kind = draw(st.sampled_from(["content", "mode", "rename", "add", "remove", "type"]))
    name = draw(st.sampled_from(sorted(entries))) if entries else None
    if kind == "add" or name is None:
        entries[draw(st.sampled_from(FOLDERS))] = {b"TASK.md": (BLOB, b"new")}
    elif kind == "remove":
        del entries[name]
    elif kind == "rename":
        entries[draw(st.sampled_from(FOLDERS))] = entries.pop(name)
    elif kind == "type":  # a file where a folder was, or a folder where a file was
        value = entries[name]
        entries[name] = (BLOB, b"t") if isinstance(value, dict) else {b"TASK.md": (BLOB, b"t")}
    else:
        value = entries[name]
        if isinstance(value, dict):
            mode, data = value.get(b"TASK.md", (BLOB, b""))
            if kind == "mode":
                mode = SAME_LENGTH.get(mode, BLOB)
            value = {b"TASK.md": (mode, data + b"+" if kind == "content" else data)}
        else:
            mode, data = value
            value = (SAME_LENGTH.get(mode, BLOB), data) if kind == "mode" else (mode, data + b"+")
        entries[name] = value
    tasks[shard] = entries
    return {**spec, b"tasks": tasks}


@st.composite
def histories(draw: Any) -> list[Spec]:
    specs = [task_tree(draw)]
    for _ in range(draw(st.integers(1, 12))):
        specs.append(step(specs[-1], draw))
    return specs


def folders_and_files(
    pygit: pygit2.Repository, listings: Listings, old: pygit2.Tree, new: pygit2.Tree
) -> tuple[list[Any], str | None, set[str]]:
    folders: list[bytes] = []
    files = outcome(changed_files(pygit, old, new, listings, folders))
    return *files, set(folder_tasks(folders))


@examples(60, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories())
def test_a_history_walked_with_one_listing_reports_what_each_diff_reports(
    pygit: pygit2.Repository, history: list[Spec]
) -> None:
    trees = [write_tree(pygit, spec) for spec in history]
    pairs = list(pairwise(trees))
    for order in (pairs, pairs[::-1]):  # the replay walks forward, a merge's plan back
        listings = Listings(pygit)
        for old, new in order:
            files, error, tasks = folders_and_files(pygit, listings, old, new)
            assert (files, error) == outcome(old_changed_files(pygit, old, new))
            assert changed_blobs(pygit, old, new, listings) == old_changed_blobs(old, new)
            expected = changed_tasks(Listings(pygit), old.id.raw, new.id.raw)
            assert tasks == set(expected)
