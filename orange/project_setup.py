"""What `orange project update` changes in how a project's worktrees are made ready
(docs/worktrees.md): copy globs, setup and teardown commands, ports.

Apart from `orange.projects`, which every command loads: only ``project update`` and
the worktree preparation (`orange.runtime.prepare`) need these.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from orange.errors import InvalidInput
from orange.projects import Project, check_ports


class SetupChange(NamedTuple):
    """What `orange project update` changes in a project's worktree settings: each
    ``clear_*`` empties the list first, then the given values are appended."""

    copy: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    teardown: tuple[str, ...] = ()
    clear_copy: bool = False
    clear_setup: bool = False
    clear_teardown: bool = False
    port_base: int | None = None
    port_stride: int | None = None
    clear_ports: bool = False

    def changes_anything(self) -> bool:
        return self != SetupChange()

    def applied(self, project: Project) -> Project:
        def merged(old: tuple[str, ...], clear: bool, new: tuple[str, ...]) -> tuple[str, ...]:
            kept = () if clear else old
            return kept + tuple(value for value in new if value not in kept)

        base = None if self.clear_ports else project.port_base
        changed = project._replace(
            copy=merged(project.copy, self.clear_copy, tuple(map(check_glob, self.copy))),
            setup=merged(project.setup, self.clear_setup, tuple(map(check_command, self.setup))),
            teardown=merged(
                project.teardown, self.clear_teardown, tuple(map(check_command, self.teardown))
            ),
            port_base=self.port_base if self.port_base is not None else base,
            port_stride=self.port_stride
            if self.port_stride is not None
            else (10 if self.clear_ports else project.port_stride),
        )
        check_ports(changed)
        return changed


def check_glob(glob: str) -> str:
    """A copy glob: relative to the main checkout, never reaching outside it."""
    if not glob.strip():
        raise InvalidInput("a copy glob is empty", hint="give a pattern such as .env")
    parts = Path(glob).parts
    if glob.startswith(("/", "~")) or ".." in parts or "\0" in glob:
        raise InvalidInput(
            f"copy glob {glob!r} reaches outside the checkout",
            hint="give a pattern relative to the checkout, such as .env or config/*.local.json",
        )
    return glob


def check_command(command: str) -> str:
    if not command.strip() or "\0" in command:
        raise InvalidInput(f"command {command!r} is empty", hint="give a shell command line")
    return command
