"""A scripted model on 127.0.0.1 for the real agent programs (test code).

It speaks the three wire formats the programs call, each streamed as server-sent events:
Anthropic Messages (`POST /v1/messages`, Claude Code), OpenAI Responses
(`POST /v1/responses`, codex) and OpenAI Chat Completions (`POST /v1/chat/completions`,
opencode and pi).  Every request is read into one neutral conversation (user texts, the
shell commands the model ran, their results) and handed to `Script.decide`, which says
what the model does next: run one shell command through the program's own shell tool,
or answer with text and end its turn.  The script keys on the prompt Orange sent (a
worker's "# Task:", a reviewer's "# Review:", the notice "Review round N failed", ...),
so one server serves every agent of a test at once; it keeps no state per agent.

Every response reports token usage (input, output and cache numbers, never zero), so
the programs' session files carry usage as a real model's would.  Every request is kept
in `ModelServer.requests` (path, and the decision taken) for a failing test to print.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "scripted-model"
USAGE = {"input": 1200, "output": 80, "cache_read": 900, "cache_write": 300}
# The names the four programs give their shell tool (logged from each program's requests).
SHELL_TOOLS = ("Bash", "bash", "shell", "shell_command", "exec_command", "local_shell")


@dataclass(frozen=True)
class Turn:
    kind: str  # "user", "call" (a command the model ran), "result", "assistant"
    text: str


@dataclass(frozen=True)
class Reply:
    command: str | None = None  # run this through the shell tool ...
    text: str = ""  # ... or answer with this text and end the turn
    side: bool = False  # a side request (a title, a summary), not an agent's turn


def append_section(heading: str, content: str) -> str:
    """A shell command appending a section to the task's working copy (the last section
    of a heading is the current one, so a later round appends again)."""
    return f"cat >> TASK.md <<'ORANGE_EOF'\n\n{heading}\n{content}\nORANGE_EOF"


@dataclass
class Script:
    """What the model does, by the prompt it is answering.

    ``verdicts[branch]`` lists the reviewer's verdict per review round of that task
    (default PASS); ``nested_reviews`` the answers of a nested review session, in turn;
    a reviewer of a branch in ``hold_reviews`` answers and does nothing, and so does
    the worker of a branch in ``questions`` (as one that asked the user something);
    ``answers[text]`` is the command the model runs when a person types ``text`` (the
    agent goes on working on the answer).
    """

    verdicts: dict[str, list[str]] = field(default_factory=dict)
    nested_reviews: list[str] = field(default_factory=list)
    hold_reviews: set[str] = field(default_factory=set)  # branches whose reviewer idles
    questions: set[str] = field(default_factory=set)  # branches whose worker asks and waits
    answers: dict[str, str] = field(default_factory=dict)  # a person's reply -> command
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self, turns: list[Turn], has_shell: bool) -> Reply:
        """The next step: the instruction is the newest user text we know, the step the
        number of commands run since it."""
        for at in range(len(turns) - 1, -1, -1):
            if turns[at].kind != "user":
                continue
            steps = self.steps(turns[at].text.lstrip('"'))  # `opencode run` quotes it
            if steps is None:
                continue
            done = sum(1 for turn in turns[at + 1 :] if turn.kind == "call")
            if done < len(steps) and has_shell:
                return Reply(command=steps[done])
            return Reply(text=self.last_words(turns[at].text))
        return Reply(text="OK.", side=True)  # a side request (title, summary): answer, end

    def last_words(self, prompt: str) -> str:
        if prompt.lstrip('"').startswith("Review the changes"):
            return self.nested_verdict()
        return "Done."

    def nested_verdict(self) -> str:
        with self._lock:
            return self.nested_reviews.pop(0) if self.nested_reviews else "PASSED"

    def steps(self, prompt: str) -> list[str] | None:
        """The commands answering ``prompt``, or None if it is no prompt of Orange's."""
        if prompt in self.answers:
            return [self.answers[prompt]]
        o = _orange(prompt)
        branch = _field(prompt, "Branch")
        if prompt.startswith("# Task:") and "Task id:" in prompt:  # self-review worker
            program = re.search(r"program you run as \((\w+)\)", prompt)
            return self.self_review(_field(prompt, "Task id"), program[1] if program else "")
        if prompt.startswith("# Task:") and branch in self.questions:
            return []  # answers in words (a question to the user) and waits
        if prompt.startswith("# Task:") or _resuming(prompt, "planning"):
            return [plan(o), implement(o, fixing=False)]
        if _resuming(prompt, "working"):
            return [implement(o, fixing=False)]
        if re.match(r"Review round \d+ failed", prompt) or prompt.startswith("A human"):
            return [implement(o, fixing=True)]
        if prompt.startswith("# Review:") and branch in self.hold_reviews:
            return []
        if prompt.startswith("# Review:"):
            round_ = int(_field(prompt, "Review round").split()[0])
            wanted = self.verdicts.get(branch, [])
            verdict = wanted[round_ - 1] if round_ <= len(wanted) else "PASS"
            move = "reviewing" if verdict == "PASS" else "working" if round_ < 2 else "stuck"
            feedback = "Looks good." if verdict == "PASS" else "feature.txt needs a test."
            return [
                append_section("## Review", f"Verdict: {verdict}\n\n{feedback}")
                + f"\n{o} task update --status {move}"
            ]
        return None

    def self_review(self, task_id: str, program: str) -> list[str]:
        """Work, a nested review by the agent's own program (the prompt names it), the
        outcome."""
        outcome = json.dumps({"id": task_id, "outcome": "passed"})
        review = ONE_SHOT.get(program, ONE_SHOT["claude"])
        return [
            "echo 'feature' >> feature.txt && git add feature.txt && git commit -q -m Feature",
            f"{review} 'Review the changes in this branch. Respond with PASSED or FAILED.'",
            f"echo '{outcome}' > .orange-task",
        ]


