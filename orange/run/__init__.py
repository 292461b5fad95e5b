"""`orange run`: one request taken through clarification, a plan of subtasks in parallel
groups, waves of coding agents, test and review loops, a merge and a PR (seed 004),
every step a commit on the tasks ref so a run resumes after a crash.

A layer between `orange.ops` and the drivers: it may use compose, ops, hooks, engine
and store; the core never imports it.  Its pieces:

- `contracts`: the JSON answers an architect or SWE agent must give (clarify, plan,
  tests, review), parsed into frozen values; pure, no I/O.
- `headless`: a harness run non-interactively (``exec_command``), its output logged as it
  comes, its answer taken out of the harness's envelope, with a timeout and one retry.
- `control`: what the `orange run` commands do (start, resume, cancel, describe).
- `ask`: the clarification interface (the terminal, or an answers file for scripts).
- `progress`: progress for a person (a live view) or a pipe (one line per event).
"""
