"""Verdicts equivalent to BFCL's checkers: multi-turn (`multi_turn`), single-turn AST (`single_turn`, `languages`)."""

CHECKER_VERSION = "1"
"""The version of these checkers, recorded on every protocol card (``checker_version``).

Raise it with any change that can turn a verdict for the same messages on the same task data, so
`tooluse eval rescore` can say that a verdict changed with the checker.
"""
