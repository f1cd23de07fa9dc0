"""Overlap of ranked lists, vectorised over queries: Jaccard@k, rank-biased overlap, tau on shared docs.

Every kernel takes two (n, k) integer matrices of document ids, one row per query, each row a ranked
list best first, padded with `PAD` (-1) after its end; a row never repeats a document. Results are
arrays of n values, NaN where a value is undefined.

Notation, per query: S and L are the shorter and the longer list, of lengths s <= l; A_{:d} is the
top d of list A (all of it when d exceeds its length); X_d = |S_{:d} ∩ L_{:d}| is the overlap at
depth d (for s < d <= l it is |S ∩ L_{:d}|, and X_d = X_l beyond l); A_d = X_d / d is the agreement.

Jaccard@k = X_l / |S ∪ L| = X_l / (s + l - X_l); NaN when both lists are empty.

Rank-biased overlap (Webber, Moffat and Zobel, "A similarity measure for indefinite rankings", TOIS
2010), with persistence 0 < p < 1, is RBO = (1 - p) sum_{d >= 1} p^(d-1) A_d over the infinite lists;
on prefixes it is bounded and extrapolated:

- RBO_min (eq. 11, at depth l with the uneven X_d above): every unseen item matches nothing,
  RBO_min = (1 - p)/p (sum_{d=1}^{l} (X_d - X_l) p^d / d - X_l ln(1 - p)).
- RBO_res (section 4.3, eq. 30): what the unseen items can add at most, with f = l + s - X_l,
  RBO_res = p^s + p^l - p^f - (1 - p)/p (s sum_{d=s+1}^{f} p^d/d + l sum_{d=l+1}^{f} p^d/d
            + X_l (ln(1/(1 - p)) - sum_{d=1}^{f} p^d/d)),
  so RBO lies in [RBO_min, RBO_min + RBO_res].
- RBO_ext (eq. 32): the agreement seen at the deepest depth is assumed to continue,
  RBO_ext = (1 - p)/p (sum_{d=1}^{l} X_d/d p^d + sum_{d=s+1}^{l} X_s (d - s)/(s d) p^d)
            + ((X_l - X_s)/l + X_s/s) p^l,
  which for even lengths (s = l = k) is X_k/k p^k + (1 - p)/p sum_{d=1}^{k} X_d/d p^d.
  NaN when both lists are empty; 0 when only one is (X_s / s is taken as 0 for s = 0).

Kendall's tau and tau_ap over the documents both lists hold (n_shared of them), each ordered by its
own list's rank. The orders have no ties, so tau-b is (C - D) / (C + D) with C (D) the concordant
(discordant) pairs; tau_ap (Yilmaz, Aslam and Robertson 2008) takes list A as the reference:
tau_ap = 2/(n_shared - 1) sum_{i=2}^{n_shared} C(i)/(i - 1) - 1, with i running over B's order and C(i)
the documents above i in B that A also ranks above it; `tau_ap_symmetric` is the mean of both
directions. Both are NaN below two shared documents.
"""

from __future__ import annotations

import math

import numpy as np

from evalcore.overlap._lists import PAD

__all__ = ["RBOBounds", "jaccard", "overlap_at_depth", "rank_correlations", "rbo"]

# Pair matrices are built for this many (query, rank, rank) cells at a time.
_CELLS = 1 << 22


def _lengths(lists: np.ndarray, name: str) -> np.ndarray:
    present = lists != PAD
    lengths = present.sum(axis=1)
    if (present != (np.arange(lists.shape[1]) < lengths[:, None])).any():
        raise ValueError(f"{name}: padding must follow each list's last document")
    return lengths


def _check(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"the lists must be two matrices of one shape, not {a.shape} and {b.shape}")
    return a, b, _lengths(a, "a"), _lengths(b, "b")


