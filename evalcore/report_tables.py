"""A comparison of systems as a table to cite: LaTeX (booktabs) and Markdown, with significance markers.

The convention is ranx's `Report` (`to_latex`, and its plain-text table): one row per system, lettered
a, b, c, ... in order; one column per measure; each score rounded (3 digits by default) and followed by
the letters of the systems it is *significantly better than* on that measure; the best score of each
column in bold; the statistical test and its threshold stated with the table. Two departures, both to
report honestly: "better" follows each measure's direction (a lower-is-better measure marks the lower
score, and bolds the lowest), and every system tied at the best rounded score is bold (ranx bolds the
first). An undefined mean reads "--" (LaTeX) or "—" (Markdown).

A test of system i against system j is significant or not; which of the two is better is the sign of the
mean difference the test compared (`diff[i, j] = mean(i) - mean(j)` on the paired queries), so a marker
never contradicts the test it stands for.

>>> table = SignificanceTable(
...     systems=["bm25", "dense"], measures=["nDCG@10"],
...     means=np.array([[0.41], [0.30]]),
...     diff=np.array([[[0.0], [0.11]], [[-0.11], [0.0]]]),
...     significant=np.array([[[False], [True]], [[True], [False]]]),
...     test="paired t-test", alpha=0.05)
>>> print(to_markdown(table), end="")
| # | System | nDCG@10 |
|---|---|---|
| a | bm25 | **0.410**ᵇ |
| b | dense | 0.300 |
<BLANKLINE>
Superscripts mark the systems a system is significantly better than (paired t-test, p ≤ 0.05); the best score of each measure is in bold.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import numpy as np

#: ranx's superscript letters (`ranx.data_structures.report.super_chars`), but a true superscript q.
SUPERSCRIPTS = dict(zip(string.ascii_lowercase, "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖ𐞥ʳˢᵗᵘᵛʷˣʸᶻ", strict=True))

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}  # fmt: skip


@dataclass(frozen=True)
class SignificanceTable:
    """Systems x measures: `means[i, m]` (NaN: undefined), and for every ordered pair (i, j) on measure m
    `diff[i, j, m]` (mean of i minus mean of j over the paired queries) and `significant[i, j, m]`
    (symmetric; after any correction). `higher_is_better[m]` gives each measure's direction."""

    systems: list[str]
    measures: list[str]
    means: np.ndarray
    diff: np.ndarray
    significant: np.ndarray
    test: str
    alpha: float
    higher_is_better: list[bool] = field(default_factory=list)
    correction: str = ""

    def direction(self) -> np.ndarray:
        """+1 per measure where higher is better, -1 where lower is."""
        higher = self.higher_is_better or [True] * len(self.measures)
        return np.where(np.asarray(higher, dtype=bool), 1.0, -1.0)


def letters(count: int) -> list[str]:
    """a, b, ..., z, then aa, ab, ... (ranx stops at 26 systems)."""
    alphabet = string.ascii_lowercase
    return [alphabet[i] if i < 26 else alphabet[i // 26 - 1] + alphabet[i % 26] for i in range(count)]


def better_than(table: SignificanceTable) -> np.ndarray:
    """`[i, j, m]`: system i is significantly better than system j on measure m."""
    signed = table.diff * table.direction()[None, None, :]
    return np.asarray(table.significant, dtype=bool) & (signed > 0)


def markers(table: SignificanceTable) -> list[list[list[str]]]:
    """Per system and measure, the letters of the systems it is significantly better than, in order."""
    names = letters(len(table.systems))
    better = better_than(table)
    return [
        [[names[j] for j in np.flatnonzero(better[i, :, m])] for m in range(len(table.measures))]
        for i in range(len(table.systems))
    ]


def best(table: SignificanceTable, *, digits: int = 3) -> np.ndarray:
    """`[i, m]`: system i has the best score of measure m once rounded to `digits` (ties all best)."""
    rounded = np.round(np.asarray(table.means, dtype=float), digits) * table.direction()[None, :]
    defined = np.isfinite(rounded)
    top = np.max(np.where(defined, rounded, -np.inf), axis=0)
    return defined & (rounded == top[None, :])


def _score(value: float, digits: int) -> str:
    return f"{value:.{digits}f}"


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(char, char) for char in text)


def note(table: SignificanceTable, *, latex: bool = False) -> str:
    """What the markers mean: the test, its correction and the threshold."""
    corrected = f", {table.correction} correction" if table.correction else ""
    threshold = f"$p \\le {table.alpha:g}$" if latex else f"p ≤ {table.alpha:g}"
    test = latex_escape(table.test + corrected) if latex else table.test + corrected
    return (
        f"Superscripts mark the systems a system is significantly better than ({test}, {threshold}); "
        "the best score of each measure is in bold."
    )


def to_markdown(table: SignificanceTable, *, digits: int = 3) -> str:
    """A pipe table (`#`, `System`, one column per measure) and, under it, what the markers mean."""
    names, marks, bold = letters(len(table.systems)), markers(table), best(table, digits=digits)
    lines = [
        "| # | System | " + " | ".join(_cell_text(m) for m in table.measures) + " |",
        "|---|---|" + "---|" * len(table.measures),
    ]
    for i, system in enumerate(table.systems):
        cells = []
        for m in range(len(table.measures)):
            value = float(table.means[i, m])
            if not np.isfinite(value):
                cells.append("—")
                continue
            score = _score(value, digits)
            score = f"**{score}**" if bold[i, m] else score
            sup = ",".join(marks[i][m]) if len(table.systems) > 26 else "".join(marks[i][m])
            cells.append(score + "".join(SUPERSCRIPTS.get(char, char) for char in sup))
        lines.append(f"| {names[i]} | {_cell_text(system)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + note(table) + "\n"


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_latex(
    table: SignificanceTable, *, digits: int = 3, caption: str = "", label: str = "tab:results"
) -> str:
    """A booktabs `table` (needs `\\usepackage{booktabs}`): the caption, under the tabular, states the
    test and the threshold. Each score is followed by its markers in math superscript and by a phantom of
    the letters it lacks, so the columns line up (as ranx writes them)."""
    names, marks, bold = letters(len(table.systems)), markers(table), best(table, digits=digits)
    lines = [
        "% Needs \\usepackage{booktabs} in the preamble.",
        "\\begin{table}[ht]",
        "\\centering",
        "\\begin{tabular}{cl" + "c" * len(table.measures) + "}",
        "\\toprule",
        "\\textbf{\\#} & \\textbf{System} & "
        + " & ".join(f"\\textbf{{{latex_escape(m)}}}" for m in table.measures)
        + " \\\\",
        "\\midrule",
    ]
    for i, system in enumerate(table.systems):
        others = [names[j] for j in range(len(table.systems)) if j != i]
        cells = []
        for m in range(len(table.measures)):
            value = float(table.means[i, m])
            if not np.isfinite(value):
                cells.append("--")
                continue
            score = _score(value, digits)
            score = f"\\textbf{{{score}}}" if bold[i, m] else score
            have = marks[i][m]
            lacking = [name for name in others if name not in have]
            sup = f"$^{{{''.join(have)}}}$" if have else ""
            phantom = f"\\hphantom{{$^{{{''.join(lacking)}}}$}}" if lacking else ""
            cells.append(score + sup + phantom)
        lines.append(f"{names[i]} & {latex_escape(system)} & " + " & ".join(cells) + " \\\\")
    text = caption + (" " if caption else "") + note(table, latex=True)
    lines += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{text}}}", f"\\label{{{label}}}", "\\end{table}"]
    return "\n".join(lines) + "\n"
