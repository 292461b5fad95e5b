"""Agents run non-interactively: real subprocesses (small Python scripts standing in for
the coding-agent CLIs), their envelopes unwrapped from recorded sample outputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from orange.errors import InvalidInput
from orange.home import orange_home
from orange.run.contracts import ContractError, Review, parse_review, parse_tests
from orange.run.headless import (
    BUILTIN_EXEC,
    AgentFailed,
    AgentTimeout,
    ExecHarness,
    Invocation,
    alive,
    ask,
    exec_harness,
    extract_answer,
    invoke,
    stop_group,
)
from orange.run.spending import usage_of
from tests.helpers import retry_until

SAMPLES = Path(__file__).parents[1] / "fixtures" / "agent-output"
PROMPT = 'Review this:\n  say "hi"; $(rm -rf /) `id` {prompt} 🍊\n-- end'


def script(path: Path, body: str) -> Path:
    """An executable Python script at ``path`` (a fake agent CLI)."""
    path.write_text(f"#!{sys.executable}\nimport json, os, sys, time, subprocess\n{body}")
    path.chmod(0o755)
    return path


def recorder(tmp_path: Path, answers: list[str]) -> tuple[ExecHarness, Path]:
    """A fake agent that records each prompt it gets and prints the next answer."""
    record = tmp_path / "prompts.jsonl"
    fake = script(
        tmp_path / "fake-agent",
        f"answers = {answers!r}\n"
        f"record = {str(record)!r}\n"
        "n = sum(1 for _ in open(record)) if os.path.exists(record) else 0\n"
        "open(record, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "print(answers[min(n, len(answers) - 1)])\n",
    )
    return ExecHarness("fake", (str(fake), "{prompt}"), "plain"), record


def prompts(record: Path) -> list[list[str]]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    retry_until(condition, timeout, interval=0.02)


def test_the_prompt_is_one_argument_and_the_log_holds_prompt_then_output(
    tmp_path: Path,
) -> None:
    harness, record = recorder(tmp_path, ['{"approved": true, "feedback": ""}'])
    log = tmp_path / "logs" / "agent.log"
    run = invoke(harness, PROMPT, cwd=tmp_path, timeout=30, log=log, env={"EXTRA": "1"})
    assert prompts(record) == [[PROMPT]]
    assert run.exit_code == 0
    assert run.answer == '{"approved": true, "feedback": ""}\n'
    text = log.read_text()
    assert text.index(PROMPT) < text.index('{"approved": true')
    assert "=== exit code 0" in text


def test_a_run_log_is_readable_by_its_user_only(tmp_path: Path) -> None:
    """As the crash logs: 0600 in a folder made 0700 (the prompt and output are in it),
    a log left 0644 by an older Orange included."""
    harness, _ = recorder(tmp_path, ['{"approved": true, "feedback": ""}'] * 2)
    log = tmp_path / "logs" / "runs" / "r1" / "agent.log"
    umask = os.umask(0o022)  # the usual one: files 0644 unless made otherwise
    try:
        invoke(harness, "p", cwd=tmp_path, timeout=30, log=log)
    finally:
        os.umask(umask)
    assert (log.stat().st_mode & 0o777, log.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    older = tmp_path / "older.log"
    older.write_text("before\n")
    older.chmod(0o644)
    invoke(harness, "p", cwd=tmp_path, timeout=30, log=older)
    assert older.stat().st_mode & 0o777 == 0o600
    assert older.read_text().startswith("before\n")


def test_env_is_added_and_the_agent_runs_in_cwd(tmp_path: Path) -> None:
    fake = script(tmp_path / "env-agent", "print(os.environ['ORANGE_RUN'], os.getcwd())\n")
    work = tmp_path / "work"
    work.mkdir()
    harness = ExecHarness("env", (str(fake), "{prompt}"), "plain")
    run = invoke(
        harness, "x", cwd=work, timeout=30, log=tmp_path / "a.log", env={"ORANGE_RUN": "r7"}
    )
    assert run.answer.split() == ["r7", str(work)]


def test_output_reaches_the_log_while_the_agent_runs(tmp_path: Path) -> None:
    go = tmp_path / "go"
    fake = script(
        tmp_path / "slow-agent",
        "print('halfway there', flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        "print('done')\n",
    )
    log = tmp_path / "live.log"
    harness = ExecHarness("slow", (str(fake), "{prompt}"), "plain")
    result: list[str] = []
    worker = threading.Thread(
        target=lambda: result.append(invoke(harness, "p", cwd=tmp_path, timeout=30, log=log).answer)
    )
    worker.start()
    try:
        wait_for(lambda: log.exists() and "halfway there" in log.read_text())
        assert not result  # still running: the log was written as it came
    finally:
        go.touch()
        worker.join(30)
    assert result == ["halfway there\ndone\n"]


def test_a_timeout_stops_the_whole_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    fake = script(
        tmp_path / "hung-agent",
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}} {{os.getpgid(0)}}')\n"
        "print('thinking...', flush=True)\n"
        "time.sleep(300)\n",
    )
    started: list[int] = []
    harness = ExecHarness("hung", (str(fake), "{prompt}"), "plain")
    log = tmp_path / "hung.log"
    with pytest.raises(AgentTimeout) as caught:
        invoke(harness, "p", cwd=tmp_path, timeout=1.0, log=log, on_start=started.append)
    agent, grandchild, group = map(int, pids.read_text().split())
    assert started == [agent] and group == agent  # the agent leads its own group
    assert not alive(agent)
    assert not alive(grandchild)
    # Said in the committed RUN.md: no local path (DESIGN §8), the log is this host's.
    assert (
        str(caught.value)
        == "hung gave no answer within 1 s (its log is among this host's run logs)"
    )
    assert "thinking..." in log.read_text()
    assert "no answer within 1 s" in log.read_text()


def test_what_an_agent_leaves_running_is_stopped_when_it_exits(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    fake = script(
        tmp_path / "leaky-agent",
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pids)!r}, 'w').write(str(child.pid))\n"
        "print('{}')\n",
    )
    harness = ExecHarness("leaky", (str(fake), "{prompt}"), "plain")
    log = tmp_path / "leaky.log"
    run = invoke(harness, "p", cwd=tmp_path, timeout=30, log=log)
    assert (run.answer, run.exit_code) == ("{}\n", 0)
    assert not alive(int(pids.read_text()))  # it held stdout open: it would block forever
    assert "what it left running was stopped" in log.read_text()


def test_stop_group_stops_an_agent_left_running_and_nothing_else(tmp_path: Path) -> None:
    agent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
            "time.sleep(300)",
        ],
        start_new_session=True,
    )
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        assert alive(agent.pid)
        assert not stop_group(bystander.pid)  # leads no group: not an agent of ours
        assert alive(bystander.pid)
        assert stop_group(agent.pid)
        agent.wait(10)
        assert not alive(agent.pid)
        assert not stop_group(agent.pid)
    finally:
        bystander.kill()
        bystander.wait()


def test_a_broken_answer_is_retried_once_with_the_error(tmp_path: Path) -> None:
    harness, record = recorder(tmp_path, ["I approve!", '{"approved": true, "feedback": "ok"}'])
    review = ask(
        harness, "Review it.", parse_review, cwd=tmp_path, timeout=30, log=tmp_path / "r.log"
    )
    assert review == Review(True, "ok")
    assert prompts(record) == [
        ["Review it."],
        [
            "Review it.\n\nYour previous answer could not be used: no JSON object found in the "
            "answer. Answer again with only the JSON object."
        ],
    ]
    assert (tmp_path / "r.log").read_text().count("--- prompt ---") == 2


def test_a_second_broken_answer_is_a_contract_error(tmp_path: Path) -> None:
    harness, record = recorder(tmp_path, ['{"passed": "yes", "output": ""}'])
    with pytest.raises(ContractError, match='"passed" must be true or false'):
        ask(harness, "Test it.", parse_tests, cwd=tmp_path, timeout=30, log=tmp_path / "t.log")
    assert len(prompts(record)) == 2


def test_a_failing_exit_is_not_retried(tmp_path: Path) -> None:
    fake = script(tmp_path / "crash", "print('boom', file=sys.stderr)\nsys.exit(3)\n")
    harness = ExecHarness("crash", (str(fake), "{prompt}"), "plain")
    log = tmp_path / "c.log"
    with pytest.raises(AgentFailed) as caught:
        ask(harness, "x", parse_review, cwd=tmp_path, timeout=30, log=log)
    assert str(caught.value) == "crash exited with code 3 (its log is among this host's run logs)"
    assert log.read_text().count("--- prompt ---") == 1
    assert "boom" in log.read_text()  # stderr goes to the log too


def test_an_agent_that_cannot_start_fails_in_one_line(tmp_path: Path) -> None:
    harness = ExecHarness("ghost", (str(tmp_path / "no-such-agent"), "{prompt}"), "plain")
    with pytest.raises(AgentFailed, match=r"^cannot start ghost: No such file") as caught:
        invoke(harness, "x", cwd=tmp_path, timeout=30, log=tmp_path / "g.log")
    assert str(tmp_path) not in str(caught.value)  # it goes into RUN.md: no local path


def test_a_prompt_too_long_for_one_argument_says_so(tmp_path: Path) -> None:
    harness, record = recorder(tmp_path, ["{}"])
    with pytest.raises(AgentFailed, match=r"Argument list too long \(an argument of 300000 bytes"):
        invoke(harness, "x" * 300_000, cwd=tmp_path, timeout=30, log=tmp_path / "big.log")
    assert not record.exists()


# -- envelopes ----------------------------------------------------------------------

CLAUDE = BUILTIN_EXEC["claude"]
CODEX = BUILTIN_EXEC["codex"]


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_claude_json_envelope_gives_its_result() -> None:
    answer = extract_answer(CLAUDE, sample("claude-result.json"))
    assert answer.startswith("Reviewed the diff.")
    assert parse_review(answer) == Review(True, "Looks good.")
    stream_tail = '{"type":"system","subtype":"init"}\n' + sample("claude-result.json")
    assert extract_answer(CLAUDE, stream_tail) == answer


def test_claude_reporting_an_error_is_an_agent_failure() -> None:
    with pytest.raises(AgentFailed, match=r"^claude reported an error: Reached the maximum"):
        extract_answer(CLAUDE, sample("claude-error.json"))


@pytest.mark.parametrize(
    "stdout",
    ["", "plain text", '{"type": "result"}', '{"result": 3}'],
    ids=["empty", "text", "no-result", "result-not-text"],
)
def test_a_broken_claude_envelope_is_a_contract_error(stdout: str) -> None:
    with pytest.raises(ContractError, match='no JSON envelope with a "result" text'):
        extract_answer(CLAUDE, stdout)


def test_codex_events_give_the_last_agent_message() -> None:
    answer = extract_answer(CODEX, sample("codex-exec.jsonl"))
    assert parse_tests(answer) == (False, "1 failed, 4 passed")
    first = extract_answer(CODEX, sample("codex-exec-first.jsonl"))
    assert json.loads(first)["status"] == "ready"


def test_codex_failures_and_silence() -> None:
    with pytest.raises(AgentFailed, match=r"^codex reported an error: You.ve hit your usage limit"):
        extract_answer(CODEX, sample("codex-failed.jsonl"))
    with pytest.raises(ContractError, match="codex printed no agent message"):
        extract_answer(CODEX, '{"type":"turn.started"}\nnot json\n')


def test_the_claude_harness_end_to_end_with_a_fake_claude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    argv_file = tmp_path / "argv.json"
    script(
        bin_dir / "claude",
        f"open({str(argv_file)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
        f"sys.stdout.write(open({str(SAMPLES / 'claude-result.json')!r}).read())\n",
    )
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    review = ask(
        exec_harness("claude"),
        PROMPT,
        parse_review,
        cwd=tmp_path,
        timeout=30,
        log=tmp_path / "c.log",
    )
    assert review == Review(True, "Looks good.")
    assert json.loads(argv_file.read_text()) == [
        "-p",
        "--output-format",
        "json",
        "--dangerously-skip-permissions",
        "--",
        PROMPT,
    ]


# -- which harness ------------------------------------------------------------------


def write_config(text: str) -> None:
    path = orange_home() / "config.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_builtins_use_their_documented_one_turn_modes() -> None:
    assert exec_harness("claude").envelope == "claude-json"
    assert exec_harness("codex").argv[:3] == ("codex", "exec", "--json")
    assert exec_harness("opencode") == ExecHarness(
        "opencode", ("opencode", "run", "{prompt}"), "plain"
    )
    assert exec_harness("pi") == ExecHarness("pi", ("pi", "-p", "{prompt}"), "plain")


def test_a_user_harness_runs_its_exec_command() -> None:
    write_config(
        "harnesses:\n  mine:\n    command: [my-agent, '{prompt}']\n"
        "    exec_command: [my-agent, --once, '{prompt}']\n"
    )
    assert exec_harness("mine") == ExecHarness("mine", ("my-agent", "--once", "{prompt}"), "plain")


def test_a_user_harness_without_exec_command_is_refused_with_a_hint() -> None:
    write_config("harnesses:\n  mine:\n    command: [my-agent, '{prompt}']\n")
    with pytest.raises(InvalidInput, match="has no exec_command") as caught:
        exec_harness("mine")
    assert "exec_command: [" in str(caught.value)


def test_exec_command_must_say_where_the_prompt_goes() -> None:
    write_config(
        "harnesses:\n  mine:\n    command: [my-agent, '{prompt}']\n    exec_command: [my-agent]\n"
    )
    with pytest.raises(InvalidInput, match=r'exec_command: must contain "\{prompt\}"'):
        exec_harness("mine")


def test_the_demo_stand_in_is_refused_in_one_line() -> None:
    with pytest.raises(InvalidInput, match='harness "demo" cannot run non-interactively') as caught:
        exec_harness("demo")
    assert "claude, codex, opencode, pi" in str(caught.value)


def test_an_unknown_harness_names_the_known_ones() -> None:
    with pytest.raises(InvalidInput, match='unknown harness "nope"') as caught:
        exec_harness("nope")
    assert "claude, pi, opencode, codex" in str(caught.value)


def test_an_agent_that_times_out_has_what_it_spent_read(tmp_path: Path) -> None:
    # A codex run that finished a turn, then hung: the turn it reported is its usage.
    turn = {"type": "turn.completed", "usage": {"input_tokens": 2100, "output_tokens": 80}}
    fake = script(
        tmp_path / "hung-codex",
        f"print(json.dumps({turn!r}), flush=True)\ntime.sleep(300)\n",
    )
    harness = ExecHarness("codex", (str(fake), "{prompt}"), "codex-exec")
    spent: list[Invocation] = []
    with pytest.raises(AgentTimeout):
        ask(harness, "x", parse_review, cwd=tmp_path, timeout=1.0, log=tmp_path / "h.log",
            spent=spent.append)  # fmt: skip
    assert len(spent) == 1 and spent[0].started is not None
    used = usage_of(harness, spent[0], tmp_path)
    assert (used.tokens_in, used.tokens_out) == (2100, 80)
