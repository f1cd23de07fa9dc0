"""A seeded, bounded sample of rows that chunks and workers agree on: bottom-k by a hash of the index.

Each row gets a pseudo-random 64-bit key from (seed, global row index) alone (SplitMix64), and the
sample is the `k` rows with the smallest keys. A row's key does not depend on how the file was cut
into chunks, so the bottom-k of a union is the bottom-k of the parts' bottom-ks: samples merge exactly,
and a prefix of the sample (in key order) is itself the bottom-k' sample, a uniform subsample.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
#: Indices hashed at once while selecting the bottom-k of a range (8 MiB of keys).
_KEY_BLOCK = 1 << 20


def _splitmix64(z: NDArray[np.uint64]) -> NDArray[np.uint64]:
    # uint64 arithmetic wraps modulo 2**64, which is what SplitMix64 wants.
    z = z ^ (z >> np.uint64(30))
    z = z * _MIX1
    z = z ^ (z >> np.uint64(27))
    z = z * _MIX2
    return z ^ (z >> np.uint64(31))


def row_keys(indices: NDArray[np.int64], seed: int) -> NDArray[np.uint64]:
    """The sampling key of each global row index under `seed`."""
    with np.errstate(over="ignore"):
        salt = _splitmix64((np.array([seed % 2**64], dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
        return _splitmix64(((indices.astype(np.uint64) + np.uint64(1)) * _GOLDEN) ^ salt)


def smallest_keys(indices: NDArray[np.int64], seed: int, k: int) -> NDArray[np.int64]:
    """The (at most) `k` indices with the smallest keys, in key order (ties by index)."""
    if indices.size == 0 or k == 0:
        return np.zeros(0, dtype=np.int64)
    keys = row_keys(indices, seed)
    if indices.size > k:
        keep = np.argpartition(keys, k - 1)[:k]
        indices, keys = indices[keep], keys[keep]
    order = np.lexsort((indices, keys))
    return indices[order]


def bottom_k_range(start: int, stop: int, *, k: int, seed: int) -> NDArray[np.int64]:
    """The bottom-k sample of the rows `start <= i < stop`, without materialising all their keys."""
    chosen = np.zeros(0, dtype=np.int64)
    for lo in range(start, stop, _KEY_BLOCK):
        block = np.arange(lo, min(lo + _KEY_BLOCK, stop), dtype=np.int64)
        chosen = smallest_keys(np.concatenate([chosen, block]), seed, k)
    return chosen
