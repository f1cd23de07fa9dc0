"""evalcore.pooling against direct loops over the definitions and hand-worked cases (issue 23)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.pooling import (
    ADAPTIVE_STRATEGIES,
    STRATEGIES,
    PoolCandidates,
    PoolParams,
    allot_budget,
    candidates_from_runs,
    judging_sequence,
    pool_order,
    simulate_pooling,
)
from evalcore.pooling.adaptive import TopicArms
from evalcore.pooling.order import topic_arms
from evalcore.pooling.simulation import candidate_grades
from evalcore.pooling.synthetic import synthetic_collection
from evalcore.retrieval import Qrels, Run, evaluate

RunDict = dict[str, dict[str, float]]


# --- direct, slow references -------------------------------------------------------------------------


def ranked(run: RunDict) -> dict[str, list[str]]:
    """trec_eval's order: score descending (as C floats), then document id descending."""
    out = {}
    for qid, docs in run.items():
        by_doc = sorted(docs.items(), key=lambda item: item[0].encode(), reverse=True)
        out[qid] = [doc for doc, _ in sorted(by_doc, key=lambda item: -np.float32(item[1]))]
    return out


def reference_lists(runs: list[RunDict], depth: int) -> dict[str, list[list[str]]]:
    """Per topic, each run's top `depth` (an empty list for a run without the topic)."""
    qids = sorted({q for run in runs for q in run})
    rankings = [ranked(run) for run in runs]
    return {q: [r.get(q, [])[:depth] for r in rankings] for q in qids}


def reference_quota(budget: int | None, counts: list[int]) -> list[int]:
    """One judgment at a time to the topic with the fewest so far (first in qid order) that has room."""
    quota = [0] * len(counts)
    for _ in range(sum(counts) if budget is None else min(budget, sum(counts))):
        open_topics = [t for t in range(len(counts)) if quota[t] < counts[t]]
        quota[min(open_topics, key=lambda t: (quota[t], t))] += 1
    return quota


def reference_fixed(lists: dict[str, list[list[str]]], params: PoolParams) -> dict[str, list[str]]:
    out = {}
    for qid, per_run in lists.items():
        best: dict[str, int] = {}
        fused: dict[str, float] = {}
        for docs in per_run:
            for rank, doc in enumerate(docs, start=1):
                best[doc] = min(best.get(doc, rank), rank)
                if params.strategy == "take-rrf":
                    weight = 1.0 / (params.rrf_k + rank)
                else:
                    weight = (1 - params.rbp_p) * params.rbp_p ** (rank - 1)
                fused[doc] = fused.get(doc, 0.0) + weight
        if params.strategy == "depth":
            out[qid] = sorted(best, key=lambda d: (best[d], d))
        else:
            out[qid] = sorted(fused, key=lambda d: (-round(fused[d], 12), d))
    return out


def interleave(per_topic: dict[str, list[str]], budget: int | None) -> list[tuple[str, str]]:
    qids = sorted(per_topic)
    quota = reference_quota(budget, [len(per_topic[q]) for q in qids])
    out: list[tuple[str, str]] = []
    for k in range(max(quota, default=0)):
        out.extend((q, per_topic[q][k]) for q, n in zip(qids, quota, strict=True) if k < n)
    return out


def reference_adaptive(
    strategy: str, lists: list[list[str]], relevant: set[str], gamma: float = 0.9
) -> list[str]:
    """One topic judged to the end by the papers' rules, a plain loop; ties go to the first run."""
    runs = len(lists)
    pointer, judged = [0] * runs, set[str]()
    label: dict[str, int] = {}
    out: list[str] = []
    rel, nrel, seen, priority, current = [0.0] * runs, [0.0] * runs, [0] * runs, [0] * runs, 0
    discount = gamma if strategy == "bandit-mm-ns" else 1.0

    def advance() -> None:
        for r in range(runs):
            while pointer[r] < len(lists[r]) and lists[r][pointer[r]] in judged:
                good = label[lists[r][pointer[r]]]
                rel[r], nrel[r] = discount * rel[r] + good, discount * nrel[r] + (1 - good)
                seen[r] += 1
                pointer[r] += 1

    while True:
        open_runs = [r for r in range(runs) if pointer[r] < len(lists[r])]
        if not open_runs:
            return out
        if strategy == "mtf":
            if current not in open_runs:
                current = min(open_runs, key=lambda r: (-priority[r], r))
            arm = current
        elif strategy in ("bandit-mm", "bandit-mm-ns"):
            arm = max(open_runs, key=lambda r: ((1 + rel[r]) / (2 + rel[r] + nrel[r]), -r))
        else:  # bandit-ucb: UCB1-Tuned
            n = max(len(judged), 1)

            def index(r: int, n: int = n) -> float:
                if seen[r] == 0:
                    return math.inf
                mean = rel[r] / seen[r]
                spread = mean - mean**2 + math.sqrt(2 * math.log(n) / seen[r])
                return mean + math.sqrt(math.log(n) / seen[r] * min(0.25, spread))

            arm = max(open_runs, key=lambda r: (index(r), -r))
        doc = lists[arm][pointer[arm]]
        out.append(doc)
        judged.add(doc)
        label[doc] = int(doc in relevant)
        if strategy == "mtf" and doc not in relevant:
            priority[arm] -= 1
            current = -1
        advance()


