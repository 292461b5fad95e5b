"""Adapters the engine uses at run time: TASK.md working copies and agent liveness."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orange.engine.engine import AgentProbe, WorkingCopies
    from orange.projects import Project


def runtime_adapters(project: Project) -> tuple[WorkingCopies | None, AgentProbe | None]:
    """None until the runtime provides them."""
    return None, None
