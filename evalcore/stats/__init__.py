"""Statistics over per-query scores: intervals, paired tests, corrections, power, sampling.

Every function takes plain arrays (data first, options keyword-only), never
imports Django, and is vectorised: resampling runs as ``(batch, n)`` matrices
in memory-bounded batches, never as a Python loop per resample. Random
procedures take ``seed`` and draw from ``np.random.default_rng(seed)``, so the
same seed gives the same answer.

- Confidence intervals: ``bootstrap_ci`` (percentile bootstrap of the mean or
  median of one run) and ``paired_bootstrap_ci`` (of the per-query difference
  of two runs).
- Paired tests between two runs on the same queries: ``paired_t_test``,
  ``wilcoxon_test``, ``randomization_test`` and the ``paired_test`` dispatcher,
  each returning a ``TestResult``.
- Two scorers' ROC areas on the same examples: ``delong_test`` (DeLong 1988,
  Sun and Xu's O(n log n) midrank algorithm) and ``auc_difference_ci`` (a
  paired, stratified bootstrap of the difference).
- Multiple comparisons: ``adjust_p_values`` (Bonferroni, Holm,
  Benjamini-Hochberg).
- Power analysis: ``sample_size_per_group`` / ``minimum_detectable_effect``
  (two independent groups, as in an A/B test) and ``sample_size_paired`` /
  ``minimum_detectable_effect_paired`` (per-query differences).
- Sampling: ``stratum_allocation``, ``stratified_sample`` and
  ``stratified_mean``.
- Rankings of systems: ``kendall_tau`` (tau-b), ``tau_ap`` and
  ``tau_ap_symmetric`` (Yilmaz, Aslam and Robertson 2008).
- Many systems over the same topics, an (m systems, n topics) matrix:
  ``two_way_anova`` (without replication, with its residual variance),
  ``tukey_hsd`` (randomised-block or one-way MSE) and ``discriminative_power``
  (Sakai 2006: the share of pairs a bootstrap, t or randomization test finds
  significant). Paired effect sizes: ``paired_effect_size`` (Cohen's d_z,
  Hedges' g).

Which test to use. For the difference in *mean* effectiveness of two IR
systems, Smucker, Allan and Carterette ("A Comparison of Statistical
Significance Tests for Information Retrieval Evaluation", CIKM 2007) found
little practical difference between the paired t-test, the randomization
(permutation) test and the bootstrap, and recommend the randomization test,
with the t-test as a sound alternative. The Wilcoxon signed-rank and sign tests
had a poor ability to detect significance and can detect it falsely: they are
simplified variants of the randomization test that answer a different question
(a shift in ranks or signs, not in the mean), and the authors advise
discontinuing them for differences between means. ``wilcoxon_test`` is here
for completeness and for non-mean questions. When several runs or measures are
compared at once, correct the p-values with ``adjust_p_values``.
"""

from evalcore.stats._anova import (
    AnovaEffect,
    TukeyDesign,
    TukeyHSD,
    TwoWayAnova,
    tukey_hsd,
    two_way_anova,
)
from evalcore.stats._bootstrap import (
    DEFAULT_BOOTSTRAP,
    BootstrapOptions,
    ConfidenceInterval,
    Statistic,
    bootstrap_ci,
    paired_bootstrap_ci,
)
from evalcore.stats._discriminative_power import (
    DiscriminativePower,
    DiscriminativeTest,
    discriminative_power,
)
from evalcore.stats._effect_size import EffectSize, hedges_correction, paired_effect_size
from evalcore.stats._multiple_testing import CorrectionMethod, adjust_p_values
from evalcore.stats._power import (
    minimum_detectable_effect,
    minimum_detectable_effect_paired,
    sample_size_paired,
    sample_size_per_group,
)
from evalcore.stats._rank_correlation import kendall_tau, tau_ap, tau_ap_symmetric
from evalcore.stats._roc_comparison import (
    AucDifferenceInterval,
    DeLongTest,
    auc_difference_ci,
    delong_test,
    midranks,
)
from evalcore.stats._sampling import (
    Allocation,
    StratifiedEstimate,
    stratified_mean,
    stratified_sample,
    stratum_allocation,
)
from evalcore.stats._significance import (
    PairedTestName,
    TestResult,
    paired_t_test,
    paired_test,
    randomization_test,
    wilcoxon_test,
)
from evalcore.stats._validation import StatsInputError

__all__ = [
    "AucDifferenceInterval",
    "DeLongTest",
    "auc_difference_ci",
    "delong_test",
    "midranks",
    "AnovaEffect",
    "DiscriminativePower",
    "DiscriminativeTest",
    "EffectSize",
    "TukeyDesign",
    "TukeyHSD",
    "TwoWayAnova",
    "discriminative_power",
    "hedges_correction",
    "paired_effect_size",
    "tukey_hsd",
    "two_way_anova",
    "DEFAULT_BOOTSTRAP",
    "BootstrapOptions",
    "Allocation",
    "ConfidenceInterval",
    "CorrectionMethod",
    "PairedTestName",
    "Statistic",
    "StatsInputError",
    "StratifiedEstimate",
    "TestResult",
    "adjust_p_values",
    "bootstrap_ci",
    "kendall_tau",
    "minimum_detectable_effect",
    "minimum_detectable_effect_paired",
    "paired_bootstrap_ci",
    "paired_t_test",
    "paired_test",
    "randomization_test",
    "sample_size_paired",
    "sample_size_per_group",
    "stratified_mean",
    "stratified_sample",
    "stratum_allocation",
    "tau_ap",
    "tau_ap_symmetric",
    "wilcoxon_test",
]
