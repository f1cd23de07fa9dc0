"""Quality and collapse of one embedding set: the covariance spectrum, cosine, uniformity, alignment.

Everything but uniformity comes from an `EmbeddingSummary`, so memory is O(d^2) whatever the number
of rows: the spectrum metrics from the d x d covariance, the average pairwise cosine from the sum of
the unit vectors. Uniformity needs pairs of rows, and takes them from the summary's bounded sample.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from evalcore.embeddings._device import Device, as_matrix, resolve_device
from evalcore.embeddings._summary import DEFAULT_SAMPLE_SIZE, EmbeddingSummary, summarize
from evalcore.embeddings._validation import EmbeddingInputError, check_count, check_positive

DEFAULT_DEAD_THRESHOLD = 0.01
DEFAULT_UNIFORMITY_T = 2.0
DEFAULT_UNIFORMITY_PAIRS = 100_000
_PAIR_CHUNK = 8192
_ROW_BLOCK = 1024
_EPS = 1e-12


def quality_metrics(
    embeddings: Any,
    *,
    dead_threshold: float = DEFAULT_DEAD_THRESHOLD,
    dead_relative: bool = True,
    uniformity_t: float = DEFAULT_UNIFORMITY_T,
    uniformity_pairs: int = DEFAULT_UNIFORMITY_PAIRS,
    sample_size: int = DEFAULT_SAMPLE_SIZE,
    seed: int = 0,
    device: Device = "auto",
) -> dict[str, float]:
    """Every quality and collapse metric of `embeddings` (an array, a `.npy` path or a summary).

    Uniformity is computed on the summary's sample (`sample_size` rows, seeded); everything else on
    all rows.
    """
    summary = (
        embeddings
        if isinstance(embeddings, EmbeddingSummary)
        else summarize(embeddings, sample_size=sample_size, seed=seed, device=device)
    )
    values = covariance_metrics(
        summary.covariance(), dead_threshold=dead_threshold, dead_relative=dead_relative, device=device
    )
    values["avg_cosine_similarity"] = avg_cosine_from_sums(summary.unit_sum, summary.unit_sq_sum, summary.n)
    values["uniformity"] = (
        uniformity(summary.sample, t=uniformity_t, n_pairs=uniformity_pairs, seed=seed, device=device)
        if summary.sample.shape[0] >= 2
        else math.nan
    )
    return values


def covariance_metrics(
    covariance: Any,
    *,
    dead_threshold: float = DEFAULT_DEAD_THRESHOLD,
    dead_relative: bool = True,
    device: Device = "auto",
) -> dict[str, float]:
    """The metrics of the covariance spectrum and diagonal.

    With eigenvalues `l_1 >= ... >= l_d >= 0` of the covariance (the variances along its principal
    axes) and `s_i = sqrt(l_i)` (proportional to the singular values of the centred data):

    - partition_isotropy: `d * l_d / sum(l)`, the smallest eigenvalue over the mean (seed 004's
      definition; 1 when every direction has the same variance, 0 when one has none);
    - effective_dim: the participation ratio `sum(l)^2 / sum(l^2)`, and effective_dim_ratio `/ d`;
    - top10_variance_ratio, top50_variance_ratio: the share of `sum(l)` in the top 10 or 50;
    - effective_rank: `exp(H(p))` with `p_i = s_i / sum(s)` (Roy & Vetterli 2007; RankMe), and
      effective_rank_ratio `/ d`;
    - stable_rank: `sum(s^2) / max(s)^2 = sum(l) / l_1` (Rudelson & Vershynin);
    - dead_dims: coordinates whose variance is below `dead_threshold` times the mean coordinate
      variance (`dead_relative`, the default) or below `dead_threshold` itself (seed 004's absolute
      form), and dead_dim_ratio `/ d`. Both give seed 004's 206/256 and 0/256; only the relative one
      is scale-free: unit-normalised 768-d embeddings have coordinate variances near 1/768, all
      "dead" by an absolute 0.01.

    Eigenvalues below `l_1 * d * eps` (float64 rounding of the eigensolver) count as zero.
    """
    dev = resolve_device(device)
    cov = torch.as_tensor(np.asarray(covariance), dtype=torch.float64, device=dev)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise EmbeddingInputError(f"covariance must be square, got shape {tuple(cov.shape)}")
    dim = cov.shape[0]
    variances = torch.diagonal(cov)
    limit = dead_threshold * float(variances.mean()) if dead_relative else dead_threshold
    dead = int(((variances < limit) | (variances <= 0.0)).sum())  # no variance: dead at any threshold
    values = spectrum_metrics(torch.linalg.eigvalsh(cov).flip(0))
    values["dead_dims"] = float(dead)
    values["dead_dim_ratio"] = dead / dim
    return values


def spectrum_metrics(eigenvalues: torch.Tensor) -> dict[str, float]:
    """The spectrum metrics from covariance eigenvalues in descending order (see covariance_metrics)."""
    dim = eigenvalues.shape[0]
    top = eigenvalues[0].clamp_min(0.0)
    lam = torch.where(eigenvalues > top * dim * torch.finfo(torch.float64).eps, eigenvalues, 0.0)
    total = lam.sum()
    if float(total) <= 0.0:
        names = (
            "partition_isotropy",
            "effective_dim",
            "effective_dim_ratio",
            "top10_variance_ratio",
            "top50_variance_ratio",
            "effective_rank",
            "effective_rank_ratio",
            "stable_rank",
        )
        return dict.fromkeys(names, math.nan)
    sigma = lam.sqrt()
    p = sigma / sigma.sum()
    effective_dim = float(total.square() / lam.square().sum())
    effective_rank = float(torch.exp(-torch.special.xlogy(p, p).sum()))
    return {
        "partition_isotropy": float(dim * lam[-1] / total),
        "effective_dim": effective_dim,
        "effective_dim_ratio": effective_dim / dim,
        "top10_variance_ratio": float(lam[:10].sum() / total),
        "top50_variance_ratio": float(lam[:50].sum() / total),
        "effective_rank": effective_rank,
        "effective_rank_ratio": effective_rank / dim,
        "stable_rank": float(total / lam[0]),
    }


def avg_cosine_from_sums(unit_sum: np.ndarray, unit_sq_sum: float, n: int) -> float:
    """Mean cosine over the `n (n - 1)` ordered pairs of distinct rows, in O(d).

    With unit vectors `u_i`, `sum_{i != j} u_i . u_j = |sum u_i|^2 - sum |u_i|^2`. Zero vectors have
    cosine 0 with everything (as `torch.nn.functional.normalize` makes them).
    """
    if n < 2:
        return math.nan
    return float((np.dot(unit_sum, unit_sum) - unit_sq_sum) / (n * (n - 1)))


def avg_cosine_similarity(embeddings: Any, *, device: Device = "auto") -> float:
    """Average pairwise cosine similarity of distinct rows, from the sum of the unit vectors."""
    summary = summarize(embeddings, sample_size=0, device=device)
    return avg_cosine_from_sums(summary.unit_sum, summary.unit_sq_sum, summary.n)


def _unit_rows(embeddings: Any, device: torch.device) -> torch.Tensor:
    x = as_matrix(embeddings, device=device, dtype=torch.float64, name="embeddings")
    return F.normalize(x, dim=1, eps=_EPS)


def uniformity(
    embeddings: Any,
    *,
    t: float = DEFAULT_UNIFORMITY_T,
    n_pairs: int = DEFAULT_UNIFORMITY_PAIRS,
    seed: int = 0,
    device: Device = "auto",
) -> float:
    """Wang & Isola's uniformity `log E[exp(-t |u - v|^2)]` over pairs of distinct normalised rows.

    Lower is more uniform; the range is `[-4t, 0]`. All `n (n - 1) / 2` pairs are used when there are
    at most `n_pairs` of them, else `n_pairs` pairs drawn uniformly with `seed` (the same on every
    device). The sampled estimate's standard error is about `0.36 / sqrt(n_pairs)` for random
    128-d vectors at t = 2.
    """
    check_positive(t, name="t")
    check_count(n_pairs, name="n_pairs")
    dev = resolve_device(device)
    with torch.inference_mode():
        u = _unit_rows(embeddings, dev)
        m = u.shape[0]
        if m < 2:
            raise EmbeddingInputError("uniformity needs at least 2 rows")
        if m * (m - 1) // 2 <= n_pairs:
            return _uniformity_all_pairs(u, t)
        generator = torch.Generator().manual_seed(seed)
        first = torch.randint(0, m, (n_pairs,), generator=generator)
        # j = i + offset (mod m) with offset in 1..m-1: a uniform pair of distinct rows, no rejection.
        second = (first + torch.randint(1, m, (n_pairs,), generator=generator)) % m
        # Gathering pairs is memory-bound: float32 halves it, and a squared distance of unit vectors
        # (at most 4) keeps about 1e-7 of relative precision, far below the sampling noise.
        u32 = u.to(torch.float32)
        lse = torch.tensor(-math.inf, dtype=torch.float64, device=dev)
        for lo in range(0, n_pairs, _PAIR_CHUNK):
            a = first[lo : lo + _PAIR_CHUNK].to(dev)
            b = second[lo : lo + _PAIR_CHUNK].to(dev)
            sq = (u32[a] - u32[b]).square().sum(dim=1, dtype=torch.float64)
            lse = torch.logaddexp(lse, torch.logsumexp(-t * sq, dim=0))
        return float(lse) - math.log(n_pairs)


def _uniformity_all_pairs(u: torch.Tensor, t: float) -> float:
    m = u.shape[0]
    sq_norms = u.square().sum(dim=1)
    lse = torch.tensor(-math.inf, dtype=torch.float64, device=u.device)
    for lo in range(0, m, _ROW_BLOCK):
        hi = min(lo + _ROW_BLOCK, m)
        sq = (sq_norms[lo:hi, None] + sq_norms[None, lo:] - 2.0 * u[lo:hi] @ u[lo:].T).clamp_min(0.0)
        upper = torch.ones_like(sq, dtype=torch.bool).triu(diagonal=1)  # pairs j > i only
        lse = torch.logaddexp(lse, torch.logsumexp(-t * sq[upper], dim=0))
    return float(lse) - math.log(m * (m - 1) / 2)


def alignment(
    embeddings: Any,
    *,
    positive_pairs: Any = None,
    labels: Any = None,
    alpha: float = 2.0,
    max_per_class: int | None = None,
    device: Device = "auto",
) -> float:
    """Wang & Isola's alignment `E[|u - v|^alpha]` over positive pairs of normalised rows (lower is better).

    Give either `positive_pairs`, an (p, 2) array of row indices, or `labels`, one class per row:
    then every pair of distinct rows of a class is positive, and the mean over them is computed in
    O(n d) from each class's sum of unit vectors (`sum_{i<j} |u_i - u_j|^2 = n_c sum |u_i|^2 -
    |sum u_i|^2`), so labels need `alpha` = 2. `max_per_class` keeps only the first rows of each
    class (in row order), as seed 004's example does with 50.
    """
    if (positive_pairs is None) == (labels is None):
        raise EmbeddingInputError("give exactly one of positive_pairs and labels")
    check_positive(alpha, name="alpha")
    dev = resolve_device(device)
    with torch.inference_mode():
        u = _unit_rows(embeddings, dev)
        if positive_pairs is not None:
            return _alignment_of_pairs(u, positive_pairs, alpha)
        if alpha != 2.0:
            raise EmbeddingInputError("alignment from labels needs alpha=2; pass positive_pairs for another")
        return _alignment_of_classes(u, labels, max_per_class)


def _alignment_of_pairs(u: torch.Tensor, positive_pairs: Any, alpha: float) -> float:
    pairs = np.asarray(positive_pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] == 0 or pairs.dtype.kind not in "iu":
        raise EmbeddingInputError("positive_pairs must be a non-empty (p, 2) array of row indices")
    if pairs.min() < 0 or pairs.max() >= u.shape[0]:
        raise EmbeddingInputError(f"positive_pairs has a row index outside 0..{u.shape[0] - 1}")
    index = torch.as_tensor(pairs.astype(np.int64), device=u.device)
    total = torch.zeros((), dtype=torch.float64, device=u.device)
    for lo in range(0, index.shape[0], _PAIR_CHUNK):
        block = index[lo : lo + _PAIR_CHUNK]
        sq = (u[block[:, 0]] - u[block[:, 1]]).square().sum(dim=1)
        total += sq.pow(alpha / 2.0).sum()
    return float(total) / index.shape[0]


def _alignment_of_classes(u: torch.Tensor, labels: Any, max_per_class: int | None) -> float:
    label_array = np.asarray(labels)
    if label_array.shape != (u.shape[0],):
        raise EmbeddingInputError(
            f"labels must have one entry per row ({u.shape[0]}), got {label_array.shape}"
        )
    _, codes = np.unique(label_array, return_inverse=True)
    keep = np.ones(codes.size, dtype=bool)
    if max_per_class is not None:
        check_count(max_per_class, name="max_per_class", minimum=2)
        order = np.argsort(codes, kind="stable")
        starts = np.searchsorted(codes[order], codes[order])
        keep[order] = np.arange(codes.size) - starts < max_per_class
    code_tensor = torch.as_tensor(codes[keep].astype(np.int64), device=u.device)
    kept = u[torch.as_tensor(np.flatnonzero(keep), device=u.device)]
    n_classes = int(codes.max()) + 1
    sums = torch.zeros((n_classes, u.shape[1]), dtype=torch.float64, device=u.device)
    sums.index_add_(0, code_tensor, kept)
    sq = torch.zeros(n_classes, dtype=torch.float64, device=u.device)
    sq.index_add_(0, code_tensor, kept.square().sum(dim=1))
    counts = torch.bincount(code_tensor, minlength=n_classes).to(torch.float64)
    pairs = float((counts * (counts - 1) / 2).sum())
    if pairs == 0:
        raise EmbeddingInputError("no class has two rows: there is no positive pair")
    return float((counts * sq - sums.square().sum(dim=1)).sum()) / pairs
