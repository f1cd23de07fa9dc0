"""The parameters of a pooling strategy, frozen, and the names of the strategies."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ADAPTIVE_STRATEGIES", "STRATEGIES", "PoolParams"]

STRATEGIES: tuple[str, ...] = (
    "depth",
    "take-rrf",
    "take-rbp",
    "mtf",
    "bandit-mm-ns",
    "bandit-mm",
    "bandit-ucb",
    "bandit-bla",
    "bandit-bla-ns",
    "random",
)
#: Strategies whose order depends on the judgments so far (random's order never changes).
ADAPTIVE_STRATEGIES: frozenset[str] = frozenset(
    {"mtf", "bandit-mm-ns", "bandit-mm", "bandit-ucb", "bandit-bla", "bandit-bla-ns"}
)


@dataclass(frozen=True)
class PoolParams:
    """How to order a pool.

    `budget` is the total number of judgments over all topics (None: every candidate); `depth` how
    deep each run is read; `seed` drives `random`, `bandit-bla` and `bandit-bla-ns`; `rrf_k` is reciprocal rank
    fusion's k, `rbp_p` RBP's persistence; `discount` is the non-stationary bandits' weight on older
    evidence (each new observation of a run multiplies the run's earlier counts by it).
    """

    strategy: str
    budget: int | None = None
    depth: int = 100
    seed: int = 0
    rrf_k: int = 60
    rbp_p: float = 0.8
    discount: float = 0.9

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; known: {', '.join(STRATEGIES)}")
        if self.budget is not None and self.budget < 0:
            raise ValueError("budget must be at least 0")
        if self.depth < 1:
            raise ValueError("depth must be at least 1")
        if self.rrf_k < 0:
            raise ValueError("rrf_k must be at least 0")
        if not 0.0 < self.rbp_p < 1.0:
            raise ValueError("rbp_p must lie in (0, 1)")
        if not 0.0 < self.discount <= 1.0:
            raise ValueError("discount must lie in (0, 1]")
