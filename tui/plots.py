"""Small text plots for the terminal: sparklines and a proportion bar (no extra dependencies).

>>> sparkline([0, 1, 2, 3], width=4)
'▁▃▆█'
>>> sparkline([], width=3)
'   '
>>> split_bar([1.0, 3.0], width=8)
[2, 6]
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int, lo: float | None = None, hi: float | None = None) -> str:
    """The last `width` values as block characters scaled to [lo, hi] (their range by default)."""
    values = list(values)[-width:]
    if not values:
        return " " * width
    lo = min(values) if lo is None else lo
    hi = max(values) if hi is None else hi
    span = hi - lo
    chars = []
    for v in values:
        level = 0 if span <= 0 else round((min(max(v, lo), hi) - lo) / span * (len(_BLOCKS) - 1))
        chars.append(_BLOCKS[level])
    return "".join(chars).ljust(width)


def split_bar(values: Sequence[float], width: int) -> list[int]:
    """Segment lengths proportional to `values` that fill `width` exactly (all 0 when the total is 0)."""
    total = sum(max(v, 0.0) for v in values)
    if total <= 0:
        return [0 for _ in values]
    out, used, acc = [], 0, 0.0
    for value in values:
        acc += max(value, 0.0)
        end = round(acc / total * width)
        out.append(end - used)
        used = end
    return out


def _number(value: float | None) -> str:
    """A value in at most 7 cells: a near-zero one (a weight sync of 1.06e-06 s) as ``<0.001``, not e-notation."""
    if value is None:
        return "-"
    if 0 < abs(value) < 0.001:
        return "<0.001" if value > 0 else ">-0.001"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def series_line(label: str, values: Sequence[float], width: int, style: str, lo=None, hi=None) -> Text:
    """``label ▁▂▅█····  last`` on one line; the label column is 10 wide.

    Until the series fills the width, the rest of the plot is a dim dotted baseline, so a run's
    first few points read as the start of a plot (two steps of reward 0.5 alone were ``▅▅``
    floating at the panel's edge).
    """
    text = Text()
    text.append(f"{label[:10]:<10} ", style="dim")
    drawn = sparkline(values, width, lo, hi).rstrip(" ")
    text.append(drawn, style=style)
    text.append("·" * (width - len(drawn)), style="dim")
    text.append(f" {_number(values[-1] if values else None):>7}", style="bold")
    return text


def range_line(lo: float | None, hi: float | None, steps: Sequence[float]) -> Text:
    """A dim footer line: the scale of the sparklines and the steps they cover."""
    if lo is None or hi is None or not steps:
        return Text("waiting for data", style="dim italic")
    return Text(f"scale {_number(lo)}–{_number(hi)} · steps {steps[0]:g}–{steps[-1]:g}", style="dim")
