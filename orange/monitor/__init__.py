"""The monitor: a driver that notices dead agents and applies the workflow's exit rules.

`loop` holds one pass and the loop (one per host).  Starting, stopping and waking it
is `orange.runtime.watcher`'s, so the layers below never import this package.
"""
