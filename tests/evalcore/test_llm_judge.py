"""The LLM judge's framework-free parts: the versioned prompt, strict reading of answers, costs and pace."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from evalcore.llm_judge import (
    PROMPT_TEMPLATE,
    PROMPT_VERSION,
    Budget,
    Prices,
    RateLimit,
    ScaleLevel,
    Usage,
    answer_read,
    passage_text,
    prompt_text,
    scale_levels,
)

GRADES = frozenset({0, 1, 2, 3})


class TestPrompt:
    def test_it_changes_its_version_with_its_words(self) -> None:
        # A new wording must come with a new PROMPT_VERSION (a new judge): update both lines together.
        digest = hashlib.sha256(PROMPT_TEMPLATE.encode()).hexdigest()
        assert (PROMPT_VERSION, digest) == (
            "umbrela-1",
            "01c3e9a08687930097970867b0e243893c4d15474e4fb3d67549aec98b101669",
        )

    def test_it_lists_the_projects_scale_the_query_and_the_passage(self) -> None:
        levels = scale_levels(
            [{"grade": 2, "label": "Highly", "definition": "answers it"}, {"grade": 0, "label": "Not"},
             {"grade": 1, "label": "Somewhat", "definition": ""}]
        )  # fmt: skip
        text = prompt_text("  sourdough\n bread ", "Mix flour and water.", scale=levels)
        assert "integer scale of 0 to 2" in text
        assert "0 = Not\n1 = Somewhat\n2 = Highly: answers it\n" in text
        assert "Query: sourdough bread\nPassage: Mix flour and water.\n" in text
        assert text.endswith("##final score: N")

    def test_it_cuts_a_long_passage(self) -> None:
        assert passage_text("", "x" * 500, max_chars=100) == "x" * 99 + "…"
        assert passage_text("T", "short", max_chars=100) == "T\n\nshort"

    def test_it_refuses_an_empty_scale(self) -> None:
        with pytest.raises(ValueError, match="no grade"):
            scale_levels([])
        assert ScaleLevel(3, "Perfect", "ideal").line() == "3 = Perfect: ideal"


class TestAnswers:
    @pytest.mark.parametrize(
        ("text", "grade"),
        [
            ("##final score: 2", 2),
            ("M: 2\nT: 1\nO: 2\n##Final Score : **3**", 3),
            ("##final score: [1]", 1),
            ("##final score: 0.", 0),
            ("##final score: 2\n##final score: 2", 2),
        ],
    )
    def test_it_reads_the_grade_the_answer_states(self, text: str, grade: int) -> None:
        read = answer_read(text, grades=GRADES)
        assert (read.status, read.grade, read.reason) == ("graded", grade, "")

    @pytest.mark.parametrize(
        ("text", "reason"),
        [
            ("The passage is highly relevant.", 'no "##final score: N" line'),
            ("Final score: 2", 'no "##final score: N" line'),
            ("##final score: 1\n##final score: 3", "different final scores: 1, 3"),
            ("##final score: 4", "4 is not a grade of the scale (0, 1, 2, 3)"),
            ("##final score: 2.5", "the final score '2.5' is not an integer"),
            ("##final score: two", "the final score 'two' is not an integer"),
        ],
    )
    def test_it_never_guesses(self, text: str, reason: str) -> None:
        read = answer_read(text, grades=GRADES)
        assert (read.status, read.grade, read.reason) == ("unparsable", None, reason)

    def test_it_records_a_refusal(self) -> None:
        assert (
            answer_read(None, grades=GRADES, refusal="I can't help.").reason
            == "the model refused: I can't help."
        )
        assert answer_read("", grades=GRADES).status == "refused"
        filtered = answer_read("##final score: 1", grades=GRADES, finish_reason="content_filter")
        assert (filtered.status, filtered.grade) == ("refused", None)

    def test_it_keeps_the_reasoning_before_the_final_line(self) -> None:
        assert answer_read("Intent: bread.\n##final score: 3", grades=GRADES).rationale == "Intent: bread."


class TestCosts:
    def test_it_takes_the_endpoints_count_or_estimates_one(self) -> None:
        assert Usage.of({"prompt_tokens": 50, "completion_tokens": 5}, prompt="x", answer="y") == Usage(50, 5)
        assert Usage.of({"prompt_tokens": 50}, prompt="x" * 41, answer="y" * 4) == Usage(
            11, 1, estimated=True
        )
        assert Usage.of({"prompt_tokens": True, "completion_tokens": 1}, prompt="", answer="").estimated

    def test_it_prices_tokens_per_thousand(self) -> None:
        assert Prices(0.15, 0.6).cost(Usage(10_000, 500)) == pytest.approx(1.5 + 0.3)

    def test_it_stops_before_an_answer_would_pass_the_token_cap(self) -> None:
        budget = Budget(max_tokens=1000, prices=Prices())
        spent = 0
        while budget.allows_another():
            budget.spend(Usage(300, 30))
            spent += 1
        assert (spent, budget.tokens) == (3, 990)  # a fourth would reach 1,320
        assert budget.stop_reason().startswith("the token cap: 990 of 1,000 tokens spent")

    def test_it_stops_before_an_answer_would_pass_the_cost_cap(self) -> None:
        budget = Budget(max_tokens=10**9, prices=Prices(1.0, 0.0), max_cost=0.25)
        for _ in range(2):
            assert budget.allows_another()
            budget.spend(Usage(100, 10))  # 0.1 each
        assert not budget.allows_another() and budget.cost == pytest.approx(0.2)
        assert budget.stop_reason().startswith("the cost cap: 0.2000 of 0.25 spent")


class TestRateLimit:
    def test_it_spaces_requests(self) -> None:
        now = [0.0]
        slept: list[float] = []

        def sleep(seconds: float) -> None:
            slept.append(round(seconds, 6))
            now[0] += seconds

        limit = RateLimit(4.0, clock=lambda: now[0], sleep=sleep)
        for _ in range(4):
            limit.wait()
        assert slept == [0.25, 0.25, 0.25] and now[0] == pytest.approx(0.75)
        now[0] += 2.0  # idle: the next request goes at once
        limit.wait()
        assert len(slept) == 3


def test_it_never_imports_django() -> None:
    code = "import sys, evalcore.llm_judge; assert 'django' not in sys.modules, 'django imported'"
    subprocess.run([sys.executable, "-c", code], check=True)
