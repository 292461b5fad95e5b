"""Building a new tree from an old one plus a few path writes, without an index."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

import pygit2

if TYPE_CHECKING:
    import pygit2

BLOB_MODE = 0o100644
TREE_MODE = 0o040000

# What a path is written with: its content, the id of a blob the repository holds
# already (a merge taking one side's file writes no object), or None to delete it.
Content = bytes | pygit2.Oid | None


class Subtree(NamedTuple):
    """A folder written as a tree the repository holds (a merge taking one side's)."""

    id: pygit2.Oid


def apply_writes(
    repo: pygit2.Repository,
    base: pygit2.Tree | None,
    writes: Mapping[str, Content] | Mapping[str, Content | Subtree],
) -> pygit2.Oid | None:
    """Write ``writes`` (path → content or blob id, None deletes; a folder → a
    `Subtree`) over ``base``.

    Only the trees along the written paths are rebuilt; everything else is shared with
    ``base``.  Returns the new tree id, or None if the tree became empty.
    """

    leaves: dict[str, Content | Subtree] = {}
    nested: dict[str, dict[str, Content | Subtree]] = {}
    for path, data in writes.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = data
        else:
            leaves[head] = data

    builder = repo.TreeBuilder(base) if base is not None else repo.TreeBuilder()
    for name, data in leaves.items():
        if data is None:
            if builder.get(name) is not None:
                builder.remove(name)
        elif isinstance(data, Subtree):
            builder.insert(name, data.id, TREE_MODE)
        else:
            blob = data if isinstance(data, pygit2.Oid) else repo.create_blob(data)
            builder.insert(name, blob, BLOB_MODE)
    for name, sub_writes in nested.items():
        subtree = None
        if base is not None and name in base:
            entry = base[name]
            if isinstance(entry, pygit2.Tree):
                subtree = entry
        new_id = apply_writes(repo, subtree, sub_writes)
        if new_id is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, new_id, TREE_MODE)
    if len(builder) == 0:
        return None
    return builder.write()


def read_blob(tree: pygit2.Tree | None, path: str) -> pygit2.Blob | None:
    """The blob at ``path`` in ``tree``, or None."""
    obj = _entry(tree, path)
    return obj if isinstance(obj, pygit2.Blob) else None


def read_tree(tree: pygit2.Tree | None, path: str) -> pygit2.Tree | None:
    """The tree at ``path`` in ``tree``, or None."""
    obj = _entry(tree, path)
    return obj if isinstance(obj, pygit2.Tree) else None


def _entry(tree: pygit2.Tree | None, path: str) -> pygit2.Object | None:
    if tree is None:
        return None
    try:
        return tree[path]
    except KeyError:
        return None
