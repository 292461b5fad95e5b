"""Hook actions: what a workflow's ``hooks:`` lists name (DESIGN §4).

`actions` (worktrees, agents, reviewers, notify_worker, spawn_next, remotes),
`pool_actions` (binding and releasing a pool worktree), `notify`, `command`
(run_command), and `registry` (every action by name, for the composition root).  What
they drive, tmux, git, the worktree pool, harnesses, lives in `orange.runtime`.
"""
