"""Decoding model messages into tool calls, never by evaluating them.

One `Decoder` protocol (`tooluse_gym.decoding.base`), one module per wire format (`bfcl`,
`bfcl_ast`, `bfcl_format`, `lenient`, `lenient_ast`), one bounded literal walker (`literals`),
every size limit in one place (`limits`), and one dispatch,
`tooluse_gym.decoding.dispatch.decoder_for`, which the envs call.
"""

from __future__ import annotations

from tooluse_gym.decoding.base import AstDecoded, Decoded, DecodeError, Decoder

__all__ = ["AstDecoded", "DecodeError", "Decoded", "Decoder"]
