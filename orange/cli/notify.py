"""``orange notify --test``: check that notifications reach you."""

from __future__ import annotations

from typing import Annotated

import typer

from orange import compose
from orange.cli.output import emit_json
from orange.errors import InvalidInput


def notify(
    test: Annotated[
        bool, typer.Option("--test", help="Send one notification on every channel now.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Notifications: a human is told when a task waits for one or needs attention."""
    if not test:
        raise InvalidInput("nothing to do", hint="`orange notify --test` sends a test notification")
    done = compose.notices().send_test()
    if all(d.state == "off" for d in done):
        raise InvalidInput(
            "no notification channel is on",
            hint="set notify.desktop: true or notify.webhook: URL in config.yml",
        )
    # Every channel's result, the ones that worked too; exit 1 when one failed.
    failed = [d.channel for d in done if d.state == "failed"]
    problem = f"notify test failed on {', '.join(failed)}" if failed else None
    if json_out:
        emit_json({"channels": [d._asdict() for d in done], "error": problem})
        if problem:
            raise typer.Exit(1)
        return
    for delivery in done:
        typer.echo(f"{delivery.channel}: {delivery.state}: {delivery.detail}")
    if problem:
        raise InvalidInput(problem)
