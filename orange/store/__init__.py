"""The task store: TASK.md files on ``refs/orange/tasks``, one commit per event.

Pure git (pygit2): `store` (`TaskStore`: compare-and-swap writes under a lock, reads of
one task through a `Snapshot`), `taskfile` (TASK.md text, bounded parsing; `flat` reads
the frontmatter Orange writes, `yamlfront` is PyYAML for any other) and `task` (the
`Task` value), `layout` (paths and ids), `tree` (TreeBuilder writes), `events` (commit
messages and trailers), `listing` (every task at once, through `cache`, the SQLite
listing cache, a row per task folder, in its `cachefile`), `history` (a task's commits,
from its SQLite index), `snapshots` (refs of saved work), `branches` (branch-name
rules), `files` (atomic writes of small local files), `repo` and `lock`. A single task's
read or write never loads `listing`, `cache` or `history` (nor sqlite3), and flat
frontmatter never loads `yamlfront` (nor PyYAML): the call agents make most stays lean
(`tests/cli/test_startup.py`). It imports nothing of Orange but `orange.errors` and
names no status: what a status means is the workflow's business, one layer up.
"""
