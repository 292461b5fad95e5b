"""The commits one tip reaches and another does not, exactly, whatever their dates.

git's walk with a hidden commit (libgit2's as ``git rev-list``'s) stops once every
commit left in its queue is hidden and older than the rest, give or take five: it
trusts commit dates to run forwards.  A teammate whose clock is behind ours writes
commits dated before the base we share, and then the walk from a sync's merge with our
last verified tip hidden goes on past that base, into history that tip already holds:
with a clock an hour behind, a catch-up replayed the whole creation of 10,000 tasks
again beside the 5,000 commits that were new.  Replaying known history again costs what
it holds, and judges it again by today's rules (DESIGN §8: a history written by an
older Orange is not judged by them).

`commits_since` takes the walk's answer and drops what ``since`` reaches: only a commit
none of whose parents in the answer is new can be one (a descendant of a new commit is
new), and such a commit is asked about (`pygit2.Repository.descendant_of`, a merge-base
search, which is exact) unless it is a child of ``since``.  Along a line of commits that
is one question, none for Orange's own writes after the last verified tip.
"""

from __future__ import annotations

import pygit2


def commits_since(repo: pygit2.Repository, tip: str, since: str | None) -> list[pygit2.Commit]:
    """The commits ``tip`` reaches and ``since`` does not (all of them for None),
    parents first (git's topological order, reversed)."""
    modes = pygit2.enums.SortMode
    walker = repo.walk(tip, modes.TOPOLOGICAL | modes.REVERSE)
    if since is None:
        return list(walker)
    walker.hide(since)
    found = list(walker)
    hidden = pygit2.Oid(hex=since)
    listed = {commit.id for commit in found}
    old: set[pygit2.Oid] = set()  # listed commits that ``since`` reaches after all
    for commit in found:
        parents = [p for p in commit.parent_ids if p in listed]
        if any(p not in old for p in parents) or hidden in commit.parent_ids:
            continue  # a child of a new commit, or of ``since``: new
        if repo.descendant_of(hidden, commit.id):
            old.add(commit.id)
    return [commit for commit in found if commit.id not in old] if old else found
