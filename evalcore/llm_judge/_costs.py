"""What a job's answers cost, the caps that stop it, and the pace of its requests.

Tokens are what the endpoint says it counted (the answer's ``usage``); an endpoint that says nothing is
estimated at one token per four characters, rounded up, and the estimate is marked as such. Money is
tokens times the operator's prices per 1,000 prompt and completion tokens (both 0 by default: a local
model costs nothing but its tokens). A job stops before a request that would take its spend past a cap,
judged from the dearest answer so far: it may stop a little early, and goes past a cap only when one
answer costs more than every one before it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def estimated_tokens(text: str) -> int:
    """One token per four characters, rounded up: the usual rule of thumb for English under BPE.

    >>> estimated_tokens("abcdefghi")
    3
    """
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class Usage:
    """The tokens of one answer: its prompt's and its completion's; ``estimated`` when the endpoint did
    not count them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def of(cls, usage: object, *, prompt: str, answer: str) -> Usage:
        """The usage an endpoint reported (``{"prompt_tokens", "completion_tokens"}``), or an estimate.

        >>> Usage.of({"prompt_tokens": 120, "completion_tokens": 7}, prompt="", answer="").tokens
        127
        >>> Usage.of(None, prompt="abcd" * 10, answer="abc")
        Usage(prompt_tokens=10, completion_tokens=1, estimated=True)
        """
        if isinstance(usage, dict):
            prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
            if _count(prompt_tokens) and _count(completion_tokens):
                return cls(int(prompt_tokens), int(completion_tokens))  # type: ignore[arg-type]
        return cls(estimated_tokens(prompt), estimated_tokens(answer), estimated=True)


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class Prices:
    """Prices per 1,000 prompt and completion tokens, in the operator's currency."""

    prompt_per_1k: float = 0.0
    completion_per_1k: float = 0.0

    def cost(self, usage: Usage) -> float:
        """>>> Prices(0.5, 1.5).cost(Usage(2000, 1000))
        2.5
        """
        return (
            usage.prompt_tokens * self.prompt_per_1k + usage.completion_tokens * self.completion_per_1k
        ) / 1000


@dataclass
class Budget:
    """A job's spend against its caps: ``max_tokens`` and ``max_cost`` (0: no cap in money).

    >>> budget = Budget(max_tokens=300, prices=Prices())
    >>> budget.spend(Usage(100, 20)); budget.allows_another()
    True
    >>> budget.spend(Usage(100, 20)); budget.allows_another()  # 240 spent, and the next may take 120
    False
    >>> budget.stop_reason()
    'the token cap: 240 of 300 tokens spent, and an answer takes up to 120'
    """

    max_tokens: int
    prices: Prices
    max_cost: float = 0.0
    tokens: int = 0
    cost: float = 0.0
    answers: int = 0
    dearest_tokens: int = 0
    dearest_cost: float = 0.0

    def spend(self, usage: Usage) -> None:
        cost = self.prices.cost(usage)
        self.tokens += usage.tokens
        self.cost += cost
        self.answers += 1
        self.dearest_tokens = max(self.dearest_tokens, usage.tokens)
        self.dearest_cost = max(self.dearest_cost, cost)

    def allows_another(self) -> bool:
        """Whether one more answer, as dear as the dearest so far, stays within both caps."""
        return not self.stop_reason()

    def stop_reason(self) -> str:
        """Which cap stops the next request, in words; empty when none does."""
        if self.tokens + self.dearest_tokens > self.max_tokens or self.tokens >= self.max_tokens:
            return (
                f"the token cap: {self.tokens:,} of {self.max_tokens:,} tokens spent, "
                f"and an answer takes up to {self.dearest_tokens:,}"
            )
        if self.max_cost > 0 and (
            self.cost + self.dearest_cost > self.max_cost or self.cost >= self.max_cost
        ):
            return (
                f"the cost cap: {self.cost:.4f} of {self.max_cost:g} spent, "
                f"and an answer costs up to {self.dearest_cost:.4f}"
            )
        return ""


@dataclass
class RateLimit:
    """At most ``per_second`` requests a second: ``wait()`` before each one sleeps until its turn.

    >>> moments = iter([0.0, 0.1, 0.5])
    >>> slept = []
    >>> limit = RateLimit(2.0, clock=lambda: next(moments), sleep=slept.append)
    >>> limit.wait(); limit.wait(); slept
    [0.4]
    """

    per_second: float
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    _next: float = field(default=-math.inf, init=False)

    def wait(self) -> None:
        if self.per_second <= 0:
            return
        now = self.clock()
        if now < self._next:
            self.sleep(self._next - now)
            now = self._next
        self._next = now + 1.0 / self.per_second
