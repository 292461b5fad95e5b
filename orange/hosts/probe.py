"""What a host needs to run a project's tasks, asked in one SSH round trip.

The host answers `report` (``orange host probe --json`` there: its Orange's protocol
and version, the name it records in the ref, its projects with their sync remote's URL
and pool use, the agents installed there, whether it has tmux); this host compares
that with what the project here needs (`missing`) and says each missing thing in one
line.  Nothing of the answer is run here: it is data, matched against local values.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from orange import projects
from orange.engine.definitions import is_active
from orange.errors import InvalidInput, OrangeError
from orange.home import host_name
from orange.hosts import roster
from orange.hosts.roster import Host, now
from orange.ops import doctor
from orange.projects import Project, open_store
from orange.runtime import bindings, ssh
from orange.runtime import harness as harnesses
from orange.runtime.git import git
from orange.store.listing import all_tasks
from orange.store.task import Task
from orange.sync.remote import project_remote

PROTOCOL = 2  # what `orange host probe` and `orange host start` say and take
PROGRAMS = ("tmux", "git")  # doctor's checks of the programs Orange itself runs there


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("orange")
    except PackageNotFoundError:
        return "unknown"


def sync_url(project: Project) -> str | None:
    """The URL of the project's sync remote, as git has it (None: no sync remote)."""
    remote = project_remote(project)
    if remote is None:
        return None
    url = git("remote", "get-url", remote, cwd=Path(project.path), check=False).strip()
    return url or None


def same_url(a: str, b: str) -> bool:
    def norm(url: str) -> str:
        return url.strip().rstrip("/").removesuffix(".git").rstrip("/")

    return norm(a) == norm(b)


def report() -> dict[str, Any]:
    """This host, as another one needs to know it (the remote side of a probe): what
    its tmux, git and agents lack is `orange doctor --json`'s report, whole."""
    found = []
    for project in projects.load_all():
        used = sum(1 for record in bindings.all_records(project.name) if record.workspace)
        found.append(
            {
                "name": project.name,
                "url": sync_url(project),
                "pool_size": project.pool_size,
                "pool_used": used,
                "sync_interval": project.sync_interval,
            }
        )
    return {
        "protocol": PROTOCOL,
        "version": version(),
        "host": host_name(),
        "projects": found,
        "doctor": doctor.as_json(doctor.check()),
    }


class Checked(NamedTuple):
    host: Host  # updated with what it reported
    missing: tuple[str, ...]  # one line each
    free: int  # free worktrees of the project there


def ask(host: Host, *, remember: bool = True) -> dict[str, Any]:
    """The host's `report`, over SSH (one round trip); unreachable or not an Orange
    that answers: one line, raised.  Whether it answered is remembered, unless
    ``remember`` is off (settings not registered yet: `host add` saves what answers)."""
    try:
        answer = ssh.run(host.ssh(), ["host", "probe", "--json"], timeout=60)
    except ssh.HostUnreachable:
        if remember:
            roster.mark(host.name, reachable=False, now=now())
        raise
    if remember:
        roster.mark(host.name, reachable=True, now=now())
    try:
        data = json.loads(answer.out) if answer.code == 0 else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        said = [line for line in answer.err.splitlines() if line.strip()]
        why = said[-1].strip() if said else f"exit status {answer.code}"
        raise InvalidInput(
            f"host {host.name}: Orange is not installed there, or too old to answer: {why}",
            hint="install Orange there (the same version as here), or set its path "
            "with `orange host add ... --orange PATH`",
        )
    return data


