"""The composition root (`orange.compose`) builds each of the runtime's adapters once
per process and hands it to drivers and hook actions: no other module constructs a tmux
adapter, a GitHub adapter, the notices, the working copies, the liveness probe or the
usage reader, not even another module of the runtime, and nothing runs git past the one
git helper (STYLE §1, §4).

Read from the code (every call in the module, function bodies included), so a driver
that builds its own `Tmux()` fails here before it ever runs.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

import pytest

from tests.conftest import REPO_ROOT

PACKAGE = REPO_ROOT / "orange"
COMPOSE = "orange/compose.py"
GIT_RUN = "git run past orange.runtime.git"
# The one module each may be built in: a process's adapters in the composition root;
# what sits under an adapter (libtmux's `Server`, the working copies of a task with a
# worktree here) in that adapter's module; a git subprocess in the git helper.
BUILT_IN = {
    "Tmux()": COMPOSE,
    "TmuxClient()": COMPOSE,
    "GitHub()": COMPOSE,
    "Notices()": COMPOSE,
    "LocalCopies()": COMPOSE,  # the agents' TASK.md working copies
    "TmuxProbe()": COMPOSE,  # is an agent alive
    "LocalUsage()": COMPOSE,  # what the agent programs recorded
    "Server()": "orange/runtime/tmux.py",
    "RuntimeCopies()": "orange/runtime/adapters.py",
    GIT_RUN: "orange/runtime/git.py",
}
ADAPTERS = {what.removesuffix("()") for what in BUILT_IN} - {GIT_RUN}
# Programs on the agent's side, not Orange driving git: the scripted stand-in for an
# agent program runs git as an agent in its worktree does, and the agents' stop hook
# (run by the agent program, importing nothing of Orange's) asks git where the
# worktree's git directory is.
OUTSIDE_PROGRAMS = ("orange/demo_agent.py", "orange/agent_hooks/stop.py")
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
            found.append(Site(path, node.lineno, GIT_RUN))
    return found


def misplaced(found: list[Site]) -> list[Site]:
    """The sites outside the one module their adapter may be built in."""
    return [
        site
        for site in found
        if BUILT_IN[site.what] != site.path
        and not (site.what == GIT_RUN and site.path in OUTSIDE_PROGRAMS)
    ]


def test_only_the_composition_root_builds_an_adapter() -> None:
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        path = file.relative_to(REPO_ROOT).as_posix()
        found += misplaced(sites(file.read_text(), path))
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
            GIT_RUN,
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
    assert [site.what for site in misplaced(sites(case.source, "orange/cli/x.py"))] == [case.what]


def test_a_runtime_module_building_its_own_tmux_is_found() -> None:
    source = "from orange.runtime.tmux import Tmux\n\ndef kill(s):\n    Tmux().kill_session(s)\n"
    assert misplaced(sites(source, "orange/runtime/unbind.py")) == [
        Site("orange/runtime/unbind.py", 4, "Tmux()")
    ]


def test_a_handed_adapter_is_not_a_construction() -> None:
    source = "from orange import compose\ntmux = compose.tmux()\ntmux.panes()\n"
    source += "compose.gh().create_pr(project, task)\ncompose.copies().after_write(task)\n"
    assert misplaced(sites(source, "orange/cli/x.py")) == []
