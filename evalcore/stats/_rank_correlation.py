"""Agreement between two rankings of the same systems: Kendall's tau (tau-b) and tau_ap.

Both take two arrays of scores over the same n systems (higher is better), in the same order, so that
``a[i]`` and ``b[i]`` are system i's score under two conditions (two qrels versions, a full and a partial
pool, the published labels and a resample).

Kendall's tau-b (Kendall 1945), as ``scipy.stats.kendalltau`` computes it by default::

    tau_b = (P - Q) / sqrt((P + Q + T_a) (P + Q + T_b))

with P the concordant pairs, Q the discordant ones, T_a the pairs tied in ``a`` only and T_b those tied
in ``b`` only. It is None (undefined) when either ranking is constant or there are fewer than two
systems.

tau_ap (Yilmaz, Aslam and Robertson, "A new rank correlation coefficient for information retrieval",
SIGIR 2008) weighs a swap by how high it happens: with the systems ordered by ``estimate`` (best first)
and C(i) the systems above rank i that ``truth`` also ranks above the system at rank i::

    tau_ap = 2 / (n - 1) * sum over i = 2..n of C(i) / (i - 1)  -  1

It is asymmetric (``truth`` is the reference). The definition has no ties: systems tied in ``estimate``
are ordered by their ``truth`` score, worst first (so a tie costs what the worse order would), then by
index; a pair tied in ``truth`` counts as correctly ordered. ``tau_ap_symmetric`` is the mean of both
directions. Both are None below two systems.

The counts are vectorised: pairs are compared in blocks of rows (memory O(block * n)); the number of
systems compared is small (tens to a few thousand).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["kendall_tau", "tau_ap", "tau_ap_symmetric"]

_BLOCK = 1024


def _pair(a: npt.ArrayLike, b: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"the rankings cover different numbers of systems ({x.size} and {y.size})")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("scores must be finite numbers")
    return x, y


def kendall_tau(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """Kendall's tau-b between two score vectors over the same systems; None where undefined.

    >>> kendall_tau([0.3, 0.2, 0.1], [0.30, 0.25, 0.05])
    1.0
    >>> round(kendall_tau([0.3, 0.2, 0.1, 0.0], [0.2, 0.3, 0.1, 0.0]), 4)
    0.6667
    """
    x, y = _pair(a, b)
    n = x.size
    concordant = discordant = tied_x = tied_y = 0
    for start in range(0, n, _BLOCK):
        rows = slice(start, min(n, start + _BLOCK))
        dx = np.sign(x[rows, None] - x[None, :])
        dy = np.sign(y[rows, None] - y[None, :])
        upper = np.arange(rows.start, rows.stop)[:, None] < np.arange(n)[None, :]
        product = (dx * dy)[upper]
        concordant += int(np.count_nonzero(product > 0))
        discordant += int(np.count_nonzero(product < 0))
        tied_x += int(np.count_nonzero((dx[upper] == 0) & (dy[upper] != 0)))
        tied_y += int(np.count_nonzero((dy[upper] == 0) & (dx[upper] != 0)))
    denominator = math.sqrt((concordant + discordant + tied_x) * (concordant + discordant + tied_y))
    if denominator == 0:
        return None
    return (concordant - discordant) / denominator


def tau_ap(truth: npt.ArrayLike, estimate: npt.ArrayLike) -> float | None:
    """Yilmaz, Aslam and Robertson's AP rank correlation of `estimate`'s ranking against `truth`'s.

    >>> tau_ap([4, 3, 2, 1], [4, 3, 2, 1])
    1.0
    >>> tau_ap([4, 3, 2, 1], [1, 2, 3, 4])
    -1.0
    >>> round(tau_ap([4, 3, 2, 1], [3, 4, 2, 1]), 4)  # a swap at the top costs more ...
    0.3333
    >>> round(tau_ap([4, 3, 2, 1], [4, 3, 1, 2]), 4)  # ... than the same swap at the bottom
    0.7778
    """
    x, y = _pair(truth, estimate)
    n = x.size
    if n < 2:
        return None
    # Best first by the estimate; ties in the estimate put the truth's worse system first.
    order = np.lexsort((np.arange(n), x, -y))
    truth_sorted = x[order]
    total = 0.0
    for start in range(1, n, _BLOCK):
        stop = min(n, start + _BLOCK)
        below = truth_sorted[start:stop, None]
        above = truth_sorted[None, :stop]
        earlier = np.arange(stop)[None, :] < np.arange(start, stop)[:, None]
        correct = np.count_nonzero((above >= below) & earlier, axis=1)
        total += float(np.sum(correct / np.arange(start, stop)))
    return 2.0 * total / (n - 1) - 1.0


def tau_ap_symmetric(a: npt.ArrayLike, b: npt.ArrayLike) -> float | None:
    """The mean of tau_ap in both directions (each ranking taken as the reference once).

    >>> round(tau_ap_symmetric([4, 3, 2, 1], [3, 4, 2, 1]), 4)
    0.3333
    """
    forward, backward = tau_ap(a, b), tau_ap(b, a)
    if forward is None or backward is None:
        return None
    return (forward + backward) / 2.0
