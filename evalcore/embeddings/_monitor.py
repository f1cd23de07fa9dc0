"""The monitor suite: quality of each snapshot, drift between them, effect thresholds, alerts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalcore.alerts import DEFAULT_EMBEDDING_RULES, AlertRule, Firing, evaluate_rules
from evalcore.embeddings._calibration import EffectCalibration, calibrate_effect_thresholds
from evalcore.embeddings._device import Device, resolve_device
from evalcore.embeddings._drift import (
    DimensionDrift,
    domain_classifier_auc,
    drifted_dimensions,
    mean_cosine_distance,
)
from evalcore.embeddings._mmd import MMDResult, median_bandwidth, mmd_test
from evalcore.embeddings._params import MonitorParams
from evalcore.embeddings._quality import quality_metrics
from evalcore.embeddings._source import as_source
from evalcore.embeddings._summary import EmbeddingSummary, Progress, summarize
from evalcore.embeddings._validation import check_same_dim

Section = str  # "reference", "current" or "drift"
DEFAULT_PARAMS = MonitorParams()


@dataclass(frozen=True)
class EmbeddingReport:
    """Metric values by section, with the details behind the drift figures."""

    reference: dict[str, float]
    current: dict[str, float] | None = None
    drift: dict[str, float] | None = None
    calibration: EffectCalibration | None = None
    mmd: MMDResult | None = None
    dimensions: DimensionDrift | None = None

    def sections(self) -> dict[Section, dict[str, float]]:
        found = {"reference": self.reference, "current": self.current, "drift": self.drift}
        return {name: values for name, values in found.items() if values is not None}

    def alerts(self, rules: Iterable[AlertRule] = DEFAULT_EMBEDDING_RULES) -> list[tuple[Section, Firing]]:
        """Each section's firings; drift rules get the calibrated effect thresholds."""
        rules = tuple(rules)
        thresholds = None if self.calibration is None else self.calibration.thresholds
        return [
            (name, firing)
            for name, values in self.sections().items()
            for firing in evaluate_rules(values, rules, effect_thresholds=thresholds)
        ]


def summarize_snapshot(
    embeddings: Any,
    *,
    params: MonitorParams = DEFAULT_PARAMS,
    device: Device = "auto",
    progress: Progress | None = None,
) -> EmbeddingSummary:
    """A snapshot's summary with the monitor's sample size, seed and chunking."""
    if isinstance(embeddings, EmbeddingSummary):
        return embeddings
    return summarize(
        embeddings,
        sample_size=params.sample_size,
        seed=params.seed,
        chunk_rows=params.chunk_rows,
        device=device,
        progress=progress,
    )


def snapshot_quality(summary: EmbeddingSummary, *, params: MonitorParams, device: Device) -> dict[str, float]:
    return quality_metrics(
        summary,
        dead_threshold=params.dead_threshold,
        dead_relative=params.dead_relative,
        uniformity_t=params.uniformity_t,
        uniformity_pairs=params.uniformity_pairs,
        seed=params.seed,
        device=device,
    )


def calibrate(reference: EmbeddingSummary, *, params: MonitorParams, device: Device) -> EffectCalibration:
    """Effect thresholds from splits of the reference's sample, with the monitor's kernel."""
    return calibrate_effect_thresholds(
        reference.sample,
        row_index=reference.sample_index,
        n_splits=params.calibration_splits,
        split=params.calibration_split,
        quantile=params.calibration_quantile,
        margin=params.calibration_margin,
        bandwidth=params.bandwidth,
        dimension_test=params.dimension_test,
        alpha=params.alpha,
        psi_threshold=params.psi_threshold,
        psi_bins=params.psi_bins,
        seed=params.seed,
        device=device,
    )


def drift_metrics(
    reference: EmbeddingSummary,
    current: EmbeddingSummary,
    *,
    params: MonitorParams = DEFAULT_PARAMS,
    bandwidth: float | None = None,
    device: Device = "auto",
) -> tuple[dict[str, float], MMDResult, DimensionDrift]:
    """mmd2, mmd_p_value, mean_cosine_distance, drifted_dim_share and classifier_auc."""
    check_same_dim(reference.dim, current.dim)
    size = params.mmd_sample_size
    if bandwidth is None:
        bandwidth = params.bandwidth or median_bandwidth(reference.sample, seed=params.seed, device=device)
    mmd = mmd_test(
        reference.sample[:size],
        current.sample[:size],
        n_permutations=params.n_permutations,
        bandwidth=bandwidth,
        seed=params.seed,
        device=device,
    )
    dimensions = drifted_dimensions(
        reference.sample,
        current.sample,
        method=params.dimension_test,
        alpha=params.alpha,
        psi_threshold=params.psi_threshold,
        psi_bins=params.psi_bins,
        device=device,
    )
    values = {
        "mmd2": mmd.mmd2,
        "mmd_p_value": mmd.p_value,
        "mean_cosine_distance": mean_cosine_distance(reference.mean, current.mean),
        "drifted_dim_share": dimensions.share,
        "classifier_auc": domain_classifier_auc(
            reference.sample,
            current.sample,
            test_share=params.classifier_test_share,
            l2=params.classifier_l2,
            seed=params.seed,
            device=device,
        ),
    }
    return values, mmd, dimensions


def _checked_sources(reference: Any, current: Any) -> tuple[Any, Any]:
    """Open both inputs (a file's header only) and compare dimensions before reading any rows."""
    if not isinstance(reference, EmbeddingSummary):
        reference = as_source(reference, name="reference")
    if current is None:
        return reference, None
    if not isinstance(current, EmbeddingSummary):
        current = as_source(current, name="current")
    check_same_dim(reference.dim, current.dim)
    return reference, current


def evaluate_embeddings(
    reference: Any,
    current: Any = None,
    *,
    params: MonitorParams = DEFAULT_PARAMS,
    device: Device = "auto",
    progress: Progress | None = None,
) -> EmbeddingReport:
    """The whole suite: quality of the reference (and of the current set), and drift between them.

    `reference` and `current` are arrays, tensors, `.npy` paths or `EmbeddingSummary`s (merged from
    chunks computed elsewhere, say). Files are streamed in chunks of `params.chunk_rows` rows;
    `progress` is called with the rows done after each chunk.
    """
    dev = resolve_device(device)
    reference, current = _checked_sources(reference, current)
    ref = summarize_snapshot(reference, params=params, device=dev, progress=progress)
    ref_values = snapshot_quality(ref, params=params, device=dev)
    if current is None:
        return EmbeddingReport(reference=ref_values)
    cur = summarize_snapshot(current, params=params, device=dev, progress=progress)
    calibration = calibrate(ref, params=params, device=dev)
    drift, mmd, dimensions = drift_metrics(
        ref, cur, params=params, bandwidth=calibration.bandwidth, device=dev
    )
    return EmbeddingReport(
        reference=ref_values,
        current=snapshot_quality(cur, params=params, device=dev),
        drift=drift,
        calibration=calibration,
        mmd=mmd,
        dimensions=dimensions,
    )
