"""Shell completion, typer's own: a script to install and the answers a shell asks for."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

from tests.conftest import orange_bin


def _complete(words: str, tmp_path: Path) -> list[str]:
    """What bash completion offers for ``words`` (the last one being completed), asked
    from a terminal as a shell asks: stdin is a tty there."""
    env = {
        **os.environ,
        "_ORANGE_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - 1),
    }
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [orange_bin()],
            stdin=follower,
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_a_shell_gets_commands_subcommands_and_options(tmp_path: Path) -> None:
    assert _complete("orange ta", tmp_path) == ["task", "tasks"]
    assert _complete("orange task upd", tmp_path) == ["update"]
    assert "--summary" in _complete("orange task update --su", tmp_path)


def test_the_completion_script_is_shown_for_a_shell(tmp_path: Path) -> None:
    # typer names the shell it runs in (its parent): a person's bash, as under `make
    # test`'s own sh it would be sh.  `; exit` keeps bash from exec'ing orange in place.
    done = subprocess.run(
        ["bash", "-c", f'"{orange_bin()}" --show-completion; exit $?'],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "_ORANGE_COMPLETE=complete_bash" in done.stdout
