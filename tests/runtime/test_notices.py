"""The local records that make each notification go out once are bounded."""

from __future__ import annotations

import os
from pathlib import Path

from orange.home import orange_home
from orange.runtime.notices import KEEP, PRUNE_AT, claim


def test_sent_records_are_pruned_to_the_newest(hermetic: Path) -> None:
    assert claim("first", "reviewing") and not claim("first", "reviewing")
    folder = orange_home() / "notify" / "sent"
    os.utime(folder / "first.reviewing", ns=(0, 0))  # the oldest of all
    # Records of later notifications, oldest first (one second apart).
    for i in range(1, PRUNE_AT - 1):
        record = folder / f"c{i:04}.reviewing"
        record.touch()
        os.utime(record, ns=(i * 10**9, i * 10**9))
    assert len(os.listdir(folder)) == PRUNE_AT - 1
    assert claim("newest", "stuck")  # the folder reaches PRUNE_AT: pruned to KEEP
    left = sorted(os.listdir(folder))
    assert len(left) == KEEP and "newest.stuck" in left
    assert left[0] == f"c{PRUNE_AT - KEEP:04}.reviewing"  # the oldest went
    assert not claim("newest", "stuck")  # a kept record still deduplicates
    assert claim("first", "reviewing")  # a pruned one is forgotten