def as_runs(dicts: list[RunDict]) -> list[Run]:
    return [Run.from_dict(d) if d else Run.from_dict({}) for d in dicts]


def index_in(candidates: PoolCandidates, pair: tuple[str, str]) -> int:
    index = candidates.index_of(*pair)
    assert index is not None, pair
    return index


def pairs(candidates: PoolCandidates, order: np.ndarray) -> list[tuple[str, str]]:
    return [candidates.pair(int(i)) for i in order]


run_dicts = st.lists(
    st.dictionaries(
        st.sampled_from(["q1", "q2", "q3"]),
        st.dictionaries(
            st.sampled_from([f"d{i}" for i in range(9)]), st.integers(0, 3).map(float), max_size=9
        ),
        max_size=3,
    ),
    min_size=1,
    max_size=4,
)


# --- candidates --------------------------------------------------------------------------------------


class TestCandidates:
    def test_it_ranks_ties_by_document_id_descending_as_trec_eval_does(self) -> None:
        run = Run.from_dict({"q1": {"a": 1.0, "b": 1.0, "c": 1.0, "z": 0.5}})
        pool = candidates_from_runs([run], depth=2, names=["r"])
        ranks = {pool.docnos[c]: int(r) for c, r in zip(pool.hit_candidate, pool.hit_rank, strict=True)}
        assert ranks == {"c": 1, "b": 2}

    def test_it_keeps_topics_missing_from_some_runs_and_restricts_to_qids(self) -> None:
        a = Run.from_dict({"q1": {"x": 2.0}, "q2": {"y": 1.0}})
        b = Run.from_dict({"q2": {"y": 3.0, "w": 2.0}, "q3": {"v": 1.0}})
        pool = candidates_from_runs([a, b], depth=5, names=["a", "b"], qids={"q2", "q3", "q9"})
        assert pool.qids == ("q2", "q3")
        assert pairs(pool, np.arange(len(pool))) == [("q2", "w"), ("q2", "y"), ("q3", "v")]
        assert pool.index_of("q2", "y") == 1 and pool.index_of("q1", "x") is None

    def test_it_names_runs_by_their_tag_and_accepts_empty_runs(self) -> None:
        empty = Run.from_dict({})
        pool = candidates_from_runs([empty], depth=3)
        assert len(pool) == 0 and pool.run_names == ("run1",)
        assert pool_order(pool, PoolParams("bandit-mm-ns", budget=5)).tolist() == []
        with pytest.raises(ValueError, match="distinct"):
            candidates_from_runs([empty, empty], depth=3, names=["a", "a"])

    def test_it_survives_a_round_trip_through_bytes(self) -> None:
        runs, _ = synthetic_collection(topics=3, runs=4, documents=100, depth=10, seed=3)
        pool = candidates_from_runs(runs, depth=10)
        back = PoolCandidates.from_bytes(pool.to_bytes())
        assert back.qids == pool.qids and back.docnos == pool.docnos and back.run_names == pool.run_names
        for name in ("query", "hit_run", "hit_candidate", "hit_rank"):
            assert np.array_equal(getattr(back, name), getattr(pool, name))
        params = PoolParams("bandit-mm-ns", budget=20)
        assert np.array_equal(pool_order(back, params, [(0, True)]), pool_order(pool, params, [(0, True)]))

    @settings(max_examples=150, deadline=None)
    @given(run_dicts, st.integers(1, 5))
    def test_it_matches_a_direct_ranking_of_every_run(self, dicts: list[RunDict], depth: int) -> None:
        pool = candidates_from_runs(as_runs(dicts), depth=depth)
        expected = reference_lists(dicts, depth)
        got: dict[str, list[list[str]]] = {q: [[] for _ in dicts] for q in pool.qids}
        for r, c, rank in zip(pool.hit_run, pool.hit_candidate, pool.hit_rank, strict=True):
            qid, doc = pool.pair(int(c))
            assert len(got[qid][r]) == rank - 1
            got[qid][r].append(doc)
        assert got == {q: v for q, v in expected.items() if any(v)}


# --- budget and fixed strategies ---------------------------------------------------------------------


