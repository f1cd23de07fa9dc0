"""Reading a model's answer into a grade, strictly: a grade is read only where the answer states one.

The prompt asks for a last line ``##final score: N``. An answer is:

- ``graded`` when it holds that line (any case, spaces around the colon, ``N`` possibly in bold or
  brackets) with one integer that is a grade of the scale; where the line is given more than once, every
  one must say the same grade;
- ``refused`` when the model declined (the API's ``refusal`` field, a ``content_filter`` stop, or an empty
  answer);
- ``unparsable`` otherwise: no such line, two different grades, a number off the scale, a fraction.

Nothing is guessed: an answer that only says "highly relevant", or ends "score: 2" without the marker,
is unparsable, since reading it would mean guessing what the model meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

AnswerStatus = Literal["graded", "unparsable", "refused"]
ANSWER_STATUSES: tuple[AnswerStatus, ...] = ("graded", "unparsable", "refused")

_FINAL = re.compile(r"##\s*final\s+score\s*:\s*\**\s*\[?\s*([^\s\]*]+)", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True)
class ReadAnswer:
    """What an answer says: its status, its grade (None unless graded), why it is not graded, and the
    text before the final line (the model's reasoning, when it gave some)."""

    status: AnswerStatus
    grade: int | None = None
    reason: str = ""
    rationale: str = ""


def answer_read(
    text: str | None, *, grades: frozenset[int] | set[int], refusal: str = "", finish_reason: str = ""
) -> ReadAnswer:
    """The grade an answer states, or why none is read (see the module docstring).

    >>> answer_read("Intent: bread.\\n##final score: 2", grades={0, 1, 2, 3})
    ReadAnswer(status='graded', grade=2, reason='', rationale='Intent: bread.')
    >>> answer_read("It is highly relevant.", grades={0, 1, 2, 3}).reason
    'no "##final score: N" line'
    >>> answer_read("##final score: 7", grades={0, 1, 2, 3}).reason
    '7 is not a grade of the scale (0, 1, 2, 3)'
    """
    if refusal.strip():
        return ReadAnswer("refused", reason=f"the model refused: {refusal.strip()[:200]}")
    if finish_reason == "content_filter":
        return ReadAnswer("refused", reason="the answer was withheld by the endpoint's content filter")
    if text is None or not text.strip():
        return ReadAnswer("refused", reason="the answer is empty")
    found = _FINAL.findall(text)
    if not found:
        return ReadAnswer("unparsable", reason='no "##final score: N" line')
    values = {value.strip().rstrip(".") for value in found}
    if len(values) > 1:
        return ReadAnswer("unparsable", reason=f"different final scores: {', '.join(sorted(values))}")
    value = values.pop()
    if not _INTEGER.fullmatch(value):
        return ReadAnswer("unparsable", reason=f"the final score {value!r} is not an integer")
    grade = int(value)
    if grade not in grades:
        scale = ", ".join(str(g) for g in sorted(grades))
        return ReadAnswer("unparsable", reason=f"{grade} is not a grade of the scale ({scale})")
    return ReadAnswer("graded", grade=grade, rationale=answer_rationale(text))


def answer_rationale(text: str) -> str:
    r"""What the answer says before its first final-score line: the model's reasoning, if it gave any.

    >>> answer_rationale("M=2, T=2.\n##final score: 2")
    'M=2, T=2.'
    """
    first = _FINAL.search(text)
    return text[: first.start()].strip() if first else text.strip()
