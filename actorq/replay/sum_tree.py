"""A numpy sum-tree: O(log n) priority updates and vectorised proportional sampling."""

from __future__ import annotations

import math

import numpy as np

# Up to this many leaves per set() call are updated one by one in Python.
_SCALAR_MAX = 8


class SumTree:
    """Binary tree over ``capacity`` non-negative leaf values; each node holds its subtree sum.

    Stored as one flat array: root at index 1, node i has children 2i and 2i+1, leaves start at
    ``num_leaves`` (capacity rounded up to a power of two; unused leaves stay 0).
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"SumTree capacity must be >= 1, got {capacity}")
        self._capacity = int(capacity)
        self._num_leaves = 1 << (self._capacity - 1).bit_length()
        self._depth = self._num_leaves.bit_length() - 1
        self._tree = np.zeros(2 * self._num_leaves, dtype=np.float64)

    @property
    def capacity(self) -> int:
        """Number of usable leaves."""
        return self._capacity

    @property
    def total(self) -> float:
        """Sum of all leaf values."""
        return float(self._tree[1])

    def get(self, indices: np.ndarray | int) -> np.ndarray:
        """Leaf values at ``indices``."""
        return self._tree[np.asarray(indices, dtype=np.int64) + self._num_leaves]

    def set(self, indices: np.ndarray | int, values: np.ndarray | float) -> None:
        """Sets leaf values (finite, >= 0) and updates their ancestors, O(k log n).

        Ancestors are recomputed as left + right rather than adjusted by deltas, so the tree never
        accumulates floating-point drift however many updates it sees. With duplicate indices the
        last value wins.
        """
        tree = self._tree
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        if idx.size <= _SCALAR_MAX:
            # A few leaves: a plain Python walk up is far cheaper than numpy calls per level.
            v_arr = np.asarray(values, dtype=np.float64)
            vals_list = ([float(v_arr)] * idx.size if v_arr.ndim == 0
                         else v_arr.reshape(-1).tolist())
            if len(vals_list) != idx.size:
                raise ValueError(f"SumTree.set: {idx.size} indices but {len(vals_list)} values")
            idx_list = idx.tolist()
            for i, v in zip(idx_list, vals_list):
                if not 0 <= i < self._capacity:
                    raise IndexError(f"SumTree index {i} out of range [0, {self._capacity})")
                if not 0.0 <= v < math.inf:
                    raise ValueError(f"SumTree values must be finite and >= 0, got {v}")
            for i, v in zip(idx_list, vals_list):
                node = i + self._num_leaves
                tree[node] = v
                node >>= 1
                while node:
                    tree[node] = tree[2 * node] + tree[2 * node + 1]
                    node >>= 1
            return
        vals = np.broadcast_to(np.asarray(values, dtype=np.float64), idx.shape)
        if idx.min() < 0 or idx.max() >= self._capacity:
            raise IndexError(f"SumTree index out of range [0, {self._capacity})")
        if not (np.isfinite(vals).all() and (vals >= 0).all()):
            raise ValueError("SumTree values must be finite and >= 0")
        # Keep the last occurrence of each index (numpy's fancy assignment order is unspecified);
        # np.unique returns the indices sorted, which the level loop below relies on.
        unique_idx, last_rev = np.unique(idx[::-1], return_index=True)
        nodes = unique_idx + self._num_leaves
        tree[nodes] = vals[idx.size - 1 - last_rev]
        for _ in range(self._depth):
            nodes = nodes >> 1  # still sorted, so duplicates are adjacent
            nodes = nodes[np.concatenate(([True], nodes[1:] != nodes[:-1]))]
            tree[nodes] = tree[2 * nodes] + tree[2 * nodes + 1]

    def clear(self) -> None:
        """Sets every leaf to 0."""
        self._tree.fill(0.0)

    def find(self, targets: np.ndarray) -> np.ndarray:
        """Leaf index for each target prefix-sum in [0, total), vectorised over targets.

        A target at or past ``total`` (float rounding) is clamped into the last positive leaf; a
        leaf with value 0 is never returned while ``total > 0``.
        """
        if not self._tree[1] > 0:
            raise ValueError("SumTree.find on a tree whose total is 0")
        u = np.asarray(targets, dtype=np.float64).copy()
        if u.size <= _SCALAR_MAX:
            return np.array([self._find_one(x) for x in u.reshape(-1).tolist()],
                            dtype=np.int64).reshape(u.shape)
        node = np.ones(u.shape, dtype=np.int64)
        for _ in range(self._depth):
            left = 2 * node
            left_sum = self._tree[left]
            # Never step into an empty right subtree; every positive node has a positive child.
            go_right = (u >= left_sum) & (self._tree[left + 1] > 0)
            u = np.where(go_right, u - left_sum, u)
            node = np.where(go_right, left + 1, left)
        return node - self._num_leaves

    def _find_one(self, u: float) -> int:
        # Same walk as the vectorised loop in find(), for one target.
        tree = self._tree
        node = 1
        for _ in range(self._depth):
            left = 2 * node
            left_sum = float(tree[left])
            if u >= left_sum and tree[left + 1] > 0:
                u -= left_sum
                node = left + 1
            else:
                node = left
        return node - self._num_leaves

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Draws n leaf indices i.i.d. with probability value / total."""
        return self.find(rng.uniform(0.0, self._tree[1], size=n))
