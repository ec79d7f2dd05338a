"""Every size limit the decoders (and the call-string interpreter) apply to model text, in one place.

The limits are ours, not BFCL's: BFCL reads text of any size with `eval`. A message over one of
them fails to decode (or its call gets an error), so one message cannot make a step slow or
exhaust memory. They differ where the rules they serve differ:

* the whole message, and the calls in it: `MAX_MESSAGE_CHARS`, `MAX_CALLS_PER_MESSAGE` (every decoder);
* the lenient rule (literal values only): `MAX_LENIENT_LITERAL_DEPTH`, `MAX_LENIENT_LITERAL_NODES`,
  and the candidates tried in prose on single-turn tasks, `MAX_LENIENT_CANDIDATES`;
* BFCL's rule (values as BFCL's decoders and executor compute them: arithmetic, nested calls,
  ``ast.literal_eval``): `MAX_BFCL_EXPRESSION_DEPTH`, `MAX_BFCL_EXPRESSION_NODES`, and the sizes an
  operator may build, `MAX_ARITHMETIC_INT_BITS`, `MAX_ARITHMETIC_SEQUENCE_LENGTH`;
* the call strings the ``bfcl`` decoder hands to the runtime: `MAX_CALL_STRING_CHARS`;
* the fast path that reads the common call-list shape without `ast` (it gives up beyond these, and
  the general path reads the text): `MAX_FAST_PATH_CHARS`, `MAX_FAST_PATH_CALLS`, `MAX_FAST_PATH_DEPTH`.

Scenario files are input from outside too (the env server and the adapters load them), and have
their own: `MAX_SCENARIO_FILE_BYTES`, and for YAML the nodes aliases may add, `MAX_SCENARIO_ALIAS_NODES`,
and the nesting, `MAX_SCENARIO_DEPTH` (`tooluse_gym.tasks.bounded_yaml`).
"""

from __future__ import annotations

MAX_MESSAGE_CHARS = 65536
"""Longer messages are not decoded (they end the turn, with a failure)."""
MAX_CALLS_PER_MESSAGE = 64
"""More calls in one message fail to decode."""

MAX_LENIENT_LITERAL_DEPTH = 16
"""Lenient rule: an argument nested deeper than this is a malformed call."""
MAX_LENIENT_LITERAL_NODES = 20000
"""Lenient rule: the syntax nodes (or JSON values) all arguments of one call may hold."""
MAX_LENIENT_CANDIDATES = 16
"""Lenient rule on single-turn tasks: fenced blocks and bracketed lists tried in a message that is not a call list."""

MAX_BFCL_EXPRESSION_DEPTH = 100
"""BFCL's rule: the nesting an argument (or a call string, or a literal in XML) may have."""
MAX_BFCL_EXPRESSION_NODES = 20000
"""BFCL's rule: the syntax nodes the arguments of one message (or one call string, or one literal) may hold."""
MAX_ARITHMETIC_INT_BITS = 4096
"""BFCL's rule: integers are refused once they need more bits than this (2**4096 has 1234 digits)."""
MAX_ARITHMETIC_SEQUENCE_LENGTH = 65536
"""BFCL's rule: strings, bytes, lists and tuples built by an operator are refused beyond this length."""

MAX_CALL_STRING_CHARS = 300_000
"""A longer call string is refused by the runtime (the decoders write each call's arguments back out)."""

MAX_FAST_PATH_CHARS = 4096
"""The call-list fast path reads texts up to this long."""
MAX_FAST_PATH_CALLS = 64
"""The call-list fast path reads up to this many calls."""
MAX_FAST_PATH_DEPTH = 8
"""The call-list fast path reads lists nested up to this deep."""

MAX_SCENARIO_FILE_BYTES = 16 * 1024 * 1024
"""A larger scenario file is refused before it is read."""
MAX_SCENARIO_ALIAS_NODES = 100_000
"""The nodes a YAML scenario file's aliases may add, each alias counted as the whole subtree it repeats
(a "billion laughs" file of 10 levels of 9 aliases would add billions)."""
MAX_SCENARIO_DEPTH = 200
"""The nesting a scenario file's values may have (deeper is refused, not a `RecursionError`)."""
