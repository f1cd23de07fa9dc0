"""evalcore.fusion against ranx's `fuse` (the reference), and its optimisation against a direct loop.

ranx is the reference only here, never imported by evalcore. Where ranx meets a query a run lacks it
needs the query present: it is given an empty ranking, which is what evalcore counts a missing query
as. ranx orders tied scores by an unstable (numba quicksort) argsort, so where ranks matter (rank
methods, the rank and borda normalisations) ranx is given each run's scores replaced by distinct
values in evalcore's order (score descending, then document id descending); where only scores
matter it gets the tied scores themselves.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from evalcore.fusion import METHODS, NORMS, RANK_METHODS, FusionParams, fuse, optimize_fusion
from evalcore.fusion.optimize import fold_of
from evalcore.retrieval import Qrels, Run, evaluate

ranx = pytest.importorskip("ranx")
import numba  # noqa: E402  (ranx brings numba)
from numba import types  # noqa: E402
from numba.typed import Dict as TypedDict  # noqa: E402
from ranx.fusion import fusion_switch  # noqa: E402
from ranx.normalization import norm_switch  # noqa: E402

RunDict = dict[str, dict[str, float]]
PARAMS = {"k": 7.0, "gamma": 0.5, "sigma": 0.3, "phi": 0.6}
RANX_PARAMS = {"rrf": ("k",), "gmnz": ("gamma",), "logn_isr": ("sigma",), "rbc": ("phi",)}
COMBOS = [(m, n) for m in METHODS for n in (*NORMS, None) if not (n == "borda" and m in RANK_METHODS)]


def ordered_docs(results: dict[str, float]) -> list[str]:
    """evalcore's order of one ranking: score descending, then document id descending."""
    by_id = sorted(results, key=lambda d: d.encode(), reverse=True)
    return sorted(by_id, key=lambda d: -results[d])


def tie_free(run: RunDict) -> RunDict:
    return {q: {d: float(len(r) - i) for i, d in enumerate(ordered_docs(r))} for q, r in run.items()}


def ranx_run(run: RunDict, qids: list[str]) -> Any:
    out = ranx.Run()
    for q in qids:
        inner = TypedDict.empty(key_type=types.unicode_type, value_type=types.float64)
        for d, s in sorted(run.get(q, {}).items(), key=lambda x: -x[1]):
            inner[d] = s
        out.run[q] = inner
    return out


def ranx_fuse(runs: list[RunDict], params: FusionParams) -> RunDict:
    """ranx's `fuse` (its normalisation, then its method); called in its two steps for one run,
    which `fuse` refuses."""
    rank_matters = params.method in RANK_METHODS or params.norm in ("rank", "borda")
    fed = [tie_free(r) if rank_matters else r for r in runs]
    qids = sorted({q for r in runs for q in r})
    rruns = [ranx_run(r, qids) for r in fed]
    extra = {name: getattr(params, name) for name in RANX_PARAMS.get(params.method, ())}
    if params.method in ("wsum", "wmnz"):
        extra["weights"] = list(params.weights or [1.0] * len(runs))
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # ranx's parallel loops lost documents and queries now and then
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's type-safety warnings inside ranx
        if len(rruns) > 1:
            fused = ranx.fuse(rruns, norm=params.norm, method=params.method, params=extra)
        else:
            # ranx's borda normalisation fails to compile for one run; with one run its candidates are
            # the run's own documents, so it is ranx's rank normalisation (1 - r/n).
            norm = "rank" if params.norm == "borda" else params.norm
            normed = rruns if norm is None else [norm_switch(norm)(rruns[0])]
            fused = fusion_switch(params.method)(normed, **extra)
    numba.set_num_threads(threads)
    return {q: dict(r) for q, r in fused.to_dict().items() if r}


def assert_same(ours: Run, reference: RunDict) -> None:
    got = ours.to_dict()
    assert got.keys() == reference.keys()
    for q, docs in reference.items():
        assert got[q].keys() == docs.keys(), q
        for d, s in docs.items():
            assert math.isclose(got[q][d], s, rel_tol=1e-9, abs_tol=1e-9), (q, d, got[q][d], s)


def as_run(d: RunDict) -> Run:
    if not any(d.values()):
        return Run.from_codes([], [], [], [])
    return Run.from_dict({q: r for q, r in d.items() if r})


scores = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, 2.5, -1.0, 3.25, 7.0])
docnos = st.sampled_from(["d1", "d2", "d10", "D3", "a", "zz", "d20", "b7"])
ranking = st.dictionaries(docnos, scores, max_size=8)
run_dicts = st.dictionaries(st.sampled_from(["q1", "q2", "q3", "10"]), ranking, max_size=4)


