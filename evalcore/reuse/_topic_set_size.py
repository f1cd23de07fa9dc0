"""Topic set size design (Sakai, "Topic set size design", Information Retrieval Journal 19(3), 2016).

From a topic-by-system score matrix X (n topics x m systems) of a pilot collection, estimate the
variance sigma^2 of a score, then ask how many topics a new collection needs so that a test at level
alpha detects a difference of at least minD with probability at least 1 - beta.

Variance. The residual variance of two-way ANOVA without replication (topics and systems as factors):

    V_E = sum_ij (x_ij - xbar_i. - xbar_.j + xbar)^2 / ((n - 1)(m - 1))

which removes the topic effect as a paired test does (`residual_variance`, the default, as in Sakai's
2018 book). The one-way within-system variance sum_ij (x_ij - xbar_.j)^2 / (m (n - 1)) that the 2016
paper uses is `residual_variance(..., design="one_way")`.

Paired t-test (Sakai 2016, section 4.1; his samplesizeTTEST.xlsx). The score differences of two
systems have variance sigma_t^2 = 2 sigma^2; the minimum detectable effect is Delta = minD / sigma_t.
With n topics the test statistic follows a noncentral t with phi = n - 1 degrees of freedom and
noncentrality lambda = sqrt(n) Delta, and the power of the two-sided test is

    1 - beta(n) = P(t'(phi, lambda) >= t(phi; alpha/2)) + P(t'(phi, lambda) <= -t(phi; alpha/2)).

Sakai starts from the normal approximation n0 = ((z_{alpha/2} + z_beta) / Delta)^2 + z_{alpha/2}^2 / 2
and increments n until the power reaches 1 - beta. His Excel tool evaluates the noncentral t through a
normal approximation (`ttest_power(..., method="sakai")`); the default here is scipy's exact noncentral
t. The two differ by at most a topic or two (tested).

One-way ANOVA over m systems (section 4.2; samplesizeANOVA.xlsx). minD is the difference between the
best and the worst of the m systems; in the least favourable case the others sit at the grand mean, so
sum_i (mu_i - mu)^2 = minD^2 / 2 and Delta = minD^2 / (2 sigma^2). With n topics per system the F
statistic follows a noncentral F with phi_A = m - 1, phi_E = m (n - 1) and lambda = n Delta:

    1 - beta(n) = P(F'(phi_A, phi_E; lambda) >= F(phi_A, phi_E; alpha)).

Sakai starts from n0 = lambda_approx / Delta, with lambda_approx Nagata's approximation of the
noncentrality that gives the power as phi_E -> infinity (here the exact noncentral chi-square root), and
increments n; his tool evaluates the noncentral F through Nagata's normal approximation
(`anova_power(..., method="sakai")`), the default here is scipy's exact noncentral F. The approximation
answers up to 2% fewer topics than the exact F, 3% with two systems (phi_A = 1, where it is roughest). Both searches return the smallest n
(at least 2) whose power reaches 1 - beta: the power grows with n, so the start only saves work.

Mapping to statsmodels (the independent check): `TTestPower().solve_power(effect_size=Delta)` solves the
same noncentral t for the t-test; `FTestAnovaPower().solve_power(effect_size=f, k_groups=m)` with Cohen's
f = sqrt(Delta / m) and nobs = m n (so that its noncentrality f^2 nobs = n Delta and its denominator
degrees nobs - m = m (n - 1)) solves the ANOVA one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize, stats

Design = Literal["two_way", "one_way"]
#: "exact": scipy's noncentral t and F; "sakai": the normal approximations his Excel tools evaluate.
Method = Literal["exact", "sakai"]
MAX_TOPICS = 100_000


def residual_variance(scores: npt.ArrayLike, *, design: Design = "two_way") -> float:
    """sigma^2 from an (n topics, m systems) score matrix; see the module docstring.

    >>> round(residual_variance([[0.1, 0.3], [0.5, 0.6], [0.2, 0.6]]), 4)
    0.0117
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        raise ValueError("the score matrix needs at least 2 topics and 2 systems")
    if not np.isfinite(x).all():
        raise ValueError("the score matrix must hold finite numbers")
    n, m = x.shape
    if design == "one_way":
        return float(((x - x.mean(axis=0)) ** 2).sum() / (m * (n - 1)))
    if design != "two_way":
        raise ValueError("design must be 'two_way' or 'one_way'")
    residual = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0, keepdims=True) + x.mean()
    return float((residual**2).sum() / ((n - 1) * (m - 1)))


