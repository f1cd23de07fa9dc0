"""evalcore.machine_judges: calibration against sklearn and the krippendorff package, confusion and bias
against direct loops, PPI against a direct implementation of the estimator and by simulated coverage."""

from __future__ import annotations

import json
import math
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from scipy import stats as scipy_stats
from sklearn.metrics import cohen_kappa_score

from evalcore.agreement import LongLabels
from evalcore.errors import FormatError
from evalcore.machine_judges import (
    NoHumanQueriesError,
    QueriesNotJudgedError,
    calibrate_judge,
    krippendorff_alpha_with_humans,
    leaning,
    pair_labels,
    per_query_scores,
    ppi_compare,
    ppi_evaluate,
    ppi_evaluate_measures,
    ppi_mean,
    ppi_tuning,
    queries_restricted,
    ranking_agreement,
    read_machine_labels,
    sample_mean,
)
from evalcore.machine_judges import _labels as labels_module
from evalcore.retrieval import Qrels, Run, evaluate
from evalcore.stats import StatsInputError, tau_ap

Z95 = 1.959963984540054


def noisy_judge(seed: int, n: int = 400, grades: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human grades, a lenient noisy machine copy of them, and topics."""
    rng = np.random.default_rng(seed)
    human = rng.integers(0, grades, n)
    machine = np.clip(human + rng.choice([-1, 0, 0, 1, 1, 2], n), 0, grades - 1)
    return human, machine, rng.integers(0, 9, n)


# --- calibration ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_it_matches_sklearns_cohen_kappa(seed: int, weights: str | None) -> None:
    human, machine, _ = noisy_judge(seed)
    report = calibrate_judge(human, machine)
    kappa = {
        None: report.cohen_kappa,
        "linear": report.cohen_kappa_linear,
        "quadratic": report.cohen_kappa_quadratic,
    }
    expected = cohen_kappa_score(human, machine, labels=list(range(4)), weights=weights)
    assert kappa[weights] == pytest.approx(expected, abs=1e-12)


def test_it_weighs_grade_values_not_positions_when_a_grade_is_skipped() -> None:
    human = np.array([0, 1, 3, 3, 1, 0, 3])
    machine = np.array([0, 3, 3, 1, 1, 0, 0])
    report = calibrate_judge(human, machine)
    assert report.grades.tolist() == [0.0, 1.0, 3.0]
    expected = cohen_kappa_score(human, machine, labels=[0, 1, 2, 3], weights="quadratic")
    assert report.cohen_kappa_quadratic == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_it_matches_the_krippendorff_package(seed: int) -> None:
    human, machine, _ = noisy_judge(seed, n=150)
    report = calibrate_judge(human, machine)
    data = np.vstack([human, machine]).astype(float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert report.krippendorff_alpha_ordinal == pytest.approx(expected, abs=1e-9)


def test_it_counts_the_confusion_and_the_bias_as_a_loop_does() -> None:
    human, machine, topics = noisy_judge(7, n=300)
    report = calibrate_judge(human, machine, topics=topics)
    grades = sorted(set(human) | set(machine))
    confusion = np.zeros((len(grades), len(grades)), dtype=int)
    for h, m in zip(human.tolist(), machine.tolist(), strict=True):
        confusion[grades.index(h), grades.index(m)] += 1
    assert report.confusion.tolist() == confusion.tolist()
    assert report.pairs == 300
    assert report.bias == pytest.approx(sum(m - h for h, m in zip(human, machine, strict=True)) / 300)
    assert report.exact_agreement == pytest.approx(np.mean(human == machine))
    assert report.leaning == "more lenient"
    for g, grade in enumerate(grades):
        rows = [(h, m) for h, m in zip(human.tolist(), machine.tolist(), strict=True) if h == grade]
        assert report.per_grade.pairs[g] == len(rows)
        assert report.per_grade.mean_machine[g] == pytest.approx(sum(m for _, m in rows) / len(rows))
        assert report.per_grade.bias[g] == pytest.approx(sum(m - h for h, m in rows) / len(rows))
        assert report.per_grade.stricter[g] == pytest.approx(sum(m < h for h, m in rows) / len(rows))
        assert report.per_grade.agreeing[g] == pytest.approx(sum(m == h for h, m in rows) / len(rows))
        assert report.per_grade.lenient[g] == pytest.approx(sum(m > h for h, m in rows) / len(rows))


def test_it_gives_agreement_per_topic_as_a_loop_over_topics_does() -> None:
    human, machine, topics = noisy_judge(3, n=500)
    per_topic = calibrate_judge(human, machine, topics=topics.astype(str)).per_topic
    assert per_topic is not None
    assert per_topic.topics.tolist() == sorted(set(topics.astype(str)))
    for i, topic in enumerate(per_topic.topics.tolist()):
        mine = topics.astype(str) == topic
        h, m = human[mine], machine[mine]
        assert per_topic.pairs[i] == mine.sum()
        assert per_topic.exact_agreement[i] == pytest.approx(np.mean(h == m))
        assert per_topic.bias[i] == pytest.approx(np.mean(m - h))
        assert per_topic.cohen_kappa[i] == pytest.approx(cohen_kappa_score(h, m, labels=list(range(4))))
        assert per_topic.cohen_kappa_quadratic[i] == pytest.approx(
            cohen_kappa_score(h, m, labels=list(range(4)), weights="quadratic")
        )


def test_it_says_which_way_a_judge_leans() -> None:
    assert calibrate_judge([2, 2, 1], [1, 2, 0]).leaning == "stricter"
    assert calibrate_judge([0, 1], [1, 0]).leaning == "even"
    assert leaning(float("nan")) == "even"


def test_it_leaves_undefined_figures_nan_and_grades_nobody_gave_nan() -> None:
    report = calibrate_judge([1, 1, 1], [1, 1, 1], topics=["a", "a", "b"])
    assert math.isnan(report.cohen_kappa) and math.isnan(report.krippendorff_alpha_ordinal)
    assert report.exact_agreement == 1.0 and report.bias == 0.0
    machine_only_grade = calibrate_judge([0, 0], [0, 2])
    assert machine_only_grade.per_grade.pairs.tolist() == [2, 0]
    assert math.isnan(machine_only_grade.per_grade.bias[1])


def test_it_refuses_no_pairs_and_misaligned_grades() -> None:
    with pytest.raises(StatsInputError, match="no pair"):
        calibrate_judge([], [])
    with pytest.raises(StatsInputError, match="aligned"):
        calibrate_judge([1, 2], [1])
    with pytest.raises(StatsInputError, match="NaN"):
        calibrate_judge([1, float("nan")], [1, 2])
    with pytest.raises(StatsInputError, match="topics"):
        calibrate_judge([1, 2], [1, 2], topics=["a"])


def test_it_computes_alpha_with_several_humans_as_the_krippendorff_package() -> None:
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 3, 80)
    matrix = np.where(
        rng.random((80, 4)) < 0.7, np.clip(truth[:, None] + rng.integers(-1, 2, (80, 4)), 0, 2), np.nan
    )
    humans = LongLabels.from_matrix(matrix)
    judged = np.flatnonzero(rng.random(80) < 0.6)
    machine = np.clip(truth[judged] + rng.integers(0, 2, judged.size), 0, 2)
    alpha = krippendorff_alpha_with_humans(humans, judged, machine)
    column = np.full(80, np.nan)
    column[judged] = machine
    data = np.hstack([matrix, column[:, None]])[judged].T
    assert alpha == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"), abs=1e-9
    )
    with pytest.raises(StatsInputError, match="not among"):
        krippendorff_alpha_with_humans(humans, [500], [1])


# --- labels from files -----------------------------------------------------------------------------------


def write_jsonl(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_it_reads_jsonl_labels_with_confidence_and_rationale(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "judge.txt", [
        {"qid": "q1", "doc_id": "d1", "label": 2, "confidence": 0.9, "rationale": "on topic"},
        {"qid": 7, "docno": "d2", "label": 0},
        {"qid": "q1", "doc_id": "d3", "label": 1.0, "confidence": None},
    ])  # fmt: skip
    labels = read_machine_labels(path)
    assert labels.source_format == "jsonl"
    assert labels.qrels.to_dict() == {"q1": {"d1": 2, "d3": 1}, "7": {"d2": 0}}
    assert labels.confidence[0] == 0.9 and np.isnan(labels.confidence[1:]).all()
    assert labels.rationale == ("on topic", None, None)
    assert labels.has_confidence


def test_it_reads_trec_qrels_as_machine_labels_whatever_the_name(tmp_path: Path) -> None:
    path = tmp_path / "judge.jsonl"
    path.write_text("# an LLM judge\nq1 0 d1 2\nq2 0 d2 0\n")
    labels = read_machine_labels(path)
    assert labels.source_format == "trec"
    assert labels.qrels.to_dict() == {"q1": {"d1": 2}, "q2": {"d2": 0}}
    assert not labels.has_confidence and labels.rationale == (None, None)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"qid": "q1", "doc_id": "d9", "label": "high"}', '"label" must be an integer grade'),
        ('{"qid": "q1", "doc_id": "d9", "label": 1.5}', '"label" must be an integer grade'),
        ('{"qid": "q1", "doc_id": "d9", "label": true}', '"label" must be an integer grade'),
        ('{"qid": "q1", "doc_id": "d9"}', 'no "label"'),
        ('{"doc_id": "d9", "label": 1}', 'no "qid"'),
        ('{"qid": "q1", "doc_id": "d 9", "label": 1}', "contains whitespace"),
        (
            '{"qid": "q1", "doc_id": "d9", "label": 1, "confidence": 1.2}',
            '"confidence" must be a number from 0 to 1',
        ),
        ('{"qid": "q1", "doc_id": "d9", "label": 1, "rationale": 3}', '"rationale" must be text'),
        ('{"qid": "q1", "doc_id": "d9", "lable": 1}', 'unknown field "lable"'),
        ('{"qid": "q1", "doc_id": "d9", "docno": "d9", "label": 1}', 'both "doc_id" and "docno"'),
        ('{"qid": "q1", "doc_id": "d1", "label": 0}', "appears twice for query 'q1' (first on line 1)"),
        ('{"qid": "q1", "doc_id": "d9", "label": 1', "invalid JSON"),
        ("[1, 2]", "each line must be a JSON object"),
    ],
)
def test_it_refuses_a_bad_jsonl_line_with_file_line_and_reason(
    tmp_path: Path, line: str, reason: str
) -> None:
    path = tmp_path / "judge.jsonl"
    path.write_text('{"qid": "q1", "doc_id": "d1", "label": 1}\n\n' + line + "\n")
    with pytest.raises(FormatError) as caught:
        read_machine_labels(path)
    assert caught.value.path == str(path) and caught.value.line == 3
    assert reason in caught.value.reason


def test_it_refuses_a_bad_qrels_line_and_a_gzip_file(tmp_path: Path) -> None:
    path = tmp_path / "judge.qrels"
    path.write_text("q1 0 d1 2\nq1 0 d2 1.5\n")
    with pytest.raises(FormatError, match=r"judge.qrels:2: relevance '1.5' is not an integer"):
        read_machine_labels(path)
    gz = tmp_path / "judge.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00rest")
    with pytest.raises(FormatError, match="gzip"):
        read_machine_labels(gz)


@pytest.mark.parametrize("prefix", ["d", "clueweb12-0000tw-"], ids=["exact keys", "hashed keys"])
def test_it_pairs_the_labels_both_gave_as_a_dict_lookup_does(prefix: str) -> None:
    rng = np.random.default_rng(5)
    human = {f"q{q}": {f"{prefix}{d}": int(rng.integers(-1, 3)) for d in rng.choice(60, 30, replace=False)} for q in range(12)}  # fmt: skip
    machine = {f"q{q}": {f"{prefix}{d}": int(rng.integers(-1, 3)) for d in rng.choice(60, 40, replace=False)} for q in range(3, 15)}  # fmt: skip
    machine["q5"][f"{prefix}x"] = 1
    assert Qrels.from_dict(machine).exact_keys == (prefix == "d")
    pairs = pair_labels(Qrels.from_dict(human), Qrels.from_dict(machine))
    expected = sorted(
        (q, d, h, machine[q][d])
        for q, docs in human.items()
        for d, h in docs.items()
        if q in machine and d in machine[q] and h >= 0 and machine[q][d] >= 0
    )
    human_qrels = Qrels.from_dict(human)
    docnos = human_qrels.docno_strings(pairs.human_rows)
    got = sorted(
        zip(pairs.topics.tolist(), docnos, pairs.human.tolist(), pairs.machine.tolist(), strict=True)
    )
    assert got == expected and len(pairs) == len(expected) > 0


# --- rankings of systems ---------------------------------------------------------------------------------


def test_it_compares_the_leaderboards_with_kendalls_tau() -> None:
    rng = np.random.default_rng(2)
    docs = [f"d{i}" for i in range(30)]
    human = {f"q{q}": {d: int(rng.integers(0, 3)) for d in docs} for q in range(10)}
    machine = {
        q: {d: min(2, g + int(rng.integers(0, 2))) for d, g in judged.items()} for q, judged in human.items()
    }
    machine["q99"] = {"d1": 2}  # a topic the humans lack counts in neither leaderboard
    runs = [Run.from_dict({q: {d: float(rng.random()) for d in docs} for q in human}) for _ in range(6)]
    result = ranking_agreement(runs, Qrels.from_dict(human), Qrels.from_dict(machine), measure="ndcg_cut_10")
    on_human = [
        evaluate(Qrels.from_dict(human), run, ["ndcg_cut_10"]).aggregate["ndcg_cut_10"] for run in runs
    ]
    del machine["q99"]
    on_machine = [
        evaluate(Qrels.from_dict(machine), run, ["ndcg_cut_10"]).aggregate["ndcg_cut_10"] for run in runs
    ]
    assert result.human_scores == pytest.approx(on_human) and result.machine_scores == pytest.approx(
        on_machine
    )
    assert result.kendall_tau == pytest.approx(scipy_stats.kendalltau(on_human, on_machine).statistic)
    assert result.tau_ap == pytest.approx(tau_ap(on_human, on_machine))
    assert result.topics == 10 and result.names == ("run 1", "run 2", "run 3", "run 4", "run 5", "run 6")


# --- prediction-powered inference ------------------------------------------------------------------------


def direct_ppi(
    f_all: np.ndarray, y: np.ndarray, f: np.ndarray, lam: float = 1.0
) -> tuple[float, float, float]:
    """The estimator term by term: the papers' variance plus the covariance of the two means, since the
    n human-judged queries are among the N."""
    big_n, n = len(f_all), len(y)
    theta = lam * sum(f_all) / big_n + sum(yi - lam * fi for yi, fi in zip(y, f, strict=True)) / n
    mean_f = sum(f_all) / big_n
    var_f = sum((x - mean_f) ** 2 for x in f_all) / (big_n - 1)
    rect = [yi - lam * fi for yi, fi in zip(y, f, strict=True)]
    mean_r, mean_fs = sum(rect) / n, sum(f) / n
    var_r = sum((r - mean_r) ** 2 for r in rect) / (n - 1)
    cov_fr = sum((fi - mean_fs) * (r - mean_r) for fi, r in zip(f, rect, strict=True)) / (n - 1)
    se = math.sqrt(lam * lam * var_f / big_n + var_r / n + 2 * lam * cov_fr / big_n)
    return theta, theta - Z95 * se, theta + Z95 * se


def collection(rng: np.random.Generator, big_n: int, n: int, bias: float) -> tuple[np.ndarray, ...]:
    """A run's per-query metric: the truth on human labels, a biased noisy machine copy, a random sample."""
    y_all = rng.beta(2.0, 3.0, big_n)
    f_all = np.clip(y_all + bias + rng.normal(0.0, 0.1, big_n), 0.0, 1.0)
    sample = rng.choice(big_n, n, replace=False)
    return y_all, f_all, y_all[sample], f_all[sample]


def test_it_matches_a_direct_implementation_of_the_estimator() -> None:
    rng = np.random.default_rng(0)
    _, f_all, y, f = collection(rng, 200, 30, 0.1)
    estimate = ppi_mean(f_all, y, f)
    theta, low, high = direct_ppi(f_all, y, f)
    assert (estimate.estimate, estimate.ci_low, estimate.ci_high) == pytest.approx(
        (theta, low, high), abs=1e-12
    )
    lam = ppi_tuning(f_all, y, f)
    cov = sum((a - y.mean()) * (b - f.mean()) for a, b in zip(y, f, strict=True)) / (len(y) - 1)
    assert lam == pytest.approx(min(1.0, max(0.0, cov / np.var(f_all, ddof=1)))) and 0 < lam < 1
    tuned = ppi_compare(f_all, y, f).ppi_plus_plus
    assert (tuned.estimate, tuned.ci_low, tuned.ci_high) == pytest.approx(
        direct_ppi(f_all, y, f, lam), abs=1e-12
    )


def test_it_reduces_to_the_sample_means_at_the_ends() -> None:
    f_all, y, f = np.array([0.2, 0.4, 0.9, 0.5]), np.array([0.1, 0.8, 0.3]), np.array([0.2, 0.9, 0.5])
    human = ppi_mean(f_all, y, f, tuning=0.0)
    assert human.estimate == pytest.approx(y.mean())
    assert human.std_error == pytest.approx(y.std(ddof=1) / math.sqrt(3))
    assert (human.ci_low, human.ci_high) == pytest.approx((sample_mean(y).ci_low, sample_mean(y).ci_high))
    compared = ppi_compare(f_all, y, f, alpha=0.1)
    assert compared.machine_only.estimate == pytest.approx(f_all.mean())
    assert compared.machine_only.std_error == pytest.approx(f_all.std(ddof=1) / 2)
    assert compared.human_only.half_width == pytest.approx(1.6448536269514722 * y.std(ddof=1) / math.sqrt(3))
    assert (compared.queries, compared.human_queries, compared.alpha) == (4, 3, 0.1)


def test_a_95_percent_interval_covers_about_95_percent_of_simulated_collections() -> None:
    rng = np.random.default_rng(2024)
    trials, big_n, n, bias = 2000, 500, 80, 0.12
    truth = 2.0 / 5.0  # the mean of Beta(2, 3): the population mean of the per-query metric
    covered = {"ppi": 0, "ppi_plus_plus": 0, "human_only": 0, "machine_only": 0, "ppi_collection": 0}
    for _ in range(trials):
        y_all, f_all, y, f = collection(rng, big_n, n, bias)
        result = ppi_compare(f_all, y, f)
        for name in ("ppi", "ppi_plus_plus", "human_only", "machine_only"):
            interval = getattr(result, name)
            covered[name] += interval.ci_low <= truth <= interval.ci_high
        covered["ppi_collection"] += result.ppi.ci_low <= y_all.mean() <= result.ppi.ci_high
    rate = {name: count / trials for name, count in covered.items()}
    tolerance = 4 * math.sqrt(0.95 * 0.05 / trials)  # four binomial standard deviations
    for name in ("ppi", "ppi_plus_plus", "human_only"):
        assert abs(rate[name] - 0.95) <= tolerance, rate
    assert rate["ppi_collection"] >= 0.95 - tolerance, rate  # the N queries' own mean: conservative
    assert rate["machine_only"] < 0.05, rate  # biased by 0.12: its narrow interval misses the truth


def test_it_is_narrower_than_human_only_when_the_machine_tracks_people() -> None:
    rng = np.random.default_rng(8)
    _, f_all, y, f = collection(rng, 2000, 100, 0.1)
    result = ppi_compare(f_all, y, f)
    assert result.ppi.half_width < 0.8 * result.human_only.half_width
    assert result.ppi_plus_plus.half_width <= result.ppi.half_width + 1e-9


def test_it_handles_one_human_query_and_constant_differences() -> None:
    single = ppi_compare([0.3, 0.5, 0.7], [0.6], [0.5])
    assert single.ppi.estimate == pytest.approx(0.5 + 0.1)
    assert (
        math.isnan(single.ppi.std_error)
        and math.isnan(single.ppi.ci_low)
        and math.isnan(single.human_only.ci_high)
    )
    assert single.tuning == 0.0 and single.ppi_plus_plus.estimate == pytest.approx(0.6)
    f_all = np.array([0.2, 0.4, 0.6, 0.8])
    constant = ppi_mean(f_all, [0.5, 0.9], [0.4, 0.8])
    assert constant.estimate == pytest.approx(0.6)
    assert constant.std_error == pytest.approx(f_all.std(ddof=1) / 2)  # the rectifier does not vary
    flat = ppi_compare([0.5, 0.5, 0.5], [0.2, 0.9], [0.5, 0.5])
    assert flat.tuning == 0.0 and flat.ppi.estimate == pytest.approx(0.55)


def test_it_refuses_no_human_queries_and_bad_input() -> None:
    with pytest.raises(NoHumanQueriesError, match="no query was judged by people"):
        ppi_mean([0.1, 0.2], [], [])
    with pytest.raises(StatsInputError, match="aligned"):
        ppi_mean([0.1, 0.2], [0.1], [0.1, 0.2])
    with pytest.raises(StatsInputError, match="alpha"):
        ppi_mean([0.1, 0.2], [0.1], [0.1], alpha=1.5)
    with pytest.raises(StatsInputError, match="NaN"):
        ppi_mean([0.1, float("nan")], [0.1], [0.1])


def test_it_evaluates_a_run_with_machine_and_human_qrels() -> None:
    rng = np.random.default_rng(4)
    docs = [f"d{i}" for i in range(20)]
    truth = {f"q{q:02d}": {d: int(rng.integers(0, 3)) for d in docs} for q in range(40)}
    machine = {
        q: {d: min(2, g + int(rng.integers(0, 2))) for d, g in judged.items()} for q, judged in truth.items()
    }
    human = {q: truth[q] for q in sorted(rng.choice(sorted(truth), 12, replace=False))}
    run = Run.from_dict(
        {q: {d: float(rng.random()) for d in docs} for q in sorted(truth)[:-3]}
    )  # 3 queries unanswered
    result = ppi_evaluate(run, Qrels.from_dict(machine), Qrels.from_dict(human), "ndcg_cut_10")
    per_machine = evaluate(Qrels.from_dict(machine), run, ["ndcg_cut_10"]).per_query
    f_all = np.array(
        [float(per_machine.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"]) for q in sorted(machine)]
    )
    per_human = evaluate(Qrels.from_dict(human), run, ["ndcg_cut_10"]).per_query
    y = np.array([float(per_human.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"]) for q in sorted(human)])
    f = np.array([float(per_machine.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"]) for q in sorted(human)])
    theta, low, high = direct_ppi(f_all, y, f)
    assert (result.ppi.estimate, result.ppi.ci_low, result.ppi.ci_high) == pytest.approx((theta, low, high))
    assert (result.queries, result.human_queries) == (40, 12)
    qids, values = per_query_scores(run, Qrels.from_dict(machine), "ndcg_cut_10")
    assert qids.tolist() == sorted(machine) and values == pytest.approx(f_all)


def test_it_evaluates_several_measures_at_once_as_one_at_a_time() -> None:
    rng = np.random.default_rng(5)
    docs = [f"d{i}" for i in range(15)]
    truth = {f"q{q:02d}": {d: int(rng.integers(0, 3)) for d in docs} for q in range(25)}
    machine = Qrels.from_dict(
        {q: {d: min(2, g + 1) for d, g in judged.items()} for q, judged in truth.items()}
    )
    run = Run.from_dict({q: {d: float(rng.random()) for d in docs} for q in sorted(truth)[2:]})
    sample = sorted(rng.choice(sorted(truth), 8, replace=False).tolist())
    human = queries_restricted(Qrels.from_dict(truth), sample)
    assert human.qids.tolist() == sample and len(human) == 8 * len(docs)
    measures = ["map", "P_5", "ndcg_cut_10"]
    together = ppi_evaluate_measures(run, machine, human, measures, alpha=0.1, rel_level=2)
    for measure in measures:
        alone = ppi_evaluate(run, machine, human, measure, alpha=0.1, rel_level=2)
        assert together[measure] == alone, measure
    assert ppi_evaluate_measures(run, machine, human, []) == {}
    with pytest.raises(StatsInputError, match="averaged over queries"):
        ppi_evaluate_measures(run, machine, human, ["map", "num_rel"])


def test_it_refuses_human_queries_the_machine_did_not_judge_and_unaveraged_measures() -> None:
    machine, human = Qrels.from_dict({"q1": {"a": 1}}), Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}})
    run = Run.from_dict({"q1": {"a": 1.0}})
    with pytest.raises(QueriesNotJudgedError, match="'q2'"):
        ppi_evaluate(run, machine, human, "map")
    with pytest.raises(StatsInputError, match="averaged over queries"):
        ppi_evaluate(run, machine, machine, "num_rel")
    with pytest.raises(StatsInputError, match="averaged over queries"):
        ppi_evaluate(run, machine, machine, "gm_map")


def test_it_gives_agreement_per_band_of_confidence_as_a_loop_does() -> None:
    human, machine, _ = noisy_judge(9, n=400)
    rng = np.random.default_rng(9)
    confidence = np.where(rng.random(400) < 0.1, np.nan, rng.random(400))
    confidence[:3] = [0.0, 1.0, 0.4]  # the edges: 1.0 falls in the last band, 0.4 opens the third
    bands = calibrate_judge(human, machine, confidence=confidence, bands=5).per_confidence
    assert bands is not None and bands.edges.tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8, 1.0])
    for b in range(5):
        low, high = b / 5, (b + 1) / 5
        mine = [
            i for i, c in enumerate(confidence.tolist())
            if not math.isnan(c) and (low <= c < high or (b == 4 and c == 1.0))
        ]  # fmt: skip
        assert bands.pairs[b] == len(mine)
        assert bands.mean_confidence[b] == pytest.approx(np.mean(confidence[mine]))
        assert bands.exact_agreement[b] == pytest.approx(np.mean(human[mine] == machine[mine]))
        assert bands.mean_abs_error[b] == pytest.approx(np.mean(np.abs(machine[mine] - human[mine])))
    assert calibrate_judge(human, machine, confidence=np.full(400, np.nan)).per_confidence is None
    with pytest.raises(StatsInputError, match="between 0 and 1"):
        calibrate_judge([1], [1], confidence=[1.5])


def test_it_pairs_the_same_when_hashes_collide_and_the_three_key_sort_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(6)
    human = Qrels.from_dict(
        {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in range(20)} for q in range(5)}
    )
    machine = Qrels.from_dict(
        {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in range(5, 30)} for q in range(2, 8)}
    )
    expected = pair_labels(human, machine)
    # With every salt 0, a document's hash is the same in every query: collisions within each side.
    monkeypatch.setattr(labels_module, "query_salts", lambda size: np.zeros(size, dtype=np.uint64))
    collided = pair_labels(human, machine)
    assert collided.human_rows.tolist() == expected.human_rows.tolist()
    assert collided.machine_rows.tolist() == expected.machine_rows.tolist()
    assert len(expected) == 3 * 15 and expected.topics.tolist() == [
        f"q{q}" for q in range(2, 5) for _ in range(15)
    ]


def test_it_reads_a_regular_jsonl_file_with_arrow_as_the_line_scan_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(12)
    records: list[dict[str, object]] = [
        {"qid": f"q{q}", "doc_id": f"doc-{q}-{d}", "label": int(rng.integers(0, 4)),
         "confidence": None if d % 7 == 0 else round(float(rng.random()), 3), "rationale": None if d % 3 else f"r{d}"}
        for q in range(30) for d in range(40)
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "judge.jsonl", records)
    fast, slow = labels_module._read_jsonl_fast(str(path)), labels_module._read_jsonl_slow(str(path))
    assert fast.qrels.to_dict() == slow.qrels.to_dict()
    np.testing.assert_array_equal(fast.confidence, slow.confidence)
    assert fast.rationale == slow.rationale and fast.source_format == slow.source_format == "jsonl"
    integer_qids = write_jsonl(tmp_path / "ints.jsonl", [{"qid": 301, "docno": "a", "label": 1.0}, {"qid": 302, "docno": "b", "label": 0}])  # fmt: skip
    assert labels_module._read_jsonl_fast(str(integer_qids)).qrels.to_dict() == {
        "301": {"a": 1},
        "302": {"b": 0},
    }


@pytest.mark.parametrize(
    "lines",
    [
        [
            '{"qid": "q1", "doc_id": "a", "label": 1}',
            '{"qid": "q1", "docno": "b", "label": 2}',
        ],  # both names: Arrow refuses, the scan reads
        [
            '{"qid": "q1", "doc_id": "a", "label": 1}',
            "",
            '{"qid": "q2", "doc_id": "a", "label": 0}',
        ],  # a blank line
        [
            '{"qid": 1, "doc_id": "a", "label": 1}',
            '{"qid": "q2", "doc_id": "a", "label": 0}',
        ],  # mixed qid types: Arrow refuses
    ],
)
def test_it_reads_irregular_files_as_the_line_scan_does(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "judge.jsonl"
    path.write_text("\n".join(lines) + "\n")
    labels = read_machine_labels(path)
    assert labels.qrels.to_dict() == labels_module._read_jsonl_slow(str(path)).qrels.to_dict()
    assert len(labels) == sum(1 for line in lines if line)


@pytest.mark.parametrize(
    ("name", "text"), [("judge.jsonl", ""), ("judge.jsonl", "\n\n"), ("judge.qrels", "")]
)
def test_it_refuses_a_file_without_labels(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(FormatError, match="holds no"):
        read_machine_labels(path)


def test_it_refuses_grades_too_many_to_tabulate() -> None:
    with pytest.raises(StatsInputError, match="bin them first"):
        calibrate_judge(np.arange(5000) / 7.0, np.arange(5000) / 7.0)


def test_the_estimand_of_the_judged_queries_drops_the_machines_sampling_variance() -> None:
    rng = np.random.default_rng(1)
    _, f_all, y, f = collection(rng, 300, 40, 0.1)
    big_n, n = 300, 40
    lam = ppi_tuning(f_all, y, f)
    for tuning in (1.0, lam):
        result = ppi_mean(f_all, y, f, tuning=tuning, estimand="queries")
        rect = y - tuning * f
        assert result.estimate == pytest.approx(tuning * f_all.mean() + rect.mean())
        assert result.std_error == pytest.approx(math.sqrt((1 / n - 1 / big_n) * rect.var(ddof=1)))
    compared = ppi_compare(f_all, y, f, estimand="queries")
    assert compared.estimand == "queries"
    assert compared.human_only.std_error == pytest.approx(math.sqrt((1 - n / big_n) * y.var(ddof=1) / n))
    assert (
        compared.machine_only.std_error == 0.0
        and compared.machine_only.ci_low == compared.machine_only.estimate
    )
    assert ppi_compare(f_all, y, f).ppi.half_width > compared.ppi.half_width
    everyone = ppi_mean(y, y, y, estimand="queries")  # people judged every query: no sampling error
    assert everyone.std_error == 0.0 and everyone.estimate == pytest.approx(y.mean())
    with pytest.raises(StatsInputError, match="estimand"):
        ppi_mean(f_all, y, f, estimand="everything")  # type: ignore[arg-type]


def test_a_95_percent_interval_for_the_judged_queries_covers_their_own_mean_about_95_percent() -> None:
    rng = np.random.default_rng(77)
    trials, big_n, n = 2000, 400, 60
    covered = {"ppi": 0, "ppi_plus_plus": 0, "human_only": 0, "machine_only": 0}
    for _ in range(trials):
        y_all, f_all, y, f = collection(rng, big_n, n, 0.12)
        result = ppi_compare(f_all, y, f, estimand="queries")
        for name in covered:
            interval = getattr(result, name)
            covered[name] += interval.ci_low <= y_all.mean() <= interval.ci_high
    rate = {name: count / trials for name, count in covered.items()}
    tolerance = 4 * math.sqrt(0.95 * 0.05 / trials)
    for name in ("ppi", "ppi_plus_plus", "human_only"):
        assert abs(rate[name] - 0.95) <= tolerance, rate
    assert rate["machine_only"] == 0.0, rate
