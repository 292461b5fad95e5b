"""The sync merge of one TASK.md changed on both sides (DESIGN §7).

Three-way against the merge base, field by field in the frontmatter and section by
section in the body; a pure function of its inputs (no clock, host name or
randomness), symmetric in ours and theirs, so every clone and the server compute the
same bytes.  What only the workflow knows (which statuses are terminal, which fields
follow the status) is handed in as `Rules`: the store names no status.

- a field or section changed on one side only: that side's; both to the same: that;
- ``status`` changed on both sides to different values: a move into a terminal status
  wins, else the side whose last commit touching the task is later (committer time,
  ties to the larger commit id); the fields that follow the status (its bookkeeping)
  come from the same side; the task gets ``attention`` naming both moves and commits;
- the binding fields (a host's workspace and session) travel as one group: one side
  changed it, that side's; both, the side whose status stands (the host that bound
  last, under the status that decides whether the binding lives);
- a claim on both sides (the base unbound, each side bound to its own workspace or
  host): theirs, the tip being merged in, wins the binding and the status.  Orange
  merges the remote's tip into the local one and the server checks a merge against its
  parents in that order, so the claim already on the remote (the first one pushed)
  stands on every clone: this one rule is not symmetric, and must not be;
- any other field changed on both sides: the later side's, with ``attention``
  (``updated_at``: the later time, silently);
- a body section edited on both sides: a line merge, else both versions under marked
  sub-headings, later side first, with ``attention``.

The frontmatter is never merged as text, so it never holds conflict markers, and the
result always parses (a side that does not parse loses to one that does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from orange.errors import OrangeError
from orange.store.merge3 import merge_text, split_sections
from orange.store.task import Task

_GONE = object()  # a field or section absent on one side
QUIET = frozenset({"updated_at", "attention"})


class Side(NamedTuple):
    """One side of a merge for one file: its last commit touching it, and that
    commit's committer time."""

    commit: str
    time: int

    def order(self) -> tuple[int, str]:
        return self.time, self.commit


class Rules(NamedTuple):
    """What the merge needs of the workflow: whether a task stands in a terminal status,
    the fields that follow ``status``, and the binding fields."""

    terminal: Callable[[Task], bool]
    follow_status: frozenset[str] = frozenset()
    binding: tuple[str, ...] = ("host", "workspace", "tmux_session")


class Merged(NamedTuple):
    data: bytes | None  # None: the file is gone
    conflicts: tuple[str, ...]  # what needed a rule (empty: a clean merge)


def merge_task(
    base: bytes | None,
    ours: bytes | None,
    theirs: bytes | None,
    sides: tuple[Side, Side],
    rules: Rules,
    where: str,
) -> Merged:
    """``where``'s three versions merged (``sides``: ours, theirs)."""
    if ours == theirs or theirs == base:
        return Merged(ours, ())
    if ours == base:
        return Merged(theirs, ())
    later_is_ours = sides[0].order() >= sides[1].order()
    if ours is None or theirs is None:  # deleted on one side, edited on the other: kept
        return Merged(ours if theirs is None else theirs, ("deleted and edited",))
    parsed = [_parse(data, where) for data in (base, ours, theirs)]
    if parsed[1] is None or parsed[2] is None:  # keep the side that parses
        good = ours if parsed[1] is not None else theirs
        if parsed[1] is None and parsed[2] is None:
            good = ours if later_is_ours else theirs
        return Merged(good, ("unreadable side",))
    old = parsed[0] if parsed[0] is not None else Task(fields={}, body="")
    return _merge_parsed(old, parsed[1], parsed[2], sides, rules)


def _parse(data: bytes | None, where: str) -> Task | None:
    if data is None:
        return None
    try:
        return Task.parse(data.decode("utf-8"), where=where)
    except (OrangeError, UnicodeDecodeError):
        return None


def _merge_parsed(
    base: Task, ours: Task, theirs: Task, sides: tuple[Side, Side], rules: Rules
) -> Merged:
    later = 0 if sides[0].order() >= sides[1].order() else 1
    both = (ours, theirs)
    status_side = _status_side(base, ours, theirs, rules, later)
    if claimed_twice(base, both, rules) and status_side is not None:
        status_side = 1  # the claim on the remote stands, with the status it moved to
    fields, notes = _merge_fields(base, both, sides, rules, later, status_side)
    body, body_notes = _merge_body(base.body, both, sides, later)
    notes += body_notes
    if notes:
        note = "sync merge: " + "; ".join(notes) + "; check it, then `orange task ack`"
        prior = fields.get("attention")
        fields["attention"] = note if not prior or prior == note else f"{prior} | {note}"
    return Merged(Task(fields=fields, body=body).render().encode(), tuple(notes))


def _status_side(base: Task, ours: Task, theirs: Task, rules: Rules, later: int) -> int | None:
    """Which side's status stands when both moved it differently (None: they did not)."""
    was, one, two = (t.fields.get("status", _GONE) for t in (base, ours, theirs))
    if one in (two, was) or two == was:
        return None
    ends = (rules.terminal(ours), rules.terminal(theirs))
    if ends[0] != ends[1]:
        return 0 if ends[0] else 1
    return later


