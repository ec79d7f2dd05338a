"""Numeric settings checked when a training config is built: each field's rule, one line per refusal.

A config dataclass calls `require` in ``__post_init__`` with a rule per numeric field; the message
names the field and the rule (``lr must be > 0, got -1.0``), and the config loader puts the section
in front (``update.lr must be > 0, got -1.0``). A field that is None (an optional setting left
unset) is not checked; NaN fails every rule.

    require(self, lr="> 0", weight_decay=">= 0", top_p="in (0, 1]")
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

__all__ = ["RULES", "require"]


def _interval(low: float, high: float, closed_low: bool, closed_high: bool) -> Callable[[float], bool]:
    above = operator.ge if closed_low else operator.gt
    below = operator.le if closed_high else operator.lt
    return lambda v: above(v, low) and below(v, high)


RULES: dict[str, Callable[[float], bool]] = {
    "> 0": lambda v: v > 0,
    ">= 0": lambda v: v >= 0,
    ">= 1": lambda v: v >= 1,
    ">= 2": lambda v: v >= 2,
    "in [0, 1]": _interval(0, 1, True, True),
    "in (0, 1]": _interval(0, 1, False, True),
    "in [0, 1)": _interval(0, 1, True, False),
}
"""The rules by the words a message shows."""


def require(config: Any, why: dict[str, str] | None = None, **rules: str) -> None:
    """Refuse the first field of `config` whose value breaks its rule (`RULES`).

    Args:
        config: The dataclass instance being checked.
        why: Optional words per field appended to its refusal (``a group needs two rewards to compare``).
        rules: Field name -> rule; a tuple value is checked element by element (``betas[1]``).

    Raises:
        ValueError: ``NAME must be RULE, got VALUE`` (and the reason, if given).
    """
    for name, rule in rules.items():
        value = getattr(config, name)
        values = enumerate(value) if isinstance(value, tuple) else [(None, value)]
        for index, item in values:
            if item is None:
                continue
            if not RULES[rule](item):
                where = name if index is None else f"{name}[{index}]"
                reason = f" ({why[name]})" if why and name in why else ""
                raise ValueError(f"{where} must be {rule}{reason}, got {item!r}")
