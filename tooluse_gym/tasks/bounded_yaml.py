"""YAML read with bounds: what aliases may add and how deep values may nest (scenario files come from outside).

PyYAML's ``safe_load`` builds a file of nested aliases ("billion laughs": 10 levels of 9) as a
small graph of shared objects, but everything that walks the data afterwards (the schema check,
JSON) walks billions of values. `load` composes the document, counts the nodes its aliases add
(an alias counts as the whole subtree it repeats) and refuses the file past
`MAX_SCENARIO_ALIAS_NODES`, or past `MAX_SCENARIO_DEPTH` levels of nesting, or with an alias used
inside its own anchor, before anything is built from it.

    data = load(text)   # YamlLimitError (a ValueError) or yaml.YAMLError when refused
"""

from __future__ import annotations

from typing import Any

import yaml

from tooluse_gym.decoding.limits import MAX_SCENARIO_ALIAS_NODES, MAX_SCENARIO_DEPTH
from tooluse_gym.errors import ToolUseGymError

__all__ = ["YamlLimitError", "expanded_nodes", "load"]


class YamlLimitError(ToolUseGymError, ValueError):
    """The YAML text is past one of the bounds (its message says which)."""


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def expanded_nodes(root: yaml.Node) -> tuple[int, int]:
    """The nodes of a composed document with every alias written out, and its distinct nodes.

    Linear in the distinct nodes (each subtree's size is computed once).

    Raises:
        YamlLimitError: An alias is used inside its own anchor (the data would be infinite).
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
        elif key in on_path:
            raise YamlLimitError("an alias is used inside its own anchor (the data would be infinite)")
        elif key not in sizes:
            on_path.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    return sizes[id(root)], len(sizes)


class _BoundedLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` refusing depth past `MAX_SCENARIO_DEPTH` and alias nodes past `MAX_SCENARIO_ALIAS_NODES`."""

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_SCENARIO_DEPTH:
                raise YamlLimitError(f"values nested deeper than {MAX_SCENARIO_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> yaml.Node | None:
        root = super().compose_document()
        if root is not None:
            total, distinct = expanded_nodes(root)
            if total - distinct > MAX_SCENARIO_ALIAS_NODES:
                raise YamlLimitError(
                    f"its aliases would add {total - distinct} nodes, more than the {MAX_SCENARIO_ALIAS_NODES} "
                    "allowed (a file built of nested aliases); write the repeated values out"
                )
        return root


def load(text: str) -> Any:
    """The data of one YAML document, as ``yaml.safe_load`` reads it, within the bounds (module docstring)."""
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
