"""Embedding quality, collapse and drift monitors on PyTorch (CUDA when available, else the CPU).

The facade of the package; the computation lives in private modules. Importing it does not import
torch: the web process reads `evalcore.embeddings.specs` (the metric registry) and `MonitorParams`
without it, and the torch functions below load on first use.

- Streaming statistics: `summarize` walks an array or a `.npy` file in row chunks and keeps an
  `EmbeddingSummary` (count, mean, d x d scatter, sum of unit vectors, a seeded bottom-k row
  sample) in O(d^2 + k d) memory; `merge_summaries` merges the summaries of disjoint row ranges into
  the summary of their union (what several workers compute in parallel and one task merges).
- Quality and collapse: `quality_metrics` (partition isotropy, effective dimensionality, top-10/50
  variance share, average cosine in O(n d), uniformity, dead dimensions, effective and stable rank),
  `alignment`, `uniformity`, `avg_cosine_similarity`, `covariance_metrics`.
- Drift: `mmd_test` (unbiased MMD^2, RBF kernel, every permutation in one kernel pass),
  `drifted_dimensions` (KS with Benjamini-Hochberg, or PSI), `domain_classifier_auc`,
  `mean_cosine_distance`, and `calibrate_effect_thresholds` (effect sizes of reference-versus-
  reference splits, for rules that require a p-value AND an effect).
- The suite: `evaluate_embeddings(reference, current, params=MonitorParams())` returns an
  `EmbeddingReport` whose `alerts()` applies `evalcore.alerts.DEFAULT_EMBEDDING_RULES`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from evalcore.embeddings._params import PARAM_BOUNDS, Bound, MonitorParams
from evalcore.embeddings._validation import EmbeddingInputError
from evalcore.embeddings.specs import COLLAPSE_METRICS, DRIFT_METRICS, METRIC_SPECS, QUALITY_METRICS

if TYPE_CHECKING:
    from evalcore.embeddings._calibration import EffectCalibration, calibrate_effect_thresholds
    from evalcore.embeddings._device import resolve_device
    from evalcore.embeddings._drift import (
        DimensionDrift,
        domain_classifier_auc,
        drifted_dimensions,
        mean_cosine_distance,
        roc_auc,
    )
    from evalcore.embeddings._mmd import MMDResult, median_bandwidth, mmd_test
    from evalcore.embeddings._monitor import (
        EmbeddingReport,
        calibrate,
        drift_metrics,
        evaluate_embeddings,
        snapshot_quality,
    )
    from evalcore.embeddings._quality import (
        alignment,
        avg_cosine_similarity,
        covariance_metrics,
        quality_metrics,
        uniformity,
    )
    from evalcore.embeddings._source import NpyFile, open_npy
    from evalcore.embeddings._summary import (
        EmbeddingSummary,
        load_summary,
        merge_summaries,
        save_summary,
        summarize,
    )

_LAZY = {
    "EffectCalibration": "_calibration",
    "calibrate_effect_thresholds": "_calibration",
    "resolve_device": "_device",
    "DimensionDrift": "_drift",
    "domain_classifier_auc": "_drift",
    "drifted_dimensions": "_drift",
    "mean_cosine_distance": "_drift",
    "roc_auc": "_drift",
    "MMDResult": "_mmd",
    "median_bandwidth": "_mmd",
    "mmd_test": "_mmd",
    "EmbeddingReport": "_monitor",
    "calibrate": "_monitor",
    "snapshot_quality": "_monitor",
    "drift_metrics": "_monitor",
    "evaluate_embeddings": "_monitor",
    "alignment": "_quality",
    "avg_cosine_similarity": "_quality",
    "covariance_metrics": "_quality",
    "quality_metrics": "_quality",
    "uniformity": "_quality",
    "NpyFile": "_source",
    "open_npy": "_source",
    "EmbeddingSummary": "_summary",
    "load_summary": "_summary",
    "merge_summaries": "_summary",
    "save_summary": "_summary",
    "summarize": "_summary",
}

__all__ = [
    "COLLAPSE_METRICS",
    "DRIFT_METRICS",
    "METRIC_SPECS",
    "PARAM_BOUNDS",
    "QUALITY_METRICS",
    "Bound",
    "DimensionDrift",
    "EffectCalibration",
    "EmbeddingInputError",
    "EmbeddingReport",
    "EmbeddingSummary",
    "MMDResult",
    "MonitorParams",
    "NpyFile",
    "alignment",
    "avg_cosine_similarity",
    "calibrate",
    "calibrate_effect_thresholds",
    "covariance_metrics",
    "domain_classifier_auc",
    "drift_metrics",
    "drifted_dimensions",
    "evaluate_embeddings",
    "load_summary",
    "mean_cosine_distance",
    "median_bandwidth",
    "merge_summaries",
    "mmd_test",
    "open_npy",
    "quality_metrics",
    "resolve_device",
    "roc_auc",
    "save_summary",
    "snapshot_quality",
    "summarize",
    "uniformity",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