# Each program's one-shot session, as the self-review prompt names it.
ONE_SHOT = {"claude": "claude -p", "codex": "codex exec", "opencode": "opencode run", "pi": "pi -p"}


def plan(orange: str) -> str:
    return (
        append_section("## Plan", "APPROACH: one small file\nTOUCHING: feature.txt")
        + f"\n{orange} task update --status working"
    )


def implement(orange: str, *, fixing: bool) -> str:
    """Commit to feature.txt (a line naming the task the shell runs for), hand off."""
    what, message = ("fix", "Fix review findings") if fixing else ("feature", "Add feature")
    return (
        f'echo "{what} by $ORANGE_TASK_ID" >> feature.txt && git add feature.txt'
        f" && git commit -q -m '{message}'\n"
        + append_section("## Handoff", f"DONE: the {what}\nUNCERTAIN: nothing")
        + f"\n{orange} task update --status agent-review"
    )


def _orange(prompt: str) -> str:
    """Orange as the prompt spells it (a bare `orange`, or its absolute path)."""
    found = re.search(r"(\S*orange) task update", prompt)
    return found[1] if found else "orange"


def _field(prompt: str, name: str) -> str:
    found = re.search(rf"^{re.escape(name)}: *(.*)$", prompt, re.MULTILINE)
    return found[1].strip() if found else ""


def _resuming(prompt: str, status: str) -> bool:
    return prompt.startswith("# Resuming:") and _field(prompt, "Status") == status


# -- the wire formats -------------------------------------------------------------------


def _text(content: Any) -> str:
    """The text of a message's content: a string, or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(part.get("text", part.get("content", "")))
            for part in content
            if isinstance(part, dict) and part.get("type") not in ("image",)
        )
    return ""


def _user_texts(content: Any) -> Iterator[str]:
    """Each text part of a user message by itself (Claude Code sends reminders as parts
    of their own beside the prompt)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in ("text", "input_text"):
                yield str(part.get("text", ""))


def _command_of(arguments: Any) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
    command = args.get("command", args.get("cmd", ""))
    return " ".join(command) if isinstance(command, list) else str(command)


