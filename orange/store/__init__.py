"""The task store: TASK.md files on ``refs/orange/tasks``, one commit per event.

Pure git (pygit2): compare-and-swap writes under a lock (`store.TaskStore.commit`), a
blob-keyed listing cache, the history index, snapshots of unsaved work.  It imports
nothing of Orange but `orange.errors` and names no status: what a status means is the
workflow's business, one layer up.
"""
