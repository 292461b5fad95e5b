"""Which workflow definitions may run on this host: trust by content, never by name.

A definition committed in ``refs/orange/tasks`` may come from anyone with push access
(DESIGN §8).  Its hooks run here only if the SHA-256 of its exact text is trusted.  This
module holds the part every host and the server share: the hash of a definition and
the definitions Orange ships or has shipped (``workflows/shipped.sha256``, package data,
entries never removed).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files

SHIPPED_LIST = "shipped.sha256"


def definition_hash(text: str) -> str:
    """The SHA-256 of a definition's text as committed (UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def shipped_hashes() -> frozenset[str]:
    """Every definition Orange ships or has shipped."""
    listing = files("orange._workflows").joinpath(SHIPPED_LIST).read_text(encoding="utf-8")
    lines = [line for line in listing.splitlines() if line.strip()]
    return frozenset(line.split()[0] for line in lines if not line.startswith("#"))
