"""The dashboard (``orange dashboard``): a Textual driver over the composition root.

It reads through the store's cache, moves tasks only through the engine and the ops
the CLI uses, and derives its keys from each task's workflow (DESIGN §9).  No core
package imports it; the CLI loads it only for ``orange dashboard`` (or a bare
``orange`` on a terminal).
"""
