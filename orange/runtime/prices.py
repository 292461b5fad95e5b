"""The price table: dollars per million tokens per model (`prices.yml`, shipped with
Orange and dated), with the user's ``prices:`` of ``$ORANGE_HOME/config.yml`` over it."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

from orange.errors import InvalidInput, OrangeError
from orange.home import load_config, orange_home

MILLION = Decimal(1_000_000)
KINDS = ("input", "output", "cache_read", "cache_write")


class Price(NamedTuple):
    """Dollars per million tokens of each kind."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal

    def cost(self, tokens_in: int, tokens_out: int, cache_read: int, cache_write: int) -> Decimal:
        total = (
            tokens_in * self.input
            + tokens_out * self.output
            + cache_read * self.cache_read
            + cache_write * self.cache_write
        )
        return total / MILLION


class Table(NamedTuple):
    date: str
    models: Mapping[str, Price]

    def find(self, model: str) -> Price | None:
        """The price of ``model``: its exact name, else the longest name of the table
        that begins it (a dated release of a listed model), after a provider prefix
        (``anthropic/``) is dropped.  None: not priced."""
        name = model.rpartition("/")[2].strip().lower()
        if not name:
            return None
        if name in self.models:
            return self.models[name]
        starts = [key for key in self.models if name.startswith(key)]
        return self.models[max(starts, key=len)] if starts else None


def _price(where: str, entry: object) -> Price:
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"{where}: must be a mapping of {', '.join(KINDS)}")
    unknown = sorted(set(map(str, entry)) - set(KINDS))
    if unknown:
        raise InvalidInput(f"{where}: unknown key {unknown[0]} (known: {', '.join(KINDS)})")
    values = []
    for kind in KINDS:
        raw: Any = entry.get(kind, 0)
        try:
            value = Decimal(str(raw)) if not isinstance(raw, bool) else Decimal(-1)
        except InvalidOperation:
            value = Decimal(-1)
        if not value.is_finite() or value < 0 or value > 10**6:
            raise InvalidInput(f"{where}.{kind}: must be dollars per million tokens (0 or more)")
        values.append(value)
    return Price(*values)


@cache
def shipped() -> Table:
    """The table shipped with Orange."""
    import yaml

    text = resources.files("orange.runtime").joinpath("prices.yml").read_text()
    data = yaml.safe_load(text)
    models = {str(k).lower(): _price(f"prices.yml: {k}", v) for k, v in data["models"].items()}
    return Table(str(data["date"]), models)


def table_or_shipped() -> tuple[Table, str]:
    """`table`, or, when config.yml's ``prices:`` is wrong, the shipped table and what
    is wrong with it (a usage record never stops a move or a run for it, and says so)."""
    try:
        return table(), ""
    except OrangeError as exc:
        return shipped(), exc.message


def table() -> Table:
    """The shipped table with ``prices:`` from config.yml over it."""
    base = shipped()
    raw = load_config().get("prices")
    if raw is None:
        return base
    where = f"{orange_home() / 'config.yml'}: prices"
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{where}: must be a mapping of model name to prices")
    models = dict(base.models)
    for name, entry in raw.items():
        models[str(name).lower()] = _price(f"{where}.{name}", entry)
    return Table(base.date, models)
