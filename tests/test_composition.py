"""The runtime's adapters are built by the runtime itself or by the composition root
(`orange.compose`), which hands them to drivers and hook actions: no other module
constructs a tmux adapter or runs git past the one git helper (STYLE §1, §4).

Read from the code (every call in the module, function bodies included), so a driver
that builds its own `Tmux()` fails here before it ever runs.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "orange"
# Where adapters may be built: the runtime's own modules and the composition root.
BUILDERS = ("orange/runtime/", "orange/compose.py")
# Programs on the agent's side, not Orange driving git: the scripted stand-in for an
# agent program runs git as an agent in its worktree does, and the agents' stop hook
# (run by the agent program, importing nothing of Orange's) asks git where the
# worktree's git directory is.
OUTSIDE_PROGRAMS = ("orange/demo_agent.py", "orange/agent_hooks/stop.py")
ADAPTERS = {
    "Tmux",
    "TmuxClient",
    "Server",  # libtmux's, under the adapter
    "GitHub",
    "Notices",
    "LocalCopies",  # the agents' TASK.md working copies
    "RuntimeCopies",
    "TmuxProbe",  # is an agent alive
    "LocalUsage",  # what the agent programs recorded
}
SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output"}


class Site(NamedTuple):
    path: str
    line: int
    what: str


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _runs_git(call: ast.Call) -> bool:
    """``subprocess.run(["git", ...])`` and its kin, with the argv written out."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in SUBPROCESS and call.args):
        return False
    argv = call.args[0]
    return (
        isinstance(argv, ast.List | ast.Tuple)
        and bool(argv.elts)
        and isinstance(argv.elts[0], ast.Constant)
        and argv.elts[0].value == "git"
    )


def sites(source: str, path: str) -> list[Site]:
    """Where the module at ``path`` builds an adapter or runs git itself."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name in ADAPTERS:
            found.append(Site(path, node.lineno, f"{name}()"))
        elif _runs_git(node):
            found.append(Site(path, node.lineno, "git run past orange.runtime.git"))
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for file in sorted(PACKAGE.rglob("*.py")):
        path = file.relative_to(REPO_ROOT).as_posix()
        if not path.startswith(BUILDERS) and path not in OUTSIDE_PROGRAMS:
            out.append((path, file))
    return out


def test_no_module_outside_the_runtime_and_the_composition_root_builds_an_adapter() -> None:
    found = [site for path, file in _modules() for site in sites(file.read_text(), path)]
    assert found == []


class Case(NamedTuple):
    source: str
    what: str


@pytest.mark.parametrize(
    "case",
    [
        Case("from orange.runtime.tmux import Tmux\nTmux().panes()\n", "Tmux()"),
        Case(
            "def f():\n    from orange.runtime import tmuxclient\n    tmuxclient.TmuxClient()\n",
            "TmuxClient()",
        ),
        Case(
            "import subprocess\nsubprocess.run(['git', 'status'])\n",
            "git run past orange.runtime.git",
        ),
        Case(
            "from orange.runtime.github import GitHub\nGitHub().pr_state(p, u)\n",
            "GitHub()",
        ),
        Case(
            "from orange.runtime.adapters import LocalCopies\ncopies = LocalCopies()\n",
            "LocalCopies()",
        ),
    ],
    ids=["module-level-tmux", "client-in-a-function", "subprocess-git", "github", "copies"],
)
def test_a_planted_construction_is_found(case: Case) -> None:
    assert [site.what for site in sites(case.source, "orange/cli/x.py")] == [case.what]


def test_a_handed_adapter_is_not_a_construction() -> None:
    source = "from orange import compose\ntmux = compose.tmux()\ntmux.panes()\n"
    source += "compose.gh().create_pr(project, task)\ncompose.copies().after_write(task)\n"
    assert sites(source, "orange/cli/x.py") == []
