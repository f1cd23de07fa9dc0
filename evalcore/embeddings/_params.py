"""The embedding monitor's parameters, declared once (the command, the jobs and the models read them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from evalcore.embeddings._validation import (
    EmbeddingInputError,
    check_count,
    check_positive,
    check_probability,
)

SplitKind = Literal["contiguous", "random"]

MAX_SAMPLE_ROWS = 10_000_000
MAX_MMD_ROWS = 100_000  # MMD's kernel is quadratic in these rows (built in panels, never whole)
MAX_PERMUTATIONS = 100_000
MAX_BINS = 10_000
MAX_SPLITS = 1_000


@dataclass(frozen=True)
class MonitorParams:
    """Options of `evaluate_embeddings`, with their defaults.

    Moments (mean, covariance, cosine sums) use every row. The statistics that need rows use a
    seeded bottom-k sample of `sample_size` rows per snapshot: uniformity, the per-dimension tests
    and the domain classifier on all of it, MMD on its first `mmd_sample_size` rows a side. The
    effect-size thresholds are calibrated from `calibration_splits` splits of the reference sample
    into halves: with the defaults, halves of 5,000 rows, the size MMD compares.
    """

    sample_size: int = 10_000
    seed: int = 0
    chunk_rows: int = 8192
    # quality
    dead_threshold: float = 0.01
    #: True: dead below dead_threshold x the mean coordinate variance (scale-free); False: absolute.
    dead_relative: bool = True
    uniformity_t: float = 2.0
    uniformity_pairs: int = 100_000
    # drift
    mmd_sample_size: int = 5_000
    # The smallest p-value is 1 / (1 + n_permutations): 200 resolve the default rule's p < 0.01.
    n_permutations: int = 200
    bandwidth: float | None = None
    dimension_test: Literal["ks", "psi"] = "ks"
    alpha: float = 0.05
    psi_threshold: float = 0.2
    psi_bins: int = 10
    classifier_test_share: float = 0.3
    classifier_l2: float = 1e-2
    # effect-size calibration
    calibration_splits: int = 20
    calibration_split: SplitKind = "contiguous"
    calibration_quantile: float = 0.95
    calibration_margin: float = 1.0

    def __post_init__(self) -> None:
        # Upper bounds on what sets the work: a stream's stored parameters run on every snapshot, so a
        # typo such as 2**40 permutations must be refused up front, not found by a job that never ends.
        check_count(self.sample_size, name="sample_size", minimum=4, maximum=MAX_SAMPLE_ROWS)
        check_count(self.chunk_rows, name="chunk_rows", maximum=MAX_SAMPLE_ROWS)
        check_positive(self.dead_threshold, name="dead_threshold")
        check_positive(self.uniformity_t, name="uniformity_t")
        check_count(self.uniformity_pairs, name="uniformity_pairs", maximum=MAX_SAMPLE_ROWS)
        check_count(self.mmd_sample_size, name="mmd_sample_size", minimum=2, maximum=MAX_MMD_ROWS)
        check_count(self.n_permutations, name="n_permutations", minimum=0, maximum=MAX_PERMUTATIONS)
        if self.bandwidth is not None:
            check_positive(self.bandwidth, name="bandwidth")
        if self.dimension_test not in ("ks", "psi"):
            raise EmbeddingInputError(f"dimension_test must be 'ks' or 'psi', got {self.dimension_test!r}")
        check_probability(self.alpha, name="alpha")
        check_positive(self.psi_threshold, name="psi_threshold")
        check_count(self.psi_bins, name="psi_bins", minimum=2, maximum=MAX_BINS)
        check_probability(self.classifier_test_share, name="classifier_test_share")
        check_positive(self.classifier_l2, name="classifier_l2")
        check_count(self.calibration_splits, name="calibration_splits", maximum=MAX_SPLITS)
        if self.calibration_split not in ("contiguous", "random"):
            raise EmbeddingInputError(
                f"calibration_split must be 'contiguous' or 'random', got {self.calibration_split!r}"
            )
        if not 0.0 < self.calibration_quantile <= 1.0:
            raise EmbeddingInputError(
                f"calibration_quantile must be in (0, 1], got {self.calibration_quantile!r}"
            )
        check_positive(self.calibration_margin, name="calibration_margin")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
