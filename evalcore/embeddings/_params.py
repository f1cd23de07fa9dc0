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
class Bound:
    """What one parameter of `MonitorParams` accepts: an integer in [minimum, maximum] (`count`), a finite
    number above zero (`positive`), one strictly between 0 and 1 (`probability`), one in (0, 1]
    (`share`), or one of `choices`. `optional`: None is accepted too. The forms read it to show the bounds.

    >>> Bound("count", minimum=2, maximum=10).text()
    'an integer from 2 to 10'
    >>> Bound("share").text()
    'a number above 0, at most 1'
    """

    kind: Literal["count", "positive", "probability", "share", "choice"]
    minimum: int = 1
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    optional: bool = False

    def check(self, value: Any, *, name: str) -> None:
        if value is None and self.optional:
            return
        if self.kind == "count":
            check_count(value, name=name, minimum=self.minimum, maximum=self.maximum)
        elif self.kind == "positive":
            check_positive(value, name=name)
        elif self.kind == "probability":
            check_probability(value, name=name)
        elif self.kind == "share":
            if not (isinstance(value, int | float) and 0.0 < value <= 1.0):
                raise EmbeddingInputError(f"{name} must be in (0, 1], got {value!r}")
        elif value not in self.choices:
            raise EmbeddingInputError(f"{name} must be {' or '.join(map(repr, self.choices))}, got {value!r}")

    def text(self) -> str:
        """The bound in words, for a form's help text."""
        if self.kind == "count":
            top = f" to {self.maximum:,}" if self.maximum is not None else " or more"
            return f"an integer from {self.minimum:,}{top}"
        if self.kind == "positive":
            return "a number above 0" + (", or empty (chosen from the data)" if self.optional else "")
        if self.kind == "probability":
            return "a number strictly between 0 and 1"
        if self.kind == "share":
            return "a number above 0, at most 1"
        return "one of " + ", ".join(self.choices)


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
        for name, bound in PARAM_BOUNDS.items():
            bound.check(getattr(self, name), name=name)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Every parameter's bound, checked by `MonitorParams` and shown by the stream form (declared once here).
PARAM_BOUNDS: dict[str, Bound] = {
    "sample_size": Bound("count", minimum=4, maximum=MAX_SAMPLE_ROWS),
    "chunk_rows": Bound("count", maximum=MAX_SAMPLE_ROWS),
    "dead_threshold": Bound("positive"),
    "uniformity_t": Bound("positive"),
    "uniformity_pairs": Bound("count", maximum=MAX_SAMPLE_ROWS),
    "mmd_sample_size": Bound("count", minimum=2, maximum=MAX_MMD_ROWS),
    "n_permutations": Bound("count", minimum=0, maximum=MAX_PERMUTATIONS),
    "bandwidth": Bound("positive", optional=True),
    "dimension_test": Bound("choice", choices=("ks", "psi")),
    "alpha": Bound("probability"),
    "psi_threshold": Bound("positive"),
    "psi_bins": Bound("count", minimum=2, maximum=MAX_BINS),
    "classifier_test_share": Bound("probability"),
    "classifier_l2": Bound("positive"),
    "calibration_splits": Bound("count", maximum=MAX_SPLITS),
    "calibration_split": Bound("choice", choices=("contiguous", "random")),
    "calibration_quantile": Bound("share"),
    "calibration_margin": Bound("positive"),
}
