"""Which workflow definitions may run on this host: trust by content, never by name.

A definition committed in ``refs/orange/tasks`` may come from anyone with push access
(DESIGN §8).  Its hooks run here only if the SHA-256 of its exact text is in this
host's trusted set:

- every definition Orange ships or has shipped (``workflows/shipped.sha256``, package
  data, entries never removed), so an upgrade never orphans a task;
- every definition this host's Orange created a task under (`record_committed`, at
  creation: ``$ORANGE_HOME/trust/committed``), so editing your own workflow file never
  freezes your own running tasks;
- the current local files: ``$ORANGE_HOME/workflows/*.yml`` (a project's registered
  workflow is a name, resolved to one of these or to a shipped one);
- hashes a human added with ``orange workflow trust`` (``$ORANGE_HOME/trust/added``).

Never by name or ``workflow_rev``.  `trusted_here` is the one question; its answer
comes from sets read once per process (read again only when one of their files
changed), with no loader and no validation.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import NamedTuple

from orange.errors import EnvironmentProblem
from orange.home import orange_home
from orange.store.files import replace_file
from orange.store.lock import exclusive

SHIPPED_LIST = "shipped.sha256"
COMMITTED = "committed"  # "<sha256> <name>" per line: definitions this host committed
ADDED = "added"  # "<sha256>\t<name>\t<source>\t<when>" per line: added by a human


def definition_hash(text: str) -> str:
    """The SHA-256 of a definition's text as committed (UTF-8 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def shipped_hashes() -> frozenset[str]:
    """Every definition Orange ships or has shipped."""
    # The package's own folder, not importlib.resources: every move asks, and that
    # import alone would cost a status update more than the whole check.
    spec = find_spec("orange._workflows")
    folder = Path(spec.origin if spec is not None and spec.origin else "").parent
    listing = (folder / SHIPPED_LIST).read_text(encoding="utf-8")
    lines = [line for line in listing.splitlines() if line.strip()]
    return frozenset(line.split()[0] for line in lines if not line.startswith("#"))


def trusted_here(text: str) -> bool:
    """Whether the definition ``text`` may run its hooks on this host."""
    digest = definition_hash(text)
    return digest in shipped_hashes() or digest in _host_hashes()


def trust_dir() -> Path:
    return orange_home() / "trust"


def record_committed(text: str, name: str) -> None:
    """Remember that this host's Orange committed (created a task under) ``text``.

    Cheap when already known: one stat per file of the host's set.  Appending one short
    line is atomic (``O_APPEND``), so concurrent creators never mix their lines."""
    digest = definition_hash(text)
    if digest in shipped_hashes() or digest in _records(COMMITTED):
        return
    _append(COMMITTED, f"{digest} {name}\n")


class Added(NamedTuple):
    """A definition a human trusted with ``orange workflow trust``."""

    digest: str
    name: str
    source: str
    at: str


def added() -> list[Added]:
    """The hashes a human added, oldest first."""
    entries = []
    for line in _lines(ADDED):
        parts = line.split("\t")
        if len(parts) == 4 and len(parts[0]) == 64:
            entries.append(Added(*parts))
    return entries


def add(entry: Added) -> None:
    """Trust ``entry.digest`` on this host (nothing if a human already added it)."""
    if any(known.digest == entry.digest for known in added()):
        return
    _append(ADDED, "\t".join(_one_line(part) for part in entry) + "\n")


def remove(digest: str) -> None:
    """Forget a human-added hash (the file is rewritten whole, under a lock)."""
    path = trust_dir() / ADDED
    try:
        with exclusive(trust_dir() / ".added.lock"):
            kept = [line for line in _lines(ADDED) if line.split("\t", 1)[0] != digest]
            replace_file(path, "".join(f"{line}\n" for line in kept))
    except OSError as exc:
        raise EnvironmentProblem.of(exc) from None


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _append(name: str, line: str) -> None:
    try:
        trust_dir().mkdir(parents=True, exist_ok=True)
        fd = os.open(trust_dir() / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:
        raise EnvironmentProblem.of(exc) from None


# The host's set, read once per process and again only when a file of it changed.
_memo: dict[str, tuple[object, frozenset[str]]] = {}


def _host_hashes() -> frozenset[str]:
    return _records(COMMITTED) | _records(ADDED) | _local_files()


def _records(name: str) -> frozenset[str]:
    path = trust_dir() / name
    stamp = _stamp(path)
    known = _memo.get(str(path))
    if known is None or known[0] != stamp:
        hashes = frozenset(line.split(None, 1)[0] for line in _lines(name) if line.strip())
        known = (stamp, hashes)
        _memo[str(path)] = known
    return known[1]


def _local_files() -> frozenset[str]:
    """The hashes of ``$ORANGE_HOME/workflows/*.yml`` (shipped files are all in the
    shipped list: `tests/engine/test_trust_list.py` checks it)."""
    folder = orange_home() / "workflows"
    try:
        paths = sorted(p for p in folder.glob("*.yml") if p.is_file())
    except OSError:
        paths = []
    stamp = tuple((str(p), _stamp(p)) for p in paths)
    known = _memo.get(str(folder))
    if known is None or known[0] != stamp:
        known = (stamp, file_hashes(paths))
        _memo[str(folder)] = known
    return known[1]


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size)


def _lines(name: str) -> list[str]:
    try:
        return (trust_dir() / name).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError):
        return []  # unreadable: it trusts nothing (a human sees it in `--list`)


# --- Trust sets handed to the replay checker (`orange.engine.replay`) ----------------
def file_hashes(paths: Iterable[Path]) -> frozenset[str]:
    """The hashes of definition files, each read as Orange reads a definition it commits
    (UTF-8 text, line endings as Python reads them), so a file trusts exactly the text
    a task made from it carries, whichever line endings it was saved with.  An
    unreadable file trusts nothing."""
    hashes = set()
    for path in paths:
        try:
            hashes.add(definition_hash(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    return frozenset(hashes)


def directory_hashes(directory: Path) -> frozenset[str]:
    """The hashes of the ``*.yml`` files of ``directory`` (`file_hashes`).  A missing
    directory trusts none."""
    try:
        paths = sorted(directory.glob("*.yml"))
    except OSError:
        return frozenset()
    return file_hashes(paths)


def trusting(extra: frozenset[str]) -> Callable[[str], bool]:
    """What a server trusts: every definition Orange ships or has shipped, plus
    ``extra`` (the hashes of its ``--trusted-workflows`` directory)."""
    return lambda text: definition_hash(text) in shipped_hashes() | extra
