"""Chain history buffer with uniform sub-sampling."""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["ChainHistory", "first_visits", "generator_from_data"]


def generator_from_data(*arrays) -> np.random.Generator:
    """A random generator seeded from the values of ``arrays`` alone (their float64 bytes and
    shapes): the same data give the same stream in every process and on every run, whatever
    the global random state.

    A choice made once from given data (the hyper-parameters of a warm start's surrogate,
    chosen from the earlier run's states) draws its random numbers from it, so that it is a
    function of that data and identical wherever it is made.
    """
    digest = hashlib.sha256()
    for array in arrays:
        array = np.ascontiguousarray(np.asarray(array, dtype=np.float64) + 0.0)
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return np.random.default_rng(int.from_bytes(digest.digest(), "little"))


def first_visits(points) -> np.ndarray:
    """Indices of the first occurrence of each distinct row of ``points`` (n, d), ascending.

    A rejection repeats the chain's state, so a history holds runs of equal rows. Rows are
    compared as raw bytes (after ``+ 0.0``, which turns −0.0 into 0.0), so for finite values
    this is equality of floats; sorting bytes is about five times faster than
    ``numpy.unique(points, axis=0)``, which sorts the rows lexicographically number by number.
    """
    points = np.ascontiguousarray(np.asarray(points, dtype=float) + 0.0)
    if points.ndim != 2:
        raise ValueError(f"`points` must have shape (n, d), got shape {points.shape}.")
    if points.shape[0] == 0:
        return np.zeros(0, dtype=np.intp)
    rows = points.view(np.dtype((np.void, points.dtype.itemsize * points.shape[1]))).ravel()
    _, first = np.unique(rows, return_index=True)
    return np.sort(first)


class ChainHistory:
    """Growable buffer of the states a chain has visited (repeats after rejections included).

    Parameters
    ----------
    dim : int
        Dimension of the states.
    capacity : int
        Initial capacity; the buffer doubles when full.
    """

    def __init__(self, dim: int, capacity: int = 1024):
        if dim < 1:
            raise ValueError(f"`dim` must be at least 1, got {dim}.")
        self._data = np.empty((max(int(capacity), 1), int(dim)))
        self._size = 0

    def __len__(self) -> int:
        return self._size

    @property
    def dim(self) -> int:
        return self._data.shape[1]

    @property
    def points(self) -> np.ndarray:
        """Read-only view of the stored states, shape (n, d), oldest first."""
        view = self._data[: self._size]
        view.flags.writeable = False
        return view

    def _grow_to(self, needed: int) -> None:
        """Room for ``needed`` states: at least double the capacity, keeping those stored."""
        grown = np.empty((max(needed, 2 * self._data.shape[0]), self.dim))
        grown[: self._size] = self._data[: self._size]
        self._data = grown

    def append(self, x) -> None:
        """Store one state."""
        if self._size == self._data.shape[0]:
            self._grow_to(self._size + 1)
        self._data[self._size] = x
        self._size += 1

    def extend(self, points) -> None:
        """Store the rows of ``points``, shape (n, d), in order."""
        points = np.asarray(points, dtype=float).reshape(-1, self.dim)
        needed = self._size + len(points)
        if needed > self._data.shape[0]:
            self._grow_to(needed)
        self._data[self._size : needed] = points
        self._size = needed

    def subsample(self, rng: np.random.Generator, size: int, start: int = 0) -> np.ndarray:
        """Uniform sub-sample without replacement of at most ``size`` of the states stored from
        index ``start`` on (a copy)."""
        if size < 1:
            raise ValueError(f"`size` must be at least 1, got {size}.")
        start = min(max(int(start), 0), self._size)
        available = self._size - start
        if size >= available:
            return self._data[start : self._size].copy()
        index = start + rng.choice(available, size=size, replace=False)
        index.sort()
        return self._data[index]

    def recent_subsample(
        self, rng: np.random.Generator, size: int, others: np.ndarray | None = None
    ) -> np.ndarray:
        """Uniform sub-sample without replacement of at most ``size`` of the most recent half of
        the states, together with the states ``others`` (another chains', pooled tuning).

        Parameters
        ----------
        rng : numpy.random.Generator
        size : int
        others : numpy.ndarray, shape (m, d), optional
            States to draw from as well (None or empty: the history's alone).
        """
        if others is None or len(others) == 0:
            return self.subsample(rng, size, start=self._size // 2)
        states = np.concatenate([self.points[self._size // 2 :], others])
        if size >= len(states):
            return states
        return states[np.sort(rng.choice(len(states), size=size, replace=False))]

    def tail(self, count: int) -> np.ndarray:
        """The last ``count`` states (a copy)."""
        return self._data[max(self._size - count, 0) : self._size].copy()
