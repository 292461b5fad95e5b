"""The project registry: ``$ORANGE_HOME/projects.json``.

Entries are ``{name, path, default_branch, pool_size, workflow}`` plus how a worktree
is made ready (``copy`` globs, ``setup``/``teardown`` commands, ``port_base`` and
``port_stride``: `orange.runtime.prepare`).  Commands run anywhere inside a registered
repository (main checkout, linked worktree, any subdirectory) find their project from
the repository's common git dir.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from orange.errors import InvalidInput, NotARepository, NotFound, OrangeError
from orange.home import orange_home
from orange.store.lock import exclusive
from orange.store.repo import GitRepo, open_repo
from orange.store.store import TaskStore

_NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"  # compiled when a name is checked


class Project(NamedTuple):  # not a dataclass: see `orange.store.task.Task`
    name: str
    path: str
    default_branch: str
    pool_size: int = 2
    workflow: str = "default"
    copy: tuple[str, ...] = ()  # globs of local files copied into a new worktree
    setup: tuple[str, ...] = ()  # commands run in a worktree bound to a task
    teardown: tuple[str, ...] = ()  # commands run when it is released
    port_base: int | None = None  # slot i gets port_base + i * port_stride
    port_stride: int = 10
    sync_interval: int = 0  # seconds between automatic syncs by the monitor; 0: off
    check: str = ""  # command `task merge --ready` runs on each merged result ('': none)
    budget: str = ""  # dollars a new task may cost, unless it says ('': none; the ledger)

    def repo(self) -> GitRepo:
        return open_repo(self.path)


def registry_path() -> Path:
    return orange_home() / "projects.json"


def load_all() -> list[Project]:
    path = registry_path()
    if not path.is_file():
        return []
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(
            f"{path}: cannot read the project registry ({exc})",
            hint="fix or remove the file",
        ) from None
    entries = raw.get("projects", raw) if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise InvalidInput(f"{path}: expected a list of projects")
    projects = []
    for entry in entries:
        try:
            projects.append(
                Project(
                    name=str(entry["name"]),
                    path=str(entry["path"]),
                    default_branch=str(entry.get("default_branch") or "main"),
                    pool_size=int(entry.get("pool_size", 2)),
                    workflow=str(entry.get("workflow") or "default"),
                    copy=_strings(entry.get("copy")),
                    setup=_strings(entry.get("setup")),
                    teardown=_strings(entry.get("teardown")),
                    port_base=None if entry.get("port_base") is None else int(entry["port_base"]),
                    port_stride=int(entry.get("port_stride") or 10),
                    sync_interval=int(entry.get("sync_interval") or 0),
                    check=str(entry.get("check") or ""),
                    budget=str(entry.get("budget") or ""),
                )
            )
        except (KeyError, TypeError, ValueError):
            raise InvalidInput(f"{path}: malformed project entry {entry!r}") from None
    return projects


@contextmanager
def _editing() -> Iterator[list[Project]]:
    """Load, let the caller edit the list in place, then write it atomically."""
    home = orange_home()
    home.mkdir(parents=True, exist_ok=True)
    with exclusive(home / ".projects.lock"):
        projects = load_all()
        yield projects
        data = json.dumps({"projects": [p._asdict() for p in projects]}, indent=2) + "\n"
        tmp = home / f".projects.{os.getpid()}.{os.urandom(4).hex()}.json"
        with open(tmp, "x") as handle:  # under the lock: a name of our own
            handle.write(data)
        os.replace(tmp, registry_path())


def get(name: str) -> Project:
    for project in load_all():
        if project.name == name:
            return project
    known = ", ".join(p.name for p in load_all()) or "none registered"
    raise NotFound(f"no project named {name!r} (known: {known})", hint="see `orange project list`")


def find_for_repo(repo: GitRepo) -> Project | None:
    """The registered project this repository (or worktree of it) belongs to."""
    for project in load_all():
        if _common_dir(project.path) == repo.common_dir:
            return project
    return None


def default_branch_at(common_dir: Path) -> str | None:
    """The default branch of the registered project whose repository has this common
    git dir (None: no project, or a registry that cannot be read)."""
    try:
        registered = load_all()
    except OrangeError:
        return None
    for project in registered:
        if _common_dir(project.path) == common_dir:
            return project.default_branch
    return None


def _common_dir(path: str) -> Path | None:
    """The common git dir of a project's checkout, None if it is gone.  A checkout
    whose ``.git`` is a directory has it there, read without opening the repository
    (every command finds its project this way: opening each registered repository
    would read its config files once per project)."""
    dot_git = Path(path, ".git")
    if dot_git.is_dir():
        return dot_git.resolve()
    try:  # a checkout whose .git is a file (a submodule, a linked worktree)
        return open_repo(path).common_dir
    except NotARepository:
        return None


def infer(cwd: str | os.PathLike[str] = ".", name: str | None = None) -> Project:
    """``--project`` if given, else the project of the repository around ``cwd``."""
    return get(name) if name else infer_store(cwd)[0]


def infer_store(
    cwd: str | os.PathLike[str] = ".", name: str | None = None
) -> tuple[Project, TaskStore]:
    """`infer`, with the project's task store.  Inside the project's repository the
    store shares the repository already opened to find the project (any worktree of
    it: the tasks ref and the objects live in the common dir they share)."""
    if name:
        named = get(name)
        return named, open_store(named)
    try:
        repo = open_repo(cwd)
    except NotARepository:
        raise NotFound(
            "not inside a registered project",
            hint="cd into one, pass --project NAME, or register one with `orange project add`",
        ) from None
    project = find_for_repo(repo)
    if project is None:
        raise NotFound(
            f"{repo.main_workdir or repo.common_dir} is not a registered project",
            hint="register it with `orange project add`",
        )
    return project, TaskStore(repo)


def default_branch_of(repo: GitRepo) -> str:
    """``origin/HEAD``'s branch, else the current branch, else ``main``."""
    pygit = repo.pygit
    origin_head = pygit.references.get("refs/remotes/origin/HEAD")
    if origin_head is not None:
        target = origin_head.target
        if isinstance(target, str) and target.startswith("refs/remotes/origin/"):
            return target.removeprefix("refs/remotes/origin/")
    if not pygit.head_is_detached:
        head = pygit.references.get("HEAD")
        if head is not None and isinstance(head.target, str):
            return head.target.removeprefix("refs/heads/")
    return "main"


