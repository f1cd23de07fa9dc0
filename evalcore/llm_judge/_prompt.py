"""The judge's prompt: its words and its version, in one place.

It follows UMBRELA's zero-shot prompt (Upadhyay, Pradeep, Thakur, Craswell and Lin 2024, "UMBRELA: UMbrela
is the (Open-Source Reproduction of the) Bing RELevance Assessor", arXiv:2406.06519), itself after Thomas et
al. 2023: the grades with their meanings, the query and the passage, then the steps to take (the intent of
the search, how well the passage matches it, how trustworthy it is) and one required form for the final
answer, ``##final score: N``. Where UMBRELA fixes the 0-3 scale, this prompt lists the project's own grades
and definitions (the scale its annotators use), so the judge's labels and theirs can be compared grade for
grade.

Any change to ``PROMPT_TEMPLATE`` must change ``PROMPT_VERSION``: the version names the judge
(``MachineJudge.version``), so labels from different words are never mixed in one judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: The version of the words below; a judge's labels are all from one version.
PROMPT_VERSION = "umbrela-1"

PROMPT_TEMPLATE = """\
Given a query and a passage, grade how relevant the passage is to the query on an integer scale of \
{lowest} to {highest}, with these meanings:
{scale}

Give the lowest grade if the passage has nothing to do with the query. Give a middle grade if the passage \
is related to the query but answers it only in part, unclearly, or among unrelated information, and the \
highest grade only if the passage is about the query and contains its exact answer.

Query: {query}
Passage: {passage}

Work through these steps:
Consider the underlying intent of the search.
Measure how well the content of the passage matches a likely intent of the query (M).
Measure how trustworthy the passage is (T).
Weigh the aspects above and decide on a final grade (O). The final grade must be one integer of the scale.
Do not write code. End your answer with one line in exactly this form: ##final score: N"""


@dataclass(frozen=True)
class ScaleLevel:
    """One grade of the scale, with what it means."""

    grade: int
    label: str
    definition: str = ""

    def line(self) -> str:
        meaning = f"{self.label}: {self.definition}" if self.definition else self.label
        return f"{self.grade} = {meaning}"


def scale_levels(scale: Iterable[Mapping[str, Any]]) -> tuple[ScaleLevel, ...]:
    """A project's scale (``[{grade, label, definition?}, ...]``) as levels, lowest grade first.

    >>> [level.grade for level in scale_levels([{"grade": 1, "label": "yes"}, {"grade": 0, "label": "no"}])]
    [0, 1]
    """
    levels = [
        ScaleLevel(int(level["grade"]), str(level.get("label", "")), str(level.get("definition", "") or ""))
        for level in scale
    ]
    if not levels:
        raise ValueError("the scale has no grade")
    return tuple(sorted(levels, key=lambda level: level.grade))


def passage_text(title: str, text: str, *, max_chars: int) -> str:
    """The passage the judge reads: the document's title and text, cut at ``max_chars`` characters (an
    annotator reads the whole document; a judge's prompt has a length limit and a price per token).

    >>> passage_text("Bread", "Flour, water and salt.", max_chars=12)
    'Bread\\n\\nFlou…'
    """
    whole = f"{title.strip()}\n\n{text.strip()}" if title.strip() else text.strip()
    return whole if len(whole) <= max_chars else whole[: max(0, max_chars - 1)] + "…"


def prompt_text(query: str, passage: str, *, scale: Iterable[ScaleLevel]) -> str:
    """The prompt for one pair: the template filled with the scale, the query and the passage.

    >>> levels = (ScaleLevel(0, "Not relevant"), ScaleLevel(1, "Relevant", "answers it"))
    >>> print(prompt_text("sourdough", "A recipe.", scale=levels).splitlines()[1:3])
    ['0 = Not relevant', '1 = Relevant: answers it']
    """
    levels = tuple(scale)
    return PROMPT_TEMPLATE.format(
        lowest=levels[0].grade,
        highest=levels[-1].grade,
        scale="\n".join(level.line() for level in levels),
        query=" ".join(query.split()),
        passage=passage,
    )
