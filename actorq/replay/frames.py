"""Table storage per field: dense rows, or stacked frames stored once.

An Atari transition holds two stacks of 4 frames (observation and next observation), and
consecutive transitions of one environment share 7 of their 8 frames. ``FramePool`` keeps each
distinct frame once (found by content, so it needs no knowledge of which actor or environment
sent what), with a reference count per frame; a ``FrameStackColumn`` keeps, per table slot,
the ids of its frames. Items go in and come out as whole stacks; only the storage differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from actorq.replay.specs import ArraySpec

# Frames per allocation block: 1024 Atari frames are 7 MB. Blocks are only added, so the
# pool's memory follows the most frames it ever held at once.
_BLOCK_FRAMES = 1024


class FramePool:
    """Distinct frames of one shape and dtype, each stored once with a reference count.

    ``add`` returns the id of an equal frame already held (found by a hash of its bytes and
    confirmed by comparing them) or stores a new one; ``release`` drops references, and a frame
    with none left is freed. Freed frames keep their bytes until a later ``add`` reuses the id,
    so ids read before a release can still be gathered until the next ``add``. Not thread-safe:
    the table calls it under its lock.
    """

    def __init__(self, frame_shape: tuple[int, ...], dtype: Any) -> None:
        self.frame_shape = tuple(int(d) for d in frame_shape)
        self.dtype = np.dtype(dtype)
        self._blocks: list[np.ndarray] = []
        self._refs: list[int] = []
        self._hashes: list[int | None] = []  # the key under which a frame is indexed, if any
        self._by_hash: dict[int, int] = {}
        self._free: list[int] = []

    def clear(self) -> None:
        """Frees every frame (keeps the allocated blocks)."""
        self._refs = [0] * len(self._refs)
        self._hashes = [None] * len(self._hashes)
        self._by_hash.clear()
        self._free = list(range(len(self._refs) - 1, -1, -1))

    @property
    def live(self) -> int:
        """Frames held (with at least one reference)."""
        return len(self._refs) - len(self._free)

    @property
    def frame_bytes(self) -> int:
        """Bytes of one frame."""
        return int(np.prod(self.frame_shape, dtype=np.int64)) * self.dtype.itemsize

    def _slot(self, frame_id: int) -> np.ndarray:
        return self._blocks[frame_id // _BLOCK_FRAMES][frame_id % _BLOCK_FRAMES]

    def _allocate(self) -> int:
        if not self._free:
            base = len(self._refs)
            self._blocks.append(np.empty((_BLOCK_FRAMES, *self.frame_shape), self.dtype))
            self._refs += [0] * _BLOCK_FRAMES
            self._hashes += [None] * _BLOCK_FRAMES
            self._free = list(range(base + _BLOCK_FRAMES - 1, base - 1, -1))
        return self._free.pop()

    def add(self, frame: np.ndarray) -> int:
        """The id of a frame equal to ``frame``, with one more reference."""
        frame = np.ascontiguousarray(frame, dtype=self.dtype)
        if frame.shape != self.frame_shape:
            raise ValueError(f"frame pool: expected a frame of shape {self.frame_shape}, "
                             f"got {frame.shape}")
        key = self._content_key(frame)
        frame_id = self._by_hash.get(key)
        if frame_id is not None and np.array_equal(self._slot(frame_id), frame):
            self._refs[frame_id] += 1
            return frame_id
        collision = frame_id is not None  # equal hashes, different bytes: store unindexed
        frame_id = self._allocate()
        self._slot(frame_id)[...] = frame
        self._refs[frame_id] = 1
        if not collision:
            self._by_hash[key] = frame_id
            self._hashes[frame_id] = key
        return frame_id

    @staticmethod
    def _content_key(frame: np.ndarray) -> int:
        return hash(frame.tobytes())

    def retain(self, ids: np.ndarray) -> None:
        """One more reference to each id (repeats count)."""
        for frame_id in np.asarray(ids).reshape(-1).tolist():
            if self._refs[frame_id] <= 0:
                raise ValueError(f"frame pool: frame {frame_id} is not held")
            self._refs[frame_id] += 1

    def release(self, ids: np.ndarray) -> None:
        """One reference fewer to each id (repeats count); frees frames left with none."""
        for frame_id in np.asarray(ids).reshape(-1).tolist():
            refs = self._refs[frame_id] - 1
            if refs < 0:
                raise ValueError(f"frame pool: frame {frame_id} released more than added")
            self._refs[frame_id] = refs
            if refs == 0:
                key = self._hashes[frame_id]
                if key is not None and self._by_hash.get(key) == frame_id:
                    del self._by_hash[key]
                self._hashes[frame_id] = None
                self._free.append(frame_id)

    def gather(self, ids: np.ndarray) -> np.ndarray:
        """The frames of ``ids``: shape ``ids.shape + frame_shape``."""
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.size, *self.frame_shape), self.dtype)
        # Frame by frame: a batch is a few hundred frames, and one copy each is cheaper than
        # masking the ids per block.
        for row, frame_id in enumerate(ids.reshape(-1).tolist()):
            out[row] = self._blocks[frame_id // _BLOCK_FRAMES][frame_id % _BLOCK_FRAMES]
        return out.reshape(*ids.shape, *self.frame_shape)


class DenseColumn:
    """A field stored as one preallocated array, a row per slot."""

    def __init__(self, spec: ArraySpec, max_size: int) -> None:
        # np.zeros maps pages lazily, so a large, mostly empty table costs little memory.
        self._rows = np.zeros((max_size, *spec.shape), dtype=spec.dtype)

    def write(self, slots: np.ndarray, values: np.ndarray) -> None:
        self._rows[slots] = values

    def write_one(self, slot: int, value: np.ndarray) -> None:
        self._rows[slot] = value

    def read(self, slots: np.ndarray) -> np.ndarray:
        return self._rows[slots]

    def release(self, slot: int) -> None:
        del slot  # rows are overwritten on reuse


class FrameStackColumn:
    """A field whose last axis stacks frames (``[..., stack]``), kept as frame ids into a
    ``FramePool`` that other such fields of the table share."""

    def __init__(self, spec: ArraySpec, max_size: int, pool: FramePool) -> None:
        if len(spec.shape) < 2 or tuple(spec.shape[:-1]) != pool.frame_shape:
            raise ValueError(f"a frame-stack field needs shape {pool.frame_shape} + (stack,), "
                             f"got {spec.shape}")
        self.pool = pool
        self._stack = int(spec.shape[-1])
        self._ids = np.zeros((max_size, self._stack), dtype=np.int64)

    def write_one(self, slot: int, value: np.ndarray) -> None:
        self._ids[slot] = [self.pool.add(value[..., i]) for i in range(self._stack)]

    def write(self, slots: np.ndarray, values: np.ndarray) -> None:
        for slot, value in zip(np.asarray(slots).tolist(), values):
            self.write_one(slot, value)

    def write_ids(self, slots: np.ndarray, ids: np.ndarray) -> None:
        """Points ``slots`` at frames already in the pool, adding a reference to each."""
        self.pool.retain(ids)
        self._ids[slots] = ids

    def ids(self, slots: np.ndarray) -> np.ndarray:
        return self._ids[slots]

    def read(self, slots: np.ndarray) -> np.ndarray:
        ids = self._ids[slots]
        out = np.empty((len(ids), *self.pool.frame_shape, self._stack), self.pool.dtype)
        for i in range(self._stack):  # a plane at a time: 4x faster than one moveaxis copy
            out[..., i] = self.pool.gather(ids[:, i])
        return out

    def release(self, slot: int) -> None:
        # The ids stay: a draw that removes an item still gathers its frames afterwards.
        self.pool.release(self._ids[slot])


def stack_frames(frames: np.ndarray) -> np.ndarray:
    """``[n, stack, *frame]`` -> ``[n, *frame, stack]`` (a stacked field's layout)."""
    out = np.empty((frames.shape[0], *frames.shape[2:], frames.shape[1]), frames.dtype)
    for i in range(frames.shape[1]):
        out[..., i] = frames[:, i]
    return out
