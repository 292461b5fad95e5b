"""Orange's plain option converters sit on typer's private ``_runtime_param``; a typer
without it (simulated here: its parameters keep no such attribute) gets typer's own
converters, and every command means and says the same."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer.main

from orange.cli import coercion
from orange.cli.main import build_app
from tests.cli.test_fast import _typer_params
from tests.conftest import Cli

# Before Orange is imported: typer's parameters no longer keep ``_runtime_param``.
NO_PRIVATE_API = """
import typer.core as core
from typer._coercion import build_runtime_param
for cls in (core.TyperOption, core.TyperArgument):
    def init(self, *args, _init=cls.__init__, **kwargs):
        _init(self, *args, **kwargs)
        del self._runtime_param
    cls.__init__ = init
core._TyperParameter.get_runtime_param = lambda self: build_runtime_param(self.type_descriptor)
"""
RUN = "import sys\nfrom orange.cli.main import run\nrun(sys.argv[1:])\n"
RUN += "print('pydantic' in sys.modules, file=sys.stderr)\n"


def test_without_typers_private_converter_commands_run_through_typers_own(
    repo: Path, cli: Cli
) -> None:
    cli.ok("project", "add", cwd=repo)
    for args in (
        ("task", "log", "nope", "--json"),
        ("task", "peek", "nope", "--lines", "7"),
        ("task", "peek", "nope", "--lines", "x"),
    ):
        said = {}
        for name, probe in (("plain", RUN), ("typer", NO_PRIVATE_API + RUN)):
            out = subprocess.run(
                [sys.executable, "-c", probe, *args], cwd=repo, capture_output=True, text=True
            )
            *lines, loaded = out.stderr.splitlines()
            said[name] = (out.stdout, lines, loaded)
        assert said["typer"][2] == "True", args  # typer's own converters ran
        assert said["typer"][:2] == said["plain"][:2], args
        assert said["plain"][1], args  # each says what is wrong


class _Reshaped:
    """A type descriptor as a later typer might shape it (no ``file_annotation``)."""

    def __init__(self, annotation: object) -> None:
        self.annotation = annotation


def test_parameters_shaped_otherwise_keep_typers_converter() -> None:
    command = typer.main.get_command(build_app())
    params = [param for _, group in _typer_params(command) for param in group]
    descriptors = [param.type_descriptor for param in params]
    try:
        for param, descriptor in zip(params, descriptors, strict=True):
            param.type_descriptor = _Reshaped(descriptor.annotation)
        coercion.plain(command)
        assert params and not any(isinstance(p._runtime_param, coercion._Plain) for p in params)
    finally:
        for param, descriptor in zip(params, descriptors, strict=True):
            param.type_descriptor = descriptor
