"""evalcore.overlap against direct loops over the definitions: RBO (Webber, Moffat and Zobel 2010),
Jaccard by Python sets, tau against scipy and evalcore.stats.tau_ap on the shared documents."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau

from evalcore.overlap import OverlapParams, jaccard, rank_correlations, rbo, run_overlap
from evalcore.retrieval import Run
from evalcore.stats import tau_ap

# --- the paper's definitions, one loop per depth, on Python lists --------------------------------


def _overlap(s: list[int], l: list[int], d: int) -> int:  # noqa: E741 - the paper's names
    return len(set(s[:d]) & set(l[:d]))


def paper_ext(a: list[int], b: list[int], p: float) -> float:
    """Eq. 32 term by term; for s = l it reduces to eq. 30."""
    s_list, l_list = sorted((a, b), key=len)
    s, l = len(s_list), len(l_list)  # noqa: E741
    x_s, x_l = _overlap(s_list, l_list, s), _overlap(s_list, l_list, l)
    first = sum(_overlap(s_list, l_list, d) / d * p**d for d in range(1, l + 1))
    second = sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * (first + second) + ((x_l - x_s) / l + x_s / s) * p**l


def _rbo_of_prefixes(a: list, b: list, p: float, depth: int) -> float:
    """(1 - p) sum_{d=1}^{depth} p^(d-1) |a_{:d} ∩ b_{:d}| / d: RBO's definition, eq. 7, truncated."""
    return (1 - p) * sum(p ** (d - 1) * len(set(a[:d]) & set(b[:d])) / d for d in range(1, depth + 1))


def brute_min(a: list[int], b: list[int], p: float) -> float:
    """Extend both lists with items found nowhere else, sum deep, add the tail X_l sum p^(d-1)/d."""
    depth = 600
    ext_a = a + [("a", i) for i in range(depth)]
    ext_b = b + [("b", i) for i in range(depth)]
    x_l = len(set(a) & set(b))
    head = _rbo_of_prefixes(ext_a, ext_b, p, depth)
    tail = (1 - p) * x_l * sum(p ** (d - 1) / d for d in range(depth + 1, depth + 2000))
    return head + tail


def brute_max(a: list[int], b: list[int], p: float) -> float:
    """The most agreeing continuation: each list goes on with the other's items it lacks (in the
    other's order), then both with the same new items; from f = s + l - X_l on, X_d = d."""
    ext_a = a + [x for x in b if x not in a]
    ext_b = b + [x for x in a if x not in b]
    f = len(ext_a)
    assert len(ext_b) == f
    return _rbo_of_prefixes(ext_a, ext_b, p, f) + p**f  # (1 - p) sum_{d > f} p^(d-1) = p^f


def _matrix(lists: list[list[int]], k: int) -> np.ndarray:
    return np.array([row + [-1] * (k - len(row)) for row in lists], dtype=np.int64).reshape(len(lists), k)


list_pairs = st.integers(min_value=1, max_value=12).flatmap(
    lambda k: st.tuples(
        st.just(k),
        st.lists(
            st.tuples(
                st.lists(st.integers(0, 20), max_size=k, unique=True),
                st.lists(st.integers(0, 20), max_size=k, unique=True),
            ),
            min_size=1,
            max_size=6,
        ),
    )
)


