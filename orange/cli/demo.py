"""``orange demo``: a walk through Orange in a throwaway repository."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.demo import run_demo


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Leave the demo behind.")] = False,
) -> None:
    """Show Orange on a throwaway project."""

    run_demo(keep=keep)
