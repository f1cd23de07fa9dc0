"""Maximum mean discrepancy with an RBF kernel and a permutation p-value, all permutations at once.

Pool the two samples into `z` (N rows, the first `m` of them the reference). For a 0/1 column `a`
marking one group, the unbiased MMD^2 needs only three kernel sums: `a^T K a`, `a^T K 1` and
`1^T K 1` (with `k(x, x) = 1` for the RBF kernel). So every permutation is one more column of an
N x (P + 1) indicator matrix `A` (column 0 is the observed split), and all P + 1 statistics come
from the products `K A` while the kernel matrix is built once: row panels of `K` are computed on the
fly (its upper triangle only, the mirror counted twice), multiplied by `A` in float64 and dropped.
Memory is one panel (bounded by `block_elements`) plus `A`; the work is `N^2 d / 2` for the kernel
and `N^2 (P + 1) / 2` for the permutations, instead of permuting an N x N matrix P times.

The same machinery scores any set of splits of one sample, which is how the effect-size threshold
is calibrated from reference-versus-reference splits (`_calibration`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from evalcore.embeddings._device import Device, as_matrix, resolve_device
from evalcore.embeddings._validation import EmbeddingInputError, check_count, check_positive, check_same_dim

DEFAULT_PERMUTATIONS = 200  # the smallest p-value is 1 / 201: enough for p < 0.01
#: Rows used to pick the bandwidth by the median heuristic (about 2M pairs).
BANDWIDTH_ROWS = 2000
#: Largest kernel panel held at once, in elements (64 MiB in float64, plus 32 MiB in float32).
BLOCK_ELEMENTS = 1 << 23
# "At least as large as the observed statistic": the observed column and a permutation that splits
# the pool the same way are summed in different orders, so they may differ by float64 rounding of
# sums of kernel values (each at most 1), far below this.
_TIE_ATOL = 1e-12


@dataclass(frozen=True)
class MMDResult:
    """The unbiased MMD^2 of two samples, its permutation p-value and the kernel's bandwidth.

    `p_value = (1 + #{null >= mmd2}) / (1 + n_permutations)`, NaN with no permutations. `null` holds
    the permuted statistics. The kernel is `exp(-|x - y|^2 / (2 bandwidth^2))`.
    """

    mmd2: float
    p_value: float
    bandwidth: float
    n_permutations: int
    n_reference: int
    n_current: int
    null: np.ndarray


def median_bandwidth(
    reference: Any, *, max_rows: int = BANDWIDTH_ROWS, seed: int = 0, device: Device = "auto"
) -> float:
    """The median heuristic: sigma = sqrt(median of the squared distances between distinct rows) of (at
    most `max_rows` of) the reference, so the kernel exp(-d^2 / (2 sigma^2)) is exp(-d^2 / (2 median)).

    This is not alibi-detect's convention: its `sigma_median` (the default of `MMDDrift` with
    `configure_kernel_from_x_ref`) takes sigma = sqrt(median / 2) over the same pairs (the lower
    median when their number is even), so its kernel is exp(-d^2 / median): ours is sqrt(2) times
    alibi's sigma. To reproduce alibi's kernel, pass `bandwidth=median_bandwidth(x) / math.sqrt(2)`. Tied to the reference alone, the kernel, and so the
    effect-size threshold calibrated on it, stays the same for every snapshot compared with that
    reference.
    """
    dev = resolve_device(device)
    with torch.inference_mode():
        x = as_matrix(reference, device=dev, dtype=torch.float64, name="reference")
        if x.shape[0] > max_rows:
            pick = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(seed))[:max_rows]
            x = x[pick.to(dev)]
        sq = torch.cdist(x, x).square()
        upper = sq[torch.ones_like(sq, dtype=torch.bool).triu(diagonal=1)]
        if upper.numel() == 0:
            return 1.0
        median = float(np.median(upper.cpu().numpy()))
        if median <= 0.0:  # mostly duplicates: fall back on the mean, then on 1
            positive = upper[upper > 0]
            median = float(positive.mean()) if positive.numel() else 1.0
        return math.sqrt(median)


def kernel_sums(
    z: torch.Tensor, indicators: torch.Tensor, *, gamma: float, block_elements: int = BLOCK_ELEMENTS
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """For each 0/1 column `a` of `indicators`: `(a^T K a, a^T K 1)`, and `1^T K 1`, where
    `K_ij = exp(-gamma |z_i - z_j|^2)`, without ever holding K whole."""
    n, columns = z.shape[0], indicators.shape[1]
    sq = z.square().sum(dim=1)
    # A trailing column of ones makes the same products give the kernel's row sums.
    weights = torch.cat([indicators, torch.ones((n, 1), dtype=torch.float64, device=z.device)], dim=1)
    row_sums = torch.zeros(n, dtype=torch.float64, device=z.device)
    quadratic = torch.zeros(columns, dtype=torch.float64, device=z.device)
    rows = max(1, block_elements // n)
    for lo in range(0, n, rows):
        hi = min(lo + rows, n)
        # Squared distances in the input precision (a GEMM), the kernel and all sums in float64.
        panel = z[lo:hi] @ z[lo:].T  # the upper triangle's row panel: columns lo..n
        panel.mul_(-2.0).add_(sq[lo:hi, None]).add_(sq[None, lo:]).clamp_min_(0.0)
        panel[:, : hi - lo].fill_diagonal_(0.0)  # k(x, x) = 1 exactly, as the estimator assumes
        kernel = panel.to(torch.float64).mul_(-gamma).exp_()
        del panel
        inner = kernel[:, : hi - lo] @ weights[lo:hi]  # the diagonal block
        outer = kernel[:, hi - lo :] @ weights[hi:]  # right of it; its mirror below counts the same
        quadratic += (indicators[lo:hi] * (inner[:, :columns] + 2.0 * outer[:, :columns])).sum(dim=0)
        row_sums[lo:hi] += inner[:, columns] + outer[:, columns]
        row_sums[hi:] += kernel[:, hi - lo :].sum(dim=0)
        del kernel
    return quadratic, indicators.T @ row_sums, float(row_sums.sum())


def unbiased_mmd2(
    quadratic: torch.Tensor, linear: torch.Tensor, total: float, *, m: torch.Tensor, n: int
) -> torch.Tensor:
    """Unbiased MMD^2 per column from the kernel sums, the first group having `m` of the `n` rows."""
    other = n - m
    within_first = quadratic - m
    between = linear - quadratic
    within_second = total - 2.0 * linear + quadratic - other
    return within_first / (m * (m - 1)) + within_second / (other * (other - 1)) - 2.0 * between / (m * other)


def permutation_indicators(m: int, n: int, n_permutations: int, *, seed: int) -> torch.Tensor:
    """An n x (1 + P) 0/1 float64 matrix: column 0 marks rows 0..m-1, each other column m random rows."""
    generator = torch.Generator().manual_seed(seed)
    indicators = torch.zeros((n, n_permutations + 1), dtype=torch.float64)
    indicators[:m, 0] = 1.0
    for column in range(1, n_permutations + 1):
        indicators[torch.randperm(n, generator=generator)[:m], column] = 1.0
    return indicators


def mmd_test(
    reference: Any,
    current: Any,
    *,
    n_permutations: int = DEFAULT_PERMUTATIONS,
    bandwidth: float | None = None,
    seed: int = 0,
    device: Device = "auto",
    dtype: torch.dtype = torch.float32,
    block_elements: int = BLOCK_ELEMENTS,
) -> MMDResult:
    """Unbiased MMD^2 between two samples with an RBF kernel, and its permutation p-value.

    `bandwidth` defaults to the median heuristic on the reference (`median_bandwidth`). Kernel
    values are computed in `dtype` (float32: distances between embeddings lose nothing that
    matters); every sum over them is float64. Both samples need at least 2 rows. The permutations
    are drawn on the CPU from `seed`, so every device tests the same ones.
    """
    check_count(n_permutations, name="n_permutations", minimum=0)
    dev = resolve_device(device)
    with torch.inference_mode():
        x = as_matrix(reference, device=dev, dtype=dtype, name="reference")
        y = as_matrix(current, device=dev, dtype=dtype, name="current")
        check_same_dim(x.shape[1], y.shape[1])
        m, other = x.shape[0], y.shape[0]
        if min(m, other) < 2:
            raise EmbeddingInputError("MMD needs at least 2 rows on each side")
        sigma = median_bandwidth(x, seed=seed, device=dev) if bandwidth is None else bandwidth
        check_positive(sigma, name="bandwidth")
        z = torch.cat([x, y])
        indicators = permutation_indicators(m, m + other, n_permutations, seed=seed).to(dev)
        quadratic, linear, total = kernel_sums(
            z, indicators, gamma=1.0 / (2.0 * sigma * sigma), block_elements=block_elements
        )
        stats = unbiased_mmd2(
            quadratic, linear, total, m=torch.full_like(quadratic, float(m)), n=m + other
        ).cpu()
    observed, null = float(stats[0]), stats[1:].numpy()
    p_value = (
        float((1 + np.count_nonzero(null >= observed - _TIE_ATOL)) / (1 + n_permutations))
        if n_permutations
        else math.nan
    )
    return MMDResult(observed, p_value, float(sigma), n_permutations, m, other, null)
