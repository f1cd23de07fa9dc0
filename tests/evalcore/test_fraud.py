"""Tests for evalcore.fraud: the curves and areas against scikit-learn on data with ties, operating
points and costs against brute force, seed 004's worked example, corner cases, invariance to the
order of examples, and the scores reader's errors.
"""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import rankdata
from sklearn import metrics as sk

from evalcore import fraud
from evalcore.errors import FormatError
from evalcore.fraud import (
    METRIC_SPECS,
    METRICS,
    FraudInputError,
    FraudOptions,
    ScoredExamples,
    cost_at_threshold,
    cost_evaluation,
    detection_rate_at_fpr,
    evaluate_scores,
    pr_auc_score,
    precision_recall_at_budget,
    precision_recall_curve,
    read_scores,
    roc_auc_score,
    roc_curve,
    score_curve,
    time_to_detection,
)
from evalcore.metrics import MetricRegistry

FAST = settings(max_examples=80, deadline=None)


def seed_004_data() -> tuple[np.ndarray, np.ndarray]:
    """Seed 004, section 21.4.3, generated exactly as the seed does."""
    np.random.seed(42)  # noqa: NPY002 - the seed's legacy generator, to reproduce its data exactly
    n_samples = 10000
    fraud_rate = 0.01
    labels = (np.random.random(n_samples) < fraud_rate).astype(int)  # noqa: NPY002
    scores = np.random.random(n_samples)  # noqa: NPY002
    scores[labels == 1] += 0.3
    scores = np.clip(scores, 0, 1)
    return labels, scores


