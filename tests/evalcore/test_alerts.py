"""Alert rules: comparators, missing values, effect-size requirements, and the default rules."""

from __future__ import annotations

import math

import pytest

from evalcore.alerts import (
    DEFAULT_EMBEDDING_RULES,
    AlertRule,
    AlertRuleError,
    EffectRequirement,
    check_rule_metrics,
    evaluate_rules,
    is_undefined,
)
from evalcore.embeddings import METRIC_SPECS
from evalcore.metrics import MetricRegistry, UnknownMetricError, metric_registry


def fired(values: dict[str, float], rules, **kwargs) -> list[str]:  # type: ignore[no-untyped-def]
    return [firing.rule for firing in evaluate_rules(values, rules, **kwargs)]


class TestAlertRule:
    @pytest.mark.parametrize(
        ("comparator", "value", "fires"),
        [(">", 0.31, True), (">", 0.3, False), (">=", 0.3, True), ("<", 0.3, False), ("<", 0.29, True),
         ("<=", 0.3, True), ("<=", 0.31, False)],
    )  # fmt: skip
    def test_it_compares_the_value_with_the_threshold(self, comparator, value, fires) -> None:
        rule = AlertRule("r", "avg_cosine_similarity", comparator, 0.3)
        assert fired({"avg_cosine_similarity": value}, [rule]) == (["r"] if fires else [])

    def test_it_reports_what_fired(self) -> None:
        rule = AlertRule("ndcg_floor", "ndcg_cut_10", "<", 0.35, severity="critical")
        [firing] = evaluate_rules({"ndcg_cut_10": 0.3, "map": 0.1}, [rule])
        assert firing.to_dict() == {
            "rule": "ndcg_floor", "metric": "ndcg_cut_10", "value": 0.3, "threshold": 0.35,
            "severity": "critical", "comparator": "<",
        }  # fmt: skip

    def test_it_skips_a_rule_whose_metric_is_missing_or_nan_by_default(self) -> None:
        rule = AlertRule("r", "mmd_p_value", "<", 0.01, effect=EffectRequirement("mmd2", 0.0))
        assert fired({}, [rule]) == []
        assert fired({"mmd_p_value": math.nan, "mmd2": 1.0}, [rule]) == []
        assert fired({"mmd_p_value": 0.001, "mmd2": math.nan}, [rule]) == []

    def test_it_keeps_the_order_of_the_rules(self) -> None:
        rules = [AlertRule(name, "x", ">", 0.0) for name in ("b", "a", "c")]
        assert fired({"x": 1.0}, rules) == ["b", "a", "c"]

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"comparator": "=="}, "comparator"),
            ({"severity": "fatal"}, "severity"),
            ({"threshold": math.nan}, "finite"),
            ({"name": ""}, "name"),
        ],
    )
    def test_it_rejects_a_malformed_rule(self, kwargs, message) -> None:
        fields = {"name": "r", "metric": "x", "comparator": ">", "threshold": 1.0} | kwargs
        with pytest.raises(AlertRuleError, match=message):
            AlertRule(**fields)


class TestUndefinedValues:
    @pytest.mark.parametrize("undefined", [None, math.nan, math.inf, -math.inf])
    def test_it_fires_on_an_undefined_value_only_when_the_rule_says_so(self, undefined) -> None:
        rules = [AlertRule(f"r_{policy}", "effective_rank_ratio", "<", 0.3, on_undefined=policy)
                 for policy in ("keep", "fire", "resolve")]  # fmt: skip
        [firing] = evaluate_rules({"effective_rank_ratio": undefined}, rules)
        assert (firing.rule, firing.value, firing.to_dict()["value"]) == ("r_fire", None, None)
        assert all(is_undefined({"effective_rank_ratio": undefined}, rule) for rule in rules)

    def test_it_tells_an_undefined_metric_from_an_absent_one(self) -> None:
        rule = AlertRule(
            "r", "mmd_p_value", "<", 0.01, effect=EffectRequirement("mmd2", 0.0), on_undefined="fire"
        )
        assert not is_undefined({}, rule) and fired({}, [rule]) == []
        assert is_undefined({"mmd_p_value": 0.5, "mmd2": math.nan}, rule)
        assert fired({"mmd_p_value": 0.5, "mmd2": math.nan}, [rule]) == ["r"]
        assert not is_undefined({"mmd_p_value": 0.5, "mmd2": 0.1}, rule)

    def test_it_treats_a_degenerate_snapshot_as_a_collapse_by_default(self) -> None:
        degenerate = {"effective_rank_ratio": None, "effective_dim_ratio": None, "top10_variance_ratio": None,
                      "dead_dim_ratio": 1.0, "avg_cosine_similarity": 0.0}  # fmt: skip
        assert fired(degenerate, DEFAULT_EMBEDDING_RULES) == [
            "low_effective_dim", "top10_variance_dominates", "dead_dimensions", "low_effective_rank",
        ]  # fmt: skip

    def test_it_refuses_an_unknown_policy(self) -> None:
        with pytest.raises(AlertRuleError, match="on_undefined must be one of keep, fire, resolve"):
            AlertRule("r", "x", ">", 1.0, on_undefined="shrug")  # type: ignore[arg-type]


