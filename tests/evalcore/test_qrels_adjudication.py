"""Adjudication in the pure qrels computation: the pairs dropped for disagreement, and adjudicated grades as
their own source (against a plain-Python reference, and on the counts and exports)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from evalcore.judging import (
    Adjudicated,
    Answers,
    Pairs,
    QrelsParams,
    qrels_compute,
    qrels_disagreements,
    qrels_jsonl,
    qrels_trec,
)

ANN = {10: "ann", 11: "bob", 12: "cid"}
INCLUDE_ALL = dict.fromkeys(ANN, "include")
PARAMS = QrelsParams(min_gold=0, min_accuracy=0.0)
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def answers(
    rows: list[tuple[int, int, int | None]], *, too_fast: set[int] = frozenset(), attention=()
) -> Answers:  # type: ignore[no-untyped-def,assignment]
    """Answers from (task, annotator, grade) rows; `too_fast` holds row indices."""
    return Answers.from_columns(
        task=[r[0] for r in rows],
        annotator=[r[1] for r in rows],
        grade=[r[2] for r in rows],
        too_fast=[i in too_fast for i in range(len(rows))],
        seconds=[20.0] * len(rows),
        created_at=[START + timedelta(minutes=i) for i in range(len(rows))],
        usernames=ANN,
        attention=list(attention),
    )


PAIRS = Pairs.from_rows([(t, f"q{t % 2}", f"d{t}") for t in range(1, 8)])
# 1: agree (2, 3); 2: disagree (0, 3); 3: disagree (1, 4, 4); 4: one label; 5: none;
# 6: agree once its too-fast 4 is dropped (1, 1); 7: an attention check with disagreeing labels.
ROWS = [
    (1, 10, 2), (1, 11, 3),
    (2, 10, 0), (2, 11, 3),
    (3, 10, 1), (3, 11, 4), (3, 12, 4),
    (4, 10, 2),
    (6, 10, 1), (6, 11, 1), (6, 12, 4),
    (7, 10, 0), (7, 11, 4),
]  # fmt: skip
ANSWERS = answers(ROWS, too_fast={10}, attention=[7])


def reference_dropped(rows: list[tuple[int, int, int | None]], *, skip: set[int], tolerance: float, min_labels: int) -> dict[int, float]:  # fmt: skip
    """Task -> spread of the pairs with enough labels spread beyond the tolerance, by plain loops."""
    by_task: dict[int, list[int]] = {}
    for index, (task, _, grade) in enumerate(rows):
        if index not in skip and grade is not None:
            by_task.setdefault(task, []).append(grade)
    return {
        task: float(max(g) - min(g))
        for task, g in by_task.items()
        if len(g) >= min_labels and max(g) - min(g) > tolerance
    }


class TestDroppedPairs:
    def test_it_lists_the_pairs_dropped_for_disagreement_with_their_spread(self) -> None:
        dropped = qrels_disagreements(ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS)
        assert dropped.task.tolist() == [2, 3]
        assert dropped.spread.tolist() == [3.0, 3.0] and dropped.n_labels.tolist() == [2, 3]
        assert len(dropped) == 2

    @pytest.mark.parametrize(("tolerance", "min_labels"), [(0.0, 2), (1.0, 2), (2.0, 3), (0.0, 1)])
    def test_it_matches_a_plain_reference_and_the_builds_counts(
        self, tolerance: float, min_labels: int
    ) -> None:
        rng = np.random.default_rng(7)
        rows = [
            (int(t), int(a), int(rng.integers(0, 5))) for t in range(1, 41) for a in ANN if rng.random() < 0.7
        ]
        pairs = Pairs.from_rows([(t, "q", f"d{t}") for t in range(1, 41)])
        params = QrelsParams(min_gold=0, min_accuracy=0.0, tolerance=tolerance, min_labels=min_labels)
        data = answers(rows)
        dropped = qrels_disagreements(data, pairs=pairs, overrides=INCLUDE_ALL, params=params)
        expected = reference_dropped(rows, skip=set(), tolerance=tolerance, min_labels=min_labels)
        assert dict(zip(dropped.task.tolist(), dropped.spread.tolist(), strict=True)) == expected
        result = qrels_compute(data, pairs=pairs, overrides=INCLUDE_ALL, params=params)
        assert result.counts["pairs"]["dropped"]["disagreement"] == len(dropped)

    def test_it_leaves_out_excluded_annotators_too_fast_labels_and_attention_checks(self) -> None:
        only_ann = {10: "include", 11: "exclude", 12: "exclude"}
        assert len(qrels_disagreements(ANSWERS, pairs=PAIRS, overrides=only_ann, params=PARAMS)) == 0
        # Task 6's too-fast 4 would make it disagree; task 7 is an attention check.
        dropped = qrels_disagreements(ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS)
        assert {6, 7}.isdisjoint(dropped.task.tolist())


ADJUDICATIONS = {
    2: Adjudicated(grade=1, adjudicator="lena", note="Partly relevant.", at=datetime(2026, 3, 3, tzinfo=UTC)),
    1: Adjudicated(grade=4, adjudicator="vic"),  # overrides a pair the crowd agreed on
    5: Adjudicated(grade=0, adjudicator="lena"),  # a pair nobody labelled
    7: Adjudicated(grade=2, adjudicator="lena"),  # an attention check: never in the qrels
}


class TestAdjudicatedGrades:
    def test_it_takes_the_rel_of_an_adjudicated_pair_from_its_adjudication(self) -> None:
        result = qrels_compute(
            ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS, adjudications=ADJUDICATIONS
        )
        judged = {j.doc_id: j for j in result.judgments}
        assert {doc: j.rel for doc, j in judged.items()} == {"d1": 4, "d2": 1, "d5": 0, "d6": 1}
        assert [(j.doc_id, j.source) for j in result.judgments] == [
            ("d2", "adjudication"), ("d6", "crowd"), ("d1", "adjudication"), ("d5", "adjudication"),
        ]  # fmt: skip
        assert judged["d2"].adjudication == {
            "adjudicator": "lena", "grade": 1, "note": "Partly relevant.", "adjudicated_at": "2026-03-03T00:00:00Z",
        }  # fmt: skip
        assert [label["grade"] for label in judged["d2"].labels] == [0, 3]  # the crowd's, alongside
        assert judged["d5"].labels == [] and judged["d6"].adjudication is None

    def test_it_counts_each_source_and_leaves_adjudicated_pairs_out_of_the_dropped(self) -> None:
        plain = qrels_compute(ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS)
        result = qrels_compute(
            ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS, adjudications=ADJUDICATIONS
        )
        assert plain.counts["pairs"]["dropped"] == {"no_labels": 1, "too_few_labels": 1, "disagreement": 2}
        assert result.counts["pairs"] == {
            "total": 6, "kept": 4, "dropped": {"no_labels": 0, "too_few_labels": 1, "disagreement": 1},
        }  # fmt: skip
        assert (result.counts["adjudicated"], result.counts["sources"]) == (
            3,
            {"crowd": 1, "adjudication": 3},
        )
        assert result.counts["labels"]["in_kept_pairs"] == 2 + 2 + 2  # d1, d2 and d6's used labels
        assert result.agreement == plain.agreement

    def test_it_ignores_the_adjudications_when_told_to(self) -> None:
        params = QrelsParams(min_gold=0, min_accuracy=0.0, use_adjudications=False)
        ignored = qrels_compute(
            ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=params, adjudications=ADJUDICATIONS
        )
        plain = qrels_compute(ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS)
        assert qrels_jsonl(ignored.judgments) == qrels_jsonl(plain.judgments)
        assert (ignored.counts["adjudicated"], ignored.counts["use_adjudications"]) == (0, False)

    def test_it_writes_the_provenance_in_jsonl_and_keeps_trec_at_four_columns(self) -> None:
        result = qrels_compute(
            ANSWERS, pairs=PAIRS, overrides=INCLUDE_ALL, params=PARAMS, adjudications=ADJUDICATIONS
        )
        lines = {line["doc_id"]: line for line in map(json.loads, qrels_jsonl(result.judgments).splitlines())}
        assert (
            lines["d2"]["source"] == "adjudication" and lines["d2"]["adjudication"]["adjudicator"] == "lena"
        )
        assert lines["d2"]["rel"] == 1 and lines["d2"]["n_labels"] == 2
        assert "source" not in lines["d6"]
        assert all(len(line.split()) == 4 for line in qrels_trec(result.judgments).splitlines())
        again = qrels_compute(
            ANSWERS,
            pairs=PAIRS,
            overrides=INCLUDE_ALL,
            params=PARAMS,
            adjudications=dict(reversed(ADJUDICATIONS.items())),
        )
        assert qrels_jsonl(again.judgments).encode() == qrels_jsonl(result.judgments).encode()
