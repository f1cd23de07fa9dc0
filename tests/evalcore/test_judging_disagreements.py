"""The drill-down kernels: which items an annotator disagrees on, with whom, sorted by the gap."""

from __future__ import annotations

from evalcore.judging import Answers, annotator_disagreements, pair_disagreements


def answers(rows: list[tuple[int, int, int | None]], **extra: object) -> Answers:
    """(task, annotator, grade) rows; annotators 10, 11, 12 are a, b and c."""
    task, annotator, grade = zip(*rows, strict=True)
    too_fast = extra.pop("too_fast", [False] * len(rows))
    return Answers.from_columns(
        task=task, annotator=annotator, grade=grade, too_fast=too_fast, seconds=[10.0] * len(rows),
        usernames={10: "a", 11: "b", 12: "c"}, **extra,  # type: ignore[arg-type]
    )  # fmt: skip


class TestPairDisagreements:
    def test_it_lists_the_shared_items_where_the_grades_differ_largest_gap_first(self) -> None:
        found = pair_disagreements(
            answers([(1, 10, 3), (1, 11, 2), (2, 10, 0), (2, 11, 4), (3, 10, 1), (3, 11, 1), (4, 10, 2)]),
            a=10,
            b=11,
        )
        assert found.task.tolist() == [2, 1]
        assert found.grade.tolist() == [0, 3] and found.other.tolist() == [4, 2]
        assert found.gap.tolist() == [4, 1] and found.reference == ["annotator", "annotator"]

    def test_it_leaves_out_skips_too_fast_answers_and_attention_checks_as_the_kappa_matrix_does(
        self,
    ) -> None:
        rows = [
            (1, 10, 3),
            (1, 11, None),
            (2, 10, 0),
            (2, 11, 4),
            (3, 10, 0),
            (3, 11, 4),
            (5, 10, 4),
            (5, 11, 0),
        ]
        too_fast = [False, False, True, False, False, False, False, False]
        found = pair_disagreements(answers(rows, too_fast=too_fast, attention=[5]), a=10, b=11)
        assert found.task.tolist() == [3]

    def test_it_shows_the_other_annotators_labels_without_the_pair(self) -> None:
        found = pair_disagreements(answers([(1, 10, 3), (1, 11, 1), (1, 12, 2)]), a=10, b=11)
        assert found.others == {1: {"c": 2}}

    def test_it_is_empty_for_an_unknown_annotator_or_the_same_one_twice(self) -> None:
        data = answers([(1, 10, 3), (1, 11, 1)])
        assert len(pair_disagreements(data, a=10, b=99)) == 0
        assert len(pair_disagreements(data, a=10, b=10)) == 0


class TestAnnotatorDisagreements:
    def test_it_compares_with_gold_on_gold_items_and_with_the_others_median_elsewhere(self) -> None:
        rows = [
            (1, 10, 3),
            (1, 11, 1),
            (1, 12, 2),
            (2, 10, 2),
            (2, 11, 0),
            (3, 10, 2),
            (3, 11, 2),
            (4, 10, 4),
        ]
        found = annotator_disagreements(answers(rows, gold={2: 0, 3: 2}), a=10)
        # Item 1: the others' median of 1 and 2, rounded down, is 1; item 2: gold 0; item 3 agrees with
        # gold; item 4 has neither gold nor another label.
        assert found.task.tolist() == [1, 2]
        assert found.other.tolist() == [1, 0]
        assert found.reference == ["others", "gold"]
        assert found.others == {1: {"b": 1, "c": 2}, 2: {"b": 0}}

    def test_it_counts_attention_checks_as_gold(self) -> None:
        found = annotator_disagreements(answers([(7, 10, 0)], gold={7: 4}, attention=[7]), a=10)
        assert found.task.tolist() == [7] and found.reference == ["gold"] and found.gap.tolist() == [4]
