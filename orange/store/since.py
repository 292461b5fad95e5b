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

`commits_since` takes the walk's answer and drops what ``since`` reaches (`_exact`):
only a commit none of whose parents in the answer is new can be one (a descendant of a
new commit is new), and such a commit is asked about (`pygit2.Repository.descendant_of`,
a merge-base search, which is exact) unless it is a child of ``since``.  Along a line of
commits that is one question, none for Orange's own writes after the last verified tip.
A question may read all the history below ``since`` (about a root of its own: a hostile
teammate can merge thousands), so past `QUESTIONS` of them that history is walked once
instead and the rest looked up in it.

git's walk with a hidden commit finds everything before it answers (its sort needs it),
however many commits there are.  `commits_since_at_most` is the same answer for a
caller that wants no more than a few: the walk is done here (`_Walk`), from both tips
at once, newest first on each side but the hidden side never taking fewer steps than
the other (so dates running backwards cannot leave it behind for long), and it stops
once more than ``limit`` commits are found or it has read three times that many; what
it found is then trimmed by the same `_exact`, which gives up past `BOUNDED_QUESTIONS`
questions rather than walk the history below ``since``.
"""

from __future__ import annotations

from heapq import heappop, heappush
from itertools import count

import pygit2


def commits_since(repo: pygit2.Repository, tip: str, since: str | None) -> list[pygit2.Commit]:
    """The commits ``tip`` reaches and ``since`` does not (all of them for None),
    parents first (git's topological order, reversed)."""
    modes = pygit2.enums.SortMode
    walker = repo.walk(tip, modes.TOPOLOGICAL | modes.REVERSE)
    if since is None:
        return list(walker)
    walker.hide(since)
    return _exact(repo, list(walker), pygit2.Oid(hex=since))


def commits_since_at_most(
    repo: pygit2.Repository, tip: str, since: str, limit: int
) -> list[pygit2.Commit] | None:
    """`commits_since` when there are at most ``limit`` of them, parents first; None
    when there are more, or telling would read more than ``3 * (limit + 1)`` commits or
    ask more than `BOUNDED_QUESTIONS` questions, or a commit ``tip`` reaches is missing
    or not a commit.  The walk reads no more than that; the questions are asked only of
    what it found."""
    walk, hidden = _Walk(repo, limit, reads=3 * (limit + 1)), pygit2.Oid(hex=since)
    try:
        found = walk.run(pygit2.Oid(hex=tip), hidden)
        return _exact(repo, _parents_first(found), hidden, bounded=True)
    except _Stop:
        return None


# Questions asked before the history below the hidden commit is walked once instead (a
# question about a commit near it reads little, one about a root of its own reads what
# the walk does); and those the bounded form asks before it gives up.
QUESTIONS = 64
BOUNDED_QUESTIONS = 8


def _exact(
    repo: pygit2.Repository,
    found: list[pygit2.Commit],
    hidden: pygit2.Oid,
    *,
    bounded: bool = False,
) -> list[pygit2.Commit]:
    """``found`` (parents first, all reached from the tip, every new commit among them)
    without the commits ``hidden`` reaches.  A question may read all the history below
    ``hidden`` (about a root of its own, say: a hostile teammate can merge thousands):
    past `QUESTIONS` of them, that history is walked once and the rest looked up in it;
    ``bounded``, past `BOUNDED_QUESTIONS` the answer is given up (`_Stop`)."""
    listed = {commit.id for commit in found}
    old: set[pygit2.Oid] = set()  # listed commits that ``hidden`` reaches after all
    reached: set[pygit2.Oid] | None = None  # all ``hidden`` reaches, once walked
    asked = 0
    for commit in found:
        parents = [p for p in commit.parent_ids if p in listed]
        if any(p not in old for p in parents) or hidden in commit.parent_ids:
            continue  # a child of a new commit, or of ``hidden``: new
        if bounded and asked == BOUNDED_QUESTIONS:
            raise _Stop
        if reached is None and asked == QUESTIONS:
            reached = {c.id for c in repo.walk(hidden, pygit2.enums.SortMode.NONE)}
        if reached is not None:
            reaches = commit.id in reached
        else:
            asked += 1
            reaches = repo.descendant_of(hidden, commit.id)
        if reaches:
            old.add(commit.id)
    return [commit for commit in found if commit.id not in old] if old else found


class _Stop(Exception):
    """More commits than asked for, more reads than allowed, or one of the tip's side
    unreadable."""


_TIP, _HIDDEN = 0, 1  # the two sides of a `_Walk`


class _Walk:
    """git's walk of ``tip ^since``, done here so that it can stop.

    Each side keeps a queue, newest first; a step takes the newer of the two queues'
    first commits, but the hidden side's whenever it has taken fewer steps than the
    tip's.  What the hidden side reaches is old, and so is everything the tip's side
    walked below it (marked at once, without reading: its walk is kept).  The walk ends
    when the tip's side has nothing left that is not old; what it walked and is not
    known old is every new commit, and perhaps some old ones the hidden side did not
    reach (for `_exact`)."""

    def __init__(self, repo: pygit2.Repository, limit: int, reads: int) -> None:
        self.repo, self.limit, self.reads = repo, limit, reads
        self.new: dict[pygit2.Oid, pygit2.Commit] = {}  # walked from the tip, not old
        self.old: set[pygit2.Oid] = set()  # reached from the hidden commit
        self.queued: set[pygit2.Oid] = set()  # ever in the tip's side's queue
        self.queues: tuple[list[_Entry], list[_Entry]] = ([], [])
        self.order = count()

    def run(self, tip: pygit2.Oid, since: pygit2.Oid) -> dict[pygit2.Oid, pygit2.Commit]:
        self._paint(since)
        self._queue(_TIP, tip)
        queue, hidden = self.queues
        steps = [0, 0]
        while True:
            while queue and queue[0][2].id in self.old:
                heappop(queue)
            if not queue:
                return self.new
            side = _HIDDEN if hidden and (steps[1] < steps[0] or hidden[0] < queue[0]) else _TIP
            steps[side] += 1
            commit = heappop(self.queues[side])[2]
            if side == _HIDDEN:
                for parent in commit.parent_ids:
                    self._paint(parent)
                continue
            self.new[commit.id] = commit
            if len(self.new) > self.limit:
                raise _Stop
            for parent in commit.parent_ids:
                if parent not in self.old and parent not in self.queued:
                    self._queue(_TIP, parent)

    def _queue(self, side: int, oid: pygit2.Oid) -> None:
        if self.reads <= 0:
            raise _Stop
        self.reads -= 1
        if side == _TIP:
            self.queued.add(oid)
        try:
            commit: pygit2.Commit | None = self.repo[oid].peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):  # missing, damaged, no commit
            commit = None
        if commit is None or commit.id != oid:  # (or a tag where a commit should be)
            if side == _TIP:
                raise _Stop
            return  # old all the same; nothing more is marked from it
        heappush(self.queues[side], (-commit.commit_time, next(self.order), commit))

    def _paint(self, oid: pygit2.Oid) -> None:
        """``oid`` is old, and so is all the tip's side walked below it."""
        stack = [oid]
        while stack:
            at = stack.pop()
            if at in self.old:
                continue
            self.old.add(at)
            walked = self.new.pop(at, None)
            if walked is None:
                self._queue(_HIDDEN, at)  # (its parents: when the hidden side steps)
            else:
                stack.extend(walked.parent_ids)


_Entry = tuple[int, int, pygit2.Commit]  # (minus the commit's date, order, commit)


def _parents_first(found: dict[pygit2.Oid, pygit2.Commit]) -> list[pygit2.Commit]:
    """``found``, each commit after its parents among them."""
    order: list[pygit2.Commit] = []
    seen: set[pygit2.Oid] = set()
    for start in found:
        stack: list[tuple[pygit2.Oid, bool]] = [(start, False)]
        while stack:
            oid, done = stack.pop()
            if done:
                order.append(found[oid])
            elif oid not in seen:
                seen.add(oid)
                stack.append((oid, True))
                parents = found[oid].parent_ids
                stack.extend((p, False) for p in reversed(parents) if p in found)
    return order
