"""The engine: workflows, and every decision over them.

- reading workflows: `loader` (with `loadbase`, `roles`, `exitparse`, `hooklist`,
  `yamldoc`), `workflow` (the frozen model), `actionspec` (the one table of hook-action
  names and parameters), `catalog` (shipped and user files), `definitions` (the
  definitions committed in the ref, parsed once per host), `mermaid` (a diagram);
- deciding: `decide` (which move, its gate, the task after it; pure), `gates`, `when`,
  `exitrules` (what to do about a dead agent), `replay` (checking any history against
  what Orange writes, `steps` holding the rules for one task's change), `trust`
  (trusted definitions, by content), `forgery` (replaying new commits once on this host,
  restoring forged engine fields);
- running: `engine` (`Engine`: write, then the hook actions' effects), `monitoring`
  (dead agents, respawns), `external` (moves committed with plain git), `requests`
  (moves asked for by intent: cancel, finish, request changes, complete, ask for help),
  `tasks`, `edits` and `sections` (create and delete; fields and body; one section),
  `prompts` (an agent's prompt from the workflow's template), `records`, `fields`;
- `actions`: the hook-action protocol and registry (the engine is handed its registry;
  it never imports `orange.hooks`).
"""