def matched_ranks(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For every cell of `a`, the 0-based rank of the same document in `b`'s row, or -1."""
    n, k = a.shape
    out = np.full(a.shape, -1, dtype=np.int64)
    if not a.size:
        return out
    stride = int(max(a.max(), b.max())) + 2
    row = np.arange(n, dtype=np.int64)[:, None] * stride
    in_b = b != PAD
    keys_b = (row + b)[in_b]
    ranks_b = np.broadcast_to(np.arange(k), b.shape)[in_b]
    order = np.argsort(keys_b, kind="stable")
    keys_b, ranks_b = keys_b[order], ranks_b[order]
    if not len(keys_b):
        return out
    keys_a = row + a
    where = np.minimum(np.searchsorted(keys_b, keys_a), len(keys_b) - 1)
    found = (keys_b[where] == keys_a) & (a != PAD)
    out[found] = ranks_b[where[found]]
    return out


def overlap_at_depth(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """X_d for d = 1..k, an (n, k) matrix: |a_{:d} ∩ b_{:d}| per query.

    A document at rank i in `a` and j in `b` (0-based) counts from depth max(i, j) + 1 on, so X is a
    cumulative sum of those first depths.

    >>> overlap_at_depth(np.array([[1, 2, 3]]), np.array([[2, 1, 4]])).tolist()
    [[0, 2, 2]]
    """
    a, b, _, _ = _check(a, b)
    n, k = a.shape
    j = matched_ranks(a, b)
    hit = j >= 0
    depth = np.maximum(np.broadcast_to(np.arange(k), a.shape)[hit], j[hit])
    cells = np.nonzero(hit)[0] * k + depth
    return np.cumsum(np.bincount(cells, minlength=n * k).reshape(n, k), axis=1)


def jaccard(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|A ∩ B| / |A ∪ B| of each row's whole lists; NaN when both are empty.

    >>> jaccard(np.array([[1, 2, 3], [5, -1, -1]]), np.array([[3, 4, -1], [6, -1, -1]])).tolist()
    [0.25, 0.0]
    """
    a, b, la, lb = _check(a, b)
    shared = overlap_at_depth(a, b)[:, -1] if a.shape[1] else np.zeros(len(a), dtype=np.int64)
    union = la + lb - shared
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, shared / np.maximum(union, 1), np.nan)


class RBOBounds:
    """RBO_min, RBO_res and RBO_ext per query (arrays); RBO lies in [rbo_min, rbo_min + rbo_res]."""

    __slots__ = ("rbo_ext", "rbo_min", "rbo_res")

    def __init__(self, rbo_min: np.ndarray, rbo_res: np.ndarray, rbo_ext: np.ndarray) -> None:
        self.rbo_min, self.rbo_res, self.rbo_ext = rbo_min, rbo_res, rbo_ext

    @property
    def rbo_max(self) -> np.ndarray:
        return self.rbo_min + self.rbo_res


def rbo(a: np.ndarray, b: np.ndarray, *, p: float = 0.9) -> RBOBounds:
    """Rank-biased overlap of each row's two lists: its bounds and extrapolation (module docstring).

    >>> r = rbo(np.array([[1, 2, 3]]), np.array([[1, 2, 3]]), p=0.9)
    >>> float(r.rbo_ext[0]), round(float(r.rbo_min[0]), 4), round(float(r.rbo_max[0]), 4)
    (1.0, 0.5225, 1.0)
    >>> r = rbo(np.array([[1, 2, 3]]), np.array([[4, 5, 6]]), p=0.9)
    >>> float(r.rbo_ext[0]), float(r.rbo_min[0]), round(float(r.rbo_res[0]), 4)
    (0.0, 0.0, 0.6794)
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"the persistence p must lie strictly between 0 and 1, not {p}")
    a, b, la, lb = _check(a, b)
    n, k = a.shape
    s, l = np.minimum(la, lb), np.maximum(la, lb)  # noqa: E741 - the paper's names
    x = np.zeros((n, k + 1))
    x[:, 1:] = overlap_at_depth(a, b)
    rows = np.arange(n)
    x_s, x_l = x[rows, s], x[rows, l]
    d = np.arange(1, k + 1, dtype=np.float64)
    weight = p**d
    scale = (1.0 - p) / p
    upto_l = d[None, :] <= l[:, None]
    beyond_s = upto_l & (d[None, :] > s[:, None])
    safe_s, safe_l = np.maximum(s, 1), np.maximum(l, 1)

    seen = np.sum(np.where(upto_l, x[:, 1:] * weight / d, 0.0), axis=1)
    continued = np.sum(
        np.where(beyond_s, x_s[:, None] * (d - s[:, None]) / (safe_s[:, None] * d) * weight, 0.0), axis=1
    )
    tail = ((x_l - x_s) / safe_l + np.where(s > 0, x_s / safe_s, 0.0)) * p ** l.astype(np.float64)
    ext = np.where(l > 0, scale * (seen + continued) + tail, np.nan)

    log_term = -math.log1p(-p)
    gap = np.sum(np.where(upto_l, (x[:, 1:] - x_l[:, None]) * weight / d, 0.0), axis=1)
    low = scale * (gap + x_l * log_term)

    # G[m] = sum_{d=1}^{m} p^d / d for m = 0..2k, so each partial sum of the residual is a difference.
    dd = np.arange(1, 2 * k + 1, dtype=np.float64)
    g = np.concatenate([[0.0], np.cumsum(p**dd / dd)])
    f = (l + s - x_l).astype(np.int64)
    residual = (
        p ** s.astype(np.float64) + p ** l.astype(np.float64) - p ** f.astype(np.float64)
        - scale * (s * (g[f] - g[s]) + l * (g[f] - g[l]) + x_l * (log_term - g[f]))
    )  # fmt: skip
    return RBOBounds(rbo_min=low, rbo_res=residual, rbo_ext=ext)


class RankCorrelations:
    """Per query: shared documents, Kendall's tau, tau_ap (A the reference) and its symmetric mean."""

    __slots__ = ("kendall_tau", "shared", "tau_ap", "tau_ap_symmetric")

    def __init__(self, shared: np.ndarray, tau: np.ndarray, ap: np.ndarray, ap_sym: np.ndarray) -> None:
        self.shared, self.kendall_tau, self.tau_ap, self.tau_ap_symmetric = shared, tau, ap, ap_sym


def rank_correlations(a: np.ndarray, b: np.ndarray) -> RankCorrelations:
    """Kendall's tau and tau_ap between the two lists' orders of the documents both hold.

    >>> r = rank_correlations(np.array([[1, 2, 3, 9]]), np.array([[2, 1, 3, 8]]))
    >>> int(r.shared[0]), round(float(r.kendall_tau[0]), 4), round(float(r.tau_ap[0]), 4)
    (3, 0.3333, 0.0)
    """
    a, b, _, _ = _check(a, b)
    n, k = a.shape
    j = matched_ranks(a, b)
    shared = (j >= 0).sum(axis=1)
    concordant = np.zeros(n)
    pairs = np.zeros(n)
    ap_a = np.zeros(n)  # sum over B's order of C(i)/(i - 1): A the reference
    ap_b = np.zeros(n)  # sum over A's order: B the reference
    later = np.arange(k)[:, None] < np.arange(k)[None, :]  # [u, v]: u above v in A
    step = max(1, _CELLS // max(1, k * k))
    for start in range(0, n, step):
        jb = j[start : start + step]
        held = jb >= 0
        both = held[:, :, None] & held[:, None, :]
        above_in_b = both & (jb[:, :, None] < jb[:, None, :])
        agree = above_in_b & later  # above in both lists
        above_in_a = both & later
        c_v = agree.sum(axis=1).astype(np.float64)
        concordant[start : start + step] = c_v.sum(axis=1)
        pairs[start : start + step] = above_in_a.sum(axis=(1, 2))
        for total, above in ((ap_a, above_in_b), (ap_b, above_in_a)):
            before = above.sum(axis=1)
            total[start : start + step] = np.sum(
                np.where(before > 0, c_v / np.maximum(before, 1), 0.0), axis=1
            )
    defined = shared >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(defined, (2.0 * concordant - pairs) / np.maximum(pairs, 1), np.nan)
        norm = 2.0 / np.maximum(shared - 1, 1)
        ap = np.where(defined, norm * ap_a - 1.0, np.nan)
        ap_other = np.where(defined, norm * ap_b - 1.0, np.nan)
    return RankCorrelations(shared, tau, ap, (ap + ap_other) / 2.0)
