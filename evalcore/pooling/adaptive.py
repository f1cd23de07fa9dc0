"""Adaptive pooling within one topic: move-to-front and the multi-armed bandits.

Each run that retrieved something for the topic is an *arm*: its top-`depth` documents in trec_eval's
order, read from a pointer. Judging a document advances the pointer of every run whose next document
it is, past every document already judged, so a judged document counts for every run that retrieved
it (as the run's pointer reaches it) and is never offered twice. A run's evidence is the judged prefix
of its list: `rel_s` relevant and `nrel_s` non-relevant documents.

Strategies (one arm chosen per judgment; ties go to the run given first):

- `mtf`, move-to-front (Cormack, Palmer and Clarke, "Efficient construction of large test
  collections", SIGIR 1998): every run starts with the same priority; the current run is read while
  it returns relevant documents; a non-relevant one lowers that run's priority by one and the run of
  highest priority becomes current.
- `bandit-mm`, maximum mean (Losada, Parapar and Barreiro, "Feeling lucky? Multi-armed bandits for
  ordering judgements in pooling-based evaluation", SAC 2016; "Multi-armed bandits for adjudicating
  documents in pooling-based evaluation of information retrieval systems", IPM 53(5) 2017): a run's
  relevance rate has the posterior Beta(1 + rel_s, 1 + nrel_s) under a uniform prior; the arm of the
  largest posterior mean (1 + rel_s) / (2 + rel_s + nrel_s) is pulled.
- `bandit-mm-ns`, the non-stationary maximum mean of the same papers: a run's relevance rate falls as
  it is read deeper, so older evidence is discounted: at each new observation r of the run
  (1 relevant, 0 not), rel_s <- gamma * rel_s + r and nrel_s <- gamma * nrel_s + (1 - r), with gamma
  = `PoolParams.discount`; the posterior mean of Beta(1 + rel_s, 1 + nrel_s) is maximised.
- `bandit-ucb`, UCB1-Tuned (Auer, Cesa-Bianchi and Fischer 2002; one of the IPM paper's stationary
  methods): runs with no evidence first, then the largest mean_s + sqrt(ln(n) / n_s * min(1/4, V_s))
  with mean_s = rel_s / n_s, V_s = mean_s - mean_s^2 + sqrt(2 ln(n) / n_s), and n the judgments of
  the topic.
- `bandit-bla`, Bayesian learning automata, i.e. Thompson sampling (Granmo 2010; in the IPM paper):
  draw theta_s ~ Beta(1 + rel_s, 1 + nrel_s) for every run and pull the largest; draws come from
  `numpy.random.default_rng([seed, topic, judged so far in the topic])`, so the same seed and
  judgments give the same choices.
- `bandit-bla-ns`, the non-stationary learning automaton: `bandit-bla`'s draws from the posteriors of
  `bandit-mm-ns`'s discounted counts, theta_s ~ Beta(1 + rel_s, 1 + nrel_s) with rel_s and nrel_s
  discounted by gamma at each new observation of the run (the IPM paper's second non-stationary variant,
  as we read its abstract: its two non-stationary methods are those of MM and of BLA).

The *current order* of the pending documents: replay the judgments to get the state, then keep
choosing with the state frozen (no new evidence): the chosen run is read until it runs out, then the
next (Thompson sampling draws afresh at each step, from the same frozen posteriors).

The papers' full text could not be reached (only their abstracts): which of these rules are taken from a
published definition (UCB1-Tuned, the learning automaton) and which are our reading of the pooling papers
(the prior, the form of the discount, the credit of shared documents, ties) is set out in docs/pooling.md.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TopicArms"]

#: The strategies whose run counts are discounted at each new observation, and those that draw.
DISCOUNTED = frozenset({"bandit-mm-ns", "bandit-bla-ns"})
THOMPSON = frozenset({"bandit-bla", "bandit-bla-ns"})


class TopicArms:
    """The arms of one topic and the state of an adaptive strategy over them."""

    def __init__(
        self,
        strategy: str,
        count: int,
        arm_of_hit: np.ndarray,
        local_of_hit: np.ndarray,
        *,
        discount: float = 0.9,
        seed: int = 0,
        topic: int = 0,
    ) -> None:
        """`arm_of_hit`, `local_of_hit`: the topic's hits sorted by (run, rank), candidates numbered 0..count-1."""
        self.strategy = strategy
        self.discount = discount
        self.seed, self.topic = seed, topic
        runs, starts = np.unique(arm_of_hit, return_index=True)
        self.runs = runs
        ends = np.append(starts[1:], len(arm_of_hit)) if len(starts) else starts
        self.lists = [local_of_hit[s:e] for s, e in zip(starts.tolist(), ends.tolist(), strict=True)]
        self.length = (ends - starts).astype(np.int64)
        arm = np.repeat(np.arange(len(runs)), ends - starts)
        position = np.arange(len(arm_of_hit)) - np.repeat(starts, ends - starts)
        by_doc = np.argsort(local_of_hit, kind="stable")
        self.occ_arm, self.occ_pos = arm[by_doc], position[by_doc]
        self.occ_bounds = np.searchsorted(local_of_hit[by_doc], np.arange(count + 1))
        arms = len(runs)
        self.taken = np.zeros(count, dtype=bool)
        self.label = np.full(count, -1, dtype=np.int8)
        self.pointer = np.zeros(arms, dtype=np.int64)
        self.rel = np.zeros(arms)  # discounted for the DISCOUNTED strategies, plain counts otherwise
        self.nrel = np.zeros(arms)
        self.seen = np.zeros(arms, dtype=np.int64)
        self.priority = np.zeros(arms, dtype=np.int64)
        self.current = 0 if arms else -1
        self.judged = 0

    # --- evidence -----------------------------------------------------------------------------------

    def observe(self, doc: int, relevant: bool, arm: int | None = None) -> None:
        """Record a judgment of local document `doc`; `arm` is the run it was taken from, if known."""
        if self.strategy == "mtf":
            source = self._source(doc) if arm is None else arm
            if source >= 0 and not relevant:
                self.priority[source] -= 1
                if source == self.current:
                    self.current = self._best_priority()
        self.taken[doc] = True
        self.label[doc] = 1 if relevant else 0
        self.judged += 1
        lo, hi = self.occ_bounds[doc], self.occ_bounds[doc + 1]
        arms, positions = self.occ_arm[lo:hi], self.occ_pos[lo:hi]
        for a in arms[self.pointer[arms] == positions].tolist():
            self._advance(a)

    def _advance(self, arm: int) -> None:
        items, at, end = self.lists[arm], int(self.pointer[arm]), int(self.length[arm])
        gamma = self.discount if self.strategy in DISCOUNTED else 1.0
        while at < end and self.taken[items[at]]:
            grade = int(self.label[items[at]])
            if grade >= 0:
                self.rel[arm] = gamma * self.rel[arm] + grade
                self.nrel[arm] = gamma * self.nrel[arm] + (1 - grade)
                self.seen[arm] += 1
            at += 1
        self.pointer[arm] = at

    def _source(self, doc: int) -> int:
        """The run a judgment is charged to when it arrives without one: the current run if `doc` is
        its next document, else the run of highest priority whose next document it is (else -1)."""
        lo, hi = self.occ_bounds[doc], self.occ_bounds[doc + 1]
        arms, positions = self.occ_arm[lo:hi], self.occ_pos[lo:hi]
        at_front = arms[self.pointer[arms] == positions]
        if not len(at_front):
            return -1
        current = self._current()
        if current in at_front.tolist():
            return current
        return int(at_front[np.lexsort((at_front, -self.priority[at_front]))[0]])

    # --- choice -------------------------------------------------------------------------------------

    def _open(self) -> np.ndarray:
        return self.pointer < self.length

    def _best_priority(self) -> int:
        open_arms = np.flatnonzero(self._open())
        if not len(open_arms):
            return -1
        return int(open_arms[np.lexsort((open_arms, -self.priority[open_arms]))[0]])

    def _current(self) -> int:
        if self.current < 0 or self.pointer[self.current] >= self.length[self.current]:
            self.current = self._best_priority()
        return self.current

    def scores(self) -> np.ndarray:
        """Each arm's index for the deterministic rules (larger is pulled first)."""
        if self.strategy == "mtf":
            score = self.priority.astype(np.float64)
            current = self._current()
            if current >= 0:
                score[current] = math.inf
            return score
        if self.strategy in ("bandit-mm", "bandit-mm-ns"):
            return (1.0 + self.rel) / (2.0 + self.rel + self.nrel)
        if self.strategy == "bandit-ucb":
            n = max(self.judged, 1)
            seen = np.maximum(self.seen, 1)
            mean = self.rel / seen
            spread = mean - mean**2 + np.sqrt(2.0 * math.log(n) / seen)
            score = mean + np.sqrt(math.log(n) / seen * np.minimum(0.25, spread))
            return np.where(self.seen == 0, math.inf, score)
        raise ValueError(f"no deterministic scores for {self.strategy!r}")

    def _draw(self, step: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, self.topic, step])
        return rng.beta(1.0 + self.rel, 1.0 + self.nrel)

    def choose(self) -> int:
        """The arm to pull next (-1 when every run is exhausted)."""
        open_arms = self._open()
        if not open_arms.any():
            return -1
        score = self._draw(self.judged) if self.strategy in THOMPSON else self.scores()
        score = np.where(open_arms, score, -math.inf)
        return int(np.argmax(score))

    def next_document(self, arm: int) -> int:
        return int(self.lists[arm][self.pointer[arm]])

    # --- the order of what is pending ---------------------------------------------------------------

    def frozen_order(self, limit: int) -> np.ndarray:
        """Up to `limit` pending local documents in the order chosen with the state frozen."""
        if limit <= 0:
            return np.zeros(0, dtype=np.int64)
        if self.strategy in THOMPSON:
            return self._frozen_draws(limit)
        score = self.scores()
        arms = np.lexsort((np.arange(len(score)), -score))
        parts = [self.lists[a][self.pointer[a] :] for a in arms.tolist() if self.pointer[a] < self.length[a]]
        if not parts:
            return np.zeros(0, dtype=np.int64)
        sequence = np.concatenate(parts).astype(np.int64)
        sequence = sequence[~self.taken[sequence]]
        _, first = np.unique(sequence, return_index=True)
        return sequence[np.sort(first)][:limit]

    def _frozen_draws(self, limit: int) -> np.ndarray:
        """Thompson sampling with the state frozen: the first draw is the online one (keyed by the
        judgments so far); the rest come in blocks from one generator keyed the same way."""
        taken = self.taken.copy()
        pointer = self.pointer.copy()
        out: list[int] = []
        rng = np.random.default_rng([self.seed, self.topic, self.judged, 1])
        block, row = self._draw(self.judged)[None, :], 0
        while len(out) < limit:
            open_arms = pointer < self.length
            if not open_arms.any():
                break
            if row == len(block):
                size = (min(4096, limit - len(out)), len(self.runs))
                block, row = rng.beta(1.0 + self.rel, 1.0 + self.nrel, size=size), 0
            arm = int(np.argmax(np.where(open_arms, block[row], -math.inf)))
            row += 1
            doc = int(self.lists[arm][pointer[arm]])
            out.append(doc)
            taken[doc] = True
            lo, hi = self.occ_bounds[doc], self.occ_bounds[doc + 1]
            for a, p in zip(self.occ_arm[lo:hi].tolist(), self.occ_pos[lo:hi].tolist(), strict=True):
                if pointer[a] == p:
                    items, at, end = self.lists[a], p, int(self.length[a])
                    while at < end and taken[items[at]]:
                        at += 1
                    pointer[a] = at
        return np.array(out, dtype=np.int64)
