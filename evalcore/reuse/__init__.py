"""Is a qrels version reusable, how much do its annotators decide the ranking, and how many topics
does a collection need?

- `leave_one_out` (Zobel 1998; Buckley, Dimmick, Soboroff and Voorhees 2007): each run, and each group
  of runs sharing a tag, re-scored with the documents only it contributed to the pool unjudged; bpref and
  infAP beside the main measure; a plain `Verdict` per run.
- `annotator_sensitivity` (Voorhees 2000): the system ranking under bootstrap resamples of each pair's
  annotators and under each annotator alone, as Kendall's tau against the published ranking and the
  swap rate of every pair of runs.
- `topic_set_size_table` (Sakai 2016): the residual variance of the topic-by-system matrix and the
  topics needed to detect a minimum difference by the paired t-test and by one-way ANOVA.

Framework-free: plain arrays and `evalcore.retrieval` objects in, dataclasses out.
"""

from evalcore.reuse._leave_one_out import (
    COVERAGE_MEASURE,
    DEFAULT_THRESHOLDS,
    SIDE_MEASURES,
    LeaveOutRow,
    Pool,
    ReuseParams,
    ReuseReport,
    Verdict,
    VerdictThresholds,
    leave_one_out,
    rank_among,
    verdict,
)
from evalcore.reuse._sensitivity import (
    PairLabels,
    SensitivityParams,
    SensitivityReport,
    annotator_grades,
    annotator_sensitivity,
    bootstrap_grades,
    score_grade_sets,
    swap_rates,
)
from evalcore.reuse._topic_set_size import (
    DEFAULT_MIN_DIFFS,
    TopicSetSizeRow,
    TopicSetSizeTable,
    anova_power,
    residual_variance,
    topic_set_size_anova,
    topic_set_size_table,
    topic_set_size_ttest,
    ttest_power,
)

__all__ = [
    "COVERAGE_MEASURE",
    "DEFAULT_MIN_DIFFS",
    "DEFAULT_THRESHOLDS",
    "SIDE_MEASURES",
    "LeaveOutRow",
    "PairLabels",
    "Pool",
    "ReuseParams",
    "ReuseReport",
    "SensitivityParams",
    "SensitivityReport",
    "TopicSetSizeRow",
    "TopicSetSizeTable",
    "Verdict",
    "VerdictThresholds",
    "annotator_grades",
    "annotator_sensitivity",
    "anova_power",
    "bootstrap_grades",
    "leave_one_out",
    "rank_among",
    "residual_variance",
    "score_grade_sets",
    "swap_rates",
    "topic_set_size_anova",
    "topic_set_size_table",
    "topic_set_size_ttest",
    "ttest_power",
    "verdict",
]
