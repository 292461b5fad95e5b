"""Hook actions: what a workflow's ``hooks:`` lists name (DESIGN §4), one module per
concept, every action in one table (`registry`, built by the composition root with the
runtime's adapters).

`workspaces` (binding and releasing a pool worktree), `agents` (spawn_agent,
spawn_reviewer, notify_worker), `sessions` (kill_session, kill_reviewer), `queue`
(spawn_next), `remotes` (push_branch, delete_remote_branch, create_pr), `notify`,
`command` (run_command).  What they drive, tmux, git, the worktree pool, harnesses,
lives in `orange.runtime`.
"""
