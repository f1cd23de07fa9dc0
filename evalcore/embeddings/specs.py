"""The embedding family's metrics, declared once for the platform-wide registry.

Importing this module does not import torch (the web process reads the registry): each kernel
imports the computation when it is called. Kernels take the family's signatures:
`kernel(embeddings, **options) -> float` for the quality metrics (an array, a `.npy` path or an
`EmbeddingSummary`; options as `quality_metrics`), `kernel(embeddings, positive_pairs=... or
labels=...) -> float` for alignment, and `kernel(reference, current, **options) -> float` for the
drift metrics (options as `MonitorParams`).

>>> spec = next(s for s in METRIC_SPECS if s.name == "effective_rank_ratio")
>>> spec.family, spec.direction, spec.range
('embedding', 'higher', (0.0, 1.0))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalcore.metrics import Direction, MetricSpec

__all__ = [
    "COLLAPSE_METRICS",
    "DRIFT_METRICS",
    "DRIFT_SPECS",
    "METRIC_SPECS",
    "QUALITY_METRICS",
    "QUALITY_SPECS",
]


def _quality_kernel(name: str) -> Callable[..., float]:
    def kernel(embeddings: Any, **options: Any) -> float:
        from evalcore.embeddings._quality import quality_metrics

        return quality_metrics(embeddings, **options)[name]

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _alignment_kernel(embeddings: Any, **options: Any) -> float:
    from evalcore.embeddings._quality import alignment

    return alignment(embeddings, **options)


def _drift_kernel(name: str) -> Callable[..., float]:
    def kernel(reference: Any, current: Any, *, device: Any = "auto", **options: Any) -> float:
        from evalcore.embeddings._monitor import drift_metrics, summarize_snapshot
        from evalcore.embeddings._params import MonitorParams

        params = MonitorParams(**options)
        ref = summarize_snapshot(reference, params=params, device=device)
        cur = summarize_snapshot(current, params=params, device=device)
        return drift_metrics(ref, cur, params=params, device=device)[0][name]

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _spec(
    name: str,
    label: str,
    direction: Direction,
    definition: str,
    *,
    range: tuple[float | None, float | None] | None = (0.0, 1.0),
    unit: str = "",
    aliases: tuple[str, ...] = (),
    kernel: Callable[..., float] | None = None,
) -> MetricSpec:
    return MetricSpec(
        name=name,
        label=label,
        family="embedding",
        direction=direction,
        definition=definition,
        kernel=kernel or _quality_kernel(name),
        range=range,
        unit=unit,
        aliases=aliases,
    )


QUALITY_SPECS: tuple[MetricSpec, ...] = (
    _spec(
        "partition_isotropy", "Partition isotropy", "higher",
        "d * l_min / sum(l) over the covariance eigenvalues l: the smallest variance over the mean "
        "(seed 004); 1 when every direction has equal variance",
    ),
    _spec(
        "effective_dim", "Effective dimensionality", "higher",
        "participation ratio sum(l)^2 / sum(l^2) of the covariance eigenvalues l",
        range=(0.0, None), unit="dimensions",
    ),
    _spec(
        "effective_dim_ratio", "Effective dimensionality ratio", "higher",
        "effective_dim / d",
    ),
    _spec(
        "top10_variance_ratio", "Top-10 variance share", "lower",
        "share of the total variance in the 10 largest covariance eigenvalues",
    ),
    _spec(
        "top50_variance_ratio", "Top-50 variance share", "lower",
        "share of the total variance in the 50 largest covariance eigenvalues",
    ),
    _spec(
        "avg_cosine_similarity", "Average cosine similarity", "lower",
        "mean cosine over pairs of distinct rows, (|sum u_i|^2 - sum |u_i|^2) / (n (n - 1)) with "
        "u_i = x_i / |x_i|: O(n d), never the n x n matrix",
        range=(-1.0, 1.0),
    ),
    _spec(
        "uniformity", "Uniformity (t=2)", "lower",
        "log E[exp(-t |u - v|^2)] over pairs of distinct normalised rows (Wang & Isola 2020), t = 2, on "
        "seeded sampled pairs of a bounded row sample",
        range=(-8.0, 0.0),
    ),
    _spec(
        "alignment", "Alignment", "lower",
        "E[|u - v|^2] over positive pairs of normalised rows (Wang & Isola 2020), from given pairs or "
        "every same-label pair (O(n d))",
        range=(0.0, 4.0), kernel=_alignment_kernel,
    ),
    _spec(
        "dead_dims", "Dead dimensions", "lower",
        "coordinates whose variance (ddof 1) is below 0.01 x the mean coordinate variance (or, "
        "absolute, below 0.01 as in seed 004)",
        range=(0.0, None), unit="dimensions",
    ),
    _spec(
        "dead_dim_ratio", "Dead dimension ratio", "lower",
        "dead_dims / d",
    ),
    _spec(
        "effective_rank", "Effective rank", "higher",
        "exp of the entropy of p_i = s_i / sum(s), s the singular values of the centred rows (Roy & "
        "Vetterli 2007; RankMe)",
        range=(0.0, None), unit="dimensions", aliases=("rankme",),
    ),
    _spec(
        "effective_rank_ratio", "Effective rank ratio", "higher",
        "effective_rank / d",
    ),
    _spec(
        "stable_rank", "Stable rank", "higher",
        "sum(s^2) / max(s)^2 = sum(l) / l_max (Rudelson & Vershynin)",
        range=(0.0, None), unit="dimensions",
    ),
)  # fmt: skip

DRIFT_SPECS: tuple[MetricSpec, ...] = (
    _spec(
        "mmd2", "MMD²", "lower",
        "unbiased squared maximum mean discrepancy, RBF kernel exp(-|x - y|^2 / (2 s^2)) with s the "
        "median distance within the reference, on seeded samples",
        range=(None, None), kernel=_drift_kernel("mmd2"),
    ),
    _spec(
        "mmd_p_value", "MMD permutation p-value", "higher",
        "(1 + #{permuted MMD² >= observed}) / (1 + permutations); small means drift",
        kernel=_drift_kernel("mmd_p_value"),
    ),
    _spec(
        "mean_cosine_distance", "Mean-embedding cosine distance", "lower",
        "1 - cos(mean of the reference rows, mean of the current rows)",
        range=(0.0, 2.0), kernel=_drift_kernel("mean_cosine_distance"),
    ),
    _spec(
        "drifted_dim_share", "Drifted dimension share", "lower",
        "share of dimensions whose two-sample KS test is significant after Benjamini-Hochberg at "
        "alpha 0.05 (or whose PSI exceeds 0.2)",
        kernel=_drift_kernel("drifted_dim_share"),
    ),
    _spec(
        "classifier_auc", "Domain classifier ROC-AUC", "lower",
        "held-out ROC-AUC of a logistic regression telling current from reference rows; 0.5 when "
        "they look alike",
        kernel=_drift_kernel("classifier_auc"),
    ),
)  # fmt: skip

#: Every embedding metric; registered as `evalcore.embeddings.specs:METRIC_SPECS`.
METRIC_SPECS: tuple[MetricSpec, ...] = QUALITY_SPECS + DRIFT_SPECS
QUALITY_METRICS: tuple[str, ...] = tuple(spec.name for spec in QUALITY_SPECS if spec.name != "alignment")
DRIFT_METRICS: tuple[str, ...] = tuple(spec.name for spec in DRIFT_SPECS)
#: The quality metrics that read the covariance spectrum or the coordinates' variance: what a dimensional
#: collapse moves (the dashboard's "collapse" group; the rest of QUALITY_METRICS is its "quality" group).
COLLAPSE_METRICS: tuple[str, ...] = tuple(
    name for name in QUALITY_METRICS if name not in ("uniformity", "avg_cosine_similarity")
)
