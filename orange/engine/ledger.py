"""The ledger: what an agent's work cost, recorded with the moves (issue 30).

The runtime reads what an agent program recorded in its own session files
(`orange.runtime.usage`) and hands the engine a `Usage`; the engine records it in the
commit that moves the task (or records its agent's death): the usage of this record as
trailers (`usage_trailers`) and running totals in the frontmatter (`with_usage`):

- ``tokens``: ``{in: N, out: N, cache: N}`` (input not read from a cache, output, cache
  reads and writes), the sums of every record's trailers;
- ``cost_usd``: the sum of every priced record's ``Orange-Cost-USD``, as decimal text
  (a record whose model has no price adds its tokens and no cost: its trailer says
  ``unknown``, never a guess);
- ``usage_through``: the time up to which usage was read, so the next record of the
  same agent run starts there and nothing is counted twice;
- ``cost_unknown``: true once a record's cost could not be known (a model without a
  price, or an agent whose program's usage Orange cannot read: its harness names no
  usage reader), so ``cost_usd`` is only part of what the task cost; never unset.

All four are engine-owned (`orange.engine.policy`): the replay checker holds a
commit that changes them to its own trailers (`ledger_problem`: the new totals are the
old ones plus what the commit claims), so a pushed forgery of a total is refused and
restored like any engine field.  A trailer is still only its writer's claim: Orange
records what the agent program wrote on the host that ran it.

``budget_usd`` is a human's field (`task create --budget`): when ``cost_usd`` passes
it, the engine moves the task to its workflow's human-waiting state (`over_budget`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from types import MappingProxyType
from typing import Any, NamedTuple

from orange.engine.workflow import HookSpec

TOKENS, COST, THROUGH, BUDGET = "tokens", "cost_usd", "usage_through", "budget_usd"
UNKNOWN_COST = "cost_unknown"
LEDGER_FIELDS = (TOKENS, COST, THROUGH, UNKNOWN_COST)
TOKEN_KEYS = ("in", "out", "cache")
MAX_TOKENS = 10**15  # per count: more than any real run, small enough to sum safely
MAX_USD = Decimal(10) ** 9
PLACES = Decimal("0.000001")  # money is kept to a millionth of a dollar
_MONEY = r"\d{1,10}(\.\d{1,6})?"
MAX_MODEL = 200

IN, OUT, CACHE, MODEL, COST_TRAILER, SECONDS = (
    "Orange-Tokens-In",
    "Orange-Tokens-Out",
    "Orange-Tokens-Cache",
    "Orange-Model",
    "Orange-Cost-USD",
    "Orange-Agent-Seconds",
)
UNKNOWN = "unknown"


class Usage(NamedTuple):
    """One record: what the agent programs reported for a task's worktree in a window.

    ``cost``: None when it cannot be known (a model without a price, a harness without
    a usage reader); ``broken``: the session entries that could not be read (cut
    short, too long, not JSON), for the message that says so; ``unpriced``: the models
    that had no price; ``unread``: the task's harnesses whose usage cannot be read."""

    tokens_in: int = 0
    tokens_out: int = 0
    cache: int = 0
    model: str = ""
    cost: Decimal | None = Decimal(0)
    seconds: int = 0
    broken: int = 0
    unpriced: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    price_error: str = ""  # what is wrong with config.yml's `prices:` (shipped ones used)

    @property
    def empty(self) -> bool:
        return not (self.tokens_in or self.tokens_out or self.cache)

    def worth_recording(self, fields: Mapping[str, Any]) -> bool:
        """Whether this reading makes a record for a task with ``fields``: tokens were
        used, or it is the first to find the task's cost unknown (said once)."""
        return not self.empty or (self.cost is None and fields.get(UNKNOWN_COST) is not True)


def money(value: Decimal) -> str:
    """``value`` as the ledger writes it: dollars to the millionth, no exponent."""
    return f"{value.quantize(PLACES):f}"


def parse_money(value: Any) -> Decimal | None:
    """A dollar amount as the ledger or a person writes it (``5``, ``5.00``, ``0.12``);
    None when it is not one."""
    text = str(value).strip().removeprefix("$") if isinstance(value, str | int) else ""
    if isinstance(value, bool) or not re.fullmatch(_MONEY, text):
        return None
    try:
        return Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimals
        return None


def check_money(value: Any) -> str | None:
    """The field policy's check of ``cost_usd`` and ``budget_usd``."""
    if value is None:
        return None
    if not isinstance(value, str) or parse_money(value) is None:
        return "must be an amount of dollars as text, such as '5.00'"
    return None


