"""Orange: many coding agents on one project, every transition gated and recorded in git.

The packages, from the bottom up (DESIGN §1; import-linter checks the order in
``make check``):

- `orange.errors`, `orange.home`: the exception root; where Orange keeps its files.
- `orange.store`: the only code that reads or writes ``refs/orange/*``; knows no status.
- `orange.projects`: the registered repositories (``projects.json``).
- `orange.engine`: workflows and the decisions over them; the only code that changes a
  task's status.  It calls hook actions through the registry it is handed.
- `orange.runtime`: the adapters every driver and action uses (git, tmux, the worktree
  pool and places, bindings, harnesses, gh, notices, snapshots, the monitor's process).
- `orange.hooks`: the hook actions workflows name, one module per concept, in one
  table (`orange.hooks.registry`) built with the runtime's adapters.
- `orange.ops`: what a person asks for that is not a hook action (create and start a
  task, merge, rename, workspace gc, installing the agents' skills).
- `orange.compose`: the composition root; every driver gets its engine and the
  runtime's adapters (one tmux and one GitHub adapter per process) there.
- drivers: `orange.monitor` (the loop that reacts to dead agents), `orange.githooks`
  (what git's hooks do), `orange.cli` (the ``orange`` command), `orange.demo`.
"""