def _check(variance: float, min_diff: float, alpha: float, power: float) -> None:
    if not (math.isfinite(variance) and variance > 0):
        raise ValueError("the variance must be a positive number")
    if not (math.isfinite(min_diff) and min_diff > 0):
        raise ValueError("the minimum difference must be a positive number")
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and the power must be between 0 and 1")


def ttest_power(n: int, *, effect: float, alpha: float, method: Method = "exact") -> float:
    """Power of the two-sided paired t-test with n topics at effect Delta (noncentral t).

    With method="sakai", the normal approximation of the noncentral t that Sakai's samplesizeTTEST
    evaluates: with w = t(phi; alpha/2), k = 1 - 1/(4 phi) and s = sqrt(1 + w^2 / (2 phi)),
    power = Phi((-w k - lambda) / s) + 1 - Phi((w k - lambda) / s).
    """
    phi = n - 1
    crit = float(stats.t.ppf(1 - alpha / 2, phi))
    nc = math.sqrt(n) * effect
    if method == "sakai":
        k, s = 1 - 1 / (4 * phi), math.sqrt(1 + crit**2 / (2 * phi))
        return float(stats.norm.cdf((-crit * k - nc) / s) + stats.norm.sf((crit * k - nc) / s))
    return float(stats.nct.sf(crit, phi, nc) + stats.nct.cdf(-crit, phi, nc))


def anova_power(n: int, *, delta: float, n_systems: int, alpha: float, method: Method = "exact") -> float:
    """Power of one-way ANOVA over m systems with n topics each, noncentrality n Delta (noncentral F).

    With method="sakai", the approximation Sakai's samplesizeANOVA evaluates (Nagata): the noncentral
    chi-square of the numerator as c_A chi2(phi_A*), c_A = (phi_A + 2 lambda) / (phi_A + lambda),
    phi_A* = (phi_A + lambda)^2 / (phi_A + 2 lambda), and Fisher's sqrt(2 chi2(v)) ~ N(sqrt(2v - 1), 1)
    for both chi-squares; with w = F(phi_A, phi_E; alpha), power = 1 - Phi(u),
    u = (sqrt(w / phi_E) sqrt(2 phi_E - 1) - sqrt(c_A / phi_A) sqrt(2 phi_A* - 1)) / sqrt(c_A / phi_A + w / phi_E).
    """
    phi_a, phi_e = n_systems - 1, n_systems * (n - 1)
    crit = float(stats.f.ppf(1 - alpha, phi_a, phi_e))
    lam = n * delta
    if method == "sakai":
        c_a = (phi_a + 2 * lam) / (phi_a + lam)
        phi_star = (phi_a + lam) ** 2 / (phi_a + 2 * lam)
        u = (
            math.sqrt(crit / phi_e) * math.sqrt(2 * phi_e - 1)
            - math.sqrt(c_a / phi_a) * math.sqrt(2 * phi_star - 1)
        ) / math.sqrt(c_a / phi_a + crit / phi_e)
        return float(stats.norm.sf(u))
    return float(stats.ncf.sf(crit, phi_a, phi_e, lam))


def _smallest(start: int, power_of: object, target: float) -> int:
    n = max(2, start)
    power = power_of(n)  # type: ignore[operator]
    while power < target and n < MAX_TOPICS:  # up until it is reached ...
        n += 1
        power = power_of(n)  # type: ignore[operator]
    while n > 2 and power_of(n - 1) >= target:  # type: ignore[operator]  # ... down while it still is
        n -= 1
    return n


