"""Effect-size thresholds calibrated from reference-versus-reference splits.

With thousands of rows a side, a permutation test calls trivially small shifts significant, and an
alarm on the p-value alone fires all the time. So the drift rules also ask for an effect larger
than the reference shows against itself: the reference sample is cut into two halves many ways, the
effect sizes between the halves are computed, and a high quantile of them (times a margin) is the
threshold. Splits are `"contiguous"` (a window of half the rows in file order against the rest:
the natural variation across the reference period, when the file is in time order) or `"random"`.

All MMD^2 of the splits come from one kernel pass over the reference sample (the indicator columns
of `_mmd.kernel_sums`); the KS statistics of all splits from one sort per dimension.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from evalcore.embeddings._device import Device, as_matrix, resolve_device
from evalcore.embeddings._drift import DimensionTest, ks_from_sorted, ks_p_values, psi_statistics
from evalcore.embeddings._mmd import kernel_sums, median_bandwidth, unbiased_mmd2
from evalcore.embeddings._params import SplitKind
from evalcore.embeddings._validation import EmbeddingInputError, check_count
from evalcore.stats import adjust_p_values

#: The effect sizes calibrated here; classifier_auc has a fixed threshold (0.75) instead.
CALIBRATED_EFFECTS = ("mmd2", "mean_cosine_distance", "drifted_dim_share")
_DIM_BLOCK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class EffectCalibration:
    """Thresholds by effect metric, the split values they come from, and the kernel bandwidth used."""

    thresholds: dict[str, float]
    null: dict[str, np.ndarray] = field(repr=False)
    bandwidth: float
    split: SplitKind
    n_splits: int
    quantile: float
    margin: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "thresholds": dict(self.thresholds),
            "bandwidth": self.bandwidth,
            "split": self.split,
            "n_splits": self.n_splits,
            "quantile": self.quantile,
            "margin": self.margin,
        }


def split_indicators(row_index: np.ndarray, n_splits: int, *, split: SplitKind, seed: int) -> torch.Tensor:
    """An m x n_splits 0/1 float64 matrix; each column marks half (m // 2) of the rows.

    Contiguous split s marks the rows whose rank in `row_index` order falls in a window of m // 2
    ranks starting at s * (m // 2) / n_splits: from "first half against second half" round to
    "second half against first".
    """
    m = row_index.size
    half = m // 2
    if half < 2 or m - half < 2:
        raise EmbeddingInputError("calibration needs at least 4 reference rows")
    indicators = torch.zeros((m, n_splits), dtype=torch.float64)
    if split == "contiguous":
        rank = torch.as_tensor(np.argsort(np.argsort(row_index, kind="stable"), kind="stable"))
        for column in range(n_splits):
            start = (column * half) // n_splits
            indicators[:, column] = ((rank - start) % m < half).to(torch.float64)
    elif split == "random":
        generator = torch.Generator().manual_seed(seed)
        for column in range(n_splits):
            indicators[torch.randperm(m, generator=generator)[:half], column] = 1.0
    else:
        raise EmbeddingInputError(f"split must be 'contiguous' or 'random', got {split!r}")
    return indicators


def calibrate_effect_thresholds(
    reference: Any,
    *,
    row_index: np.ndarray | None = None,
    n_splits: int = 20,
    split: SplitKind = "contiguous",
    quantile: float = 0.95,
    margin: float = 1.0,
    bandwidth: float | None = None,
    dimension_test: DimensionTest = "ks",
    alpha: float = 0.05,
    psi_threshold: float = 0.2,
    psi_bins: int = 10,
    seed: int = 0,
    device: Device = "auto",
) -> EffectCalibration:
    """Thresholds for mmd2, mean_cosine_distance and drifted_dim_share from splits of `reference`.

    `reference` is a sample of rows (a summary's `sample`, say) and `row_index` their positions in
    the reference file (default: their order), which contiguous splits follow. Each threshold is the
    `quantile` of the split values times `margin`. `bandwidth` defaults to the median heuristic on the
    reference, as in `mmd_test`: use the same one for the drift test.
    """
    check_count(n_splits, name="n_splits")
    dev = resolve_device(device)
    with torch.inference_mode():
        x = as_matrix(reference, device=dev, dtype=torch.float32, name="reference")
        index = np.arange(x.shape[0]) if row_index is None else np.asarray(row_index)
        if index.shape != (x.shape[0],):
            raise EmbeddingInputError("row_index must have one entry per reference row")
        sigma = median_bandwidth(x, seed=seed, device=dev) if bandwidth is None else bandwidth
        indicators = split_indicators(index, n_splits, split=split, seed=seed).to(dev)
        null = {
            "mmd2": _split_mmd2(x, indicators, sigma),
            "mean_cosine_distance": _split_mean_cosine(x.to(torch.float64), indicators),
            "drifted_dim_share": _split_dimension_share(
                x.to(torch.float64), indicators, dimension_test, alpha, psi_threshold, psi_bins
            ),
        }
    thresholds = {name: float(np.quantile(values, quantile)) * margin for name, values in null.items()}
    return EffectCalibration(thresholds, null, float(sigma), split, n_splits, quantile, margin)


def _split_mmd2(x: torch.Tensor, indicators: torch.Tensor, sigma: float) -> np.ndarray:
    quadratic, linear, total = kernel_sums(x, indicators, gamma=1.0 / (2.0 * sigma * sigma))
    sizes = indicators.sum(dim=0)
    return unbiased_mmd2(quadratic, linear, total, m=sizes, n=x.shape[0]).cpu().numpy()


def _split_mean_cosine(x: torch.Tensor, indicators: torch.Tensor) -> np.ndarray:
    sizes = indicators.sum(dim=0)[:, None]
    first = indicators.T @ x
    second = x.sum(dim=0)[None, :] - first
    cosine = torch.nn.functional.cosine_similarity(first / sizes, second / (x.shape[0] - sizes), dim=1)
    return (1.0 - cosine).cpu().numpy()


def _split_dimension_share(
    x: torch.Tensor,
    indicators: torch.Tensor,
    dimension_test: DimensionTest,
    alpha: float,
    psi_threshold: float,
    psi_bins: int,
) -> np.ndarray:
    members = indicators.to(torch.bool)
    if dimension_test == "psi":
        return np.array(
            [
                float((psi_statistics(x[col], x[~col], bins=psi_bins) > psi_threshold).mean())
                for col in members.T
            ]
        )
    statistics = _split_ks_statistics(x, indicators)
    sizes = indicators.sum(dim=0).cpu().numpy().astype(int)
    shares = []
    for column, size in enumerate(sizes):
        # Exact where a decision at alpha can depend on it, the fast approximation elsewhere.
        p_values = ks_p_values(statistics[column], int(size), x.shape[0] - int(size), exact_below=alpha + 0.1)
        shares.append(float(adjust_p_values(p_values, method="bh", alpha=alpha)[1].mean()))
    return np.array(shares)


def _split_ks_statistics(x: torch.Tensor, indicators: torch.Tensor) -> np.ndarray:
    """KS D of every split (rows) and dimension (columns), sorting each dimension once."""
    m = x.shape[0]
    sizes = indicators.sum(dim=0).to(torch.int64).tolist()
    members = indicators.to(torch.bool)
    result = np.empty((indicators.shape[1], x.shape[1]))
    columns = max(1, _DIM_BLOCK_ELEMENTS // m)
    for lo in range(0, x.shape[1], columns):
        values, order = torch.sort(x[:, lo : lo + columns], dim=0)
        for split, size in enumerate(sizes):
            result[split, lo : lo + columns] = ks_from_sorted(
                values, members[:, split][order], size, m - size
            )
    return result