@st.composite
def scored(
    draw: st.DrawFn, *, both_classes: bool = True, max_size: int = 60
) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores drawn from a few values, so that ties are common (within and across classes)."""
    n = draw(st.integers(2 if both_classes else 0, max_size))
    labels = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=int)
    if both_classes:
        assume(0 < labels.sum() < n)
    values = draw(st.lists(st.floats(-3, 3, allow_nan=False), min_size=1, max_size=6))
    scores = np.array([draw(st.sampled_from(values)) for _ in range(n)], dtype=float)
    return labels, scores


def assert_close(actual: object, expected: object, atol: float = 1e-12, rtol: float = 0.0) -> None:
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)  # type: ignore[call-overload]


# --- package hygiene ------------------------------------------------------------------------------


def test_it_never_imports_django_or_pandas() -> None:
    """Not even pyarrow's lazy pandas import (half a second on every command)."""
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "fraud" / "transactions.csv"
    code = (
        "import sys; from evalcore.fraud import read_scores, evaluate_scores; "
        f"evaluate_scores(read_scores({str(fixture)!r})).metrics(); "
        "assert 'django' not in sys.modules and 'pandas' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- seed 004's worked example --------------------------------------------------------------------


def test_it_reproduces_seed_004s_detection_rate_and_cost_reduction() -> None:
    labels, scores = seed_004_data()
    result = detection_rate_at_fpr(labels, scores, target_fpr=0.01)
    assert f"Detection rate at 1% FPR: {result.detection_rate:.1%}" == "Detection rate at 1% FPR: 24.2%"
    assert result.realised_fpr <= 0.01 and result.method == "conservative"
    assert (scores >= result.threshold)[labels == 0].mean() == result.realised_fpr
    predictions = (scores > 0.5).astype(int)
    cost = cost_evaluation(labels, predictions, fp_cost=100, fn_cost=10000)
    assert f"Cost reduction vs baseline: {cost.savings:.1%}" == "Cost reduction vs baseline: 23.0%"
    assert (cost.tp, cost.fp, cost.tn, cost.fn) == (72, 5019, 4886, 23)
    # No score is exactly 0.5, so the command's ">= T" flags the same examples as the seed's "> 0.5".
    assert cost_at_threshold(labels, scores, threshold=0.5, fp_cost=100, fn_cost=10000) == cost


def seed_004_loop(scores: np.ndarray, labels: np.ndarray, target_fpr: float) -> float:
    """Seed 004's algorithm, restated to compare: walk the ranking, stop at the int(target x N)-th negative."""
    order = np.argsort(scores)[::-1]
    max_fp = int(target_fpr * (labels.size - labels.sum()))
    tp = fp = 0
    for label in labels[order]:
        if label == 1:
            tp += 1
        else:
            fp += 1
            if fp >= max_fp:
                break
    return tp / labels.sum()


def test_it_never_detects_less_than_seed_004s_walk() -> None:
    """The conservative threshold also flags the frauds the seed's walk stops short of."""
    labels, scores = seed_004_data()
    for target in (0.005, 0.01, 0.02, 0.05, 0.1, 0.3):
        ours = detection_rate_at_fpr(labels, scores, target_fpr=target).detection_rate
        assert ours >= seed_004_loop(scores, labels, target)
    # A fraud ranked just after the stopping negative: the walk misses it, the threshold does not.
    labels = np.array([1, 0, 1] + [0] * 99)  # 100 negatives: int(0.01 x 100) = 1 false positive allowed
    scores = np.array([0.99, 0.98, 0.97] + list(np.linspace(0.5, 0.1, 99)))
    assert seed_004_loop(scores, labels, 0.01) == 0.5
    assert detection_rate_at_fpr(labels, scores, target_fpr=0.01).detection_rate == 1.0


# --- curves and areas against scikit-learn --------------------------------------------------------


@FAST
@given(data=scored())
def test_it_matches_scikit_learns_areas(data: tuple[np.ndarray, np.ndarray]) -> None:
    labels, scores = data
    assert_close(roc_auc_score(labels, scores), sk.roc_auc_score(labels, scores))
    assert_close(pr_auc_score(labels, scores), sk.average_precision_score(labels, scores))


@FAST
@given(data=scored(), drop=st.booleans())
def test_it_matches_scikit_learns_curves(data: tuple[np.ndarray, np.ndarray], drop: bool) -> None:
    labels, scores = data
    for ours, theirs in zip(
        roc_curve(labels, scores, drop_intermediate=drop),
        sk.roc_curve(labels, scores, drop_intermediate=drop),
        strict=True,
    ):
        assert_close(ours, theirs)
    for ours, theirs in zip(
        precision_recall_curve(labels, scores), sk.precision_recall_curve(labels, scores), strict=True
    ):
        assert_close(ours, theirs)


def test_it_matches_scikit_learn_on_a_large_sample_with_ties() -> None:
    rng = np.random.default_rng(7)
    labels = rng.random(200_000) < 0.02
    scores = np.round(rng.normal(size=labels.size) + labels, 2)
    assert_close(roc_auc_score(labels, scores), sk.roc_auc_score(labels, scores), atol=1e-12)
    assert_close(pr_auc_score(labels, scores), sk.average_precision_score(labels, scores), atol=1e-12)


def _curve_fields(curve: fraud.ScoreCurve) -> list[object]:
    return [
        curve.thresholds.tolist(),
        curve.tp.tolist(),
        curve.fp.tolist(),
        curve.n_positive,
        curve.n_negative,
    ]


@pytest.mark.parametrize(
    ("scores", "by_value"),
    [
        (lambda rng, labels: np.round(np.clip(rng.normal(0.3 + 0.25 * labels, 0.15), 0, 1), 4), True),
        (lambda rng, labels: rng.integers(0, 5, labels.size) * 0.25, True),  # a handful of buckets
        (lambda rng, labels: rng.normal(size=labels.size) + labels, False),  # all distinct: sorted
        (lambda rng, labels: np.round(rng.normal(size=labels.size), 1), False),  # 0.0 and -0.0 both
    ],
)
def test_it_counts_repeated_scores_by_value_as_the_sort_does(
    scores: object, by_value: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalcore.fraud import _curve

    rng = np.random.default_rng(3)
    labels = rng.random(150_000) < 0.03
    values = scores(rng, labels)  # type: ignore[operator]
    assert (_curve._curve_by_value(labels, values) is not None) == by_value
    ours = score_curve(labels, values)
    monkeypatch.setattr(_curve, "_BY_VALUE_MIN", labels.size + 1)  # the sort, always
    sorted_way = score_curve(labels, values)
    assert _curve_fields(ours) == _curve_fields(sorted_way)
    assert ours.tp.dtype == ours.fp.dtype == np.int64


def test_it_leaves_undefined_areas_as_nan() -> None:
    """scikit-learn raises for ROC-AUC and returns 0 for average precision with one class."""
    assert math.isnan(roc_auc_score([0, 0, 0], [0.1, 0.2, 0.3]))
    assert math.isnan(roc_auc_score([1, 1], [0.1, 0.2]))
    assert math.isnan(pr_auc_score([0, 0], [0.1, 0.2]))
    assert pr_auc_score([1, 1], [0.1, 0.2]) == 1.0
    fpr, tpr, _ = roc_curve([0, 0], [0.1, 0.2])
    assert np.isnan(tpr).all() and fpr.tolist() == [0.0, 0.5, 1.0]
    _, recall, _ = precision_recall_curve([0, 0], [0.1, 0.2])
    assert np.isnan(recall[:-1]).all()


def test_it_handles_empty_input_and_all_scores_tied() -> None:
    curve = score_curve([], [])
    assert curve.n == 0 and curve.thresholds.size == 0
    assert math.isnan(roc_auc_score([], [])) and math.isnan(pr_auc_score([], []))
    assert math.isnan(detection_rate_at_fpr([], []).detection_rate)
    labels = np.array([1, 0, 0, 1, 0])
    tied = np.full(5, 0.3)
    assert roc_auc_score(labels, tied) == 0.5
    assert pr_auc_score(labels, tied) == pytest.approx(0.4)  # the prevalence
    result = detection_rate_at_fpr(labels, tied, target_fpr=0.5)
    assert (result.detection_rate, result.threshold, result.realised_fpr) == (0.0, math.inf, 0.0)
    assert detection_rate_at_fpr(labels, tied, target_fpr=0.5, method="interpolated").detection_rate == 0.5


# --- the detection rate at a target FPR -----------------------------------------------------------


@FAST
@given(data=scored(), target=st.sampled_from([0.0, 0.01, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.9, 1.0]))
def test_it_takes_the_best_tpr_within_the_target(data: tuple[np.ndarray, np.ndarray], target: float) -> None:
    labels, scores = data
    fpr, tpr, thresholds = sk.roc_curve(labels, scores, drop_intermediate=False)
    within = fpr <= target + 1e-12
    last = int(np.flatnonzero(within)[-1])
    # Of the points reaching the best TPR within the target, the one with the fewest false positives.
    best = int(np.flatnonzero(within & (tpr == tpr[last]))[0])
    result = detection_rate_at_fpr(labels, scores, target_fpr=target)
    assert_close(result.detection_rate, tpr[last])
    assert result.threshold == thresholds[best] and result.realised_fpr == pytest.approx(fpr[best])
    # Flagging score >= threshold is that operating point.
    flagged = scores >= result.threshold
    assert_close(flagged[labels == 0].mean(), result.realised_fpr)


@FAST
@given(data=scored(), target=st.floats(0, 1))
def test_it_interpolates_along_the_roc_curve(data: tuple[np.ndarray, np.ndarray], target: float) -> None:
    labels, scores = data
    fpr, tpr, _ = sk.roc_curve(labels, scores)
    result = detection_rate_at_fpr(labels, scores, target_fpr=target, method="interpolated")
    conservative = detection_rate_at_fpr(labels, scores, target_fpr=target)
    assert result.detection_rate >= conservative.detection_rate - 1e-12
    if not np.isclose(fpr, target, atol=1e-9).any():  # np.interp is ambiguous on vertical segments
        assert_close(result.detection_rate, np.interp(target, fpr, tpr), atol=1e-9)
    assert math.isnan(result.threshold) and result.realised_fpr == target


def test_it_rejects_a_bad_target_or_method() -> None:
    with pytest.raises(FraudInputError, match="target FPR"):
        detection_rate_at_fpr([0, 1], [0.1, 0.2], target_fpr=1.5)
    with pytest.raises(FraudInputError, match="method"):
        detection_rate_at_fpr([0, 1], [0.1, 0.2], method="exact")  # type: ignore[arg-type]


# --- budget and costs -----------------------------------------------------------------------------


@FAST
@given(data=scored(both_classes=False), budget=st.integers(0, 70))
def test_it_shares_ties_at_the_budgets_edge(data: tuple[np.ndarray, np.ndarray], budget: int) -> None:
    """Each example of the tied group the budget cuts is flagged with the same probability."""
    labels, scores = data
    above = labels.size - rankdata(scores, method="max")  # examples strictly above each score
    group = rankdata(scores, method="max") - rankdata(scores, method="min") + 1
    chance = np.clip((budget - above) / group, 0, 1)
    caught = float(chance @ labels)
    flagged = min(budget, labels.size)
    result = precision_recall_at_budget(labels, scores, budget=budget)
    assert_close(result.true_positives, caught, atol=1e-9)
    assert_close(result.precision, caught / flagged if flagged else math.nan, atol=1e-12)
    assert_close(result.recall, caught / labels.sum() if labels.sum() else math.nan, atol=1e-12)


@FAST
@given(
    data=scored(both_classes=False),
    threshold=st.floats(-3, 3),
    fp_cost=st.floats(0, 100),
    amounts=st.booleans(),
)
def test_it_costs_the_flagged_examples(
    data: tuple[np.ndarray, np.ndarray], threshold: float, fp_cost: float, amounts: bool
) -> None:
    labels, scores = data
    fn_cost = np.arange(labels.size, dtype=float) * 3 if amounts else 50.0
    per_fn = np.broadcast_to(fn_cost, labels.shape)
    report = cost_at_threshold(labels, scores, threshold=threshold, fp_cost=fp_cost, fn_cost=fn_cost)
    total = nothing = everything = 0.0
    for label, score, missed in zip(labels, scores, per_fn, strict=True):
        if score >= threshold and not label:
            total += fp_cost
        if score < threshold and label:
            total += missed
        nothing += missed if label else 0.0
        everything += fp_cost if not label else 0.0
    assert report.tp + report.fp + report.tn + report.fn == labels.size
    assert_close(report.total_cost, total, atol=1e-9, rtol=1e-12)
    assert_close(report.flag_nothing_cost, nothing, atol=1e-9, rtol=1e-12)
    # Python floats: with subnormal costs the ratio overflows to -inf (numpy's scalars would warn).
    total, nothing, everything = float(total), float(nothing), float(everything)
    assert_close(report.savings, 1 - total / nothing if nothing else math.nan, atol=1e-12, rtol=1e-9)
    best = min(nothing, everything)
    assert_close(
        report.savings_vs_best_trivial, 1 - total / best if best else math.nan, atol=1e-12, rtol=1e-9
    )


def test_it_reports_negative_savings_when_a_trivial_policy_is_cheaper() -> None:
    report = cost_evaluation([1, 0, 0, 0], [0, 1, 1, 1], fp_cost=10, fn_cost=20)
    assert report.savings == pytest.approx(1 - 50 / 20)
    assert report.savings_vs_best_trivial == pytest.approx(1 - 50 / 20)
    report = cost_evaluation([1, 1, 1, 0], [1, 1, 0, 1], fp_cost=1, fn_cost=100)
    assert report.savings == pytest.approx(1 - 101 / 300) and report.savings_vs_best_trivial == pytest.approx(
        -100
    )


# --- time to detection ----------------------------------------------------------------------------


@FAST
@given(
    rows=st.lists(
        st.tuples(st.sampled_from("abcde"), st.integers(0, 20), st.booleans(), st.booleans()), max_size=40
    )
)
def test_it_times_detection_per_entity(rows: list[tuple[str, int, bool, bool]]) -> None:
    entities = [r[0] for r in rows]
    times = [float(r[1]) for r in rows]
    labels = [r[2] for r in rows]
    flagged = [r[3] for r in rows]
    result = time_to_detection(labels, flagged, entities, times)
    expected: dict[str, float] = {}
    for entity in sorted(set(entities)):
        frauds = [t for e, t, y in zip(entities, times, labels, strict=True) if e == entity and y]
        if not frauds:
            continue
        flags = [
            t
            for e, t, f in zip(entities, times, flagged, strict=True)
            if e == entity and f and t >= min(frauds)
        ]
        expected[entity] = min(flags) - min(frauds) if flags else math.nan
    assert result.entities.tolist() == list(expected)
    assert_close(result.delays, list(expected.values()))
    found = [d for d in expected.values() if not math.isnan(d)]
    assert result.undetected.tolist() == [e for e, d in expected.items() if math.isnan(d)]
    assert_close(result.detection_rate, len(found) / len(expected) if expected else math.nan)
    assert_close(result.mean, np.mean(found) if found else math.nan)
    assert_close(result.median, np.median(found) if found else math.nan)
    assert_close(result.p95, np.percentile(found, 95) if found else math.nan)


# --- invariance and the registry ------------------------------------------------------------------


@FAST
@given(data=scored(both_classes=False), seed=st.integers(0, 2**16), threshold=st.none() | st.floats(-3, 3))
def test_it_is_invariant_to_the_order_of_examples(
    data: tuple[np.ndarray, np.ndarray], seed: int, threshold: float | None
) -> None:
    labels, scores = data
    rng = np.random.default_rng(seed)
    examples = ScoredExamples.from_arrays(
        labels, scores, amounts=rng.integers(0, 9, labels.size), entities=rng.integers(0, 4, labels.size),
        timestamps=rng.integers(0, 30, labels.size),
    )  # fmt: skip
    options = FraudOptions(target_fpr=0.2, budget=5, threshold=threshold, fp_cost=2.0, fn_cost=3.0)
    shuffled = examples.permuted(rng.permutation(labels.size))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for spec in METRIC_SPECS:
            assert_close(spec.of(shuffled, options), spec.of(examples, options), atol=1e-9)


def test_it_declares_every_metric_completely_in_a_registry() -> None:
    registry = MetricRegistry()
    for spec in METRIC_SPECS:
        registry.register(spec)
    assert len(registry) == len(METRICS) == len(registry.family("fraud"))
    for spec in registry:
        assert spec.family == "fraud" and spec.label.strip()
        assert spec.definition.strip() and "\n" not in spec.definition
        assert spec.direction in ("higher", "lower", "neutral") and spec.kernel is not None
        assert (
            spec.range is None
            or spec.range[0] is None
            or spec.range[1] is None
            or spec.range[0] < spec.range[1]
        )
    assert registry.resolve("total_cost").better(1.0, 2.0) and registry.resolve("roc_auc").better(0.9, 0.8)
    assert registry.resolve("threshold").direction == "neutral"


def test_it_evaluates_every_metric_from_one_curve() -> None:
    labels, scores = seed_004_data()
    rng = np.random.default_rng(1)
    examples = ScoredExamples.from_arrays(
        labels, scores, entities=rng.integers(0, 500, labels.size), timestamps=np.arange(labels.size)
    )
    evaluation = evaluate_scores(
        examples, FraudOptions(threshold=0.5, fp_cost=100, fn_cost=10000, budget=100)
    )
    values = evaluation.metrics()
    assert set(values) == set(METRICS)
    assert values["detection_rate"] == pytest.approx(23 / 95) and values["savings"] == pytest.approx(
        0.2295789
    )
    assert values["roc_auc"] == pytest.approx(sk.roc_auc_score(labels, scores), abs=1e-12)
    for name, value in values.items():
        assert METRICS[name].in_range(value), name
    assert evaluation.detection_times is not None and evaluation.detection_times.n_anomalous > 0
    without = evaluate_scores(ScoredExamples.from_arrays(labels, scores)).metrics()
    assert math.isnan(without["mean_ttd"]) and math.isnan(without["precision_at_budget"])
    with pytest.raises(FraudInputError, match="unknown"):
        evaluation.metrics(["auc"])


@pytest.mark.parametrize(
    ("labels", "scores", "message"),
    [([0, 2], [0.1, 0.2], "0 or 1"), ([0, 1], [0.1], "aligned"), ([0, 1], [0.1, math.nan], "finite")],
)
def test_it_rejects_bad_labels_and_scores(labels: list[int], scores: list[float], message: str) -> None:
    with pytest.raises(FraudInputError, match=message):
        roc_auc_score(labels, scores)


# --- reading scores -------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_it_reads_amounts_entities_and_iso_timestamps(tmp_path: Path) -> None:
    path = write(
        tmp_path / "scores.csv",
        "label,score,id,entity,timestamp,amount\n"
        "1,0.9,t1,acct1,2024-01-01T10:00:00,50\n"
        "0,0.2,t2,acct1,2024-01-01T10:00:30,10\n"
        "\n"
        "true,0.1,t3,acct2,2024-01-02,70.5\n",
    )
    examples = read_scores(path)
    assert examples.labels.tolist() == [True, False, True]
    assert examples.amounts is not None and examples.amounts.tolist() == [50, 10, 70.5]
    assert examples.entity_ids is not None and examples.entity_ids.tolist() == ["acct1", "acct2"]
    assert examples.timestamps is not None and np.diff(examples.timestamps)[0] == 30
    zoned = read_scores(
        write(tmp_path / "z.csv", "id,score,label,entity,timestamp\na,1,1,e,2024-01-01T10:00:00+02:00\n")
    )
    assert zoned.timestamps is not None and zoned.timestamps[0] == 1704096000.0  # 08:00 UTC
    numbers = read_scores(write(tmp_path / "n.csv", "id,score,label,entity,timestamp\na,1,1,e,17.5\n"))
    assert numbers.timestamps is not None and numbers.timestamps.tolist() == [17.5]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("", 1, "empty first line; expected the header id,score,label[,amount][,entity][,timestamp]"),
        ("id,score\n", 1, "missing column 'label'"),
        ("id,score,label,weight\n", 1, "unknown column 'weight'"),
        ("id,score,label\n", None, "the file holds no scores"),
        ("id,score,label\na,0.5,1\nb,0.5,2\n", 3, "label '2' is not 0 or 1"),
        ("id,score,label\na,high,1\n", 2, "score 'high' is not a number"),
        ("id,score,label\na,0.5,1\nb,nan,0\n", 3, "score nan is not a finite number"),
        ("id,score,label,amount\na,0.5,1,-3\n", 2, "amount -3.0 is not a finite, non-negative number"),
        ("id,score,label,entity\na,0.5,1,e\n", 1, "missing column 'timestamp'"),
        (
            "id,score,label,entity,timestamp\na,1,1,e,5\nb,1,0,e,2024-01-01\n",
            3,
            "timestamp '2024-01-01' is a date",
        ),
        ("id,score,label,entity,timestamp\na,1,1,e,soon\n", 2, "timestamp 'soon' is neither"),
        ("id,score,label\na,0.5,1,extra\n", 2, "expected 3 columns (id,score,label), found 4"),
    ],
)
def test_it_reports_malformed_score_files_by_line(
    tmp_path: Path, text: str, line: int | None, reason: str
) -> None:
    path = write(tmp_path / "scores.csv", text)
    with pytest.raises(FormatError) as caught:
        read_scores(path)
    where = f"{path}:{line}" if line is not None else str(path)
    assert str(caught.value).startswith(f"{where}: {reason}")


