"""The shipped-definitions list: every workflow in the package is in it."""

from __future__ import annotations

from importlib.resources import files

from orange.engine.catalog import SHIPPED_PACKAGE
from orange.engine.trust import SHIPPED_LIST, definition_hash, shipped_hashes


def test_every_shipped_workflow_is_in_the_shipped_list() -> None:
    root = files(SHIPPED_PACKAGE)
    missing = [
        f"{definition_hash(entry.read_text(encoding='utf-8'))} {entry.name.removesuffix('.yml')}"
        for entry in root.iterdir()
        if entry.name.endswith(".yml")
        and definition_hash(entry.read_text(encoding="utf-8")) not in shipped_hashes()
    ]
    assert not missing, f"append to workflows/{SHIPPED_LIST} (never remove a line):\n" + "\n".join(
        missing
    )


def test_the_list_holds_only_hashes() -> None:
    listing = files(SHIPPED_PACKAGE).joinpath(SHIPPED_LIST).read_text(encoding="utf-8")
    for line in listing.splitlines():
        if line and not line.startswith("#"):
            digest, name = line.split()
            assert len(digest) == 64 and int(digest, 16) >= 0 and name