class TestFixedStrategies:
    def test_it_spreads_the_budget_evenly_with_the_remainder_to_the_first_topics(self) -> None:
        assert allot_budget(10, np.array([2, 10, 10])).tolist() == [2, 4, 4]
        assert allot_budget(10, np.array([5, 1, 5, 5])).tolist() == [3, 1, 3, 3]
        assert allot_budget(None, np.array([3, 4])).tolist() == [3, 4]
        assert allot_budget(0, np.array([3, 4])).tolist() == [0, 0]

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(0, 12), max_size=8), st.integers(0, 80))
    def test_it_allots_as_one_judgment_at_a_time_to_the_poorest_topic(
        self, counts: list[int], budget: int
    ) -> None:
        assert allot_budget(budget, np.array(counts, dtype=np.int64)).tolist() == reference_quota(
            budget, counts
        )

    def test_it_orders_a_depth_pool_by_best_rank_taking_topics_in_turn(self) -> None:
        a = Run.from_dict({"q1": {"a1": 3.0, "a2": 2.0, "s": 1.0}, "q2": {"b1": 2.0, "b2": 1.0}})
        b = Run.from_dict({"q1": {"s": 9.0, "a2": 1.0}})
        pool = candidates_from_runs([a, b], depth=3)
        order = pairs(pool, pool_order(pool, PoolParams("depth")))
        assert order == [("q1", "a1"), ("q2", "b1"), ("q1", "s"), ("q2", "b2"), ("q1", "a2")]
        assert (
            pairs(pool, pool_order(pool, PoolParams("depth", budget=3)))
            == order[:3]
            == [
                ("q1", "a1"),
                ("q2", "b1"),
                ("q1", "s"),
            ]
        )

    def test_it_fuses_ranks_by_rrf_and_rbp_as_worked_by_hand(self) -> None:
        # A: d1 d2 d3, B: d3 d1. RRF(k=60): d1 = 1/61 + 1/62, d3 = 1/63 + 1/61, d2 = 1/62.
        # RBP(p=0.8): d1 = 0.2 + 0.16 = 0.36, d3 = 0.128 + 0.2 = 0.328, d2 = 0.16.
        a = Run.from_dict({"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}})
        b = Run.from_dict({"q": {"d3": 2.0, "d1": 1.0}})
        pool = candidates_from_runs([a, b], depth=10)
        assert [d for _, d in pairs(pool, pool_order(pool, PoolParams("take-rrf")))] == ["d1", "d3", "d2"]
        assert [d for _, d in pairs(pool, pool_order(pool, PoolParams("take-rbp")))] == ["d1", "d3", "d2"]

    def test_it_lets_a_steep_rbp_prefer_top_ranks_where_rrf_prefers_agreement(self) -> None:
        # A: x y, B: z y, C: w y. RRF(k=60): y = 3/62 > 1/61 = x = z = w. RBP(p=0.3): x = z = w = 0.7 >
        # y = 3 * 0.21 = 0.63; RBP(p=0.8): y = 3 * 0.16 = 0.48 > 0.2. Ties go by document id.
        runs = [Run.from_dict({"q": {top: 2.0, "y": 1.0}}) for top in ("x", "z", "w")]
        pool = candidates_from_runs(runs, depth=10)

        def docs(**options: object) -> list[str]:
            return [d for _, d in pairs(pool, pool_order(pool, PoolParams(**options)))]  # type: ignore[arg-type]

        assert docs(strategy="take-rrf") == ["y", "w", "x", "z"]
        assert docs(strategy="take-rbp", rbp_p=0.3) == ["w", "x", "z", "y"]
        assert docs(strategy="take-rbp", rbp_p=0.8) == ["y", "w", "x", "z"]

    @settings(max_examples=150, deadline=None)
    @given(
        run_dicts,
        st.integers(1, 4),
        st.sampled_from(["depth", "take-rrf", "take-rbp"]),
        st.one_of(st.none(), st.integers(0, 30)),
    )
    def test_it_matches_a_direct_loop_for_depth_and_take(
        self, dicts: list[RunDict], depth: int, strategy: str, budget: int | None
    ) -> None:
        params = PoolParams(strategy, budget=budget, depth=depth, rrf_k=2)
        pool = candidates_from_runs(as_runs(dicts), depth=depth)
        expected = interleave(reference_fixed(reference_lists(dicts, depth), params), budget)
        assert pairs(pool, pool_order(pool, params)) == expected

    def test_it_shuffles_randomly_by_seed_and_never_reorders_on_judgments(self) -> None:
        runs, _ = synthetic_collection(topics=4, runs=5, documents=200, depth=20, seed=1)
        pool = candidates_from_runs(runs, depth=20)
        first = pool_order(pool, PoolParams("random", seed=1))
        assert np.array_equal(first, pool_order(pool, PoolParams("random", seed=1)))
        assert not np.array_equal(first, pool_order(pool, PoolParams("random", seed=2)))
        assert sorted(first.tolist()) == list(range(len(pool)))
        judged = [(int(first[0]), True), (int(first[1]), False)]
        rest = pool_order(pool, PoolParams("random", seed=1), judged)
        assert rest.tolist() == first[2:].tolist()


# --- adaptive strategies -----------------------------------------------------------------------------


def one_topic(lists: list[list[str]]) -> tuple[PoolCandidates, list[RunDict]]:
    dicts = [{"t": {doc: float(len(docs) - i) for i, doc in enumerate(docs)}} for docs in lists]
    return candidates_from_runs(as_runs(dicts), depth=100), dicts


def sequence_of(pool: PoolCandidates, strategy: str, relevant: set[str], **options: object) -> list[str]:
    truth = np.array([pool.docnos[i] in relevant for i in range(len(pool))])
    order = judging_sequence(pool, PoolParams(strategy, **options), truth)  # type: ignore[arg-type]
    return [pool.docnos[i] for i in order]


class TestAdaptiveStrategies:
    def test_mtf_stays_on_a_run_while_it_finds_relevant_documents(self) -> None:
        # A: a1 (R) a2 (N) a3 (R); B: b1 (N) b2 (R). Both start at priority 0, A current:
        # a1 R stays on A; a2 N: A -> -1, B current; b1 N: B -> -1, tie goes to A: a3; A is spent: b2.
        pool, _ = one_topic([["a1", "a2", "a3"], ["b1", "b2"]])
        assert sequence_of(pool, "mtf", {"a1", "a3", "b2"}) == ["a1", "a2", "b1", "a3", "b2"]

    def test_maximum_mean_counts_a_judged_document_for_every_run_that_retrieved_it(self) -> None:
        # A: x (R) y (N) z (N); B: y u (R) v (R). Means start at 1/2; A first (tie): x R -> A 2/3.
        # y N: A 2/4, and B's pointer passes y too: B 1/3. A (1/2 > 1/3): z N -> A 2/5 > 1/3: A is spent,
        # then B: u, v.
        pool, _ = one_topic([["x", "y", "z"], ["y", "u", "v"]])
        assert sequence_of(pool, "bandit-mm", {"x", "u", "v"}) == ["x", "y", "z", "u", "v"]

    def test_the_non_stationary_mean_forgets_old_evidence(self) -> None:
        # A: a1 R, a2 R, a3 N, a4 N, a5 N ...; B: b1 R, b2 N, b3 N.
        # Stationary MM after a1 a2 a3 a4: A = (1+2)/(2+4) = 1/2 = B's prior: A keeps the tie, reads a5: 3/7 < 1/2.
        # Discount 0.5 after a1..a3: rel = 0.5*(0.5*1+1)+0 = 0.75, nrel = 1: mean 1.75/3.75 = 0.467 < 1/2:
        # B takes over one document earlier.
        lists = [["a1", "a2", "a3", "a4", "a5"], ["b1", "b2", "b3"]]
        relevant = {"a1", "a2", "b1"}
        pool, _ = one_topic(lists)
        assert sequence_of(pool, "bandit-mm", relevant)[:6] == ["a1", "a2", "a3", "a4", "a5", "b1"]
        assert sequence_of(pool, "bandit-mm-ns", relevant, discount=0.5)[:4] == ["a1", "a2", "a3", "b1"]

    @pytest.mark.parametrize("strategy", ["mtf", "bandit-mm", "bandit-mm-ns", "bandit-ucb"])
    @settings(max_examples=60, deadline=None)
    @given(data=st.data())
    def test_it_follows_the_papers_rules_on_random_topics(self, strategy: str, data: st.DataObject) -> None:
        docs = [f"d{i}" for i in range(12)]
        lists = data.draw(
            st.lists(
                st.lists(st.sampled_from(docs), min_size=1, max_size=8, unique=True), min_size=1, max_size=5
            )
        )
        relevant = set(data.draw(st.lists(st.sampled_from(docs), max_size=12)))
        pool, _ = one_topic(lists)
        assert sequence_of(pool, strategy, relevant) == reference_adaptive(strategy, lists, relevant)

    @pytest.mark.parametrize("strategy", sorted(ADAPTIVE_STRATEGIES))
    def test_replaying_judgments_gives_the_same_next_document_as_the_online_run(self, strategy: str) -> None:
        runs, qrels = synthetic_collection(topics=3, runs=6, documents=150, depth=15, seed=4)
        pool = candidates_from_runs(runs, depth=15)
        truth = candidate_grades(pool, qrels) > 0
        params = PoolParams(strategy, budget=40, depth=15, seed=3)
        online = judging_sequence(pool, params, truth)
        judged: list[tuple[int, bool]] = []
        for expected in online.tolist():
            pending = pool_order(pool, params, judged)
            assert len(pending) == 40 - len(judged)
            assert int(pending[0]) == expected
            judged.append((expected, bool(truth[expected])))
        assert pool_order(pool, params, judged).tolist() == []

    @pytest.mark.parametrize("strategy", STRATEGIES)
    @settings(max_examples=40, deadline=None)
    @given(data=st.data())
    def test_it_orders_what_is_pending_whatever_order_the_judgments_came_in(
        self, strategy: str, data: st.DataObject
    ) -> None:
        dicts = data.draw(run_dicts)
        pool = candidates_from_runs(as_runs(dicts), depth=4)
        picked = data.draw(st.lists(st.integers(0, max(len(pool) - 1, 0)), unique=True, max_size=len(pool)))
        judged = [(i, data.draw(st.booleans())) for i in picked]
        budget = data.draw(st.one_of(st.none(), st.integers(0, 40)))
        pending = pool_order(pool, PoolParams(strategy, budget=budget, depth=4), judged)
        assert not set(pending.tolist()) & set(picked) and len(set(pending.tolist())) == len(pending)
        quota = allot_budget(budget, np.diff(pool.topic_bounds))
        done = (
            np.bincount(pool.query[picked], minlength=len(pool.qids)) if picked else np.zeros(len(pool.qids))
        )
        room = np.maximum(quota - done, 0)
        assert len(pending) == min(
            int(room.sum()), len(pool) if budget is None else max(budget - len(picked), 0)
        )
        assert np.all(np.bincount(pool.query[pending], minlength=len(pool.qids)) <= room)

    @pytest.mark.parametrize("strategy", STRATEGIES)
    def test_a_shallower_depth_in_the_params_reads_the_runs_as_a_shallower_pool(self, strategy: str) -> None:
        runs, qrels = synthetic_collection(topics=3, runs=5, documents=150, depth=20, seed=6)
        deep, shallow = candidates_from_runs(runs, depth=20), candidates_from_runs(runs, depth=8)
        truth = candidate_grades(deep, qrels) > 0
        params = PoolParams(strategy, budget=30, depth=8, seed=2)
        first = pool_order(deep, params)
        assert pairs(deep, first) == pairs(shallow, pool_order(shallow, params))
        judged = [(int(i), bool(truth[i])) for i in first[:10]]
        moved = [(index_in(shallow, deep.pair(i)), r) for i, r in judged]
        assert pairs(deep, pool_order(deep, params, judged)) == pairs(
            shallow, pool_order(shallow, params, moved)
        )
        assert pairs(deep, judging_sequence(deep, params, truth)) == pairs(
            shallow, judging_sequence(shallow, params, candidate_grades(shallow, qrels) > 0)
        )

    @pytest.mark.parametrize("strategy", sorted(ADAPTIVE_STRATEGIES))
    def test_a_topic_without_runs_offers_nothing(self, strategy: str) -> None:
        arms = TopicArms(strategy, 3, np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64))
        assert arms.choose() == -1 and arms.frozen_order(5).tolist() == []

    def test_the_frozen_order_reads_the_best_run_to_its_end(self) -> None:
        # After x R (A: 2/3) and y N (A 2/4, B 1/3), the frozen order reads A to its end, then B.
        pool, _ = one_topic([["x", "y", "z", "w"], ["y", "u", "v"]])
        index = {pool.docnos[i]: i for i in range(len(pool))}
        pending = pool_order(pool, PoolParams("bandit-mm"), [(index["x"], True), (index["y"], False)])
        assert [pool.docnos[i] for i in pending] == ["z", "w", "u", "v"]

    def test_thompson_sampling_is_reproducible_by_seed(self) -> None:
        runs, _ = synthetic_collection(topics=3, runs=6, documents=150, depth=15, seed=4)
        pool = candidates_from_runs(runs, depth=15)
        judged = [(0, True), (5, False)]
        a = pool_order(pool, PoolParams("bandit-bla", seed=7), judged)
        assert np.array_equal(a, pool_order(pool, PoolParams("bandit-bla", seed=7), judged))
        assert not np.array_equal(a, pool_order(pool, PoolParams("bandit-bla", seed=8), judged))

    def test_it_rejects_unknown_strategies_and_bad_judgments(self) -> None:
        with pytest.raises(ValueError, match="known: depth"):
            PoolParams("best")
        pool, _ = one_topic([["x", "y"]])
        with pytest.raises(ValueError, match="twice"):
            pool_order(pool, PoolParams("mtf"), [(0, True), (0, False)])
        with pytest.raises(ValueError, match="not a candidate"):
            pool_order(pool, PoolParams("mtf"), [(5, True)])

    def test_the_budget_left_is_the_budget_less_the_judgments(self) -> None:
        runs, _ = synthetic_collection(topics=4, runs=5, documents=200, depth=20, seed=2)
        pool = candidates_from_runs(runs, depth=20)
        for strategy in STRATEGIES:
            params = PoolParams(strategy, budget=30, depth=20)
            first = pool_order(pool, params)
            assert len(first) == 30 and len(set(first.tolist())) == 30
            assert np.bincount(pool.query[first], minlength=4).tolist() == [8, 8, 7, 7]
            judged = [(int(i), i % 2 == 0) for i in first[:12]]
            rest = pool_order(pool, params, judged)
            assert len(rest) == 18 and not set(rest.tolist()) & {i for i, _ in judged}
            assert pool_order(pool, params, [(int(i), False) for i in first]).tolist() == []


def replay(
    strategy: str, lists: list[list[str]], judged: list[tuple[str, bool]], **options: object
) -> TopicArms:
    """The arms of a one-topic pool after the judgments `judged` (document, relevant), in that order."""
    pool, _ = one_topic(lists)
    index = {pool.docnos[i]: i for i in range(len(pool))}
    arms = topic_arms(pool, PoolParams(strategy, **options), 0)  # type: ignore[arg-type]
    for doc, relevant in judged:
        arms.observe(index[doc], relevant)
    return arms


class TestWorkedCases:
    """Small cases worked by hand from the formulas of docs/pooling.md (issue 23, point 1).

    The papers' own text (Losada, Parapar and Barreiro, SAC 2016 and IPM 53(5) 2017; Cormack, Palmer
    and Clarke, SIGIR 1998) could not be reached, only their abstracts, so the maximum-mean, move-to-
    front and non-stationary rules are checked against our reading of them; UCB1-Tuned is Auer,
    Cesa-Bianchi and Fischer (2002), section 4, and the Bayesian learning automaton is Granmo's (2010):
    count each arm's rewards and penalties, draw from the twin Beta posteriors, pull the largest draw.
    """

    def test_the_non_stationary_counts_are_discounted_sums_of_the_rewards(self) -> None:
        """MM-NS: after observations r_1..r_m of a run, rel = sum_k gamma^(m-k) r_k and nrel =
        sum_k gamma^(m-k) (1 - r_k); the index is the posterior mean (1 + rel) / (2 + rel + nrel).

        Run A judged R, N, N with gamma = 0.9: rel = 0.9^2 = 0.81, nrel = 0.9 + 1 = 1.9, mean =
        1.81 / 4.71 = 0.384289; stationary MM on the same run: (1 + 1) / (2 + 3) = 0.4.
        """
        lists = [["a1", "a2", "a3", "a4"], ["b1"]]
        seen = [("a1", True), ("a2", False), ("a3", False)]
        ns = replay("bandit-mm-ns", lists, seen)
        assert ns.rel[0] == pytest.approx(0.81) and ns.nrel[0] == pytest.approx(1.9)
        assert ns.scores().tolist() == pytest.approx([1.81 / 4.71, 0.5])
        assert replay("bandit-mm", lists, seen).scores().tolist() == pytest.approx([0.4, 0.5])

    def test_the_default_discount_hands_over_to_the_next_run_one_judgment_earlier(self) -> None:
        """A: a1 R, a2 N, a3, a4; B: b1 R, b2 N. Both start at the prior mean 1/2, A first (tie).

        MM: a1 R (A 2/3), a2 N (A 2/4 = 1/2, tie, A stays), a3 N (A 2/5) -> B: b1 R (2/3), b2 N (2/4);
        B is spent -> a4. MM-NS, gamma 0.9: a1 R (2/3), a2 N (A 1.9/3.9 = 0.487 < 1/2) -> B: b1 R
        (2/3), b2 N (B 1.9/3.9, the same as A: tie, A) -> a3, a4.
        """
        pool, _ = one_topic([["a1", "a2", "a3", "a4"], ["b1", "b2"]])
        relevant = {"a1", "b1"}
        assert sequence_of(pool, "bandit-mm", relevant) == ["a1", "a2", "a3", "b1", "b2", "a4"]
        assert sequence_of(pool, "bandit-mm-ns", relevant) == ["a1", "a2", "b1", "b2", "a3", "a4"]

    def test_ucb1_tuned_plays_every_run_once_then_the_largest_upper_bound(self) -> None:
        """UCB1-Tuned: index_s = mean_s + sqrt(ln(n) / n_s * min(1/4, V_s)), V_s = mean_s - mean_s^2 +
        sqrt(2 ln(n) / n_s), n the judgments so far; a run not yet observed comes first.

        A: a1 R, a2 N, a3; B: b1 R, b2 N. a1 (both unobserved, A first), b1 (B unobserved), then n = 2,
        both mean 1 with n_s = 1: tie, A: a2 N. n = 3: A mean 1/2, n_s 2, V = 1/4 + sqrt(ln 3) =
        1.298 -> 1/4, index 0.5 + sqrt(ln(3) / 8) = 0.870576; B mean 1, n_s 1, V = sqrt(2 ln 3) ->
        1/4, index 1 + sqrt(ln(3) / 4) = 1.524074: B, b2 N. Then both 0.5, tie: a3.
        """
        pool, _ = one_topic([["a1", "a2", "a3"], ["b1", "b2"]])
        assert sequence_of(pool, "bandit-ucb", {"a1", "b1"}) == ["a1", "b1", "a2", "b2", "a3"]
        arms = replay(
            "bandit-ucb", [["a1", "a2", "a3"], ["b1", "b2"]], [("a1", True), ("b1", True), ("a2", False)]
        )
        assert arms.scores().tolist() == pytest.approx([0.870576, 1.524074], abs=1e-6)

    def test_ucb1_tuned_uses_the_variance_bound_once_it_is_below_a_quarter(self) -> None:
        """With n = 250 judgments and a run of 200 relevant out of 200: V = 0 + sqrt(2 ln(250) / 200)
        = 0.234978 < 1/4, index = 1 + sqrt(ln(250) / 200 * 0.234978) = 1.080543; a run of 100 out of
        200 (V = 1/4 + 0.234978 -> 1/4): 0.5 + sqrt(ln(250) / 200 / 4) = 0.583077."""
        arms = TopicArms("bandit-ucb", 1, np.array([0, 1]), np.array([0, 0]))
        arms.judged = 250
        arms.seen[:] = 200
        arms.rel[:] = [200.0, 100.0]
        assert arms.scores().tolist() == pytest.approx([1.080543, 0.583077], abs=1e-6)

    @pytest.mark.parametrize(
        ("judged", "a_next", "chance"),
        [
            # A Beta(2, 1) against B Beta(1, 1): P(X > Y) = int_0^1 2x * x dx = 2/3; A offers a2, B a3.
            ([("a1", True)], "a2", 2 / 3),
            # A (R, R, N) Beta(3, 2) against B (its first document a3 N) Beta(1, 2):
            # int_0^1 12 x^2 (1 - x) (1 - (1 - x)^2) dx = 12 (2/4 - 3/5 + 1/6) = 0.8; A offers a4, B b1.
            ([("a1", True), ("a2", True), ("a3", False)], "a4", 0.8),
        ],
    )
    def test_thompson_sampling_picks_a_run_as_often_as_its_draw_is_the_largest(
        self, judged: list[tuple[str, bool]], a_next: str, chance: float
    ) -> None:
        """BLA: each run's rate is drawn from Beta(1 + rel_s, 1 + nrel_s) and the largest draw is pulled,
        so over seeds run A comes first with probability P(theta_A > theta_B), computed by hand (the
        draws are deterministic in the seed, so the tolerance of 4 standard errors never flakes)."""
        lists = [["a1", "a2", "a3", "a4"], ["a3", "b1", "b2"]]
        pool, _ = one_topic(lists)
        index = {pool.docnos[i]: i for i in range(len(pool))}
        done = [(index[d], r) for d, r in judged]
        seeds = 3000
        first = [
            pool.docnos[int(pool_order(pool, PoolParams("bandit-bla", seed=s), done)[0])]
            for s in range(seeds)
        ]
        share = first.count(a_next) / seeds
        assert abs(share - chance) < 4 * math.sqrt(chance * (1 - chance) / seeds), share

    def test_the_non_stationary_automaton_draws_from_the_discounted_posteriors(self) -> None:
        """BLA-NS: BLA's draws from the posteriors of MM-NS's discounted counts. A judged R, N, N with
        gamma = 0.9 has rel = 0.81 and nrel = 1.9 (as MM-NS), so theta_A ~ Beta(1.81, 2.9); B, not yet
        observed, theta_B ~ Beta(1, 1), uniform, so P(theta_A > theta_B) = E[theta_A] = 1.81 / 4.71 =
        0.384289 (stationary BLA: Beta(2, 3), 2/5). Over 3,000 seeds A (its a4) comes first that often."""
        lists = [["a1", "a2", "a3", "a4"], ["b1", "b2"]]
        seen = [("a1", True), ("a2", False), ("a3", False)]
        arms = replay("bandit-bla-ns", lists, seen)
        assert arms.rel.tolist() == pytest.approx([0.81, 0.0]) and arms.nrel.tolist() == pytest.approx(
            [1.9, 0.0]
        )
        assert replay("bandit-bla", lists, seen).nrel.tolist() == pytest.approx([2.0, 0.0])
        pool, _ = one_topic(lists)
        index = {pool.docnos[i]: i for i in range(len(pool))}
        done = [(index[d], r) for d, r in seen]
        seeds, chance = 3000, 1.81 / 4.71
        first = [
            pool.docnos[int(pool_order(pool, PoolParams("bandit-bla-ns", seed=s), done)[0])]
            for s in range(seeds)
        ]
        share = first.count("a4") / seeds
        assert abs(share - chance) < 4 * math.sqrt(chance * (1 - chance) / seeds), share

    def test_the_chosen_run_gives_its_top_unjudged_document(self) -> None:
        """A: x, y, z; B: y, w. y judged non-relevant (B's pointer passes it: B 1/3; A's top is still x:
        A 1/2): A is read to its end skipping y (x, z), then B (w)."""
        pool, _ = one_topic([["x", "y", "z"], ["y", "w"]])
        y = next(i for i in range(len(pool)) if pool.docnos[i] == "y")
        for strategy in ("bandit-mm", "bandit-mm-ns", "mtf"):
            assert [pool.docnos[i] for i in pool_order(pool, PoolParams(strategy), [(y, False)])] == [
                "x",
                "z",
                "w",
            ]

    def test_mtf_leaves_a_spent_run_for_the_run_of_highest_priority(self) -> None:
        """A: a1 R (A spent while still current) -> the highest priority among B and C (both 0: B, given
        first): b1 R, b2 N (B -> -1) -> C: c1."""
        pool, _ = one_topic([["a1"], ["b1", "b2"], ["c1"]])
        assert sequence_of(pool, "mtf", {"a1", "b1"}) == ["a1", "b1", "b2", "c1"]

    @pytest.mark.parametrize("strategy", sorted(ADAPTIVE_STRATEGIES))
    @settings(max_examples=50, deadline=None)
    @given(data=st.data())
    def test_every_choice_follows_the_definitions(self, strategy: str, data: st.DataObject) -> None:
        """At every step: the chosen run is open and every document above its pointer is judged, so it
        gives its top unjudged document; the deterministic indexes are maximal with ties to the first
        run; each run's counts are the (discounted, for MM-NS) sums over its judged prefix."""
        docs = [f"d{i}" for i in range(10)]
        lists = data.draw(
            st.lists(
                st.lists(st.sampled_from(docs), min_size=1, max_size=6, unique=True), min_size=1, max_size=4
            )
        )
        relevant = set(data.draw(st.lists(st.sampled_from(docs), max_size=10)))
        gamma = data.draw(st.sampled_from([0.5, 0.9, 1.0]))
        pool, _ = one_topic(lists)
        arms = topic_arms(pool, PoolParams(strategy, discount=gamma, seed=data.draw(st.integers(0, 9))), 0)
        while (arm := arms.choose()) >= 0:
            doc = arms.next_document(arm)
            assert not arms.taken[doc] and arms.taken[arms.lists[arm][: arms.pointer[arm]]].all()
            if strategy in ("bandit-mm", "bandit-mm-ns", "bandit-ucb"):
                score = np.where(arms.pointer < arms.length, arms.scores(), -math.inf)
                assert arm == int(np.flatnonzero(score == score.max())[0])
            arms.observe(doc, pool.docnos[doc] in relevant, arm)
            discount = gamma if strategy in ("bandit-mm-ns", "bandit-bla-ns") else 1.0
            for a in range(len(arms.runs)):
                labels = arms.label[arms.lists[a][: arms.pointer[a]]].astype(float)
                weights = discount ** np.arange(len(labels) - 1, -1, -1)
                assert arms.rel[a] == pytest.approx(float(weights @ labels))
                assert arms.nrel[a] == pytest.approx(float(weights @ (1 - labels)))
        assert arms.taken.all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adaptive_strategies_find_clearly_more_relevant_documents_than_depth(seed: int) -> None:
    """As Cormack et al. (1998) and Losada et al. (2016, 2017) report: at 20 judgments a topic on 25
    topics and 24 runs of varied quality, move-to-front and the bandits find at least a quarter more."""
    runs, qrels = synthetic_collection(topics=25, runs=24, seed=seed)
    pool = candidates_from_runs(runs, depth=100)
    truth = candidate_grades(pool, qrels) > 0
    found = {
        s: int(truth[judging_sequence(pool, PoolParams(s, budget=500), truth)].sum())
        for s in ("depth", "mtf", "bandit-mm-ns", "bandit-mm")
    }
    assert found["mtf"] >= 1.25 * found["depth"], found
    assert found["bandit-mm-ns"] >= 1.25 * found["depth"], found
    assert found["bandit-mm"] >= 1.25 * found["depth"], found


# --- simulation --------------------------------------------------------------------------------------


class TestSimulation:
    def test_it_reports_yield_and_tau_as_a_direct_evaluation_does(self) -> None:
        runs, qrels = synthetic_collection(topics=5, runs=8, documents=300, depth=30, seed=5)
        params = PoolParams("bandit-mm-ns", budget=120, depth=30)
        steps = simulate_pooling(runs, qrels, params, step=50)
        assert [s.judged for s in steps] == [50, 100, 120]
        pool = candidates_from_runs(runs, depth=30, qids=list(qrels.qids))
        grades = candidate_grades(pool, qrels)
        sequence = judging_sequence(pool, params, grades > 0)
        full = qrels.to_dict()
        truth = [evaluate(qrels, run, ["map"]).aggregate["map"] for run in runs]
        for step in steps:
            chosen = [pool.pair(int(i)) for i in sequence[: step.judged]]
            assert step.relevant_found == sum(full.get(q, {}).get(d, 0) >= 1 for q, d in chosen)
            partial: dict[str, dict[str, int]] = {}
            for q, d in chosen:
                partial.setdefault(q, {})[d] = full.get(q, {}).get(d, 0)
            scores = [evaluate(Qrels.from_dict(partial), run, ["map"]).aggregate["map"] for run in runs]
            assert step.kendall_tau == pytest.approx(scipy.stats.kendalltau(truth, scores).statistic)

    def test_it_judges_unlisted_documents_non_relevant_and_ends_with_every_candidate(self) -> None:
        qrels = Qrels.from_dict({"q1": {"a": 2, "c": 1}, "q2": {"x": 0}})
        runs = [
            Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"x": 1.0}}),
            Run.from_dict({"q1": {"c": 1.0}}),
        ]
        steps = simulate_pooling(runs, qrels, PoolParams("depth"), step=10, rel_level=2)
        assert [(s.judged, s.relevant_found) for s in steps] == [(4, 1)]
        with pytest.raises(ValueError, match="step"):
            simulate_pooling(runs, qrels, PoolParams("depth"), step=0)
