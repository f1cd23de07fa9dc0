"""Run layouts: a run's rows placed in trec_eval's order without sorting the rows themselves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.retrieval import Run
from evalcore.retrieval.layout import GroupedLayout, KeyedLayout, _descending_bits, layout_of
from evalcore.retrieval.ranking import _ranks


def naive_ranks(run: Run) -> dict[tuple[str, str], int]:
    """trec_eval's ranks by sorting every query's rows: score (as float32) descending, docno descending."""
    out = {}
    for qid, docs in run.to_dict().items():
        by_docno = sorted(docs, key=lambda d: d.encode(), reverse=True)
        order = sorted(by_docno, key=lambda d: -np.float32(docs[d]))  # stable: docno breaks ties
        out.update({(qid, d): i + 1 for i, d in enumerate(order)})
    return out


class TestLayout:
    @given(st.lists(st.floats(width=32, allow_nan=False), min_size=2, max_size=50))
    def test_it_orders_float_bits_as_the_scores_descending(self, values: list[float]) -> None:
        scores = np.array(values, dtype=np.float32)
        bits = _descending_bits(scores)
        for i in range(len(scores) - 1):
            a, b = scores[i], scores[i + 1]
            assert (bits[i] < bits[i + 1]) == (a > b) and (bits[i] == bits[i + 1]) == (a == b)

    def test_it_ties_zero_and_negative_zero(self) -> None:
        bits = _descending_bits(np.array([0.0, -0.0], dtype=np.float32))
        assert bits[0] == bits[1]

    def test_it_keeps_a_grouped_descending_run_in_place_and_keys_any_other(self) -> None:
        codes = np.array([1, 1, 1, 0, 0], dtype=np.int32)
        assert isinstance(layout_of(codes, np.array([3, 2, 2, 5, 1.0]), 2), GroupedLayout)
        assert isinstance(layout_of(codes, np.array([3, 4, 2, 5, 1.0]), 2), KeyedLayout)  # a rise
        assert isinstance(layout_of(codes[[0, 3, 1, 4, 2]], np.ones(5), 2), KeyedLayout)  # interleaved

    @settings(max_examples=60, deadline=None)
    @given(st.integers(0, 10_000), st.booleans())
    def test_it_ranks_judged_rows_as_a_full_sort_does(self, seed: int, shuffle: bool) -> None:
        rng = np.random.default_rng(seed)
        docs = [f"d{i}" for i in range(60)] + ["clueweb09-en0000-00-00001", "é"]
        run = {
            f"q{q}": {d: float(rng.integers(0, 6)) / 2 for d in rng.choice(docs, 25, replace=False)}
            for q in range(4)
        }
        rows = [(q, d, s) for q, ranking in run.items() for d, s in ranking.items()]
        rows.sort(key=lambda r: (r[0], -r[2]))
        if shuffle:
            rows = [rows[i] for i in rng.permutation(len(rows))]
        qids = sorted(run)
        data = Run.from_codes(
            qids, [qids.index(r[0]) for r in rows], [r[1] for r in rows], [r[2] for r in rows]
        )
        assert isinstance(data.layout, KeyedLayout if shuffle else GroupedLayout)
        ranks = _ranks(data, np.arange(len(data)))
        docnos = data.docno_strings()
        ours = {(str(qids[c]), d): int(r) for c, d, r in zip(data.qid_codes, docnos, ranks, strict=True)}
        assert ours == naive_ranks(data)

    @pytest.mark.parametrize("shuffle", [False, True])
    def test_it_counts_each_querys_rows(self, shuffle: bool) -> None:
        codes = np.repeat(np.arange(3, dtype=np.int32), [4, 1, 2])
        scores = np.array([5, 4, 4, 1, 2, 9, 9.0])
        if shuffle:
            order = np.array([6, 0, 4, 2, 1, 5, 3])
            codes, scores = codes[order], scores[order]
        layout = layout_of(codes, scores, 3)
        assert layout.counts.tolist() == [4, 1, 2]
        assert layout.query_start.tolist() == [0, 4, 5]