# --- the operating point is never worse than flagging nothing -------------------------------------

# Nine legitimate examples above the one fraud: a 25% target lets two negatives be flagged, for nothing.
TEN_ROWS = (np.array([0] * 9 + [1]), np.linspace(0.9, 0.1, 10))


def test_it_flags_nothing_when_no_threshold_within_the_target_catches_a_fraud() -> None:
    labels, scores = TEN_ROWS
    evaluated = fraud.evaluate_scores(
        fraud.ScoredExamples.from_arrays(labels, scores), fraud.FraudOptions(target_fpr=0.25)
    )
    assert evaluated.detection.detection_rate == 0.0 and evaluated.detection.threshold == math.inf
    assert evaluated.operating.rule == "flag_nothing" and "catches a fraud" in evaluated.operating.note
    assert (evaluated.cost.total_cost, evaluated.cost.flag_nothing_cost, evaluated.cost.fp) == (1.0, 1.0, 0)


def test_it_costs_nothing_on_a_file_without_frauds() -> None:
    evaluated = fraud.evaluate_scores(
        fraud.ScoredExamples.from_arrays([0] * 5, [0.1, 0.2, 0.3, 0.4, 0.5]),
        fraud.FraudOptions(target_fpr=0.4),
    )
    assert evaluated.operating.rule == "flag_nothing" and evaluated.cost.total_cost == 0.0


