"""``orange demo``: a walk through Orange in a throwaway repository."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.demo import run_demo
from orange.errors import InvalidInput


def demo(
    keep: Annotated[bool, typer.Option("--keep", help="Leave the demo behind.")] = False,
    hosts: Annotated[
        int, typer.Option("--hosts", help="2: one task here, one on a second host over SSH.")
    ] = 1,
) -> None:
    """Show Orange on a throwaway project."""

    if hosts == 2:
        if keep:
            raise InvalidInput("the two-host demo cannot be kept: its SSH server stops with it")
        from orange.demo_hosts import run_hosts_demo

        run_hosts_demo()
        return
    if hosts != 1:
        raise InvalidInput(f"--hosts must be 1 or 2, not {hosts}")
    run_demo(keep=keep)