@pytest.mark.parametrize(("method", "norm"), COMBOS)
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(runs=st.lists(run_dicts, min_size=1, max_size=4), weights=st.lists(scores, min_size=4, max_size=4))
def test_it_equals_ranx(method: str, norm: str | None, runs: list[RunDict], weights: list[float]) -> None:
    runs = [{q: r for q, r in run.items() if r} for run in runs]
    assume(any(r for run in runs for r in run.values()))
    if norm == "zmuv":
        # ranx's zmuv divides by zero on an empty ranking (numba raises inside its parallel loop, and
        # the rest of that run is lost), so for it every run holds every query.
        assume(len({frozenset(run) for run in runs}) == 1)
    w = tuple(weights[: len(runs)]) if method in ("wsum", "wmnz") else None
    params = FusionParams(method, norm=norm, weights=w, **PARAMS)
    note(repr(runs))
    assert_same(fuse([as_run(r) for r in runs], params), ranx_fuse(runs, params))


def test_it_accepts_combsum_style_names() -> None:
    for alias, name in [("CombSUM", "sum"), ("CombMNZ", "mnz"), ("CombMAX", "max"), ("CombMIN", "min"),
                        ("CombMED", "med"), ("CombANZ", "anz"), ("RRF", "rrf"), ("BordaFuse", "bordafuse")]:  # fmt: skip
        assert FusionParams(alias).method == name
    with pytest.raises(ValueError, match="unknown fusion method"):
        FusionParams("combfoo")
    with pytest.raises(ValueError, match="unknown normalisation"):
        FusionParams("sum", norm="l2")


def test_it_orders_ties_by_document_id_descending() -> None:
    a = Run.from_dict({"q1": {"d1": 1.0, "d3": 1.0, "d2": 1.0, "d4": 0.0}})
    b = Run.from_dict({"q1": {"d4": 1.0}})
    fused = fuse([a, b], FusionParams("sum", norm=None))
    assert fused.docno_strings() == ["d4", "d3", "d2", "d1"]  # d4 2.0, then the 1.0 ties
    assert fused.scores.tolist() == [1.0, 1.0, 1.0, 1.0]
    # RRF ranks the tied documents of a run in that order too: d3 first, then d2, d1.
    rrf = fuse([a], FusionParams("rrf", k=0)).to_dict()["q1"]
    assert rrf == {"d3": 1.0, "d2": 0.5, "d1": 1 / 3, "d4": 0.25}


def test_it_fuses_one_run_as_its_normalisation() -> None:
    run = Run.from_dict({"q1": {"a": 3.0, "b": 1.0, "c": 2.0}})
    assert fuse([run], FusionParams("sum")).to_dict() == {"q1": {"a": 1.0, "c": 0.5, "b": 0.0}}


def test_it_fuses_an_empty_run_as_no_votes() -> None:
    run = Run.from_dict({"q1": {"a": 3.0, "b": 1.0}})
    empty = Run.from_codes([], [], [], [])
    assert fuse([run, empty], FusionParams("mnz")).to_dict() == {"q1": {"a": 1.0, "b": 0.0}}
    assert len(fuse([empty, empty], FusionParams("sum"))) == 0
    with pytest.raises(ValueError, match="at least one run"):
        fuse([], FusionParams("sum"))


def test_it_matches_documents_across_runs_of_short_and_long_ids() -> None:
    # Run a's ids all fit in 8 bytes (exact keys), run b's do not (hashed keys): still one document.
    a = Run.from_dict({"q1": {"d1": 2.0, "doc-2": 1.0}})
    b = Run.from_dict({"q1": {"doc-2": 3.0, "a-very-long-document-id": 1.0, "d1": 0.5}})
    assert a.exact_keys and not b.exact_keys
    fused = fuse([a, b], FusionParams("sum", norm=None)).to_dict()
    assert fused == {"q1": {"doc-2": 4.0, "d1": 2.5, "a-very-long-document-id": 1.0}}


def test_it_confirms_equal_keys_on_the_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    a = Run.from_dict({"q1": {"first-long-id": 2.0, "second-long-id": 1.0}})
    b = Run.from_dict({"q1": {"second-long-id": 3.0, "third-long-id": 1.0}})
    expected = fuse([a, b], FusionParams("sum", norm=None)).to_dict()
    assert expected == {"q1": {"second-long-id": 4.0, "first-long-id": 2.0, "third-long-id": 1.0}}
    # Every key collides: the ids themselves must decide.
    monkeypatch.setattr(
        Run, "doc_keys_for", lambda self, exact: (np.arange(len(self)), np.zeros(len(self), np.uint64))
    )
    assert fuse([a, b], FusionParams("sum", norm=None)).to_dict() == expected


