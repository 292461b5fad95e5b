"""The hosts this machine drives: ``$ORANGE_HOME/hosts.json`` (DESIGN §8, §11).

Local configuration only: a host's SSH target, its ssh_config file, the environment
its remote command runs with (``env`` prefixed to the command: ``ORANGE_HOME``, a
``PATH``, ...) and the path of its ``orange`` are set by a person on this machine
(`orange host add`).  What the host said about itself at its last check is kept beside
it: the name it writes as ``host`` in the ref (``reports_as``), its project's name
there and its pool size, the agents it has, and since when it cannot be reached.

A task's ``host`` field, from the ref, is only ever a key looked up here
(`by_reported`): a name no entry reports as reaches nothing.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from orange.errors import InvalidInput, NotFound
from orange.home import hosts_file, orange_home
from orange.runtime.ssh import SshHost, check_target
from orange.store.lock import exclusive

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class Host(NamedTuple):  # not a dataclass: see `orange.store.task.Task`
    name: str
    target: str
    ssh_config: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    orange: str = "orange"
    reports_as: str = ""  # the host name it records in the ref
    projects: tuple[tuple[str, str], ...] = ()  # (project here, its name there)
    pools: tuple[tuple[str, int], ...] = ()  # (project here, pool size there)
    agents: tuple[str, ...] = ()  # the harnesses installed there
    version: str = ""
    unreachable_since: str = ""  # ISO time of the first failed contact since a good one

    def ssh(self) -> SshHost:
        return SshHost(self.name, self.target, self.ssh_config, self.env, self.orange)

    def remote_project(self, project: str) -> str | None:
        return dict(self.projects).get(project)

    def pool_size(self, project: str) -> int:
        return dict(self.pools).get(project, 0)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "ssh_config": self.ssh_config,
            "env": dict(self.env),
            "orange": self.orange,
            "reports_as": self.reports_as,
            "projects": dict(self.projects),
            "pools": dict(self.pools),
            "agents": list(self.agents),
            "version": self.version,
            "unreachable_since": self.unreachable_since or None,
        }


def path() -> Path:
    return hosts_file()


def check_name(name: str) -> str:
    if name == "auto":  # `--host auto` picks one
        raise InvalidInput("a host cannot be called auto", hint="choose another name")
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"not a host name: {name!r}",
            hint="use letters, digits, '.', '_' and '-' (at most 64)",
        )
    return name


def load_all() -> list[Host]:
    file = path()
    if not file.is_file():
        return []
    try:
        raw = json.loads(file.read_text())
        return [_entry(item) for item in raw["hosts"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(
            f"{file}: cannot read the host registry ({exc})", hint="fix or remove the file"
        ) from None


def _entry(item: dict[str, Any]) -> Host:
    return Host(
        name=check_name(str(item["name"])),
        target=check_target(str(item["target"])),
        ssh_config=str(item["ssh_config"]) if item.get("ssh_config") else None,
        env=tuple((str(k), str(v)) for k, v in dict(item.get("env") or {}).items()),
        orange=str(item.get("orange") or "orange"),
        reports_as=str(item.get("reports_as") or ""),
        projects=tuple((str(k), str(v)) for k, v in dict(item.get("projects") or {}).items()),
        pools=tuple((str(k), int(v)) for k, v in dict(item.get("pools") or {}).items()),
        agents=tuple(str(a) for a in item.get("agents") or ()),
        version=str(item.get("version") or ""),
        unreachable_since=str(item.get("unreachable_since") or ""),
    )


def get(name: str) -> Host:
    for host in load_all():
        if host.name == name:
            return host
    known = ", ".join(h.name for h in load_all()) or "none registered"
    raise NotFound(f"no host named {name!r} (known: {known})", hint="see `orange host list`")


def by_reported(reported: str) -> Host | None:
    """The registered host that records itself as ``reported`` in the ref (a task's
    ``host`` field), if any: the only way a value from the ref finds a host.  Two
    entries that record themselves alike (`orange host check` says so) find none:
    which machine runs the task cannot be told, so none is reached."""
    if not reported:
        return None
    found = [host for host in load_all() if host.reports_as == reported]
    return found[0] if len(found) == 1 else None


@contextmanager
def editing() -> Iterator[list[Host]]:
    """Load, let the caller edit the list in place, then write it atomically."""
    home = orange_home()
    home.mkdir(parents=True, exist_ok=True)
    with exclusive(home / ".hosts.lock"):
        hosts = load_all()
        yield hosts
        data = json.dumps({"hosts": [h.as_json() for h in hosts]}, indent=2) + "\n"
        tmp = home / f".hosts.{os.getpid()}.{os.urandom(4).hex()}.json"
        with open(tmp, "x") as handle:
            handle.write(data)
        os.replace(tmp, path())


def save(host: Host) -> None:
    """Add ``host``, or replace the entry of that name."""
    with editing() as hosts:
        hosts[:] = [h for h in hosts if h.name != host.name] + [host]
        hosts.sort(key=lambda h: h.name)


def remove(name: str) -> Host:
    with editing() as hosts:
        found = [h for h in hosts if h.name == name]
        if not found:
            raise NotFound(f"no host named {name!r}", hint="see `orange host list`")
        hosts[:] = [h for h in hosts if h.name != name]
    return found[0]


def now() -> str:
    """The time a host's state is marked with (`mark`), to the second, in UTC."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def mark(name: str, *, reachable: bool, now: str) -> None:
    """Remember whether ``name`` answered: the time of the first failure since it last
    did (kept while it stays unreachable), cleared when it answers.  A host that is
    not registered (being added) or whose state did not change writes nothing."""
    known = {host.name: host for host in load_all()}.get(name)
    if known is None or bool(known.unreachable_since) == (not reachable):
        return
    with editing() as hosts:
        for index, host in enumerate(hosts):
            if host.name != name:
                continue
            since = "" if reachable else (host.unreachable_since or now)
            hosts[index] = host._replace(unreachable_since=since)