def _merge_fields(
    base: Task,
    both: tuple[Task, Task],
    sides: tuple[Side, Side],
    rules: Rules,
    later: int,
    status_side: int | None,
) -> tuple[dict[str, Any], list[str]]:
    fields: dict[str, Any] = {}
    notes: list[str] = []
    decider = later if status_side is None else status_side
    group = 1 if claimed_twice(base, both, rules) else _binding_side(base, both, rules, decider)
    if group is not None and _bound_both(base, both, rules):
        hosts = [str(both[i].fields.get("host")) for i in (group, 1 - group)]
        notes.append(f"bound on both sides ({hosts[0]}, {hosts[1]}), kept {hosts[0]}'s binding")
    for key in _keys(base, both, later):
        values = [base.fields.get(key, _GONE), *(t.fields.get(key, _GONE) for t in both)]
        if key in rules.binding and group is not None:
            value = values[1 + group]
        elif key in rules.follow_status and status_side is not None:
            value = values[1 + status_side]  # the status's bookkeeping comes with it
        elif values[1] == values[2] or values[2] == values[0]:
            value = values[1]
        elif values[1] == values[0]:
            value = values[2]
        elif key == "status" and status_side is not None:
            value = values[1 + status_side]
            notes.append(_status_note(both, sides, status_side))
        elif key == "updated_at":
            value = max(str(v) for v in values[1:] if v is not _GONE)
        else:
            value = values[1 + later]
            if key not in QUIET:
                notes.append(f"{key} changed on both sides, kept {sides[later].commit[:10]}'s")
        if value is not _GONE:
            fields[key] = value
    return fields, notes


def _binding_side(base: Task, both: tuple[Task, Task], rules: Rules, decider: int) -> int | None:
    """The side whose binding fields are taken whole (None: neither changed them)."""
    groups = [tuple(t.fields.get(k) for k in rules.binding) for t in (base, *both)]
    if groups[1] == groups[2] or groups[2] == groups[0]:
        return 0
    if groups[1] == groups[0]:
        return 1
    return decider


def claimed_twice(base: Task, both: tuple[Task, Task], rules: Rules) -> bool:
    """Both sides bound a task the base had unbound, differently: two hosts' claims."""
    if base.str_field("workspace") or not all(t.str_field("workspace") for t in both):
        return False
    groups = [tuple(t.fields.get(k) for k in rules.binding) for t in both]
    return groups[0] != groups[1]


def _bound_both(base: Task, both: tuple[Task, Task], rules: Rules) -> bool:
    groups = [tuple(t.fields.get(k) for k in rules.binding) for t in (base, *both)]
    return groups[0] not in groups[1:] and groups[1] != groups[2]


def _keys(base: Task, both: tuple[Task, Task], later: int) -> list[str]:
    """Every key, in an order that does not depend on which side is ours: the base's,
    then the later side's new ones, then the other's."""
    order = list(base.fields)
    for task in (both[later], both[1 - later]):
        order += [key for key in task.fields if key not in order]
    return order


def _status_note(both: tuple[Task, Task], sides: tuple[Side, Side], kept: int) -> str:
    moves = [(both[i].status, sides[i].commit[:10]) for i in (kept, 1 - kept)]
    return (
        f"status moved on both sides, to {moves[0][0]} (commit {moves[0][1]}) and to "
        f"{moves[1][0]} (commit {moves[1][1]}); kept {moves[0][0]}"
    )


def _merge_body(
    base: str, both: tuple[Task, Task], sides: tuple[Side, Side], later: int
) -> tuple[str, list[str]]:
    ours, theirs = both[0].body, both[1].body
    if ours == theirs or theirs == base:
        return ours, []
    if ours == base:
        return theirs, []
    old = dict(split_sections(base))
    parts = (dict(split_sections(ours)), dict(split_sections(theirs)))
    order = list(old)
    for index in (later, 1 - later):
        order += [key for key in parts[index] if key not in order]
    texts: list[str] = []
    notes: list[str] = []
    for key in order:
        was, one, two = old.get(key), parts[0].get(key), parts[1].get(key)
        if one == two or two == was:
            text = one
        elif one == was:
            text = two
        elif one is None or two is None:  # removed on one side, edited on the other: kept
            text = two if one is None else one
        else:
            text = merge_text(was or "", one, two)
            if text is None:
                text = _both_versions((one, two), sides, later)
                notes.append(f"section {key or '(top)'} edited on both sides, both versions kept")
        if text is not None:
            texts.append(text)
    return "".join(_ended(t) for t in texts[:-1]) + (texts[-1] if texts else ""), notes


def _both_versions(both: tuple[str, str], sides: tuple[Side, Side], later: int) -> str:
    """Both versions of a section, the later side's first, under marked sub-headings."""
    first = both[0].split("\n", 1)[0]
    heading = first if first.startswith("## ") else ""
    out = [f"{heading}\n"] if heading else []
    for index in (later, 1 - later):
        text = both[index]
        if heading and text.startswith(heading):
            text = text.split("\n", 1)[1] if "\n" in text else ""
        out.append(f"### sync conflict: version of commit {sides[index].commit[:10]}\n")
        out.append(_ended(text))
    return "".join(out)


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