class TestRBO:
    def test_it_is_one_for_identical_lists_and_zero_for_disjoint_ones(self) -> None:
        same = rbo(_matrix([[1, 2, 3, 4]], 4), _matrix([[1, 2, 3, 4]], 4), p=0.8)
        assert same.rbo_ext[0] == pytest.approx(1.0)
        assert same.rbo_max[0] == pytest.approx(1.0)
        apart = rbo(_matrix([[1, 2, 3]], 3), _matrix([[4, 5, 6]], 3), p=0.8)
        assert apart.rbo_ext[0] == 0.0 and apart.rbo_min[0] == 0.0

    def test_it_matches_the_papers_even_length_bounds(self) -> None:
        # eq. 11 and eq. 13 (residual of even lists: p^k - ... ) checked through the brute force
        a, b = [1, 2, 3, 4, 5], [2, 1, 6, 3, 7]
        r = rbo(_matrix([a], 5), _matrix([b], 5), p=0.9)
        assert r.rbo_min[0] == pytest.approx(brute_min(a, b, 0.9), abs=1e-12)
        assert r.rbo_max[0] == pytest.approx(brute_max(a, b, 0.9), abs=1e-12)
        assert r.rbo_ext[0] == pytest.approx(paper_ext(a, b, 0.9), abs=1e-12)

    def test_it_handles_uneven_lengths_as_section_4_3(self) -> None:
        a, b = [1, 2, 3, 4, 5, 6, 7, 8], [3, 9, 1]
        r = rbo(_matrix([a], 8), _matrix([b], 8), p=0.7)
        assert r.rbo_ext[0] == pytest.approx(paper_ext(a, b, 0.7), abs=1e-12)
        assert r.rbo_min[0] == pytest.approx(brute_min(a, b, 0.7), abs=1e-12)
        assert r.rbo_max[0] == pytest.approx(brute_max(a, b, 0.7), abs=1e-12)
        assert r.rbo_min[0] <= r.rbo_ext[0] <= r.rbo_max[0]

    def test_it_is_symmetric(self) -> None:
        a, b = _matrix([[1, 2, 3, 4], [5, 6]], 4), _matrix([[4, 3], [6, 7, 5, 8]], 4)
        one, other = rbo(a, b, p=0.9), rbo(b, a, p=0.9)
        for name in ("rbo_min", "rbo_res", "rbo_ext"):
            np.testing.assert_allclose(getattr(one, name), getattr(other, name), rtol=0, atol=1e-15)

    def test_it_leaves_ext_undefined_for_two_empty_lists_and_zero_for_one(self) -> None:
        r = rbo(_matrix([[], [1, 2]], 2), _matrix([[], []], 2), p=0.9)
        assert math.isnan(r.rbo_ext[0]) and r.rbo_ext[1] == 0.0
        assert r.rbo_min.tolist() == [0.0, 0.0]
        assert r.rbo_res.tolist() == pytest.approx([1.0, 1.0])

    def test_it_rejects_a_persistence_outside_the_open_interval(self) -> None:
        with pytest.raises(ValueError, match="persistence"):
            rbo(_matrix([[1]], 1), _matrix([[1]], 1), p=1.0)

    def test_it_rejects_padding_before_a_document(self) -> None:
        with pytest.raises(ValueError, match="padding"):
            rbo(np.array([[1, -1, 2]]), np.array([[1, 2, 3]]), p=0.9)

    @settings(max_examples=150, deadline=None)
    @given(list_pairs, st.sampled_from([0.5, 0.8, 0.9, 0.95]))
    def test_it_equals_the_definitions_on_random_lists(
        self, case: tuple[int, list[tuple[list[int], list[int]]]], p: float
    ) -> None:
        k, pairs = case
        r = rbo(_matrix([a for a, _ in pairs], k), _matrix([b for _, b in pairs], k), p=p)
        for i, (a, b) in enumerate(pairs):
            if not a and not b:
                assert math.isnan(r.rbo_ext[i])
                continue
            if a and b:
                assert r.rbo_ext[i] == pytest.approx(paper_ext(a, b, p), abs=1e-12)
            assert r.rbo_min[i] == pytest.approx(brute_min(a, b, p), abs=1e-9)
            assert r.rbo_max[i] == pytest.approx(brute_max(a, b, p), abs=1e-9)
            assert r.rbo_min[i] - 1e-12 <= r.rbo_ext[i] <= r.rbo_max[i] + 1e-12
            assert -1e-12 <= r.rbo_min[i] <= r.rbo_max[i] <= 1 + 1e-12


class TestJaccard:
    @settings(max_examples=100, deadline=None)
    @given(list_pairs)
    def test_it_equals_set_arithmetic(self, case: tuple[int, list[tuple[list[int], list[int]]]]) -> None:
        k, pairs = case
        got = jaccard(_matrix([a for a, _ in pairs], k), _matrix([b for _, b in pairs], k))
        for i, (a, b) in enumerate(pairs):
            union = set(a) | set(b)
            if union:
                assert got[i] == pytest.approx(len(set(a) & set(b)) / len(union))
            else:
                assert math.isnan(got[i])


class TestRankCorrelations:
    @settings(max_examples=100, deadline=None)
    @given(list_pairs)
    def test_it_equals_scipy_and_tau_ap_on_shared_documents(
        self, case: tuple[int, list[tuple[list[int], list[int]]]]
    ) -> None:
        k, pairs = case
        got = rank_correlations(_matrix([a for a, _ in pairs], k), _matrix([b for _, b in pairs], k))
        for i, (a, b) in enumerate(pairs):
            shared = [x for x in a if x in b]
            assert got.shared[i] == len(shared)
            if len(shared) < 2:
                assert math.isnan(got.kendall_tau[i]) and math.isnan(got.tau_ap[i])
                continue
            rank_a = [-a.index(x) for x in shared]  # higher is better, as scores
            rank_b = [-b.index(x) for x in shared]
            assert got.kendall_tau[i] == pytest.approx(kendalltau(rank_a, rank_b).statistic)
            forward, backward = tau_ap(rank_a, rank_b), tau_ap(rank_b, rank_a)
            assert forward is not None and backward is not None
            assert got.tau_ap[i] == pytest.approx(forward)
            assert got.tau_ap_symmetric[i] == pytest.approx((forward + backward) / 2)


