"""Alert rules on metric values: pure data in, the rules that fire out.

A rule names any metric of the registry (`evalcore.metrics`), a comparator, a threshold and a
severity: `AlertRule("ndcg_floor", "ndcg_cut_10", "<", 0.35)` works as well for retrieval as
`DEFAULT_EMBEDDING_RULES` do for embeddings. `evaluate_rules(values, rules)` checks each rule
against a mapping of metric name to value and returns a `Firing` for each rule that holds. A rule
whose metric is absent from the values does not fire: a metric that was not computed (the drift
metrics of a snapshot with no current set) cannot raise an alert.

A metric that was computed but is undefined (None, NaN or infinite: the effective rank of a snapshot
whose rows are all zeros) is another matter, and each rule says what it means (`on_undefined`):
"fire" counts it as breaking the threshold (a degenerate snapshot is a collapse, so the default
collapse rules fire), "keep" decides nothing (an open alert stays open, none opens: the default), and
"resolve" counts it as not breaking. `evaluate_rules` returns a `Firing` with `value=None` for "fire";
`is_undefined` tells the caller, who owns the alert's state, when "keep" applies.

Ratios to the dimension ("effective rank below 30% of the dimension") are metrics of their own in
the registry (`effective_rank_ratio`, `effective_dim_ratio`, `dead_dim_ratio`), so a rule is always
one metric against one number and the dashboards can draw the same threshold line.

A drift rule may also require an effect size (`EffectRequirement`): it fires only when its p-value
rule holds AND the effect metric exceeds a threshold. That threshold is fixed on the rule, or, left
None, calibrated from reference-versus-reference splits and passed in as `effect_thresholds`
(`evalcore.embeddings.calibrate_effect_thresholds`). At thousands of rows a permutation test calls
trivial shifts significant; the effect requirement keeps those from paging anyone.

>>> rules = [AlertRule("too_similar", "avg_cosine_similarity", ">", 0.3, severity="warning")]
>>> [f.to_dict()["rule"] for f in evaluate_rules({"avg_cosine_similarity": 0.41}, rules)]
['too_similar']
>>> evaluate_rules({"avg_cosine_similarity": 0.05}, rules)
[]

Nothing here imports torch or Django.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from evalcore.errors import EvalCoreError

Comparator = Literal[">", ">=", "<", "<="]
Severity = Literal["info", "warning", "critical"]
OnUndefined = Literal["keep", "fire", "resolve"]
COMPARATORS: tuple[Comparator, ...] = get_args(Comparator)
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
#: What an undefined value of a rule's metric means; the first is the default.
ON_UNDEFINED: tuple[OnUndefined, ...] = get_args(OnUndefined)
ON_UNDEFINED_LABELS: dict[OnUndefined, str] = {
    "keep": "Keep the alert as it is",
    "fire": "Fire (count it as breaking the threshold)",
    "resolve": "Resolve (count it as not breaking the threshold)",
}
_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}


class AlertRuleError(EvalCoreError, ValueError):
    """A rule that cannot be evaluated: a bad comparator or severity, or a missing effect threshold."""


def _check_condition(comparator: str, threshold: float | None, where: str) -> None:
    if comparator not in _OPERATORS:
        raise AlertRuleError(
            f"{where}: comparator must be one of {', '.join(COMPARATORS)}, got {comparator!r}"
        )
    if threshold is not None and not (isinstance(threshold, int | float) and math.isfinite(threshold)):
        raise AlertRuleError(f"{where}: threshold must be a finite number, got {threshold!r}")


@dataclass(frozen=True)
class EffectRequirement:
    """The effect size a drift rule also needs: `values[metric] <comparator> threshold`.

    `threshold=None` takes the calibrated threshold of `metric` from `evaluate_rules`'
    `effect_thresholds`.
    """

    metric: str
    threshold: float | None = None
    comparator: Comparator = ">"

    def __post_init__(self) -> None:
        _check_condition(self.comparator, self.threshold, f"effect requirement on {self.metric!r}")


@dataclass(frozen=True)
class AlertRule:
    """Fires when `values[metric] <comparator> threshold` (and the effect requirement, if any, holds)."""

    name: str
    metric: str
    comparator: Comparator
    threshold: float
    severity: Severity = "warning"
    effect: EffectRequirement | None = None
    description: str = ""
    on_undefined: OnUndefined = "keep"

    def __post_init__(self) -> None:
        if not self.name or not self.metric:
            raise AlertRuleError("a rule needs a name and a metric")
        _check_condition(self.comparator, self.threshold, f"rule {self.name!r}")
        if self.severity not in SEVERITIES:
            raise AlertRuleError(
                f"rule {self.name!r}: severity must be one of {', '.join(SEVERITIES)}, got {self.severity!r}"
            )
        if self.on_undefined not in ON_UNDEFINED:
            raise AlertRuleError(
                f"rule {self.name!r}: on_undefined must be one of {', '.join(ON_UNDEFINED)}, "
                f"got {self.on_undefined!r}"
            )

    def describe(self) -> str:
        text = f"{self.metric} {self.comparator} {self.threshold:g}"
        if self.effect is not None:
            limit = "calibrated" if self.effect.threshold is None else f"{self.effect.threshold:g}"
            text += f" and {self.effect.metric} {self.effect.comparator} {limit}"
        return text


@dataclass(frozen=True)
class Firing:
    """One rule that holds, with the values that made it hold."""

    rule: str
    metric: str
    value: float | None  # None: undefined, and the rule fires on undefined values
    threshold: float
    severity: Severity
    comparator: Comparator
    effect_metric: str | None = None
    effect_value: float | None = None
    effect_threshold: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule,
            "metric": self.metric,
            "value": self.value,
            "threshold": self.threshold,
            "severity": self.severity,
            "comparator": self.comparator,
        }
        if self.effect_metric is not None:
            data["effect_metric"] = self.effect_metric
            data["effect_value"] = self.effect_value
            data["effect_threshold"] = self.effect_threshold
        return data


def _present(values: Mapping[str, float | None], metric: str) -> float | None:
    value = values.get(metric)
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def is_undefined(values: Mapping[str, float | None], rule: AlertRule) -> bool:
    """Whether `values` hold the rule's metric (or its effect metric) but undefined: None, NaN or infinite.

    An absent metric is not undefined: it was not computed, and the rule has nothing to say about it.
    """
    metrics = [rule.metric, *([rule.effect.metric] if rule.effect is not None else [])]
    return any(metric in values and _present(values, metric) is None for metric in metrics)


def _effect_threshold(rule: AlertRule, effect_thresholds: Mapping[str, float] | None) -> float:
    assert rule.effect is not None
    if rule.effect.threshold is not None:
        return rule.effect.threshold
    if effect_thresholds is not None and rule.effect.metric in effect_thresholds:
        return float(effect_thresholds[rule.effect.metric])
    raise AlertRuleError(
        f"rule {rule.name!r} needs an effect threshold for {rule.effect.metric!r}: set one on the rule "
        "or pass the calibrated effect_thresholds"
    )


def evaluate_rules(
    values: Mapping[str, float | None],
    rules: Iterable[AlertRule],
    *,
    effect_thresholds: Mapping[str, float] | None = None,
) -> list[Firing]:
    """The rules that fire on `values`, in the order given.

    A rule with `on_undefined="fire"` fires on an undefined value (`is_undefined`) with `value=None`.
    """
    firings = []
    for rule in rules:
        if rule.on_undefined == "fire" and is_undefined(values, rule):
            firings.append(_undefined_firing(rule, values, effect_thresholds))
            continue
        value = _present(values, rule.metric)
        if value is None:
            continue
        effect_value = effect_limit = None
        if rule.effect is not None:
            effect_limit = _effect_threshold(rule, effect_thresholds)
            effect_value = _present(values, rule.effect.metric)
            if effect_value is None or not _OPERATORS[rule.effect.comparator](effect_value, effect_limit):
                continue
        if not _OPERATORS[rule.comparator](value, rule.threshold):
            continue
        firings.append(
            Firing(
                rule=rule.name,
                metric=rule.metric,
                value=value,
                threshold=rule.threshold,
                severity=rule.severity,
                comparator=rule.comparator,
                effect_metric=None if rule.effect is None else rule.effect.metric,
                effect_value=effect_value,
                effect_threshold=effect_limit,
            )
        )
    return firings


def _undefined_firing(
    rule: AlertRule, values: Mapping[str, float | None], effect_thresholds: Mapping[str, float] | None
) -> Firing:
    effect_limit = None if rule.effect is None else _effect_threshold(rule, effect_thresholds)
    return Firing(
        rule=rule.name, metric=rule.metric, value=_present(values, rule.metric), threshold=rule.threshold,
        severity=rule.severity, comparator=rule.comparator,
        effect_metric=None if rule.effect is None else rule.effect.metric,
        effect_value=None if rule.effect is None else _present(values, rule.effect.metric),
        effect_threshold=effect_limit,
    )  # fmt: skip


def check_rule_metrics(rules: Iterable[AlertRule], known: Callable[[str], object]) -> None:
    """Raise for a rule whose metric (or effect metric) `known` rejects.

    Pass the registry's `resolve` (`evalcore.metrics.metric_registry().resolve`), which raises
    `UnknownMetricError` with the closest names.
    """
    for rule in rules:
        known(rule.metric)
        if rule.effect is not None:
            known(rule.effect.metric)


#: Seed 004's warning signs and collapse test, and the drift rules of the embedding monitor issue. The
#: quality rules fire on an undefined value: a snapshot too degenerate to have an effective rank (rows of
#: zeros, a single row) is a collapse; an undefined drift figure decides nothing.
DEFAULT_EMBEDDING_RULES: tuple[AlertRule, ...] = (
    AlertRule(
        "high_avg_cosine", "avg_cosine_similarity", ">", 0.3,
        on_undefined="fire",
        description="vectors are too similar to each other (a narrow cone)",
    ),
    AlertRule(
        "low_effective_dim", "effective_dim_ratio", "<", 0.2,
        on_undefined="fire",
        description="the participation ratio is below 20% of the dimension",
    ),
    AlertRule(
        "top10_variance_dominates", "top10_variance_ratio", ">", 0.5,
        on_undefined="fire",
        description="the top 10 principal directions hold more than half of the variance",
    ),
    AlertRule(
        "dead_dimensions", "dead_dim_ratio", ">", 0.1, severity="critical",
        on_undefined="fire",
        description="more than 10% of the coordinates have (almost) no variance: collapse",
    ),
    AlertRule(
        "low_effective_rank", "effective_rank_ratio", "<", 0.3, severity="critical",
        on_undefined="fire",
        description="the effective rank is below 30% of the dimension: collapse",
    ),
    AlertRule(
        "mmd_drift", "mmd_p_value", "<", 0.01, effect=EffectRequirement("mmd2"),
        description="the current set's distribution differs from the reference (MMD permutation "
        "test), by more than the reference differs from itself",
    ),
    AlertRule(
        "domain_classifier_drift", "classifier_auc", ">", 0.75,
        description="a classifier tells current rows from reference rows (held-out ROC-AUC)",
    ),
)  # fmt: skip