def add(
    path: str | os.PathLike[str] = ".",
    *,
    name: str | None = None,
    pool_size: int = 2,
    workflow: str = "default",
) -> Project:
    try:
        repo = open_repo(path)
    except NotARepository as exc:
        raise NotARepository(exc.message, hint="give a path inside a git checkout") from None
    if repo.is_bare or repo.main_workdir is None:
        raise InvalidInput(f"{repo.common_dir} is a bare repository", hint="add a checkout")
    main = repo.main_workdir
    name = name or main.name
    _check_name(name)
    _check_pool(pool_size)
    project = Project(
        name=name,
        path=str(main),
        default_branch=default_branch_of(repo),
        pool_size=pool_size,
        workflow=workflow,
    )
    with _editing() as projects:
        for other in projects:
            if other.name == name:
                raise InvalidInput(
                    f"a project named {name!r} is already registered ({other.path})",
                    hint="choose another with --name",
                )
            if Path(other.path).resolve() == main:
                raise InvalidInput(
                    f"{main} is already registered as {other.name!r}",
                    hint="see `orange project list`",
                )
        projects.append(project)
    return project


def update(
    name: str,
    *,
    pool_size: int | None = None,
    workflow: str | None = None,
    setup: Callable[[Project], Project] | None = None,
    sync_interval: int | None = None,
    check: str | None = None,
    budget: str | None = None,
) -> Project:
    """Change a project's pool size and workflow; ``setup`` changes its worktree
    settings (`orange.project_setup.SetupChange.applied`); ``check``: the command
    ``task merge --ready`` runs on each merged result ('' for none); ``budget``: its
    new tasks' default budget, checked text ('' for none)."""
    if pool_size is not None:
        _check_pool(pool_size)
    with _editing() as projects:
        for index, project in enumerate(projects):
            if project.name == name:
                changed = project._replace(
                    pool_size=project.pool_size if pool_size is None else pool_size,
                    workflow=project.workflow if workflow is None else workflow,
                )
                changed = setup(changed) if setup is not None else changed
                if sync_interval is not None:
                    changed = changed._replace(sync_interval=sync_interval)
                if check is not None:
                    changed = changed._replace(check=check.strip())
                if budget is not None:
                    changed = changed._replace(budget=budget)
                check_ports(changed)
                projects[index] = changed
                return changed
    raise NotFound(f"no project named {name!r}", hint="see `orange project list`")


