"""`evalcore.report_tables`: the ranx-style tables on hand-made results (the Django side, with a real
comparison and ranx's own `Report`, is tests/monitoring/test_reports.py)."""

from __future__ import annotations

import numpy as np

from evalcore.report_tables import SignificanceTable, best, letters, markers, to_latex, to_markdown


def two(
    means: list[float], diff: float, *, significant: bool = True, higher: bool = True
) -> SignificanceTable:
    return SignificanceTable(
        systems=["x_1", "y"], measures=["err"], means=np.array([[means[0]], [means[1]]]),
        diff=np.array([[[0.0], [diff]], [[-diff], [0.0]]]),
        significant=np.array([[[False], [significant]], [[significant], [False]]]),
        test="t", alpha=0.01, higher_is_better=[higher],
    )  # fmt: skip


class TestReportTables:
    def test_it_marks_the_lower_score_on_a_lower_is_better_measure(self) -> None:
        table = two([0.2, 0.5], -0.3, higher=False)
        assert markers(table) == [[["b"]], [[]]]
        assert "| a | x_1 | **0.200**ᵇ |" in to_markdown(table)
        assert "a & x\\_1 & \\textbf{0.200}$^{b}$ \\\\" in to_latex(table)
        assert "b & y & 0.500\\hphantom{$^{a}$} \\\\" in to_latex(table)

    def test_it_marks_nothing_without_a_significant_test(self) -> None:
        table = two([0.6, 0.5], 0.1, significant=False)
        assert markers(table) == [[[]], [[]]]
        assert "| a | x_1 | **0.600** |" in to_markdown(table)

    def test_it_bolds_every_run_tied_at_the_best_rounded_score(self) -> None:
        assert best(two([0.5001, 0.4996], 0.0005, significant=False)).tolist() == [[True], [True]]

    def test_it_writes_an_undefined_mean_as_a_dash(self) -> None:
        table = two([float("nan"), 0.4], 0.0, significant=False)
        assert best(table).tolist() == [[False], [True]]
        assert "| a | x_1 | — |" in to_markdown(table)
        assert "a & x\\_1 & -- \\\\" in to_latex(table)

    def test_it_letters_past_z(self) -> None:
        assert letters(28)[24:] == ["y", "z", "aa", "ab"]
