"""Seeds derived from names: every seed in a run comes from the run's seed and a place, through one function.

A request's seed is ``derive_seed(run_seed, task_id, turn, step)``: it depends only on the run seed
and the request's place in its episode, never on which other requests share a batch. A GRPO group
member's episode seed is ``derive_seed("grpo", seed, step, prompt_id, member)``, and the epoch order
of the prompt plan ``derive_seed(seed, "epoch", epoch, bits=64)``.
"""

from __future__ import annotations

import hashlib

__all__ = ["derive_seed"]


def derive_seed(*parts: object, bits: int = 31) -> int:
    """The low `bits` bits of the sha256 of the parts joined by ``/`` (their `str`), read little-endian.

    31 bits (the default) fit every backend's sampling seed; 64 bits feed `random.Random`.
    """
    if not 1 <= bits <= 64:
        raise ValueError(f"bits must be in [1, 64], got {bits}")
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << bits) - 1)
