"""The parameters of evaluating and comparing runs, declared once (`ComparisonParams`), and the measures an
evaluation computes when it is not told (`DEFAULT_MEASURES`).

A module of its own, importing nothing heavy, so that the command-line tools that read files
(`eval_retrieval`) take their defaults from here without loading the statistics; `evalcore.comparison`
re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalCoreError

if TYPE_CHECKING:
    from evalcore.stats import CorrectionMethod, PairedTestName

#: What an evaluation computes when it is not told: trec_eval's headline measures and nDCG@10. (trec_eval's
#: own default, without `-m`, is `evalcore.retrieval.OFFICIAL_MEASURES`.)
DEFAULT_MEASURES: tuple[str, ...] = (
    "map",
    "ndcg_cut_10",
    "P_10",
    "recall_100",
    "recip_rank",
    "Rprec",
    "bpref",
)

#: The paired tests and the corrections of a family of p-values, in the order forms offer them.
TESTS: tuple[PairedTestName, ...] = ("t", "randomization", "wilcoxon")
CORRECTIONS: tuple[CorrectionMethod, ...] = ("holm", "bonferroni", "bh")


class ComparisonParamsError(EvalCoreError, ValueError):
    """Parameters of an evaluation or a comparison that cannot be used; `field` names the culprit."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


@dataclass(frozen=True)
class ComparisonParams:
    """How runs are evaluated and compared, declared once: the measures, trec_eval's `-l` (`rel_level`)
    and `-c` (`complete`), the paired test, the correction over the family of p-values, its significance
    level and the confidence of the intervals.

    The model's column defaults, the web form, the API serializer and `compare_runs` read their defaults
    (and the test and correction choices) from here; an evaluation uses `rel_level`, `complete` and
    `confidence` alone. Checked on construction:

    >>> ComparisonParams().alpha, ComparisonParams().measures
    (0.05, ('map', 'ndcg_cut_10'))
    >>> ComparisonParams(alpha=1.5)
    Traceback (most recent call last):
    ...
    evalcore.comparison_params.ComparisonParamsError: alpha must lie strictly between 0 and 1.
    """

    measures: tuple[str, ...] = ("map", "ndcg_cut_10")
    rel_level: int = 1
    complete: bool = False
    test: PairedTestName = "t"
    correction: CorrectionMethod = "holm"
    alpha: float = 0.05
    confidence: float = 0.95

    def __post_init__(self) -> None:
        object.__setattr__(self, "measures", tuple(self.measures))
        if not self.measures:
            raise ComparisonParamsError("measures", "Choose at least one measure.")
        if self.test not in TESTS:
            raise ComparisonParamsError("test", f"Unknown test {self.test!r}; choose {', '.join(TESTS)}.")
        if self.correction not in CORRECTIONS:
            raise ComparisonParamsError(
                "correction", f"Unknown correction {self.correction!r}; choose {', '.join(CORRECTIONS)}."
            )
        for name in ("alpha", "confidence"):
            if not 0 < getattr(self, name) < 1:
                raise ComparisonParamsError(name, f"{name} must lie strictly between 0 and 1.")

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of one parameter (what a form's initial value or a command's default shows)."""
        return next(f.default for f in fields(cls) if f.name == name)