def anthropic_turns(body: dict[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    for message in body.get("messages", []):
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for part in parts:
            kind = part.get("type")
            if kind == "text" and message["role"] == "user":
                turns.append(Turn("user", str(part.get("text", "")).strip()))
            elif kind == "text":
                turns.append(Turn("assistant", str(part.get("text", ""))))
            elif kind == "tool_use":
                turns.append(Turn("call", _command_of(part.get("input"))))
            elif kind == "tool_result":
                turns.append(Turn("result", _text(part.get("content"))))
    return turns


def responses_turns(body: dict[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    for item in body.get("input", []):
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") == "user":
            turns.extend(Turn("user", text.strip()) for text in _user_texts(item.get("content")))
        elif kind == "message" and item.get("role") == "assistant":
            turns.append(Turn("assistant", _text(item.get("content"))))
        elif kind in ("function_call", "local_shell_call", "custom_tool_call"):
            turns.append(Turn("call", _command_of(item.get("arguments", item.get("action")))))
        elif kind.endswith("_output"):
            turns.append(Turn("result", _text(item.get("output"))))
    return turns


def chat_turns(body: dict[str, Any]) -> list[Turn]:
    turns: list[Turn] = []
    for message in body.get("messages", []):
        role = message.get("role")
        if role == "user":
            turns.extend(Turn("user", t.strip()) for t in _user_texts(message.get("content")))
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                turns.append(Turn("call", _command_of(call["function"].get("arguments"))))
            if _text(message.get("content")):
                turns.append(Turn("assistant", _text(message.get("content"))))
        elif role == "tool":
            turns.append(Turn("result", _text(message.get("content"))))
    return turns


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name") or tool.get("type")
        names.append(str(name))
    return names


def _tool_schema(body: dict[str, Any], name: str) -> dict[str, Any]:
    for tool in body.get("tools") or []:
        function = tool.get("function") or tool
        if function.get("name") == name:
            return dict(function.get("parameters") or function.get("input_schema") or {})
    return {}


def _shell_arguments(body: dict[str, Any], name: str, command: str) -> dict[str, Any]:
    """The shell tool's arguments in the shape its schema asks for."""
    properties = _tool_schema(body, name).get("properties", {})
    if "cmd" in properties:
        return {"cmd": command}
    if properties.get("command", {}).get("type") == "array":
        return {"command": ["bash", "-lc", command]}
    arguments: dict[str, Any] = {"command": command}
    if "description" in properties:
        arguments["description"] = "Run a step of the task"
    return arguments


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> bytes:
    out = []
    for name, data in events:
        line = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {line}\n\n")
    return "".join(out).encode()


def anthropic_reply(body: dict[str, Any], reply: Reply, tool: str | None) -> bytes:
    usage = {
        "input_tokens": USAGE["input"],
        "output_tokens": 1,
        "cache_read_input_tokens": USAGE["cache_read"],
        "cache_creation_input_tokens": USAGE["cache_write"],
    }
    message = {
        "id": f"msg_{uuid.uuid4().hex[:20]}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", MODEL),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    if reply.command is not None and tool:
        block = {
            "type": "tool_use",
            "id": f"toolu_{uuid.uuid4().hex[:20]}",
            "name": tool,
            "input": {},
        }
        delta = {
            "type": "input_json_delta",
            "partial_json": json.dumps(_shell_arguments(body, tool, reply.command)),
        }
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": reply.text}
        stop = "end_turn"
    events += [
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": USAGE["output"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def responses_reply(body: dict[str, Any], reply: Reply, tool: str | None) -> bytes:
    rid = f"resp_{uuid.uuid4().hex[:20]}"
    if reply.command is not None and tool:
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:20]}",
            "call_id": f"call_{uuid.uuid4().hex[:20]}",
            "name": tool,
            "status": "completed",
            "arguments": json.dumps(_shell_arguments(body, tool, reply.command)),
        }
    else:
        item = {
            "type": "message",
            "id": f"msg_{uuid.uuid4().hex[:20]}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
    usage = {
        "input_tokens": USAGE["input"] + USAGE["cache_read"],
        "input_tokens_details": {"cached_tokens": USAGE["cache_read"]},
        "output_tokens": USAGE["output"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": USAGE["input"] + USAGE["cache_read"] + USAGE["output"],
    }
    response = {
        "id": rid,
        "object": "response",
        "model": body.get("model", MODEL),
        "status": "completed",
        "output": [item],
        "usage": usage,
    }
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        (
            "response.created",
            {
                "type": "response.created",
                "response": {**response, "status": "in_progress", "output": []},
            },
        ),
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
    ]
    if item["type"] == "message":
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": reply.text,
                },
            )
        )
    events += [
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ),
        ("response.completed", {"type": "response.completed", "response": response}),
    ]
    return _sse(events)


