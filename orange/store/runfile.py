"""A run's record, ``runs/<id>/RUN.md`` on the tasks ref (`orange run`, seed 004).

The same format as a TASK.md, and the same bounded parsing (`taskfile.split`): a
frontmatter of scalars plus the list of subtasks with their state, and a body whose
sections hold the request, the clarification log and the plan (the last two as JSON in
a fenced block, so long texts stay out of the frontmatter's 64 KiB).

Like everything on the ref this is shared data (DESIGN §8): it never names a command,
a path or a process.  What a run does on this machine comes from this host's config
and its local files (`orange.run.local`); the record only says how far a run got.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pygit2

from orange.errors import BrokenTaskFile
from orange.store import bounded, taskfile
from orange.store.tree import read_tree

RUNS_DIR = "runs"
ENDED = ("completed", "cancelled")  # a run in one of these never runs again
RUN_FILE = "RUN.md"
_ID = re.compile(r"[0-9a-z]{8}")
_SECTION = re.compile(r"^## (Request|Requirement|Clarification|Pending|Plan)[ \t]*$", re.MULTILINE)
_FENCED = re.compile(r"\A\s*```json[ \t]*\n(.*)\n```\s*\Z", re.DOTALL)

# Frontmatter keys in the order a new run writes them.
FIELDS = (
    "id",
    "project",
    "host",
    "status",
    "step",
    "branch",
    "base",
    "agents",
    "architect",
    "swe",
    "policy",
    "max_iterations",
    "max_clarification_rounds",
    "skip_clarification",
    "no_pr",
    "budget_usd",
    "group",
    "answers_used",
    "pr_url",
    "error",
    "created_at",
    "updated_at",
    "subtasks",
)


def valid_run_id(run_id: str) -> bool:
    return bool(_ID.fullmatch(run_id))


def run_path(run_id: str) -> str:
    return f"{RUNS_DIR}/{run_id}/{RUN_FILE}"


class RunFile:
    """One RUN.md: ``fields`` (frontmatter) and ``sections`` (title -> text)."""

    __slots__ = ("fields", "sections")

    def __init__(self, fields: dict[str, Any], sections: dict[str, str]) -> None:
        self.fields = fields
        self.sections = sections

    @property
    def id(self) -> str:
        return str(self.fields.get("id", ""))

    def subtasks(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self.fields.get("subtasks") or ()]

    def json_section(self, title: str) -> Any:
        text = self.sections.get(title, "")
        if not text.strip():
            return None
        match = _FENCED.match(text)
        if match is None:
            raise BrokenTaskFile(f"RUN.md: ## {title} holds no ```json block")
        try:
            return bounded.load_json(match.group(1))
        except ValueError as exc:
            raise BrokenTaskFile(f"RUN.md: ## {title} is not valid JSON: {exc}") from None

    def text(self, title: str) -> str:
        """A section holding one JSON string (the request, the requirement): user and
        agent text kept as JSON, so no line of it can start a section of its own."""
        value = self.json_section(title)
        return value if isinstance(value, str) else ""

    def set_json(self, title: str, value: object) -> None:
        self.sections[title] = (
            "```json\n" + json.dumps(value, indent=1, ensure_ascii=False) + "\n```"
        )

    def render(self) -> str:
        ordered = {key: self.fields[key] for key in FIELDS if key in self.fields}
        ordered.update({k: v for k, v in self.fields.items() if k not in ordered})
        body = "".join(
            f"\n## {title}\n\n{text.strip()}\n" for title, text in self.sections.items() if text
        )
        return taskfile.join(ordered, body)


def parse(text: str, where: str) -> RunFile:
    """A RUN.md's text, checked: bounded (as a TASK.md), an id of the run's form, a
    list of subtask mappings with string ids.  Raises BrokenTaskFile."""
    fields, body = taskfile.split(text, where=where)
    run_id = fields.get("id")
    if not isinstance(run_id, str) or not valid_run_id(run_id):
        raise BrokenTaskFile(f"{where}: no valid run id")
    subtasks = fields.get("subtasks") or []
    if not isinstance(subtasks, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) for s in subtasks
    ):
        raise BrokenTaskFile(f"{where}: subtasks must be a list of mappings with an id")
    return RunFile(fields, _split_sections(body))


def _split_sections(body: str) -> dict[str, str]:
    sections: dict[str, str] = {}
    marks = list(_SECTION.finditer(body))
    for n, mark in enumerate(marks):
        end = marks[n + 1].start() if n + 1 < len(marks) else len(body)
        sections[mark.group(1)] = body[mark.end() : end].strip("\n")
    return sections


def check_path(path: str, data: bytes) -> str | None:
    """Why ``data`` at ``path`` is no run record (None: it is one): the checker's rule
    for anything under ``runs/``."""
    parts = path.split("/")
    if len(parts) != 3 or parts[2] != RUN_FILE or not valid_run_id(parts[1]):
        return f"{path}: only runs/<id>/RUN.md belongs under runs/"
    try:
        load(data, parts[1])
    except BrokenTaskFile as exc:
        return exc.message
    return None


def load(data: bytes, run_id: str) -> RunFile:
    """The record of run ``run_id`` from its file's bytes: UTF-8, parsed (`parse`), and
    its id the one of its folder.  Raises BrokenTaskFile."""
    path = run_path(run_id)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BrokenTaskFile(f"{path}: not UTF-8 text") from None
    run = parse(text, path)
    if run.id != run_id:
        raise BrokenTaskFile(f"{path}: id {run.id!r} does not match its directory")
    return run


def run_ids(tree: pygit2.Tree | None) -> Iterator[str]:
    """The names of the run folders of a tasks tree."""
    runs = read_tree(tree, RUNS_DIR)
    for entry in runs or ():
        if isinstance(entry, pygit2.Tree) and valid_run_id(str(entry.name)):
            yield str(entry.name)


def new_fields(values: Mapping[str, Any]) -> dict[str, Any]:
    return {key: values.get(key) for key in FIELDS}
