"""``orange workflow trust``: a human looks at a definition, then trusts its content.

The definitions to look at are those committed in a project's tasks ref under a name
(``meta/workflows/NAME.yml`` and every ``NAME@rev.yml``) that this host does not trust
yet, or a file.  Each is shown whole, or as its difference from the local definition
of that name (``$ORANGE_HOME/workflows/NAME.yml``, else the shipped one), and what is
recorded is the SHA-256 of its exact text (`orange.engine.trust`): never the name.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import pygit2

from orange.engine import trust
from orange.engine.catalog import SHIPPED_PACKAGE, user_dir
from orange.errors import InvalidInput, NotFound
from orange.store import layout
from orange.store.store import TaskStore, now_iso

_FOLDER = layout.workflow_path("x").rsplit("/", 1)[0]  # meta/workflows


@dataclass(frozen=True)
class Candidate:
    """A definition a human may trust: its name, where it comes from, its text."""

    name: str
    source: str
    text: str

    @property
    def digest(self) -> str:
        return trust.definition_hash(self.text)


def committed_untrusted(store: TaskStore, project: str, name: str) -> list[Candidate]:
    """The definitions named ``name`` in the project's ref that this host does not
    trust; `NotFound` when the ref holds none of that name."""
    found = []
    for file, data in _committed(store):
        base = file.removesuffix(".yml")
        if base != name and base.split("@", 1)[0] != name:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # not UTF-8: not a definition any Orange can run
        source = f"{layout.TASKS_REF}:{_FOLDER}/{file} (project {project})"
        found.append(Candidate(name, source, text))
    if not found:
        raise NotFound(
            f"no workflow {name!r} is committed in project {project}'s tasks",
            hint="give a committed workflow's name (see `orange task list`) or a file",
        )
    return [c for c in found if not trust.trusted_here(c.text)]


def file_candidate(path: Path) -> Candidate:
    """A definition from a file; its name is the file's stem."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{path}: not UTF-8 text", hint="give a workflow YAML file") from None
    except OSError as exc:
        raise NotFound(f"cannot read {path}: {exc.strerror}") from None
    return Candidate(path.stem, str(path.resolve()), text)


def local_text(name: str) -> tuple[str, str] | None:
    """(where, text) of the local definition called ``name``, if any."""
    user = user_dir() / f"{name}.yml"
    if user.is_file():
        return str(user), user.read_text(encoding="utf-8", errors="replace")
    shipped = files(SHIPPED_PACKAGE).joinpath(f"{name}.yml")
    if shipped.is_file():
        return f"shipped {name}.yml", shipped.read_text(encoding="utf-8")
    return None


def shown(candidate: Candidate) -> str:
    """The definition as a human should review it: its difference from the local one
    of that name, or its whole text when there is none."""
    local = local_text(candidate.name)
    if local is None:
        return candidate.text
    where, text = local
    diff = difflib.unified_diff(
        text.splitlines(keepends=True),
        candidate.text.splitlines(keepends=True),
        fromfile=f"local {where}",
        tofile=candidate.source,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def trust_candidate(candidate: Candidate) -> trust.Added:
    """Record the candidate's hash as trusted by a human on this host."""
    entry = trust.Added(candidate.digest, candidate.name, candidate.source, now_iso())
    trust.add(entry)
    return entry


def revoke(key: str) -> trust.Added:
    """Forget one human-added hash, named by its hash (or a unique prefix of at least 8
    hex digits) or by the name it was recorded under when only one has that name."""
    entries = trust.added()
    if not key:
        raise InvalidInput("--revoke needs a hash or a workflow name")
    by_hash = [e for e in entries if len(key) >= 8 and e.digest.startswith(key.lower())]
    matches = by_hash or [e for e in entries if e.name == key]
    if not matches:
        raise NotFound(
            f"no trusted definition added by hand matches {key!r}",
            hint="see `orange workflow trust --list`",
        )
    if len(matches) > 1:
        digests = ", ".join(e.digest[:12] for e in matches)
        raise InvalidInput(
            f"{key!r} matches {len(matches)} trusted definitions ({digests})",
            hint="revoke one by its hash",
        )
    trust.remove(matches[0].digest)
    return matches[0]


def _committed(store: TaskStore) -> list[tuple[str, bytes]]:
    """(file name, bytes) of every file in the ref's ``meta/workflows``."""
    pygit = store.pygit
    try:
        tree = pygit.revparse_single(layout.TASKS_REF).peel(pygit2.Commit).tree
        folder = tree[_FOLDER]
    except (KeyError, ValueError):
        return []
    if not isinstance(folder, pygit2.Tree):
        return []
    return [
        (entry.name or "", entry.data)
        for entry in folder
        if isinstance(entry, pygit2.Blob) and (entry.name or "").endswith(".yml")
    ]