def chat_reply(body: dict[str, Any], reply: Reply, tool: str | None) -> bytes:
    cid = f"chatcmpl-{uuid.uuid4().hex[:20]}"
    base = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model", MODEL),
    }
    if reply.command is not None and tool:
        call = {
            "index": 0,
            "id": f"call_{uuid.uuid4().hex[:20]}",
            "type": "function",
            "function": {
                "name": tool,
                "arguments": json.dumps(_shell_arguments(body, tool, reply.command)),
            },
        }
        delta: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        delta = {"role": "assistant", "content": reply.text}
        finish = "stop"
    usage = {
        "prompt_tokens": USAGE["input"] + USAGE["cache_read"],
        "completion_tokens": USAGE["output"],
        "total_tokens": USAGE["input"] + USAGE["cache_read"] + USAGE["output"],
        "prompt_tokens_details": {"cached_tokens": USAGE["cache_read"]},
    }
    return _sse(
        [
            (None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            (None, {**base, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ]
    )


Reader = Callable[[dict[str, Any]], list[Turn]]
Writer = Callable[[dict[str, Any], Reply, str | None], bytes]
ROUTES: dict[str, tuple[Reader, Writer]] = {
    "/v1/messages": (anthropic_turns, anthropic_reply),
    "/v1/responses": (responses_turns, responses_reply),
    "/v1/chat/completions": (chat_turns, chat_reply),
}


@dataclass
class Logged:
    path: str
    body: dict[str, Any]
    reply: Reply | None
    turns: list[Turn] = field(default_factory=list)


class ModelServer:
    """The scripted model on 127.0.0.1, serving in a thread of the test's process."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[Logged] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.requests.append(Logged(self.path, {}, None))
                self._send(
                    200,
                    "application/json",
                    json.dumps(
                        {"object": "list", "data": [{"id": MODEL, "object": "model"}], "models": []}
                    ).encode(),
                )

            def do_HEAD(self) -> None:
                self._send(200, "text/plain", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                body = json.loads(raw or b"{}")
                path = self.path.split("?")[0]
                if path.endswith("/count_tokens"):
                    server.requests.append(Logged(path, body, None))
                    self._send(200, "application/json", b'{"input_tokens": 1200}')
                    return
                route = next((r for p, r in ROUTES.items() if path.endswith(p[3:])), None)
                if route is None:
                    server.requests.append(Logged(path, body, None))
                    self._send(404, "application/json", b'{"error": "not scripted"}')
                    return
                read, write = route
                names = _tool_names(body)
                tool = next((n for n in SHELL_TOOLS if n in names), None)
                turns = read(body)
                reply = server.script.decide(turns, has_shell=tool is not None)
                server.requests.append(Logged(path, body, reply, turns))
                if body.get("stream") is False:
                    self._send(400, "application/json", b'{"error": "stream only"}')
                    return
                self._send(200, "text/event-stream", write(body, reply, tool))

            def _send(self, code: int, kind: str, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def calls(self) -> list[str]:
        """The commands the model ran, in order (for a failing test to print)."""
        return [r.reply.command for r in self.requests if r.reply and r.reply.command]

    def turns_answered(self) -> int:
        """How many of an agent's turns the model answered (side requests aside): each
        reported `USAGE` once, which the agent program's session file keeps."""
        return sum(1 for r in list(self.requests) if r.reply is not None and not r.reply.side)

    def asked(self, start: str) -> int:
        """How many requests the model answered that hold a user text starting with
        ``start`` (an agent's prompt, or a nested session's)."""
        return sum(
            1
            for request in list(self.requests)
            if any(t.kind == "user" and t.text.lstrip('"').startswith(start) for t in request.turns)
        )