def check_tokens(value: Any) -> str | None:
    """The field policy's check of ``tokens``: in, out and cache, whole numbers."""
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or set(value) != set(TOKEN_KEYS)
        or not all(_count(value[k]) is not None for k in TOKEN_KEYS)
    ):
        return "must be a mapping of in, out and cache to whole numbers"
    return None


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return None
    return value


def tokens_of(fields: Mapping[str, Any]) -> dict[str, int]:
    """The task's token totals (zeros when none or not readable)."""
    value = fields.get(TOKENS)
    if check_tokens(value) is not None or value is None:
        return dict.fromkeys(TOKEN_KEYS, 0)
    return {k: int(value[k]) for k in TOKEN_KEYS}


def cost_of(fields: Mapping[str, Any]) -> Decimal:
    """The task's recorded cost in dollars (0 when none or not readable)."""
    return parse_money(fields.get(COST)) or Decimal(0)


def check_flag(value: Any) -> str | None:
    """The field policy's check of ``cost_unknown``."""
    return None if value is None or value is True else "must be true when set"


def usage_trailers(usage: Usage) -> tuple[tuple[str, str], ...]:
    """The trailers of a record (the cost ``unknown`` when it has no price)."""
    cost = UNKNOWN if usage.cost is None else money(usage.cost)
    return (
        (IN, str(usage.tokens_in)),
        (OUT, str(usage.tokens_out)),
        (CACHE, str(usage.cache)),
        (MODEL, usage.model[:MAX_MODEL] or UNKNOWN),
        (COST_TRAILER, cost),
        (SECONDS, str(usage.seconds)),
    )


def usage_of_trailers(trailers: Mapping[str, str]) -> Usage | None:
    """The record a commit's trailers claim; None when it has none or a value is not
    one Orange writes (a hostile message is read as no record)."""
    if IN not in trailers:
        return None
    counts = [_int(trailers.get(name)) for name in (IN, OUT, CACHE, SECONDS)]
    text = trailers.get(COST_TRAILER, "")
    cost = None if text == UNKNOWN else parse_money(text)
    if any(c is None for c in counts) or (cost is None and text != UNKNOWN):
        return None
    model = trailers.get(MODEL, "")
    tokens_in, tokens_out, cache, seconds = (int(c or 0) for c in counts)
    return Usage(tokens_in, tokens_out, cache, "" if model == UNKNOWN else model, cost, seconds)


def _int(text: str | None) -> int | None:
    if text is None or not text.isdigit() or len(text) > 16:
        return None
    return _count(int(text))


def with_usage(fields: Mapping[str, Any], usage: Usage, through: str) -> dict[str, Any]:
    """The ledger fields after recording ``usage`` read up to ``through``."""
    tokens = tokens_of(fields)
    added = dict(zip(TOKEN_KEYS, (usage.tokens_in, usage.tokens_out, usage.cache), strict=True))
    total = {k: min(tokens[k] + added[k], MAX_TOKENS) for k in TOKEN_KEYS}
    # The record's cost as its trailer writes it (to the millionth): the totals are the
    # sum of the trailers, which is what every replay of the history adds up.
    cost = cost_of(fields) + (Decimal(money(usage.cost)) if usage.cost is not None else 0)
    out: dict[str, Any] = {TOKENS: total, COST: money(min(cost, MAX_USD - 1)), THROUGH: through}
    if usage.cost is None or fields.get(UNKNOWN_COST) is True:
        out[UNKNOWN_COST] = True
    return out


def ledger_problem(
    before: Mapping[str, Any], after: Mapping[str, Any], claimed: Usage | None
) -> str | None:
    """Why the ledger fields of ``after`` are not what Orange writes after ``before``
    with the commit's record ``claimed`` (None: no record, nothing may change)."""
    changed = [n for n in LEDGER_FIELDS if before.get(n) != after.get(n)]
    if claimed is None:
        if changed:
            return f"{', '.join(changed)} changed without a usage record (Orange-Tokens-*)"
        return None
    through = after.get(THROUGH)
    if not isinstance(through, str) or not through:
        return f"{THROUGH} must be set by a usage record"
    expected = with_usage(before, claimed, through)
    if after.get(UNKNOWN_COST) is None and before.get(UNKNOWN_COST) is None:
        expected.pop(UNKNOWN_COST, None)  # a record written before the flag was
    for name in (TOKENS, COST, UNKNOWN_COST):
        if after.get(name) != expected.get(name):
            return (
                f"{name} is {after.get(name)!r}; the usage record of this commit makes it "
                f"{expected.get(name)!r}"
            )
    return None


def without_ledger(after: Mapping[str, Any], before: Mapping[str, Any]) -> dict[str, Any]:
    """``after`` with the ledger fields as in ``before`` (the rest judged on its own)."""
    out = dict(after)
    for name in LEDGER_FIELDS:
        if name in before:
            out[name] = before[name]
        else:
            out.pop(name, None)
    return out


