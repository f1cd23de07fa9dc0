"""Tests for evalcore.recsys: every metric against an independent reference, the seed 004 example,
the corner cases, invariance to the order of users, and the CSV readers' errors.

References: plain Python loops over sets and dicts written from each definition (one user at a
time, the opposite of the vectorised kernels), scikit-learn's `ndcg_score`, and the Gini
coefficient as a mean absolute difference (a formula independent of the sorted one we use).
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score

from evalcore.errors import FormatError
from evalcore.metrics import MetricRegistry
from evalcore.recsys import (
    METRIC_SPECS,
    METRICS,
    Interactions,
    ItemSimilarity,
    RecommendationLists,
    RecsysData,
    RecsysInputError,
    RepeatedEntryError,
    _data,
    _diversity,
    average_percentage_long_tail,
    average_recommendation_popularity,
    catalog_coverage,
    category_coverage,
    evaluate_recommendations,
    gini,
    gini_coefficient,
    gini_recommended,
    hit_rate,
    intra_list_diversity,
    long_tail_items,
    most_popular_items,
    ndcg_at_k,
    novelty,
    popularity_bias,
    precision_at_k,
    read_recsys_files,
    recall_at_k,
    serendipity_baseline,
    serendipity_history,
    unexpectedness,
    unique_items_recommended,
)

FAST = settings(max_examples=60, deadline=None)
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "recsys"

# Seed 004, section 21.4.2: three users' top-3 lists over a ten-item catalog.
SEED_RECS = {
    "u0": ["item_1", "item_2", "item_3"],
    "u1": ["item_1", "item_4", "item_5"],
    "u2": ["item_1", "item_2", "item_6"],
}
SEED_TRUTH = {"u0": ["item_2", "item_7"], "u1": ["item_4"], "u2": ["item_6", "item_8"]}
SEED_CATALOG = [f"item_{i}" for i in range(1, 11)]
SEED_POPULARITY = np.array([100 - i * 10 for i in range(1, 11)])
SEED_CATEGORIES = np.array([i % 3 for i in range(1, 11)])  # "cat_{i % 3}"


def seed_data() -> RecsysData:
    lists = RecommendationLists.from_ids(SEED_RECS, catalog=SEED_CATALOG)
    return RecsysData(
        lists,
        relevant=Interactions.from_ids(SEED_TRUTH, lists),
        popularity=SEED_POPULARITY,
        categories=SEED_CATEGORIES,
    )


# --- random data with ties, short lists, users without relevant items, unrecommended items ---------


@st.composite
def recsys_data(
    draw: st.DrawFn, *, max_users: int = 12, max_items: int = 15, max_depth: int = 6
) -> RecsysData:
    n_items = draw(st.integers(1, max_items))
    n_users = draw(st.integers(0, max_users))
    depth = draw(st.integers(1, max_depth))
    rows = []
    for _ in range(n_users):
        length = draw(st.integers(0, min(depth, n_items)))
        rows.append(draw(st.permutations(range(n_items)))[:length] + [-1] * (depth - length))
    matrix = np.array(rows, dtype=np.int64).reshape(n_users, depth)
    lists = RecommendationLists.from_matrix(matrix, n_items=n_items)

    def pairs() -> Interactions:
        users = draw(st.lists(st.integers(0, max(n_users - 1, 0)), max_size=40)) if n_users else []
        items = [draw(st.integers(0, n_items - 1)) for _ in users]  # repeats allowed
        return Interactions.from_codes(users, items, n_users=n_users, n_items=n_items)

    relevant, history = pairs(), pairs()
    # Few distinct values, so that popularity ties (the long tail's edge, the baseline's order).
    popularity = np.array([draw(st.sampled_from([0, 1, 1, 2, 5, 5, 9])) for _ in range(n_items)], float)
    categories = np.array([draw(st.integers(-1, 3)) for _ in range(n_items)])
    baseline = most_popular_items(popularity, draw(st.integers(0, n_items)))
    return RecsysData(lists, relevant, history, popularity, categories, baseline=baseline)


def user_lists(lists: RecommendationLists) -> list[list[int]]:
    return [[int(i) for i in row if i >= 0] for row in lists.items]


def user_sets(pairs: Interactions) -> list[set[int]]:
    sets: list[set[int]] = [set() for _ in range(pairs.n_users)]
    for u, i in zip(pairs.users.tolist(), pairs.items.tolist(), strict=True):
        sets[u].add(i)
    return sets


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def reference(data: RecsysData, k: int) -> dict[str, float]:
    """Every metric from its definition, one user at a time."""
    lists = [items[:k] for items in user_lists(data.lists)]
    relevant = user_sets(data.relevant) if data.relevant is not None else []
    history = user_sets(data.history) if data.history is not None else []
    n_items = data.lists.n_items
    pop = data.popularity.tolist() if data.popularity is not None else []
    cats = data.categories.tolist() if data.categories is not None else []
    exposure = Counter(i for items in lists for i in items)
    all_exposure = [exposure.get(i, 0) for i in range(n_items)]
    judged = [u for u in range(len(lists)) if relevant and relevant[u]]
    filled = [u for u in range(len(lists)) if lists[u]]

    def hits(u: int) -> list[bool]:
        return [i in relevant[u] for i in lists[u]]

    def ndcg(u: int) -> float:
        dcg = sum(1 / math.log2(r + 2) for r, hit in enumerate(hits(u)) if hit)
        return dcg / sum(1 / math.log2(r + 2) for r in range(min(k, len(relevant[u]))))

    def gini_mad(values: list[int]) -> float:
        if not values or sum(values) == 0:
            return math.nan
        n, total = len(values), sum(values)
        return sum(abs(a - b) for a in values for b in values) / (2 * n * total)

    def cat_of(i: int) -> tuple[str, int]:
        return ("cat", cats[i]) if cats[i] >= 0 else ("item", i)  # no category: like nothing else

    def unexp(u: int, i: int) -> float:
        return min((0.0 if cat_of(i) == cat_of(h) else 1.0 for h in history[u]), default=1.0)

    total_pop = sum(pop)
    tail = {
        i for i in range(n_items) if not (pop[i] > 0 and sum(p for p in pop if p > pop[i]) < 0.8 * total_pop)
    }
    baseline = {int(i) for i in data.baseline} if data.baseline is not None else set()
    known_cats = {c for c in cats if c >= 0}
    return {
        "hit_rate": mean([float(any(hits(u))) for u in judged]),
        "precision_at_k": mean([sum(hits(u)) / k for u in judged]),
        "recall_at_k": mean([sum(hits(u)) / len(relevant[u]) for u in judged]),
        "ndcg_at_k": mean([ndcg(u) for u in judged]),
        "catalog_coverage": len(exposure) / n_items,
        "unique_items_recommended": float(len(exposure)),
        "gini": gini_mad(all_exposure),
        "gini_recommended": gini_mad([e for e in all_exposure if e]),
        "category_coverage": (
            len({cats[i] for i in exposure if cats[i] >= 0}) / len(known_cats) if known_cats else math.nan
        ),
        "popularity_bias": (
            mean([pop[i] for items in lists for i in items]) / (total_pop / n_items)
            if exposure and total_pop
            else math.nan
        ),
        "arp": mean([mean([pop[i] for i in lists[u]]) for u in filled]),
        "aplt": mean([mean([float(i in tail) for i in lists[u]]) for u in filled]),
        "novelty": mean(
            [mean([math.log2(total_pop / max(pop[i], 1)) for i in lists[u]]) for u in filled]
            if total_pop
            else []
        ),
        "intra_list_diversity": mean(
            [
                mean([float(cat_of(a) != cat_of(b)) for x, a in enumerate(lists[u]) for b in lists[u][x + 1 :]])
                for u in filled
                if len(lists[u]) >= 2
            ]
        ),
        "unexpectedness": mean([mean([unexp(u, i) for i in lists[u]]) for u in filled]),
        "serendipity_history": mean([sum(unexp(u, i) for i in lists[u] if i in relevant[u]) / k for u in judged]),
        "serendipity_baseline": mean([sum(1 for i in lists[u] if i in relevant[u] and i not in baseline) / k for u in judged]),
    }  # fmt: skip


def assert_close(actual: object, expected: object, atol: float = 1e-9, name: str = "") -> None:
    np.testing.assert_allclose(actual, expected, rtol=0, atol=atol, equal_nan=True, err_msg=name)  # type: ignore[call-overload]


# --- package hygiene ------------------------------------------------------------------------------


def test_it_never_imports_django_or_pandas() -> None:
    """Not even pyarrow's lazy pandas import (half a second on every command)."""
    code = (
        "import sys; from evalcore.recsys import read_recsys_files, evaluate_recommendations; "
        f"f = read_recsys_files(*{[str(FIXTURES / n) for n in ('seed004_recs.csv', 'seed004_interactions.csv')]}); "
        "evaluate_recommendations(f.data); "
        "assert 'django' not in sys.modules and 'pandas' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- seed 004's worked example --------------------------------------------------------------------


def test_it_reproduces_seed_004s_worked_example() -> None:
    data = seed_data()
    lists, relevant = data.lists, data.relevant
    assert relevant is not None
    # The printed report: "Hit rate@3: 1.00", catalog_coverage 0.60, gini_coefficient 0.24,
    # category_coverage 1.00, popularity_bias 1.60, unique_items_recommended 6.00.
    assert f"{hit_rate(lists, relevant, k=3):.2f}" == "1.00"
    assert f"{catalog_coverage(lists, k=3):.2f}" == "0.60"
    assert f"{gini_recommended(lists, k=3):.2f}" == "0.24"
    assert f"{category_coverage(lists, SEED_CATEGORIES, k=3):.2f}" == "1.00"
    assert f"{popularity_bias(lists, SEED_POPULARITY, k=3):.2f}" == "1.60"
    assert unique_items_recommended(lists, k=3) == 6
    # Exactly: 13/54, and 650/9 over a catalog mean of 45.
    assert gini_recommended(lists) == pytest.approx(13 / 54)
    assert popularity_bias(lists, SEED_POPULARITY) == pytest.approx(650 / 9 / 45)
    # The default Gini counts the four unrecommended items as zero exposure.
    assert gini(lists) == pytest.approx(gini_coefficient([3, 2, 1, 1, 1, 1, 0, 0, 0, 0]))
    assert f"{gini(lists):.2f}" == "0.54"


def test_it_reproduces_the_seed_example_through_the_registry() -> None:
    values = evaluate_recommendations(seed_data(), k=3)
    assert {name: round(values[name], 2) for name in ("catalog_coverage", "category_coverage", "popularity_bias", "gini_recommended", "hit_rate")} == {
        "catalog_coverage": 0.6, "category_coverage": 1.0, "popularity_bias": 1.6, "gini_recommended": 0.24, "hit_rate": 1.0,
    }  # fmt: skip


# --- every metric against the reference -----------------------------------------------------------


@FAST
@given(data=recsys_data(), k=st.integers(1, 7))
def test_it_matches_the_reference_on_random_data(data: RecsysData, k: int) -> None:
    values = evaluate_recommendations(data, k=k)
    expected = reference(data, k)
    assert set(values) == set(expected) == set(METRICS)
    for name, value in expected.items():
        assert_close(values[name], value, atol=1e-9, name=name)


@FAST
@given(data=recsys_data(max_users=8), k=st.integers(1, 7))
def test_it_agrees_with_the_public_functions(data: RecsysData, k: int) -> None:
    """The registry's reducers over shared statistics equal the functions a notebook would call."""
    lists, rel, hist, pop, cats = data.lists, data.relevant, data.history, data.popularity, data.categories
    assert rel is not None and hist is not None and pop is not None and cats is not None
    similarity = ItemSimilarity.from_categories(cats)
    direct = {
        "hit_rate": hit_rate(lists, rel, k=k),
        "precision_at_k": precision_at_k(lists, rel, k=k),
        "recall_at_k": recall_at_k(lists, rel, k=k),
        "ndcg_at_k": ndcg_at_k(lists, rel, k=k),
        "catalog_coverage": catalog_coverage(lists, k=k),
        "unique_items_recommended": unique_items_recommended(lists, k=k),
        "gini": gini(lists, k=k),
        "gini_recommended": gini_recommended(lists, k=k),
        "category_coverage": category_coverage(lists, cats, k=k),
        "popularity_bias": popularity_bias(lists, pop, k=k),
        "arp": average_recommendation_popularity(lists, pop, k=k),
        "aplt": average_percentage_long_tail(lists, pop, k=k),
        "novelty": novelty(lists, pop, k=k),
        "intra_list_diversity": intra_list_diversity(lists, similarity, k=k),
        "unexpectedness": unexpectedness(lists, hist, similarity, k=k),
        "serendipity_history": serendipity_history(lists, rel, hist, similarity, k=k),
        "serendipity_baseline": serendipity_baseline(lists, rel, data.baseline, k=k),
    }
    registry = evaluate_recommendations(data, k=k)
    for name, value in direct.items():
        assert_close(registry[name], value, atol=1e-12)
        assert_close(METRICS[name].of(data, k=k), value, atol=1e-12)


@FAST
@given(data=recsys_data(max_users=10, max_items=8, max_depth=8), k=st.integers(1, 8))
def test_it_matches_scikit_learns_ndcg_on_full_lists(data: RecsysData, k: int) -> None:
    lists, rel = data.lists, data.relevant
    assert rel is not None
    full = [u for u, n in enumerate(lists.lengths.tolist()) if n >= min(k, lists.depth) and n > 0]
    judged = [u for u in full if rel.per_user()[u] > 0]
    if not judged or lists.n_items < 2:
        return
    kk = min(k, lists.depth)
    truth = np.zeros((len(judged), lists.n_items))
    score = np.zeros((len(judged), lists.n_items))
    users, items = rel.pairs()
    for row, u in enumerate(judged):
        truth[row, items[users == u]] = 1
        for rank, item in enumerate(lists.items[u, :kk]):
            score[row, item] = lists.n_items - rank  # every unlisted item scores 0, below the list
    only = RecommendationLists.from_matrix(lists.items[judged, :kk], n_items=lists.n_items)
    only_rel = Interactions.from_codes(
        [judged.index(u) for u in users if u in judged], [i for u, i in zip(users, items, strict=True) if u in judged],
        n_users=len(judged), n_items=lists.n_items,
    )  # fmt: skip
    assert ndcg_at_k(only, only_rel, k=kk) == pytest.approx(ndcg_score(truth, score, k=kk), abs=1e-12)


@FAST
@given(values=st.lists(st.sampled_from([0, 0, 1, 2, 2, 7, 30]), max_size=30))
def test_it_computes_the_gini_coefficient_as_a_mean_absolute_difference(values: list[int]) -> None:
    n, total = len(values), sum(values)
    expected = sum(abs(a - b) for a in values for b in values) / (2 * n * total) if total else math.nan
    assert_close(gini_coefficient(values), expected, atol=1e-12)


def test_it_bounds_the_gini_coefficient() -> None:
    assert gini_coefficient([5, 5, 5, 5]) == 0.0
    assert gini_coefficient([0, 0, 0, 12]) == pytest.approx(3 / 4)  # (n - 1) / n
    assert math.isnan(gini_coefficient([])) and math.isnan(gini_coefficient([0, 0]))
    with pytest.raises(RecsysInputError):
        gini_coefficient([1, -1])


def test_it_measures_diversity_and_unexpectedness_by_cosine_without_an_items_by_items_matrix() -> None:
    rng = np.random.default_rng(4)
    features = rng.normal(size=(12, 5))
    matrix = np.array([[0, 1, 2, 3], [4, 5, -1, -1], [6, -1, -1, -1], [7, 8, 9, 10]])
    lists = RecommendationLists.from_matrix(matrix, n_items=12)
    history = Interactions.from_codes([0, 0, 1, 3, 3, 3], [11, 4, 0, 1, 2, 11], n_users=4, n_items=12)
    relevant = Interactions.from_codes([0, 1, 3, 3], [2, 5, 8, 10], n_users=4, n_items=12)
    unit = features / np.linalg.norm(features, axis=1, keepdims=True)
    similarity = ItemSimilarity.from_features(features)

    def ild(row: list[int]) -> float:
        return float(np.mean([1 - unit[a] @ unit[b] for x, a in enumerate(row) for b in row[x + 1 :]]))

    def unexp(u: int, i: int) -> float:
        past = history.items[history.users == u]
        return float(min(1 - unit[i] @ unit[h] for h in past)) if past.size else 1.0

    rows = user_lists(lists)
    assert intra_list_diversity(lists, similarity) == pytest.approx(
        np.mean([ild(r) for r in rows if len(r) >= 2])
    )
    assert unexpectedness(lists, history, similarity) == pytest.approx(
        np.mean([np.mean([unexp(u, i) for i in r]) for u, r in enumerate(rows)])
    )
    hits = {0: [2], 1: [5], 3: [8, 10]}
    expected = np.mean([sum(unexp(u, i) for i in hits.get(u, [])) / 4 for u in (0, 1, 3)])
    assert serendipity_history(lists, relevant, history, similarity) == pytest.approx(expected)
    # The ragged pairs are processed in blocks: tiny blocks give the same answer.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_diversity, "BLOCK_ELEMENTS", 3)
        assert unexpectedness(lists, history, similarity) == pytest.approx(
            np.mean([np.mean([unexp(u, i) for i in r]) for u, r in enumerate(rows)])
        )
        assert intra_list_diversity(lists, similarity) == pytest.approx(
            np.mean([ild(r) for r in rows if len(r) >= 2])
        )


def test_it_uses_a_baseline_list_per_user() -> None:
    lists = RecommendationLists.from_matrix([[0, 1, 2], [3, 4, -1]], n_items=6)
    baseline = RecommendationLists.from_matrix([[1, -1], [5, 3]], n_items=6)
    relevant = Interactions.from_codes([0, 0, 1, 1], [1, 2, 3, 4], n_users=2, n_items=6)
    # User 0: 1 and 2 relevant, 1 in the baseline -> 1/3; user 1: 3 and 4 relevant, 3 in it -> 1/3.
    assert serendipity_baseline(lists, relevant, baseline) == pytest.approx(1 / 3)
    assert serendipity_baseline(lists, relevant, np.array([0, 1, 2, 3])) == pytest.approx((0 + 1 / 3) / 2)


# --- the long tail, popularity and novelty ---------------------------------------------------------


def test_it_splits_the_long_tail_by_value_so_ties_fall_together() -> None:
    popularity = np.array([50, 30, 30, 10, 0, 5])
    # Total 125; 80% is 100. 50 (0 above), 30 and 30 (50 above) are the head; 10 has 110 above.
    assert long_tail_items(popularity).tolist() == [False, False, False, True, True, True]
    assert long_tail_items(popularity, head_share=0.2).tolist() == [False, True, True, True, True, True]
    assert long_tail_items(np.zeros(3)).tolist() == [True, True, True]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=60), st.sampled_from([1.0, 0.5, 0.25]))