def topic_set_size_ttest(
    *, variance: float, min_diff: float, alpha: float = 0.05, power: float = 0.8, method: Method = "exact"
) -> int:
    """Topics for a two-sided paired t-test to detect minD with the given power (Sakai 2016, 4.1).

    >>> topic_set_size_ttest(variance=0.02, min_diff=0.05)
    128
    """
    _check(variance, min_diff, alpha, power)
    effect = min_diff / math.sqrt(2 * variance)
    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    start = math.ceil(((z_a + z_b) / effect) ** 2 + z_a**2 / 2)
    return _smallest(start, lambda n: ttest_power(n, effect=effect, alpha=alpha, method=method), power)


def _chi2_noncentrality(phi_a: int, alpha: float, power: float) -> float:
    """lambda with P(chi2'(phi_A; lambda) >= chi2(phi_A; alpha)) = power: the phi_E -> infinity limit."""
    crit = stats.chi2.ppf(1 - alpha, phi_a)
    return float(optimize.brentq(lambda lam: stats.ncx2.sf(crit, phi_a, lam) - power, 1e-9, 1e4))


def topic_set_size_anova(
    *,
    variance: float,
    min_diff: float,
    n_systems: int,
    alpha: float = 0.05,
    power: float = 0.8,
    method: Method = "exact",
) -> int:
    """Topics for one-way ANOVA over m systems to detect a best-worst gap minD (Sakai 2016, 4.2).

    >>> topic_set_size_anova(variance=0.02, min_diff=0.05, n_systems=2)
    127
    """
    _check(variance, min_diff, alpha, power)
    if n_systems < 2:
        raise ValueError("ANOVA needs at least 2 systems")
    delta = min_diff**2 / (2 * variance)
    start = math.ceil(_chi2_noncentrality(n_systems - 1, alpha, power) / delta)
    return _smallest(
        start, lambda n: anova_power(n, delta=delta, n_systems=n_systems, alpha=alpha, method=method), power
    )


@dataclass(frozen=True)
class TopicSetSizeRow:
    min_diff: float
    ttest: int
    anova: int


@dataclass(frozen=True)
class TopicSetSizeTable:
    variance: float
    design: str
    n_topics: int
    n_systems: int
    alpha: float
    power: float
    rows: list[TopicSetSizeRow]
    method: str = "exact"

    def as_dict(self) -> dict[str, object]:
        return {
            "variance": self.variance,
            "design": self.design,
            "pilot_topics": self.n_topics,
            "n_systems": self.n_systems,
            "alpha": self.alpha,
            "power": self.power,
            "method": self.method,
            "rows": [{"min_diff": r.min_diff, "ttest": r.ttest, "anova": r.anova} for r in self.rows],
        }


DEFAULT_MIN_DIFFS = (0.02, 0.05, 0.1)


def topic_set_size_table(
    scores: npt.ArrayLike,
    *,
    min_diffs: Sequence[float] = DEFAULT_MIN_DIFFS,
    alpha: float = 0.05,
    power: float = 0.8,
    n_systems: int | None = None,
    design: Design = "two_way",
    method: Method = "exact",
) -> TopicSetSizeTable:
    """The planner: sigma^2 from the (topics, systems) matrix, then the topics needed for each minD by
    the paired t-test and by one-way ANOVA over `n_systems` (default: the matrix's systems)."""
    x = np.asarray(scores, dtype=np.float64)
    variance = residual_variance(x, design=design)
    m = int(n_systems or x.shape[1])
    rows = [
        TopicSetSizeRow(
            min_diff=float(d),
            ttest=topic_set_size_ttest(
                variance=variance, min_diff=d, alpha=alpha, power=power, method=method
            ),
            anova=topic_set_size_anova(
                variance=variance, min_diff=d, n_systems=m, alpha=alpha, power=power, method=method
            ),
        )
        for d in min_diffs
    ]
    return TopicSetSizeTable(variance, design, int(x.shape[0]), m, alpha, power, rows, method)