class TestRunOverlap:
    def test_it_ranks_runs_as_trec_eval_with_ties_broken_by_docno_descending(self) -> None:
        # q1: a ties d1, d2, d3 at one score: trec_eval's order is d3, d2, d1
        a = Run.from_dict({"q1": {"d1": 1.0, "d2": 1.0, "d3": 1.0, "d4": 0.5}})
        b = Run.from_dict({"q1": {"d3": 4.0, "d2": 3.0, "d1": 2.0, "d9": 1.0}})
        result = run_overlap(a, b, OverlapParams(k=3))
        assert result.jaccard.tolist() == [1.0]
        assert result.kendall_tau.tolist() == [1.0]
        assert result.rbo_ext[0] == pytest.approx(1.0)

    def test_it_cuts_at_k_and_keeps_only_common_queries(self) -> None:
        a = Run.from_dict({"q1": {f"d{i}": 10.0 - i for i in range(6)}, "q2": {"x": 1.0}})
        b = Run.from_dict({"q1": {"d0": 9.0, "d1": 8.0, "z": 7.0, "d2": 1.0}, "q3": {"y": 1.0}})
        result = run_overlap(a, b, OverlapParams(k=3, p=0.5))
        assert result.qids.tolist() == ["q1"] and result.only_a == ("q2",) and result.only_b == ("q3",)
        assert result.jaccard[0] == pytest.approx(2 / 4)
        assert result.rbo_ext[0] == pytest.approx(paper_ext([0, 1, 2], [0, 1, 9], 0.5))
        assert result.shared.tolist() == [2]

    def test_it_gives_uneven_lists_when_a_run_is_shorter_than_k(self) -> None:
        a = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.0}})
        b = Run.from_dict({"q": {"c": 1.0}})
        result = run_overlap(a, b, OverlapParams(k=10, p=0.9))
        assert result.rbo_ext[0] == pytest.approx(paper_ext([1, 2, 3, 4], [3], 0.9))
        assert result.rbo_min[0] == pytest.approx(brute_min([1, 2, 3, 4], [3], 0.9), abs=1e-12)
        assert math.isnan(result.kendall_tau[0])
        assert math.isnan(result.mean("kendall_tau")) and result.defined("kendall_tau") == 0

    def test_it_averages_over_the_queries_where_a_figure_is_defined(self) -> None:
        a = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"a": 2.0, "b": 1.0}})
        b = Run.from_dict({"q1": {"b": 2.0, "a": 1.0}, "q2": {"c": 1.0}})
        result = run_overlap(a, b, OverlapParams(k=2))
        assert result.kendall_tau[0] == -1.0 and math.isnan(result.kendall_tau[1])
        assert result.mean("kendall_tau") == -1.0 and result.defined("kendall_tau") == 1
        assert result.mean("jaccard") == pytest.approx(0.5)

    def test_it_rejects_a_depth_below_one(self) -> None:
        with pytest.raises(ValueError, match="k must be at least 1"):
            OverlapParams(k=0)


def trec_eval_top(docs: dict[str, float], k: int) -> list[str]:
    """trec_eval's order written out: score (as a C float) descending, then docno descending."""
    return sorted(docs, key=lambda d: (float(np.float32(docs[d])), d), reverse=True)[:k]


runs = st.dictionaries(
    st.sampled_from(["q1", "q2", "q10"]),
    st.dictionaries(
        st.sampled_from([f"d{i}" for i in range(12)] + ["D1", "d1a", "ä"]),
        st.sampled_from([0.0, 0.5, 1.0, 1.0000000001, 2.0, -1.0]),
        min_size=1,
        max_size=10,
    ),
    min_size=1,
    max_size=3,
)


class TestRankedLists:
    @settings(max_examples=80, deadline=None)
    @given(runs, runs, st.integers(1, 8))
    def test_it_orders_each_query_as_trec_eval_with_ties(
        self, one: dict[str, dict[str, float]], two: dict[str, dict[str, float]], k: int
    ) -> None:
        from evalcore.overlap import ranked_lists

        lists = ranked_lists(Run.from_dict(one), Run.from_dict(two), depth=k)
        assert lists.qids.tolist() == sorted(set(one) & set(two))
        assert lists.only_a == tuple(sorted(set(one) - set(two)))
        names: dict[int, str] = {}
        for row, qid in enumerate(lists.qids.tolist()):
            for matrix, run in ((lists.a, one), (lists.b, two)):
                expected = trec_eval_top(run[qid], k)
                ids = [int(i) for i in matrix[row] if i >= 0]
                assert len(ids) == len(expected)
                for i, doc in zip(ids, expected, strict=True):
                    assert names.setdefault(i, doc) == doc  # one id, one document, in both runs