def test_it_flags_nothing_when_the_detection_point_costs_more() -> None:
    examples = fraud.ScoredExamples.from_arrays([0, 0, 1, 0, 0], [0.9, 0.8, 0.7, 0.1, 0.2])
    evaluated = fraud.evaluate_scores(examples, fraud.FraudOptions(target_fpr=0.5))
    assert evaluated.detection.detection_rate == 1.0 and evaluated.detection.threshold == 0.7
    assert evaluated.operating.rule == "flag_nothing" and "would cost 2" in evaluated.operating.note
    assert evaluated.cost.total_cost == 1.0
    given_one = fraud.evaluate_scores(examples, fraud.FraudOptions(target_fpr=0.5, threshold=0.7))
    assert given_one.operating.rule == "threshold" and given_one.cost.total_cost == 2.0  # as asked


@FAST
@given(
    data=scored(both_classes=False),
    target=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]),
    fp_cost=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
)
def test_it_never_costs_more_than_flagging_nothing(
    data: tuple[np.ndarray, np.ndarray], target: float, fp_cost: float
) -> None:
    labels, scores = data
    evaluated = fraud.evaluate_scores(
        fraud.ScoredExamples.from_arrays(labels, scores),
        fraud.FraudOptions(target_fpr=target, fp_cost=fp_cost),
    )
    assert evaluated.cost.total_cost <= evaluated.cost.flag_nothing_cost
    if evaluated.operating.rule == "target_fpr":
        assert evaluated.cost.tp > 0 and evaluated.operating.note == ""