def parse_interval(text: str) -> int:
    """``30s``, ``5m`` or ``off`` as seconds (0: off)."""
    match = re.fullmatch(r"\s*(?:(off)|([1-9][0-9]{0,5})([sm]))\s*", text)
    if match is None:
        raise InvalidInput(
            f"sync interval {text!r} is not Ns, Nm or off", hint="e.g. --sync-interval 30s"
        )
    if match.group(1):
        return 0
    return int(match.group(2)) * (60 if match.group(3) == "m" else 1)


def rename(old: str, new: str) -> Project:
    """Register project ``old`` under the name ``new`` instead (`orange project add` in
    a clone takes the name its shared tasks carry)."""
    _check_name(new)
    with _editing() as projects:
        if any(other.name == new for other in projects):
            raise InvalidInput(f"a project named {new!r} is already registered")
        for index, project in enumerate(projects):
            if project.name == old:
                projects[index] = project._replace(name=new)
                return projects[index]
    raise NotFound(f"no project named {old!r}", hint="see `orange project list`")


def remove(name: str) -> Project:
    with _editing() as projects:
        for index, project in enumerate(projects):
            if project.name == name:
                del projects[index]
                return project
    raise NotFound(f"no project named {name!r}", hint="see `orange project list`")


def _check_name(name: str) -> None:
    if not re.match(_NAME_RE, name):
        raise InvalidInput(
            f"project name {name!r} is not allowed",
            hint="use letters, digits, '-' and '_' (it names tmux sessions and worktrees)",
        )


def _check_pool(pool_size: int) -> None:
    if pool_size < 1:
        raise InvalidInput(f"pool size must be at least 1 (got {pool_size})")


def _strings(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise TypeError("expected a list of strings")
    return tuple(value)


def check_ports(project: Project) -> None:
    if project.port_stride < 1:
        raise InvalidInput(f"port stride must be at least 1 (got {project.port_stride})")
    if project.port_base is None:
        return
    if project.port_base < 1:
        raise InvalidInput(f"port base must be 1 or more (got {project.port_base})")
    last = project.port_base + (project.pool_size - 1) * project.port_stride
    if last > 65535:
        raise InvalidInput(
            f"ports {project.port_base}..{last} are not all valid ports (1-65535)",
            hint="choose a lower --port-base or --port-stride",
        )


def open_store(project: Project) -> TaskStore:
    """The task store of a registered project, or a clear error when its repository
    has gone."""
    try:
        return TaskStore(project.repo())
    except NotARepository:
        raise NotFound(
            f"project {project.name}'s repository is gone ({project.path})",
            hint=f"remove it with `orange project remove {project.name}`",
        ) from None


def holding(prefix: str, besides: str) -> list[tuple[str, str]]:
    """The registered projects other than ``besides`` that have a task ``prefix`` names
    (an id or a unique prefix there): (project name, full task id) each, in registry
    order.  A project whose repository is gone, or where the prefix is ambiguous, is
    passed over: this answers "where is it, then?" after a lookup failed."""
    found: list[tuple[str, str]] = []
    for project in load_all():
        if project.name == besides:
            continue
        try:
            found.append((project.name, open_store(project).resolve(prefix)))
        except (NotFound, InvalidInput):
            continue
    return found