def test_it_finds_distinct_popularity_by_counting_as_np_unique_does_by_sorting(
    counts: list[int], scale: float
) -> None:
    from evalcore.recsys._popularity import _distinct

    values = np.asarray(counts, dtype=np.float64) * scale  # whole counts, and fractions (np.unique's way)
    for ours, sorted_way in zip(
        _distinct(values), np.unique(values, return_inverse=True, return_counts=True), strict=True
    ):
        assert ours.dtype == sorted_way.dtype and np.array_equal(ours, sorted_way)


@pytest.mark.parametrize("n_categories", [1, 7, 30, 400])
def test_it_counts_alike_pairs_by_tally_as_by_sorting(
    n_categories: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(n_categories)
    n_items, depth = 500, 12
    matrix = np.stack([rng.choice(n_items, depth, replace=False) for _ in range(300)])
    matrix[rng.random(matrix.shape[0]) < 0.2, 5:] = -1  # shorter lists
    matrix[::7, 1:] = -1  # single items: no pair
    categories = rng.integers(0, n_categories, n_items)
    categories[rng.random(n_items) < 0.1] = -1  # items without a category
    lists = RecommendationLists.from_matrix(matrix, n_items=n_items)
    similarity = ItemSimilarity.from_categories(categories)
    ours = _diversity.per_user_intra_list_diversity(lists, similarity)
    monkeypatch.setattr(_diversity, "_TALLY_PER_SLOT", -1)  # sort every list's categories
    assert np.array_equal(ours, _diversity.per_user_intra_list_diversity(lists, similarity), equal_nan=True)


def test_it_counts_categories_with_sparse_codes() -> None:
    lists = RecommendationLists.from_matrix([[0, 1], [1, 2]], n_items=4)
    assert category_coverage(lists, [10**9, 5, -1, 7]) == pytest.approx(2 / 3)
    assert category_coverage(lists, [2, 0, -1, 1]) == pytest.approx(2 / 3)


def test_it_takes_the_most_popular_items_by_count_then_id() -> None:
    from evalcore.recsys._files import _most_popular

    ids = pa.array([b"e", b"d", b"c", b"b", b"a"], pa.binary())
    counts = np.array([3, 1, 3, 1, 0])
    assert _most_popular(counts, 3, ids).tolist() == [2, 0, 3]  # 3 (c, e), then 1 (b before d)
    assert _most_popular(counts, 5, ids).tolist() == [2, 0, 3, 1, 4]
    assert _most_popular(np.zeros(3, dtype=np.int64), 2, ids.slice(0, 3)).tolist() == [2, 1]


def test_it_gives_unseen_items_the_novelty_of_an_item_seen_once() -> None:
    lists = RecommendationLists.from_matrix([[0, 1]], n_items=3)
    assert novelty(lists, [6, 0, 2]) == pytest.approx((math.log2(8 / 6) + math.log2(8)) / 2)
    assert math.isnan(novelty(lists, [0, 0, 0]))


def test_it_averages_list_means_per_user_when_lengths_differ() -> None:
    """ARP is a mean of per-user means; the pooled popularity_bias weighs long lists more."""
    lists = RecommendationLists.from_matrix([[0, 1, 2, 3], [4, -1, -1, -1]], n_items=5)
    popularity = np.array([1, 1, 1, 1, 9])
    assert average_recommendation_popularity(lists, popularity) == pytest.approx((1 + 9) / 2)
    assert popularity_bias(lists, popularity) == pytest.approx((13 / 5) / (13 / 5))


# --- corner cases ---------------------------------------------------------------------------------


def test_it_returns_nan_for_empty_input() -> None:
    lists = RecommendationLists.from_matrix(np.zeros((0, 0), dtype=int), n_items=0)
    empty = RecsysData(
        lists,
        Interactions.from_codes([], [], n_users=0, n_items=0),
        popularity=np.zeros(0),
        categories=np.zeros(0, int),
    )
    values = evaluate_recommendations(empty)
    assert all(math.isnan(v) for name, v in values.items() if name != "unique_items_recommended")
    assert values["unique_items_recommended"] == 0


def test_it_skips_users_without_relevant_items_and_scores_empty_lists_zero() -> None:
    lists = RecommendationLists.from_matrix([[0, 1], [2, 3], [-1, -1]], n_items=5)
    relevant = Interactions.from_codes([0, 2], [1, 4], n_users=3, n_items=5)
    # User 1 has nothing relevant: left out. User 2 has a relevant item and no list: 0.
    assert hit_rate(lists, relevant) == pytest.approx(0.5)
    assert recall_at_k(lists, relevant) == pytest.approx(0.5)
    nobody = Interactions.from_codes([], [], n_users=3, n_items=5)
    assert math.isnan(hit_rate(lists, nobody)) and math.isnan(ndcg_at_k(lists, nobody))


def test_it_counts_items_never_recommended_in_coverage_and_gini() -> None:
    lists = RecommendationLists.from_matrix([[0, 1], [1, 0]], n_items=4)
    assert catalog_coverage(lists) == 0.5
    assert gini_recommended(lists) == 0.0  # the two recommended items share exposure equally
    assert gini(lists) == pytest.approx(0.5)


def test_it_handles_a_single_category_and_equal_popularity() -> None:
    lists = RecommendationLists.from_matrix([[0, 1], [2, -1]], n_items=3)
    assert category_coverage(lists, [0, 0, 0]) == 1.0
    assert intra_list_diversity(lists, ItemSimilarity.from_categories([0, 0, 0])) == 0.0
    assert popularity_bias(lists, [4, 4, 4]) == 1.0
    assert average_percentage_long_tail(lists, [4, 4, 4]) == 0.0  # all tied: all in the head
    assert math.isnan(category_coverage(lists, [-1, -1, -1]))


def test_it_cuts_lists_at_k() -> None:
    lists = RecommendationLists.from_matrix([[0, 1, 2, 3]], n_items=4)
    relevant = Interactions.from_codes([0], [3], n_users=1, n_items=4)
    assert hit_rate(lists, relevant, k=3) == 0.0 and hit_rate(lists, relevant, k=4) == 1.0
    assert precision_at_k(lists, relevant, k=8) == pytest.approx(1 / 8)
    assert catalog_coverage(lists, k=2) == 0.5
    with pytest.raises(RecsysInputError, match="k must be"):
        hit_rate(lists, relevant, k=0)


# --- invariance -----------------------------------------------------------------------------------


@FAST
@given(data=recsys_data(), seed=st.integers(0, 2**16), k=st.integers(1, 7))
def test_it_is_invariant_to_the_order_of_users(data: RecsysData, seed: int, k: int) -> None:
    order = np.random.default_rng(seed).permutation(data.lists.n_users)
    shuffled = data.permuted(order)
    for spec in METRIC_SPECS:
        assert_close(spec.of(shuffled, k=k), spec.of(data, k=k), atol=1e-12)


@FAST
@given(data=recsys_data(), seed=st.integers(0, 2**16))
def test_it_is_invariant_to_renumbering_the_catalog(data: RecsysData, seed: int) -> None:
    n = data.lists.n_items
    new = np.random.default_rng(seed).permutation(n)  # item i becomes new[i]

    def renumber(pairs: Interactions | None) -> Interactions | None:
        return None if pairs is None else Interactions(pairs.users, new[pairs.items], pairs.n_users, n)

    old_of = np.argsort(new)
    items = np.where(data.lists.items >= 0, new[np.maximum(data.lists.items, 0)], -1)
    moved = RecsysData(
        RecommendationLists.from_matrix(items, n_items=n), renumber(data.relevant), renumber(data.history),
        None if data.popularity is None else data.popularity[old_of],
        None if data.categories is None else data.categories[old_of],
        baseline=None if data.baseline is None else new[np.asarray(data.baseline, dtype=int)],
    )  # fmt: skip
    before, after = evaluate_recommendations(data), evaluate_recommendations(moved)
    for name in before:
        assert_close(after[name], before[name], atol=1e-12)


# --- the registry ---------------------------------------------------------------------------------


def test_it_declares_every_metric_completely_in_a_registry() -> None:
    registry = MetricRegistry()
    for spec in METRIC_SPECS:
        registry.register(spec)
    assert len(registry) == len(METRIC_SPECS) == len(METRICS)
    for spec in registry.family("recsys"):
        assert spec.label.strip() and spec.definition.strip() and "\n" not in spec.definition
        assert spec.direction in ("higher", "lower", "neutral")
        assert spec.kernel is not None and callable(spec.reduce)  # type: ignore[attr-defined]
        assert (
            spec.range is None
            or spec.range[0] is None
            or spec.range[1] is None
            or spec.range[0] < spec.range[1]
        )
        assert registry.resolve(spec.name) is spec
    assert (
        registry.resolve("gini").direction == "lower"
        and registry.resolve("catalog_coverage").higher_is_better
    )


@FAST
@given(data=recsys_data())
def test_it_keeps_every_value_in_its_declared_range(data: RecsysData) -> None:
    for name, value in evaluate_recommendations(data).items():
        assert METRICS[name].in_range(value), (name, value)


def test_it_gives_nan_when_a_metric_lacks_its_inputs() -> None:
    lists = RecommendationLists.from_matrix([[0, 1]], n_items=3)
    values = evaluate_recommendations(RecsysData(lists))
    assert values["catalog_coverage"] == pytest.approx(2 / 3)
    for name in ("hit_rate", "novelty", "category_coverage", "intra_list_diversity", "serendipity_history"):
        assert math.isnan(values[name])
    with pytest.raises(RecsysInputError, match="unknown"):
        evaluate_recommendations(RecsysData(lists), metrics=["coverage"])


# --- building lists -------------------------------------------------------------------------------


def test_it_builds_lists_from_rows_in_any_order() -> None:
    users = [1, 0, 0, 1, 0]
    items = [7, 3, 5, 2, 4]
    ranks = [2, 9, 1, 1, 3]
    lists = RecommendationLists.from_ranked(users, items, ranks, n_users=3, n_items=8)
    assert lists.items.tolist() == [[5, 4, 3], [2, 7, -1], [-1, -1, -1]]
    assert RecommendationLists.from_ranked(users, items, ranks, n_users=3, n_items=8, k=2).items.tolist() == [
        [5, 4], [2, 7], [-1, -1],
    ]  # fmt: skip


def test_it_names_the_rows_of_a_repeated_item_or_rank() -> None:
    with pytest.raises(RepeatedEntryError) as caught:
        RecommendationLists.from_ranked([0, 1, 0, 0], [3, 3, 4, 3], [1, 1, 2, 3], n_users=2, n_items=5)
    assert (caught.value.kind, caught.value.row, caught.value.first_row) == ("item", 3, 0)
    with pytest.raises(RepeatedEntryError) as caught:
        RecommendationLists.from_ranked([0, 0, 0], [1, 2, 3], [2, 1, 2], n_users=1, n_items=5)
    assert (caught.value.kind, caught.value.row, caught.value.first_row) == ("rank", 2, 0)
    # When the full-depth matrix would be too large, a sort of (user, item) keys finds the repeat,
    # even beyond the cutoff.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_data, "_DENSE_PER_ROW", 0)
        patch.setattr(_data, "_DENSE_MIN_CELLS", 0)
        with pytest.raises(RepeatedEntryError) as caught:
            RecommendationLists.from_ranked(
                [0, 0, 0, 0, 1], [1, 2, 3, 1, 4], [1, 2, 3, 4, 1], n_users=2, n_items=5, k=2
            )
        assert (caught.value.row, caught.value.first_row) == (3, 0)
        lists = RecommendationLists.from_ranked([0, 0, 1], [1, 2, 3], [1, 2, 1], n_users=2, n_items=5, k=1)
        assert lists.items.tolist() == [[1], [3]]


@pytest.mark.parametrize(
    ("matrix", "n_items", "message"),
    [
        ([0, 1], 3, "users x depth"),
        ([[0, 5]], 3, r"lie in \[0, 3\)"),
        ([[-1, 0]], 3, "padding"),
        ([[1, 1]], 3, "twice"),
        ([[0.5]], 3, "integer"),
    ],
)
def test_it_rejects_malformed_lists(matrix: object, n_items: int, message: str) -> None:
    with pytest.raises(RecsysInputError, match=message):
        RecommendationLists.from_matrix(matrix, n_items=n_items)  # type: ignore[arg-type]


def test_it_rejects_data_coded_for_another_catalog() -> None:
    lists = RecommendationLists.from_matrix([[0, 1]], n_items=3)
    with pytest.raises(RecsysInputError, match="coded for"):
        hit_rate(lists, Interactions.from_codes([0], [1], n_users=1, n_items=4))
    with pytest.raises(RecsysInputError, match="one value per catalog item"):
        novelty(lists, [1, 2])
    with pytest.raises(RecsysInputError, match="all-zero"):
        ItemSimilarity.from_features([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])


# --- reading files --------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_it_reads_the_seed_example_from_its_fixture_files() -> None:
    files = read_recsys_files(
        FIXTURES / "seed004_recs.csv",
        FIXTURES / "seed004_interactions.csv",
        items=FIXTURES / "seed004_items.csv",
        history=FIXTURES / "seed004_history.csv",
    )
    assert files.popularity_source == "history" and files.explicit_catalog
    assert files.data.popularity is not None
    assert files.data.popularity.tolist() == SEED_POPULARITY.tolist()
    values = evaluate_recommendations(files.data)
    assert [f"{values[n]:.2f}" for n in ("catalog_coverage", "category_coverage", "popularity_bias", "gini_recommended")] == [
        "0.60", "1.00", "1.60", "0.24",
    ]  # fmt: skip
    reference_values = evaluate_recommendations(seed_data())
    for name in ("hit_rate", "precision_at_k", "recall_at_k", "ndcg_at_k", "gini", "arp", "novelty"):
        assert values[name] == pytest.approx(reference_values[name]), name


def test_it_reads_quoted_ids_blank_lines_and_any_column_order(tmp_path: Path) -> None:
    recs = write(tmp_path / "recs.csv", 'rank,item,user\r\n1,"a,b",u1\r\n\r\n2,c,u1\r\n1,c,"u 2"\r\n')
    interactions = write(tmp_path / "inter.csv", 'user,item\nu1,"a,b"\nu3,c\nu1,"a,b"\n')
    files = read_recsys_files(recs, interactions)
    assert files.user_ids.to_pylist() == [b"u1", b"u 2"]
    assert files.item_ids.to_pylist() == [b"a,b", b"c"]
    assert files.data.lists.items.tolist() == [[0, 1], [1, -1]]
    assert files.n_users_without_list == 1 and files.n_interaction_rows == 3
    assert files.data.popularity is not None and files.data.popularity.tolist() == [2, 1]
    complete = read_recsys_files(recs, interactions, complete=True)
    assert complete.data.lists.n_users == 3
    assert hit_rate(complete.data.lists, complete.data.relevant) == pytest.approx(0.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("recs", "items", "line", "reason"),
    [
        ("", None, 1, "empty first line; expected the header user,item,rank"),
        ("user,item\nu,a\n", None, 1, "missing column 'rank'"),
        ("user,item,rank,score\n", None, 1, "unknown column 'score'"),
        ("user,item,rank\nu,a,1\nu,b,x\n", None, 3, "rank 'x' is not an integer"),
        ("user,item,rank\nu,a,1\nu,b,2147483648\n", None, 3, "rank '2147483648' is out of range (at most 2,147,483,647 in size)"),
        ("user,item,rank\nu,a,1\nu,b\n", None, 3, "expected 3 columns (user,item,rank), found 2"),
        ("user,item,rank\nu,a,1\n,b,2\n", None, 3, "empty user"),
        ("user,item,rank\nu,a,1\nv,a,1\nu,a,2\n", None, 4, "item 'a' appears twice in the list of user 'u' (first on line 2)"),
        ("user,item,rank\nu,a,1\n\nu,b,1\n", None, 4, "rank 1 appears twice in the list of user 'u' (first on line 2)"),
        ("user,item,rank\nu,a,1\nu,z,2\n", "item,category\na,x\nb,y\n", 3, "item 'z' is not in the catalog"),
        ("user,item,rank\nu,a,1\n", "item,category\na,x\nb,y\na,z\n", 4, "item 'a' appears twice (first on line 2)"),
    ],
)  # fmt: skip
def test_it_reports_malformed_files_by_file_and_line(
    tmp_path: Path, recs: str, items: str | None, line: int, reason: str
) -> None:
    recs_path = write(tmp_path / "recs.csv", recs)
    items_path = write(tmp_path / "items.csv", items) if items is not None else None
    interactions = write(tmp_path / "inter.csv", "user,item\nu,a\n")
    with pytest.raises(FormatError) as caught:
        read_recsys_files(recs_path, interactions, items=items_path)
    path = items_path if items is not None and "catalog" not in reason else recs_path
    assert str(caught.value).startswith(f"{path}:{line}: {reason}")


def test_it_reads_the_same_lists_from_rows_in_any_order(tmp_path: Path) -> None:
    """Users' rows need not be grouped, nor ranks sorted: the codes and lists do not change."""
    rng = np.random.default_rng(5)
    rows = [
        (f"u{u}", f"i{i}", r + 1)
        for u in range(40)
        for r, i in enumerate(rng.permutation(30)[: rng.integers(1, 8)])
    ]
    interactions = write(
        tmp_path / "inter.csv", "user,item\n" + "".join(f"u{u},i{rng.integers(30)}\n" for u in range(40))
    )
    ordered = write(
        tmp_path / "ordered.csv", "user,item,rank\n" + "".join(f"{u},{i},{r}\n" for u, i, r in rows)
    )
    shuffled_rows = [rows[j] for j in rng.permutation(len(rows))]
    shuffled = write(
        tmp_path / "shuffled.csv", "user,item,rank\n" + "".join(f"{u},{i},{r}\n" for u, i, r in shuffled_rows)
    )
    first, second = read_recsys_files(ordered, interactions), read_recsys_files(shuffled, interactions)

    def by_id(files: object) -> dict[bytes, list[bytes]]:
        lists = files.data.lists  # type: ignore[attr-defined]
        items = files.item_ids.to_pylist()  # type: ignore[attr-defined]
        return {
            u: [items[i] for i in row if i >= 0]
            for u, row in zip(files.user_ids.to_pylist(), lists.items, strict=True)
        }  # type: ignore[attr-defined]

    assert by_id(first) == by_id(second)
    one, two = evaluate_recommendations(first.data), evaluate_recommendations(second.data)
    for name in one:
        assert_close(two[name], one[name], atol=1e-12, name=name)


def test_it_rejects_an_interaction_outside_the_catalog(tmp_path: Path) -> None:
    recs = write(tmp_path / "recs.csv", "user,item,rank\nu,a,1\n")
    items = write(tmp_path / "items.csv", "item\na\nb\n")
    interactions = write(tmp_path / "inter.csv", "user,item\nu,a\nu,q\n")
    with pytest.raises(FormatError, match=r"inter\.csv:3: item 'q' is not in the catalog"):
        read_recsys_files(recs, interactions, items=items)
    files = read_recsys_files(recs, write(tmp_path / "ok.csv", "user,item\nu,b\n"), items=items)
    assert files.data.categories is None and files.data.lists.n_items == 2


def test_it_reads_an_empty_category_as_none(tmp_path: Path) -> None:
    """The docs leave an item without a category out of the category metrics; the reader must not refuse it."""
    (tmp_path / "recs.csv").write_text("user,item,rank\nu,a,1\nu,b,2\n")
    (tmp_path / "items.csv").write_text("item,category\na,x\nb,\nc,y\nd,x\n")
    files = read_recsys_files(tmp_path / "recs.csv", items=tmp_path / "items.csv")
    assert files.data.categories is not None and files.data.categories.tolist() == [0, -1, 1, 0]
    assert category_coverage(files.data.lists, files.data.categories) == 0.5  # x of {x, y}; b counts for none
