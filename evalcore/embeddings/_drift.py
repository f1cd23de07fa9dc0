"""Drift between a reference and a current embedding set, beside the MMD test of `_mmd`.

- `mean_cosine_distance`: `1 - cos(mean_reference, mean_current)`, from the full-data means.
- `drifted_dimensions`: the share of coordinates whose marginal distribution moved, by a two-sample
  Kolmogorov-Smirnov test per dimension with a Benjamini-Hochberg correction over the d tests (false
  discovery rate `alpha`), or by the population stability index above a threshold.
- `domain_classifier_auc`: the held-out ROC-AUC of a logistic regression (torch, L-BFGS) trained to
  tell current rows from reference rows; 0.5 when it cannot.

Each works on samples (arrays of rows; the monitors pass the summaries' bounded samples), on the
device, vectorised over dimensions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from scipy import optimize as scipy_optimize
from scipy import stats as scipy_stats

from evalcore.embeddings._device import Device, as_matrix, resolve_device
from evalcore.embeddings._validation import (
    EmbeddingInputError,
    check_count,
    check_positive,
    check_probability,
    check_same_dim,
)
from evalcore.stats import adjust_p_values

DimensionTest = Literal["ks", "psi"]
DEFAULT_ALPHA = 0.05
DEFAULT_PSI_THRESHOLD = 0.2
DEFAULT_PSI_BINS = 10
DEFAULT_TEST_SHARE = 0.3
DEFAULT_L2 = 1e-2
# Empty bins get this share, so that the PSI's logarithm stays finite (the usual convention).
_PSI_FLOOR = 1e-4
# Dimensions sorted at once: a (rows x dims) block of values, indices and cumulative counts.
_DIM_BLOCK_ELEMENTS = 1 << 22


def mean_cosine_distance(reference_mean: Any, current_mean: Any) -> float:
    """`1 - cos` between two mean embeddings (NaN when either is the zero vector)."""
    a = np.asarray(reference_mean, dtype=np.float64)
    b = np.asarray(current_mean, dtype=np.float64)
    check_same_dim(a.shape[-1], b.shape[-1])
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(1.0 - np.dot(a, b) / norms) if norms > 0 else math.nan


@dataclass(frozen=True)
class DimensionDrift:
    """Per-dimension drift: `statistics` (KS D or PSI), `p_values` (KS only, else None), `drifted`."""

    method: DimensionTest
    statistics: np.ndarray
    p_values: np.ndarray | None
    drifted: np.ndarray

    @property
    def share(self) -> float:
        return float(self.drifted.mean())


def drifted_dimensions(
    reference: Any,
    current: Any,
    *,
    method: DimensionTest = "ks",
    alpha: float = DEFAULT_ALPHA,
    psi_threshold: float = DEFAULT_PSI_THRESHOLD,
    psi_bins: int = DEFAULT_PSI_BINS,
    device: Device = "auto",
) -> DimensionDrift:
    """Which dimensions drifted: KS per dimension with Benjamini-Hochberg at `alpha`, or PSI.

    KS: D is `max |F_ref - F_cur|` over the pooled values, ties handled as `scipy.stats.ks_2samp`
    does, and the p-value is its asymptotic one (`method="asymp"`: Kolmogorov's distribution
    `kstwo` at `round(m n / (m + n))`). PSI: `sum (c - r) ln(c / r)` over `psi_bins` bins cut at the
    reference's quantiles, empty bins floored at 1e-4; a dimension drifted when PSI > `psi_threshold`
    (0.1-0.25 is the usual band for a moderate shift).
    """
    dev = resolve_device(device)
    check_probability(alpha, name="alpha")
    with torch.inference_mode():
        x = as_matrix(reference, device=dev, dtype=torch.float64, name="reference")
        y = as_matrix(current, device=dev, dtype=torch.float64, name="current")
        check_same_dim(x.shape[1], y.shape[1])
        if method == "ks":
            statistics = ks_statistics(x, y)
            p_values = ks_p_values(statistics, x.shape[0], y.shape[0])
            _, significant = adjust_p_values(p_values, method="bh", alpha=alpha)
            return DimensionDrift("ks", statistics, p_values, significant)
        if method == "psi":
            check_positive(psi_threshold, name="psi_threshold")
            statistics = psi_statistics(x, y, bins=check_count(psi_bins, name="psi_bins", minimum=2))
            return DimensionDrift("psi", statistics, None, statistics > psi_threshold)
    raise EmbeddingInputError(f"method must be 'ks' or 'psi', got {method!r}")


def ks_statistics(x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Two-sample KS statistic of every column, sorting the pooled columns a block at a time."""
    m, n = x.shape[0], y.shape[0]
    statistics = np.empty(x.shape[1])
    columns = max(1, _DIM_BLOCK_ELEMENTS // (m + n))
    for lo in range(0, x.shape[1], columns):
        values, order = torch.sort(torch.cat([x[:, lo : lo + columns], y[:, lo : lo + columns]]), dim=0)
        statistics[lo : lo + columns] = ks_from_sorted(values, order < m, m, n)
    return statistics


def ks_from_sorted(values: torch.Tensor, first: torch.Tensor, m: int, n: int) -> np.ndarray:
    """KS D per column from pooled values sorted down each column and whether each came from the first
    sample (m rows; n in the other). Exact: `|F_1 - F_2| m n` is the integer `|c (m + n) - k m|` at the
    k-th value with c of the first sample's rows at or before it."""
    total = m + n
    wide = total * max(m, n) >= 2**31
    counts = torch.arange(1, total + 1, dtype=torch.int64 if wide else torch.int32, device=values.device)
    from_first = first.cumsum(dim=0, dtype=counts.dtype)
    gap = (from_first * total - counts[:, None] * m).abs_()
    # Only where the next value differs is the empirical CDF evaluated (ties move together).
    gap[:-1][values[1:] == values[:-1]] = 0
    return gap.max(dim=0).values.cpu().numpy() / (m * n)


def ks_p_values(statistics: np.ndarray, m: int, n: int, *, exact_below: float = 1.0) -> np.ndarray:
    """scipy's asymptotic two-sided KS p-value for samples of m and n rows.

    scipy's `kstwo.sf` costs about 1 ms a value at these sizes. With `exact_below` < 1, values whose
    limiting-distribution approximation (`kstwobign`, off by less than 0.08 from 10 effective rows on,
    0.03 from 100) is at or above it keep that approximation: a test at level alpha only needs the
    exact value of the p-values near or below alpha (Benjamini-Hochberg never rejects one above alpha).
    """
    effective = round(m * n / (m + n))
    p_values = scipy_stats.kstwobign.sf(np.sqrt(effective) * statistics)
    exact = p_values < (exact_below if effective >= 10 else 1.0)
    p_values[exact] = scipy_stats.kstwo.sf(statistics[exact], effective)  # what ks_2samp reports
    return np.clip(p_values, 0.0, 1.0)


def psi_statistics(x: torch.Tensor, y: torch.Tensor, *, bins: int) -> np.ndarray:
    """Population stability index of every column, bins cut at the reference's quantiles."""
    levels = torch.linspace(0.0, 1.0, bins + 1, dtype=torch.float64, device=x.device)[1:-1]
    result = torch.empty(x.shape[1], dtype=torch.float64)
    columns = max(1, _DIM_BLOCK_ELEMENTS // max(x.shape[0], y.shape[0]))
    for lo in range(0, x.shape[1], columns):
        xs, ys = x[:, lo : lo + columns], y[:, lo : lo + columns]
        edges = torch.quantile(xs, levels, dim=0).T.contiguous()  # (columns, bins - 1)
        ref = _bin_shares(xs, edges, bins)
        cur = _bin_shares(ys, edges, bins)
        result[lo : lo + columns] = ((cur - ref) * torch.log(cur / ref)).sum(dim=1).cpu()
    return result.numpy()


def _bin_shares(values: torch.Tensor, edges: torch.Tensor, bins: int) -> torch.Tensor:
    # A value equal to an edge goes to the bin above it (numpy.searchsorted side="right").
    index = torch.searchsorted(edges, values.T.contiguous(), right=True)
    counts = torch.zeros((edges.shape[0], bins), dtype=torch.float64, device=values.device)
    counts.scatter_add_(1, index, torch.ones_like(index, dtype=torch.float64))
    return (counts / values.shape[0]).clamp_min(_PSI_FLOOR)


def domain_classifier_auc(
    reference: Any,
    current: Any,
    *,
    test_share: float = DEFAULT_TEST_SHARE,
    l2: float = DEFAULT_L2,
    max_iter: int = 500,
    seed: int = 0,
    device: Device = "auto",
) -> float:
    """Held-out ROC-AUC of a logistic regression telling current rows (1) from reference rows (0).

    Each side is split at random (`seed`) into `1 - test_share` for training and `test_share` held
    out. Features are standardised with the training rows' mean and spread; the model minimises the
    mean log-loss plus `l2 / 2 |w|^2` by L-BFGS in float64 (scikit-learn's `LogisticRegression` with
    `C = 1 / (l2 n_train)`). The AUC counts ties as one half, as
    `sklearn.metrics.roc_auc_score`. Near 0.5: the sets look alike; near 1: a classifier tells them
    apart, whatever the kind of shift.
    """
    check_probability(test_share, name="test_share")
    check_positive(l2, name="l2")
    dev = resolve_device(device)
    with torch.inference_mode():
        x = as_matrix(reference, device=dev, dtype=torch.float64, name="reference")
        y = as_matrix(current, device=dev, dtype=torch.float64, name="current")
        check_same_dim(x.shape[1], y.shape[1])
        train_x, test_x = _split(x, test_share, seed)
        train_y, test_y = _split(y, test_share, seed + 1)
        features = torch.cat([train_x, train_y])
        labels = torch.cat([features.new_zeros(train_x.shape[0]), features.new_ones(train_y.shape[0])])
        centre = features.mean(dim=0)
        scale = features.std(dim=0).clamp_min(1e-12)
        features = (features - centre) / scale
        held_out = (torch.cat([test_x, test_y]) - centre) / scale
        weight, bias = _fit_logistic(features, labels, l2=l2, max_iter=max_iter)
        scores = (held_out @ weight + bias).cpu().numpy()
    truth = np.r_[np.zeros(test_x.shape[0]), np.ones(test_y.shape[0])]
    return roc_auc(scores, truth)


def _split(rows: torch.Tensor, test_share: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    n = rows.shape[0]
    if n < 2:
        raise EmbeddingInputError("the domain classifier needs at least 2 rows on each side")
    held = min(n - 1, max(1, round(n * test_share)))
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(rows.device)
    return rows[order[held:]], rows[order[:held]]


def _fit_logistic(
    features: torch.Tensor, labels: torch.Tensor, *, l2: float, max_iter: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Minimise the mean log-loss plus `l2 / 2 |w|^2` by scipy's L-BFGS-B, loss and gradient in torch.

    The gradient is analytic (`X^T (sigmoid(Xw + b) - y) / n + l2 w`): no autograd graph, and only the
    d + 1 parameters cross between the device and the optimiser at each step.
    """
    n, dim = features.shape

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        theta = torch.from_numpy(params).to(features.device)
        weight, bias = theta[:dim], theta[dim]
        logits = features @ weight + bias
        loss = F.binary_cross_entropy_with_logits(logits, labels) + 0.5 * l2 * weight.dot(weight)
        residual = (torch.sigmoid(logits) - labels) / n
        gradient = torch.cat([features.T @ residual + l2 * weight, residual.sum().reshape(1)])
        return float(loss), gradient.cpu().numpy()

    result = scipy_optimize.minimize(
        objective,
        np.zeros(dim + 1),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": 1e-9, "ftol": 1e-14},
    )
    theta = torch.from_numpy(result.x).to(features.device)
    return theta[:dim], theta[dim]


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC-AUC by the rank-sum (Mann-Whitney) formula with average ranks for ties."""
    positive = labels == 1
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = scipy_stats.rankdata(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