def missing(host: Host, project: Project, data: dict[str, Any]) -> Checked:
    """What ``host`` lacks to run ``project``'s tasks, judged from its report."""
    lines: list[str] = []
    if data.get("protocol") != PROTOCOL:
        lines.append(
            f"Orange there is version {data.get('version')!s:.40}, not compatible with "
            f"this one ({version()}): install the same version there"
        )
    findings = _findings(data.get("doctor"))
    for check, message, fix in findings.get("error", ()):
        if check in PROGRAMS:
            lines.append(f"{message} there (fix there: {fix})" if fix else f"{message} there")
    reported = str(data.get("host") or "")
    if reported == host_name():
        lines.append(
            f"it records itself as {reported!r:.66}, as this host does: set ORANGE_HOST "
            f"there (or here) so that tasks running there are not taken for this host's"
        )
    for known in roster.load_all():
        if known.name != host.name and reported and known.reports_as == reported:
            lines.append(f"it records itself as {reported!r:.66}, as host {known.name} does")
    url = sync_url(project)
    theirs = None
    if url is None:
        lines.append(
            f"project {project.name} has no sync remote here: add one (`git remote add "
            f"origin URL`) and run `orange sync --setup`"
        )
    else:
        for entry in _list(data.get("projects")):
            found = entry.get("url") if isinstance(entry, dict) else None
            if isinstance(found, str) and same_url(found, url):
                theirs = entry
                break
        if theirs is None:
            lines.append(
                f"project {project.name} is not cloned and registered there with the "
                f"sync remote {url}: `git clone {url}` there, then `orange project add`"
            )
    agents = _ready_agents(findings)
    for name in needed_agents(project):
        failed = [(m, f) for check, m, f in findings.get("error", ()) if check == name]
        if name not in agents and not failed:
            lines.append(f"agent {name} is not installed there (or not on its PATH)")
        for message, fix in failed:
            lines.append(f"agent {name} there: {message}" + (f" (fix there: {fix})" if fix else ""))
    free = 0
    pool = 0
    if theirs is not None:
        pool = _int(theirs.get("pool_size"))
        free = max(0, pool - _int(theirs.get("pool_used")))
        if free == 0:
            lines.append(f"its pool for {theirs.get('name')!s:.64} is full ({pool} in use)")
    name = str(theirs["name"]) if theirs is not None else ""
    if name and name != project.name:  # a task names its project: it must match there
        lines.append(
            f"the project is registered there as {name!r:.66}, not {project.name}: there, "
            f"`orange project remove {name:.64}`, then `orange project add --name {project.name}`"
        )
    updated = host._replace(
        reports_as=str(data.get("host") or ""),
        projects=_put(host.projects, project.name, name),
        pools=_put(host.pools, project.name, pool),
        agents=tuple(sorted(agents)),
        version=str(data.get("version") or ""),
        unreachable_since="",
    )
    return Checked(updated, tuple(lines), free)


def check_line(host: Host, project: Project) -> str:
    """Check ``host`` for ``project`` now, over SSH (as `orange host check` does,
    remembering what it said), in one line for the dashboard's host dialog."""
    try:
        checked = missing(host, project, ask(host))
    except OrangeError as exc:
        return f"checked: {exc.message}"
    roster.save(checked.host)
    if checked.missing:
        more = f" (and {len(checked.missing) - 1} more)" if len(checked.missing) > 1 else ""
        return f"checked: missing: {checked.missing[0]}{more}"
    agents = ", ".join(checked.host.agents) or "none"
    pool = checked.host.pool_size(project.name)
    return f"checked: ready, {checked.free} of {pool} worktrees free; agents: {agents}"


def needed_agents(project: Project) -> list[str]:
    """The harnesses the project's tasks use: those its active tasks name (only
    compared, never run) and the one a new task gets here by default."""
    names: set[str] = set()
    try:
        names.add(harnesses.resolve(None).name)
    except OrangeError:
        pass
    try:
        store = open_store(project)
        snap = store.snapshot()
        for task in all_tasks(store):
            if isinstance(task, Task) and task.str_field("harness") and is_active(snap, task):
                names.add(task.str_field("harness"))
    except OrangeError:
        pass
    return sorted(names)


Said = tuple[str, str, str]  # a doctor finding's check, message and fix, made visible


def _findings(report: object) -> dict[str, list[Said]]:
    """The host's doctor findings by level (its answer is data: malformed entries are
    dropped, control characters shown, long texts cut)."""
    found: dict[str, list[Said]] = {}
    entries = report.get("findings") if isinstance(report, dict) else None
    for entry in _list(entries):
        if not isinstance(entry, dict):
            continue
        level, check = entry.get("level"), entry.get("check")
        if level in ("ok", "warn", "error") and isinstance(check, str):
            said = tuple(_shown(entry.get(k)) for k in ("check", "message", "fix"))
            found.setdefault(level, []).append((said[0], said[1], said[2]))
    return found


def _ready_agents(findings: dict[str, list[Said]]) -> set[str]:
    """The agents the host's doctor found and has nothing against, and Orange's own
    scripted one (part of every Orange that answers the protocol)."""
    failed = {check for check, _m, _f in findings.get("error", ())}
    found = {check for check, _m, _f in findings.get("ok", ())}
    return (found - failed - {*PROGRAMS, "project", "agents"}) | {harnesses.DEMO}


def _shown(value: object, limit: int = 200) -> str:
    text = value if isinstance(value, str) else ""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:limit])


def _put(pairs: tuple[tuple[str, Any], ...], key: str, value: Any) -> tuple[Any, ...]:
    kept = [(k, v) for k, v in pairs if k != key]
    return tuple(sorted([*kept, (key, value)])) if value else tuple(kept)


def _list(value: object) -> list[Any]:
    """A list from the host's answer, or none (its answer is data, never trusted)."""
    return value if isinstance(value, list) else []


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
