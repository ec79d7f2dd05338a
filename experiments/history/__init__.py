"""Superseded study harnesses, kept as the record of how their committed results were made."""
