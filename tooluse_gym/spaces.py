"""Gymnasium spaces for chat text and conversations.

Gymnasium's `Text` space only accepts characters from a fixed charset (letters and digits
by default), so an LLM message with spaces, punctuation or any unicode is not a member.
`ChatText` accepts any `str` up to `max_length` characters.

Importing this module also registers the spaces with Gymnasium's vector utilities, so
`gym.make_vec` works in ``sync`` and ``async`` mode (see the end of the file).
"""

from __future__ import annotations

import copy
import multiprocessing
import pickle
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space

# Sampled characters: printable ASCII plus a spread of non-ASCII code points, so random
# actions exercise the parsers with real unicode (no surrogates: they cannot be encoded).
_SAMPLE_ALPHABET = (
    [chr(c) for c in range(32, 127)]
    + list("\n\t")
    + [chr(c) for c in (0xE9, 0xDF, 0x3B1, 0x416, 0x5D0, 0x627, 0x4E2D, 0x65E5, 0xAC00, 0x1F600)]
)

ROLES = frozenset({"system", "user", "assistant", "tool"})


class ChatText(Space[str]):
    """Any unicode string of at most `max_length` characters."""

    def __init__(self, max_length: int = 65536, *, seed: int | np.random.Generator | None = None):
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        self.max_length = int(max_length)
        super().__init__(dtype=str, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """False: text cannot be flattened into a NumPy array."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """Random text of 0 to min(64, `max_length`) characters: printable ASCII, newline, tab and some non-ASCII.

        Masks and probabilities are not supported (`NotImplementedError`).
        """
        if mask is not None or probability is not None:
            raise NotImplementedError("ChatText.sample does not support masks")
        length = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
        idx = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=length)
        return "".join(_SAMPLE_ALPHABET[i] for i in idx)

    def contains(self, x: Any) -> bool:
        """Whether `x` is a `str` of at most `max_length` characters."""
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"ChatText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatText) and other.max_length == self.max_length

    def to_jsonable(self, sample_n: Iterable[str]) -> list[str]:
        """The samples as a list (strings are already JSON)."""
        return list(sample_n)

    def from_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        """The samples as a list (the inverse of `to_jsonable`)."""
        return list(sample_n)


class AssistantAction(ChatText):
    """The action: assistant text, or an OpenAI-shaped dict ``{"content", "tool_calls"}``.

    Membership only checks the outer shape; the env validates every field it reads and
    reports malformed calls back to the model instead of raising.
    """

    def contains(self, x: Any) -> bool:
        """Whether `x` is text `ChatText` accepts, or a mapping with such ``content`` and ``tool_calls``.

        Either key may be missing or None; ``tool_calls`` may be any non-string sequence, whose calls
        are not inspected.
        """
        if isinstance(x, Mapping):
            content = x.get("content")
            calls = x.get("tool_calls")
            return (content is None or super().contains(content)) and (
                calls is None or (isinstance(calls, Sequence) and not isinstance(calls, str))
            )
        return super().contains(x)

    def __repr__(self) -> str:
        return f"AssistantAction({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AssistantAction) and other.max_length == self.max_length


class Conversation(Space[list]):
    """A list of chat messages: dicts with a known `role` and `str` (or `None`) `content`."""

    def __init__(self, *, seed: int | np.random.Generator | None = None):
        super().__init__(dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """False: messages cannot be flattened into a NumPy array."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, str]]:
        """A one-message conversation: a user message of random text (mask and probability are ignored)."""
        text = ChatText(64, seed=int(self.np_random.integers(2**31)))
        return [{"role": "user", "content": text.sample()}]

    def contains(self, x: Any) -> bool:
        """Whether `x` is a list of mappings, each with a role in `ROLES` and `str` or None content."""
        if not isinstance(x, list):
            return False
        for m in x:
            if not isinstance(m, Mapping) or m.get("role") not in ROLES:
                return False
            content = m.get("content")
            if content is not None and not isinstance(content, str):
                return False
        return True

    def __repr__(self) -> str:
        return "Conversation()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Conversation)


class ToolSchemas(Space[list]):
    """A list of OpenAI-style tool schemas (``{"type": "function", "function": {...}}``)."""

    def __init__(self, *, seed: int | np.random.Generator | None = None):
        super().__init__(dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """False: schemas cannot be flattened into a NumPy array."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        """An empty list: no tools offered."""
        return []

    def contains(self, x: Any) -> bool:
        """Whether `x` is a list of mappings, each with a mapping under ``function``."""
        return isinstance(x, list) and all(isinstance(t, Mapping) and isinstance(t.get("function"), Mapping) for t in x)

    def __repr__(self) -> str:
        return "ToolSchemas()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolSchemas)


# --- vector environments ------------------------------------------------------------------
#
# `gym.make_vec` batches a space with `batch_space` and moves observations with `concatenate`,
# `create_empty_array`, `iterate` and (async, the default) the shared-memory trio. Our spaces
# hold Python objects, so a batch of n is a `Tuple` of n copies whose samples are n-tuples,
# the convention Gymnasium uses for `Text`. `iterate` needs no registration: the batched space
# is a `Tuple`, and iterating a `Tuple` whose members have no `iterate` of their own yields the
# items (registering one for `Conversation` would make it iterate over each conversation's
# messages instead).
#
# Shared memory: every env of an `AsyncVectorEnv` owns a fixed-size slot of one shared buffer;
# its worker writes the pickled observation there and the main process unpickles it when the
# batch is read. The bytes come from our own worker processes (the same trust as the pipes of
# `shared_memory=False`, which pickle too), never from model output. An observation larger than
# its slot raises `ValueError` in the worker, naming the limit; raise the space's
# `shared_memory_bytes` or pass ``vector_kwargs={"shared_memory": False}``.

_OBJECT_SPACES = (ChatText, AssistantAction, Conversation, ToolSchemas)  # exact types: some lookups skip the MRO


def _empty_value(space: Space) -> Any:
    return "" if isinstance(space, ChatText) else []


def _shared_bytes(space: Space) -> int:
    explicit = getattr(space, "shared_memory_bytes", None)
    if explicit is not None:
        return int(explicit)
    if isinstance(space, ChatText):
        return min(4 * space.max_length + 1024, 4 << 20)
    return 1 << 20 if isinstance(space, ToolSchemas) else 4 << 20


class ObjectSlots:
    """One fixed-size slot of shared memory per env, holding a pickled object and its length."""

    def __init__(self, n: int, slot_bytes: int, ctx: Any):
        self.n = int(n)
        self.slot_bytes = int(slot_bytes)
        self.data = ctx.RawArray("B", self.n * self.slot_bytes)
        self.sizes = ctx.RawArray("q", self.n)

    def write(self, index: int, value: Any) -> None:
        """Pickle `value` into slot `index`; `ValueError` if it does not fit the slot."""
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if len(blob) > self.slot_bytes:
            raise ValueError(
                f"an observation of {len(blob)} bytes does not fit its shared-memory slot of {self.slot_bytes} bytes; "
                "set a larger `shared_memory_bytes` on the space, or pass vector_kwargs={'shared_memory': False}"
            )
        start = index * self.slot_bytes
        memoryview(self.data).cast("B")[start : start + len(blob)] = blob
        self.sizes[index] = len(blob)

    def read(self, index: int) -> Any:
        """The object last written to slot `index` (None before the first write)."""
        size = self.sizes[index]
        if size == 0:
            return None
        start = index * self.slot_bytes
        return pickle.loads(bytes(memoryview(self.data).cast("B")[start : start + size]))


class SharedObjects(Sequence):
    """The main process's view of `ObjectSlots`: item i is env i's latest observation.

    Like the NumPy views Gymnasium returns for `Box` shared memory, it always shows the latest
    writes; `copy.deepcopy` (what `AsyncVectorEnv(copy=True)` returns) freezes it into a tuple.
    """

    def __init__(self, slots: ObjectSlots):
        self._slots = slots

    def __len__(self) -> int:
        return self._slots.n

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self._slots.read(i) for i in range(*index.indices(len(self))))
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self._slots.read(index % len(self))

    def __deepcopy__(self, memo: dict) -> tuple[Any, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (SharedObjects, tuple, list)) and tuple(self) == tuple(other)

    def __repr__(self) -> str:
        return f"SharedObjects({tuple(self)!r})"


def _register_vector_support() -> None:
    from gymnasium.spaces import Tuple
    from gymnasium.vector.utils import (
        batch_differing_spaces,
        batch_space,
        concatenate,
        create_empty_array,
        create_shared_memory,
        read_from_shared_memory,
        write_to_shared_memory,
    )

    def batch(space: Space, n: int = 1) -> Tuple:
        seeds = [int(s) for s in copy.deepcopy(space.np_random).integers(0, 2**31, size=n)]
        batched = Tuple(tuple(copy.deepcopy(space) for _ in range(n)), seed=copy.deepcopy(space.np_random))
        for member, seed in zip(batched.spaces, seeds, strict=True):
            member.seed(seed)
        return batched

    def batch_differing(spaces: Sequence[Space]) -> Tuple:
        return Tuple(tuple(copy.deepcopy(s) for s in spaces), seed=copy.deepcopy(spaces[0].np_random))

    def concat(space: Space, items: Any, out: Any) -> tuple[Any, ...]:
        return tuple(items)

    def empty(space: Space, n: int = 1, fn: Any = None) -> tuple[Any, ...]:
        return tuple(_empty_value(space) for _ in range(n))

    def create_shared(space: Space, n: int = 1, ctx: Any = multiprocessing) -> ObjectSlots:
        return ObjectSlots(n, _shared_bytes(space), ctx)

    def read_shared(space: Space, shared_memory: ObjectSlots, n: int = 1) -> SharedObjects:
        return SharedObjects(shared_memory)

    def write_shared(space: Space, index: int, value: Any, shared_memory: ObjectSlots) -> None:
        shared_memory.write(index, value)

    for cls in _OBJECT_SPACES:
        batch_space.register(cls, batch)
        batch_differing_spaces.register(cls, batch_differing)
        concatenate.register(cls, concat)
        create_empty_array.register(cls, empty)
        # Gymnasium types these two by the buffers of its own spaces; ours are slots of pickled objects.
        create_shared_memory.register(cls, create_shared)  # type: ignore[arg-type]
        read_from_shared_memory.register(cls, read_shared)  # type: ignore[arg-type]
        write_to_shared_memory.register(cls, write_shared)


_register_vector_support()