# The budget's stop: the task's agents end, their session and worktree (so their work)
# stay bound to the task for a person to look at, and the task waits for a human, who
# raises the budget and sends it back to work in the same session.
BUDGET_HOOKS = (HookSpec("stop_agents", MappingProxyType({})),)
# What the stop ran before it kept the session (a history written then stays legal).
OLD_BUDGET_HOOKS = (HookSpec("kill_session", MappingProxyType({})),)


def window_start(fields: Mapping[str, Any]) -> str | None:
    """Where the next record's window starts: the later of the last record's end and
    the start of the task's agent run (its ``agent_run`` begins with the time: a new
    run may be in another worktree, whose earlier entries are another task's); None:
    no agent ran.  Both are times as Orange writes them, which order as text."""
    through = fields.get(THROUGH)
    run = fields.get("agent_run")
    started = run.rpartition("-")[0] if isinstance(run, str) and run.count("-") >= 3 else ""
    last = through if isinstance(through, str) else ""
    return max(last, started) or None


def over_budget(fields: Mapping[str, Any]) -> str | None:
    """The attention for a task whose recorded cost passed its budget, else None."""
    budget = parse_money(fields.get(BUDGET)) if fields.get(BUDGET) is not None else None
    if budget is None:
        return None
    cost = cost_of(fields)
    if cost <= budget:
        return None
    return f"budget of ${budget:.2f} spent (${cost:.2f})"


def usage_messages(usage: Usage, fields: Mapping[str, Any]) -> tuple[str, ...]:
    """What a record for a task with ``fields`` (as before it) says besides its
    trailers: entries it could not read, models without a price, and, the first time
    only, the harnesses whose usage cannot be read."""
    said = []
    if usage.price_error:
        said.append(f"warning: {usage.price_error}; the shipped prices were used")
    if usage.unread and fields.get(UNKNOWN_COST) is not True:
        names = ", ".join(usage.unread)
        said.append(
            f"warning: harness {names} names no usage reader: its tokens are not recorded "
            "and the task's cost is unknown (give it `usage: claude`, codex, pi or "
            "opencode under harnesses: in config.yml, or `usage: none` if it calls no model)"
        )
    if usage.broken:
        said.append(
            f"warning: {usage.broken} entr{'y' if usage.broken == 1 else 'ies'} of the "
            "agent's session files could not be read (skipped)"
        )
    if usage.unpriced:
        said.append(
            f"warning: no price for {', '.join(usage.unpriced)}: tokens recorded, cost "
            "unknown (add the model under `prices:` in config.yml)"
        )
    return tuple(said)


def raise_budget(task_id: str) -> str:
    """How a person goes on with a task stopped at its budget."""
    return (
        f"raise it with `orange task update {task_id} --budget N` (or `off`), then send "
        f"the task back to work with `orange task request-changes {task_id}`"
    )


def budget_text(value: str) -> str:
    """A budget as a person gives it (``5``, ``5.5``, ``$5.00``), as the field holds it
    (``5.00``); `InvalidInput` for anything else."""
    amount = parse_money(value.strip())
    if amount is None or amount <= 0:
        from orange.errors import InvalidInput

        raise InvalidInput(
            f"budget {value!r} is not an amount of dollars", hint="give one such as 5 or 12.50"
        )
    return f"{amount:.2f}" if amount == amount.quantize(Decimal("0.01")) else f"{amount:f}"


def cost_label(fields: Mapping[str, Any]) -> str:
    """A task's cost as a table shows it: ``$1.23``, ``$1.23/5.00`` with a budget, ''
    without a record.  A cost that cannot be known in full (`UNKNOWN_COST`) reads
    ``unknown``, or ``$1.23+?`` where part of it is known: never a sum that looks whole."""
    text = fields.get(COST)
    if not isinstance(text, str) or not text:
        return ""
    amount = parse_money(text)
    shown = "?" if amount is None else f"${amount:.2f}"
    if fields.get(UNKNOWN_COST) is True:
        shown = "unknown" if not amount else f"{shown}+?"
    budget = fields.get(BUDGET)
    return f"{shown}/{budget}" if isinstance(budget, str) and budget else shown


def cost_summary(fields: Mapping[str, Any]) -> str | None:
    """The one line a pull request's body gets about what the task cost (None: no
    usage recorded)."""
    if fields.get(THROUGH) is None:
        return None
    tokens = tokens_of(fields)
    return (
        f"Cost (Orange's ledger): ${cost_of(fields):.2f}; tokens {tokens['in']:,} in, "
        f"{tokens['out']:,} out, {tokens['cache']:,} cache"
    )
