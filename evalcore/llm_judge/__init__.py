"""An LLM relevance judge's framework-free parts: the versioned prompt, reading its answer, its costs.

The platform's LLM judge connector (`annotations.machine_judges.llm`, off unless LLM_JUDGE_ENABLED) asks an
OpenAI-compatible chat endpoint to grade (query, passage) pairs; what it asks, how it reads the answer and
how it counts what the answers cost are defined here, once, and tested with plain pytest:

- Prompt: ``PROMPT_VERSION`` and ``PROMPT_TEMPLATE`` (one place for both: a change to the words is a new
  version, hence a new judge), ``prompt_text`` for a query, a passage and a grade scale (``ScaleLevel``),
  after UMBRELA (Upadhyay et al. 2024), the open reproduction of Bing's relevance-assessor prompt.
- Answers: ``answer_read`` turns the text the model answered into a ``ReadAnswer``: a grade only when the
  answer says one, once, in the asked-for form, and on the scale; otherwise ``unparsable`` or
  ``refused``, with the reason, never a guess.
- Costs: ``Usage`` (tokens of one answer, counted by the server or estimated), ``Prices`` and ``Budget``
  (the spend of a job against its caps in tokens and money), and ``RateLimit`` (the pause before the
  next request, at most so many per second).
"""

from evalcore.llm_judge._answers import ANSWER_STATUSES, ReadAnswer, answer_rationale, answer_read
from evalcore.llm_judge._costs import Budget, Prices, RateLimit, Usage, estimated_tokens
from evalcore.llm_judge._prompt import (
    PROMPT_TEMPLATE,
    PROMPT_VERSION,
    ScaleLevel,
    passage_text,
    prompt_text,
    scale_levels,
)

__all__ = [
    "ANSWER_STATUSES",
    "PROMPT_TEMPLATE",
    "PROMPT_VERSION",
    "Budget",
    "Prices",
    "RateLimit",
    "ReadAnswer",
    "ScaleLevel",
    "Usage",
    "answer_rationale",
    "answer_read",
    "estimated_tokens",
    "passage_text",
    "prompt_text",
    "scale_levels",
]
