"""Which workflow definitions may run on this host: trust by content, never by name.

A definition committed in ``refs/orange/tasks`` may come from anyone with push access
(DESIGN §8).  Its hooks run here only if the SHA-256 of its exact text is trusted.  This
module holds the part every host and the server share: the hash of a definition and
the definitions Orange ships or has shipped (``workflows/shipped.sha256``, package data,
entries never removed).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from pathlib import Path

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


# --- Trust sets handed to the replay checker (`orange.engine.replay`) ----------------
def directory_hashes(directory: Path) -> frozenset[str]:
    """The hashes of the ``*.yml`` files of ``directory`` (bytes as stored: a file is
    trusted exactly as written, never re-encoded).  A missing directory trusts none."""
    try:
        paths = sorted(directory.glob("*.yml"))
        return frozenset(hashlib.sha256(path.read_bytes()).hexdigest() for path in paths)
    except OSError:
        return frozenset()


def trusting(extra: frozenset[str]) -> Callable[[str], bool]:
    """What a server trusts: every definition Orange ships or has shipped, plus
    ``extra`` (the hashes of its ``--trusted-workflows`` directory)."""
    return lambda text: definition_hash(text) in shipped_hashes() | extra


def trusted_here(text: str) -> bool:
    """Placeholder, replaced by the host trust store: a shipped definition, or the
    current text of one of the catalog's local workflow files."""
    if definition_hash(text) in shipped_hashes():
        return True
    from orange.engine.catalog import user_dir  # loads the loader: only off the hot path

    return definition_hash(text) in directory_hashes(user_dir())
