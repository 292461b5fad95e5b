"""``orange project trust-setup [NAME]``: a human reads the repository's
``.orange/worktree.yml`` and trusts its exact content to run its commands here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from orange import projects
from orange.cli.output import emit_json, visible
from orange.errors import InvalidInput
from orange.ops import trust as ops
from orange.runtime.prepare import REPO_FILE, RepoFile, read_repo_file
from orange.runtime.ready import repo_trusted


def trust_setup(
    name: Annotated[str | None, typer.Argument(help="Project (default: this one).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Trust the project's .orange/worktree.yml on this host, by its content (after
    showing its commands).  A changed file needs trusting again."""
    project = projects.infer(name=name)
    shared = read_repo_file(Path(project.path))
    if shared is None:
        raise InvalidInput(
            f"{project.name} has no {REPO_FILE} in {project.path}",
            hint="nothing to trust; local settings are set with `orange project update`",
        )
    source = f"{project.name}:{REPO_FILE}"
    if repo_trusted(shared.text):
        if json_out:
            emit_json({"trusted": [], "already": True})
        else:
            typer.echo(f"{source} is already trusted on this host")
        return
    if not yes and not sys.stdin.isatty():
        raise InvalidInput(
            f"refusing to trust {REPO_FILE} without confirmation",
            hint="run it in a terminal, or pass --yes once you have read the file",
        )
    candidate = ops.Candidate(source, str(Path(project.path) / REPO_FILE), shared.text)
    if not (json_out and yes):  # with --json on stderr: stdout holds one JSON object
        _show(shared, source, candidate.digest, err=json_out)
    question = "run these commands in this project's worktrees?"
    if not yes and not typer.confirm(question, err=json_out):
        if json_out:
            emit_json({"trusted": [], "already": False})
        else:
            typer.echo("left untrusted")
        return
    entry = ops.trust_candidate(candidate)
    if json_out:
        emit_json({"trusted": [entry._asdict()], "already": False})
    else:
        typer.echo(f"trusted {entry.digest[:12]} ({visible(source)}) on this host")


def _show(shared: RepoFile, source: str, digest: str, *, err: bool) -> None:
    """What trusting lets run: every command, and the globs copied."""
    typer.echo(f"== {visible(source)} (sha256 {digest[:12]})", err=err)
    settings = shared.settings
    for key, commands in (("setup", settings.setup), ("teardown", settings.teardown)):
        for command in commands:
            typer.echo(f"  {key}: {visible(command)}", err=err)
    for glob in settings.copy:
        typer.echo(f"  copy: {visible(glob)}", err=err)