class TestEffectRequirement:
    rule = AlertRule("mmd_drift", "mmd_p_value", "<", 0.01, effect=EffectRequirement("mmd2"))

    def test_it_fires_only_when_the_p_value_and_the_effect_both_pass(self) -> None:
        thresholds = {"mmd2": 0.005}
        assert fired({"mmd_p_value": 0.001, "mmd2": 0.02}, [self.rule], effect_thresholds=thresholds) == [
            "mmd_drift"
        ]
        # Significant but trivial: the effect is within what the reference shows against itself.
        assert fired({"mmd_p_value": 0.001, "mmd2": 0.004}, [self.rule], effect_thresholds=thresholds) == []
        # A large effect without significance does not fire either.
        assert fired({"mmd_p_value": 0.2, "mmd2": 0.02}, [self.rule], effect_thresholds=thresholds) == []

    def test_it_reports_the_effect_beside_the_p_value(self) -> None:
        [firing] = evaluate_rules(
            {"mmd_p_value": 0.001, "mmd2": 0.02}, [self.rule], effect_thresholds={"mmd2": 0.005}
        )
        assert firing.to_dict()["effect_threshold"] == 0.005
        assert (firing.effect_metric, firing.effect_value, firing.effect_threshold) == ("mmd2", 0.02, 0.005)

    def test_it_prefers_a_threshold_fixed_on_the_rule(self) -> None:
        rule = AlertRule("r", "mmd_p_value", "<", 0.01, effect=EffectRequirement("mmd2", threshold=0.1))
        values = {"mmd_p_value": 0.001, "mmd2": 0.05}
        assert fired(values, [rule], effect_thresholds={"mmd2": 0.0}) == []

    def test_it_refuses_to_guess_a_missing_calibrated_threshold(self) -> None:
        with pytest.raises(AlertRuleError, match="calibrated"):
            evaluate_rules({"mmd_p_value": 0.001, "mmd2": 0.05}, [self.rule])


class TestDefaultEmbeddingRules:
    def test_it_follows_seed_004s_warning_signs(self) -> None:
        rules = {rule.name: rule.describe() for rule in DEFAULT_EMBEDDING_RULES}
        assert rules == {
            "high_avg_cosine": "avg_cosine_similarity > 0.3",
            "low_effective_dim": "effective_dim_ratio < 0.2",
            "top10_variance_dominates": "top10_variance_ratio > 0.5",
            "dead_dimensions": "dead_dim_ratio > 0.1",
            "low_effective_rank": "effective_rank_ratio < 0.3",
            "mmd_drift": "mmd_p_value < 0.01 and mmd2 > calibrated",
            "domain_classifier_drift": "classifier_auc > 0.75",
        }

    def test_it_names_only_registered_embedding_metrics(self) -> None:
        registry = MetricRegistry()
        for spec in METRIC_SPECS:
            registry.register(spec)
        check_rule_metrics(DEFAULT_EMBEDDING_RULES, registry.resolve)
        for rule in DEFAULT_EMBEDDING_RULES:
            assert registry.resolve(rule.metric).in_range(rule.threshold)

    def test_it_checks_any_familys_metric_names_with_the_registry(self) -> None:
        check_rule_metrics([AlertRule("ndcg_floor", "nDCG@10", "<", 0.35)], metric_registry().resolve)
        with pytest.raises(UnknownMetricError, match="did you mean"):
            check_rule_metrics([AlertRule("typo", "ndcg_cut_1O", "<", 0.35)], metric_registry().resolve)

    def test_it_stays_quiet_on_healthy_values(self) -> None:
        healthy = {
            "avg_cosine_similarity": 0.01, "effective_dim_ratio": 0.8, "top10_variance_ratio": 0.1,
            "dead_dim_ratio": 0.0, "effective_rank_ratio": 0.95, "mmd_p_value": 0.4, "mmd2": 1e-5,
            "classifier_auc": 0.52,
        }  # fmt: skip
        assert fired(healthy, DEFAULT_EMBEDDING_RULES, effect_thresholds={"mmd2": 1e-4}) == []
