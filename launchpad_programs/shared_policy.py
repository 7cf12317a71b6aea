"""The weights channel of the local launcher: versioned policy packages in shared memory.

The learner process publishes the already-quantized package bytes (``PolicyPackage.to_bytes``)
into one ``multiprocessing.shared_memory`` segment; actor and evaluator processes attach by name
and read the newest package with :meth:`SharedPolicySource.latest` (a ``VariableSource``).

Layout: a 128-byte header of int64 fields, then two data slots (double buffer)::

    [0]  magic            [1] slot capacity (bytes)   [2] active slot (-1: nothing yet)
    [3]  publish count    [4..7] slot 0: seq, version, length, -
    [8..11] slot 1: seq, version, length, -
    data: slot 0 at offset 128, slot 1 at 128 + capacity

Only one process writes (the learner). A publish writes the *inactive* slot inside a seqlock
(its ``seq`` is odd while it is being written, even when complete) and then flips ``active``.
A reader copies the active slot and accepts the copy only if the slot's ``seq`` was even and
unchanged around the copy; it then also checks the package's own crc32 trailer. So a reader never
returns a torn package, and since the writer alternates slots, a slot is only overwritten two
publishes after it became active: readers get a full publish interval to copy it.

A reader is lock-free: a reader killed at any point (``kill -9``) cannot block the writer or
other readers. The writer unlinks the segment on :meth:`SharedPolicyPublisher.close`, at
interpreter exit (``atexit``) and, if the writer process is killed, multiprocessing's resource
tracker unlinks it once every process using it has exited.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import struct
import threading
import time
import zlib
from multiprocessing import shared_memory

import numpy as np

__all__ = ["SharedPolicyPublisher", "SharedPolicySource", "package_crc_ok"]

_MAGIC = int.from_bytes(b"AQSHMPL1", "little")
_HEADER_BYTES = 128
_HEADER_FIELDS = _HEADER_BYTES // 8
_F_MAGIC, _F_CAPACITY, _F_ACTIVE, _F_COUNT = 0, 1, 2, 3
_SEQ, _VERSION, _LENGTH = 0, 1, 2


def _slot_field(slot: int, field: int) -> int:
    return 4 + 4 * slot + field


def package_crc_ok(data: bytes | memoryview) -> bool:
    """Whether ``data`` ends with the crc32 of everything before it (the package trailer)."""
    if len(data) < 4:
        return False
    (crc,) = struct.unpack("<I", data[-4:])
    return zlib.crc32(data[:-4]) == crc


class SharedPolicyPublisher:
    """Creates the segment and publishes ``(version, package bytes)`` into it.

    Args:
      capacity: bytes per slot; every published package must fit (a policy's package size is
        fixed by its network and quantizer, so size it from the first package with some slack:
        :meth:`for_package` does that).
      name: segment name (default: a fresh random ``actorq_<pid>_<hex>``).
    """

    def __init__(self, capacity: int, name: str | None = None) -> None:
        if capacity < 8:
            raise ValueError(f"capacity must be >= 8 bytes, got {capacity}")
        name = name or f"actorq_{os.getpid()}_{secrets.token_hex(4)}"
        self._shm = shared_memory.SharedMemory(
            name=name, create=True, size=_HEADER_BYTES + 2 * int(capacity)
        )
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._closed = False
        self._capacity = int(capacity)
        self._header = np.ndarray((_HEADER_FIELDS,), dtype=np.int64, buffer=self._shm.buf)
        self._header[:] = 0
        self._header[_F_CAPACITY] = self._capacity
        self._header[_F_ACTIVE] = -1
        self._header[_F_MAGIC] = _MAGIC
        self._data = np.ndarray((2, self._capacity), dtype=np.uint8, buffer=self._shm.buf,
                                offset=_HEADER_BYTES)
        self.version = -1
        self.num_publishes = 0
        self.publish_seconds = 0.0
        atexit.register(self.close)

    @classmethod
    def for_package(cls, data: bytes, slack: float = 0.25, name: str | None = None
                    ) -> SharedPolicyPublisher:
        """A publisher sized for packages like ``data`` (plus ``slack`` and 4 KiB)."""
        return cls(int(len(data) * (1.0 + slack)) + 4096, name)

    @property
    def name(self) -> str:
        return self._shm.name

    @property
    def capacity(self) -> int:
        return self._capacity

    def publish(self, version: int, data: bytes) -> None:
        """Makes ``data`` the newest package. Versions must not go backwards; republishing the
        current version is a no-op."""
        if len(data) > self._capacity:
            raise ValueError(
                f"package of {len(data)} bytes exceeds the shared segment's slot capacity "
                f"({self._capacity} bytes); size the publisher from the largest package"
            )
        start = time.perf_counter()
        with self._lock:
            if self._closed:
                raise RuntimeError("publisher is closed")
            if version < self.version:
                raise ValueError(f"policy version went backwards: {version} < {self.version}")
            if version == self.version:
                return
            header = self._header
            active = int(header[_F_ACTIVE])
            slot = 0 if active < 0 else 1 - active
            seq = _slot_field(slot, _SEQ)
            # Odd while the slot is being written, even once complete. A write interrupted
            # earlier (an exception in this process) left it odd: step past it.
            current = int(header[seq])
            writing = current + 1 if current % 2 == 0 else current + 2
            header[seq] = writing
            self._data[slot, : len(data)] = np.frombuffer(data, dtype=np.uint8)
            header[_slot_field(slot, _VERSION)] = version
            header[_slot_field(slot, _LENGTH)] = len(data)
            header[seq] = writing + 1
            header[_F_ACTIVE] = slot
            header[_F_COUNT] += 1
            self.version = int(version)
            self.num_publishes += 1
        self.publish_seconds += time.perf_counter() - start

    def close(self) -> None:
        """Unmaps and unlinks the segment (idempotent; only in the creating process)."""
        with self._lock:
            if self._closed or os.getpid() != self._pid:
                return
            self._closed = True
        atexit.unregister(self.close)
        self._header = None  # type: ignore[assignment]
        self._data = None  # type: ignore[assignment]
        with contextlib.suppress(BufferError):  # a view escaped; unlinking frees the name
            self._shm.close()
        with contextlib.suppress(FileNotFoundError):
            self._shm.unlink()

    def __enter__(self) -> SharedPolicyPublisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SharedPolicySource:
    """Reads the newest package from a publisher's segment (attach by name).

    ``latest()`` returns ``(version, bytes)`` or None before the first publish. It copies a slot
    only when its version is new (the previous copy is returned otherwise), so an actor pulling
    an unchanged policy pays almost nothing.

    Args:
      name: the publisher's segment name.
      verify_crc: also check the package's crc32 trailer (belt and braces over the seqlock).
      max_retries: attempts before giving up on a read under a very fast writer (the previous
        package is returned then).
    """

    def __init__(self, name: str, verify_crc: bool = True, max_retries: int = 1000) -> None:
        self._shm = shared_memory.SharedMemory(name=name, create=False)
        self._header = np.ndarray((_HEADER_FIELDS,), dtype=np.int64, buffer=self._shm.buf)
        if int(self._header[_F_MAGIC]) != _MAGIC:
            raise ValueError(f"shared memory segment {name!r} is not an actorq policy segment")
        capacity = int(self._header[_F_CAPACITY])
        self._data = np.ndarray((2, capacity), dtype=np.uint8, buffer=self._shm.buf,
                                offset=_HEADER_BYTES)
        self._verify_crc = verify_crc
        self._max_retries = max_retries
        self._cached: tuple[int, bytes] | None = None
        self.retries = 0  # reads retried because the writer was busy or the copy was torn
        self.crc_failures = 0

    @property
    def name(self) -> str:
        return self._shm.name

    def peek_version(self) -> int:
        """The newest published version (-1 before the first), without copying anything."""
        header = self._header
        active = int(header[_F_ACTIVE])
        return -1 if active < 0 else int(header[_slot_field(active, _VERSION)])

    def latest(self) -> tuple[int, bytes] | None:
        header = self._header
        for _ in range(self._max_retries):
            active = int(header[_F_ACTIVE])
            if active < 0:
                return None
            seq_field = _slot_field(active, _SEQ)
            seq = int(header[seq_field])
            if seq & 1:
                self.retries += 1
                continue
            version = int(header[_slot_field(active, _VERSION)])
            if self._cached is not None and version == self._cached[0]:
                # Only a complete slot carries this version; nothing new to copy.
                if int(header[seq_field]) == seq:
                    return self._cached
                self.retries += 1
                continue
            length = int(header[_slot_field(active, _LENGTH)])
            if not 0 < length <= self._data.shape[1]:
                self.retries += 1
                continue
            data = self._data[active, :length].tobytes()
            if int(header[seq_field]) != seq:
                self.retries += 1
                continue
            if self._verify_crc and not package_crc_ok(data):
                self.crc_failures += 1
                self.retries += 1
                continue
            if self._cached is None or version > self._cached[0]:
                self._cached = (version, data)
            return self._cached
        return self._cached

    def close(self) -> None:
        """Detaches (never unlinks: the publisher owns the segment)."""
        self._header = None  # type: ignore[assignment]
        self._data = None  # type: ignore[assignment]
        with contextlib.suppress(BufferError):
            self._shm.close()

    def __enter__(self) -> SharedPolicySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