def test_it_keeps_a_query_only_one_run_has() -> None:
    a = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}, "q2": {"x": 5.0}})
    b = Run.from_dict({"q1": {"b": 4.0}})
    fused = fuse([a, b], FusionParams("rrf", k=60)).to_dict()
    assert fused["q2"] == {"x": 1 / 61}
    assert fused["q1"] == {"b": 1 / 62 + 1 / 61, "a": 1 / 61}
    borda = fuse([a, b], FusionParams("bordafuse")).to_dict()
    # q2: one candidate; run b has no ranking for it, so it gives x (1 - 0 + 1) / 2 = 1.
    assert borda["q2"] == {"x": 2.0}


def test_it_refuses_weights_of_the_wrong_length() -> None:
    run = Run.from_dict({"q1": {"a": 1.0}})
    with pytest.raises(ValueError, match="one weight per run"):
        fuse([run, run], FusionParams("wsum", weights=(1.0,)))
    with pytest.raises(ValueError, match="without the borda normalisation"):
        FusionParams("rrf", norm="borda")


# --- optimisation ------------------------------------------------------------------------------------


def synthetic(seed: int) -> tuple[list[Run], Qrels]:
    rng = np.random.default_rng(seed)
    qids = [f"q{i}" for i in range(12)]
    rel = {q: {f"d{j}": int(rng.integers(0, 3)) for j in range(15)} for q in qids}
    runs = []
    for _ in range(3):
        runs.append(
            Run.from_dict(
                {
                    q: {
                        f"d{j}": float(rng.normal(rel[q][f"d{j}"] * rng.uniform(0, 1), 1))
                        for j in rng.choice(15, size=10, replace=False)
                    }
                    for q in qids
                }  # fmt: skip
            )
        )
    return runs, Qrels.from_dict(rel)


def restrict(run: Run, qids: set[str]) -> Run:
    return Run.from_dict({q: r for q, r in run.to_dict().items() if q in qids})


def direct_score(runs: list[Run], qrels: Qrels, params: FusionParams, qids: set[str]) -> float:
    fused = fuse([restrict(r, qids) for r in runs], params)
    return evaluate(qrels, fused, ["map"]).aggregate["map"]


@pytest.mark.parametrize("method", ["wsum", "wmnz", "rrf"])
def test_it_optimises_as_a_direct_grid_loop(method: str) -> None:
    runs, qrels = synthetic(3)
    params = FusionParams(method)
    got = optimize_fusion(runs, qrels, params, measure="map", folds=3, seed=5, step=0.25, min_k=10, max_k=40)
    if method == "rrf":
        grid = [FusionParams("rrf", k=k) for k in (10, 20, 30, 40)]
    else:
        quarters = [c for c in itertools.product(range(5), repeat=3) if sum(c) == 4]
        grid = [FusionParams(method, weights=tuple(x / 4 for x in c)) for c in quarters]
    assert got.trials == len(grid)
    qids = np.array(sorted(qrels.qids.tolist()), dtype=object)
    fold = fold_of(qids, 3, 5)
    for f in range(3):
        train, test = set(qids[fold != f]), set(qids[fold == f])
        train_scores = [direct_score(runs, qrels, p, train) for p in grid]
        best = max(i for i, s in enumerate(train_scores) if s >= max(train_scores) - 1e-12)
        assert got.folds[f].params == grid[best]
        assert got.folds[f].train_score == pytest.approx(train_scores[best], abs=1e-12)
        assert got.folds[f].test_score == pytest.approx(
            direct_score(runs, qrels, grid[best], test), abs=1e-12
        )
    overall = [direct_score(runs, qrels, p, set(qids)) for p in grid]
    assert got.score == pytest.approx(max(overall), abs=1e-12)
    assert got.mean_test_score == pytest.approx(np.mean([fr.test_score for fr in got.folds]))


def test_it_deals_every_query_to_one_fold() -> None:
    qids = np.array([f"q{i}" for i in range(11)], dtype=object)
    fold = fold_of(qids, 5, 0)
    assert sorted(np.bincount(fold).tolist()) == [2, 2, 2, 2, 3]
    assert np.array_equal(fold, fold_of(qids, 5, 0))
    with pytest.raises(ValueError, match="folds"):
        fold_of(qids, 12, 0)
