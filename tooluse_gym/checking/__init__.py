"""Verdicts equivalent to BFCL's checkers: multi-turn (`multi_turn`), single-turn AST (`single_turn`, `languages`)."""
