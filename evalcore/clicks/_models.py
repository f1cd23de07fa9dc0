"""Click models fitted to a `ClickLog`, and the grades they give each (query, document) pair.

Every kernel works on whole columns: counts are `np.bincount` sums over the pair or position codes,
and the EM fits loop only over iterations (and, for DBN's forward-backward, over positions, with
every session at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from evalcore.clicks._log import ClickLog

Model = Literal["coec", "pbm", "dbn"]
MODELS: tuple[Model, ...] = ("coec", "pbm", "dbn")

#: The grade boundaries of each model's relevance: grade g is given from the g-th boundary up (grade 0
#: below the first). COEC's relevance is a ratio to the average result at the same position (1 is
#: average); PBM's and DBN's are probabilities.
DEFAULT_THRESHOLDS: dict[str, tuple[float, float, float, float]] = {
    "coec": (0.5, 1.0, 1.5, 2.5),
    "pbm": (0.1, 0.3, 0.5, 0.7),
    "dbn": (0.1, 0.3, 0.5, 0.7),
}
#: EM's default cap on iterations. PBM's steps are cheap but converge slowly on pairs seldom shown where
#: examination is low: on a simulated log of 200,000 impressions 4% of its grades still changed between
#: 100 iterations and convergence (401), against 0.15% of DBN's (converged at 771).
DEFAULT_MAX_ITERATIONS: dict[str, int] = {"coec": 0, "pbm": 500, "dbn": 100}
_EPS = 1e-6


@dataclass(frozen=True)
class ClickModelParams:
    """How to derive judgments from clicks.

    - `model`: `coec`, `pbm` or `dbn`;
    - `min_impressions`: a pair shown fewer times gets no judgment (its grade is -1);
    - `thresholds`: four increasing relevance boundaries for grades 1 to 4 (None: `DEFAULT_THRESHOLDS`);
    - `max_iterations`, `tolerance`: EM stops when no parameter moves by more than `tolerance`, or after
      `max_iterations` (None: `DEFAULT_MAX_ITERATIONS`);
    - `min_dwell`: when set, a click with a known dwell time under it (seconds) counts as no click.
    """

    model: Model
    min_impressions: int = 10
    thresholds: tuple[float, ...] | None = None
    max_iterations: int | None = None
    tolerance: float = 1e-4
    min_dwell: float | None = None

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ValueError(f"unknown click model {self.model!r}; choose from {', '.join(MODELS)}")
        if self.min_impressions < 1:
            raise ValueError("min_impressions must be at least 1")
        if self.max_iterations is not None and self.max_iterations < 1:
            raise ValueError("max_iterations must be at least 1")
        if not self.tolerance > 0:
            raise ValueError("tolerance must be positive")
        bounds = self.grade_thresholds
        if len(bounds) != 4 or not all(np.isfinite(bounds)) or any(np.diff(bounds) <= 0):
            raise ValueError("thresholds must be four increasing finite numbers (grades 1 to 4)")

    @property
    def iteration_cap(self) -> int:
        return self.max_iterations if self.max_iterations is not None else DEFAULT_MAX_ITERATIONS[self.model]

    @property
    def grade_thresholds(self) -> tuple[float, ...]:
        return tuple(self.thresholds) if self.thresholds is not None else DEFAULT_THRESHOLDS[self.model]


@dataclass(frozen=True, eq=False)
class ClickJudgments:
    """Per (query, document) pair: impressions, clicks, the model's relevance and the grade (-1: fewer
    impressions than `min_impressions`, no judgment). `positions` holds the fitted position parameters
    (COEC: `ctr` by position; PBM: `examination` by position; DBN: `continuation`, one value), `extra`
    further per-pair estimates (DBN: `attractiveness`, `satisfaction`)."""

    params: ClickModelParams
    queries: Sequence[str]
    docs: Sequence[str]
    pair_query: np.ndarray
    pair_doc: np.ndarray
    impressions: np.ndarray
    clicks: np.ndarray
    relevance: np.ndarray
    grade: np.ndarray
    positions: dict[str, list[float]]
    sessions: int
    rows: int
    iterations: int = 0
    converged: bool = True
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def judged(self) -> np.ndarray:
        return self.grade >= 0

    def grade_counts(self) -> dict[int, int]:
        counts = np.bincount(self.grade[self.judged], minlength=5)
        return {g: int(counts[g]) for g in range(5)}

    def qrels_lines(self) -> list[str]:
        """The judged pairs as TREC qrels lines (`qid 0 docno grade`), by query then document."""
        rows = np.flatnonzero(self.judged)
        queries = [self.queries[int(q)] for q in self.pair_query[rows]]
        docs = [self.docs[int(d)] for d in self.pair_doc[rows]]
        order = sorted(range(rows.size), key=lambda i: (queries[i], docs[i]))
        return [f"{queries[i]} 0 {docs[i]} {int(self.grade[rows[i]])}" for i in order]


def grades(relevance: np.ndarray, impressions: np.ndarray, params: ClickModelParams) -> np.ndarray:
    """Grade 0-4: how many of the thresholds the relevance reaches; -1 under `min_impressions`.

    >>> import numpy as np
    >>> grades(np.array([0.05, 0.3, 0.9]), np.array([10, 10, 3]), ClickModelParams("pbm")).tolist()
    [0, 2, -1]
    """
    graded = np.searchsorted(np.asarray(params.grade_thresholds), relevance, side="right").astype(np.int8)
    return np.where(impressions >= params.min_impressions, graded, np.int8(-1)).astype(np.int8)


@dataclass(frozen=True, eq=False)
class _Pairs:
    """Each row's pair code, and each pair's query and document codes."""

    row_pair: np.ndarray
    pair_query: np.ndarray
    pair_doc: np.ndarray

    @classmethod
    def of(cls, log: ClickLog) -> _Pairs:
        keys = log.query.astype(np.int64) * max(len(log.docs), 1) + log.doc
        unique, inverse = np.unique(keys, return_inverse=True)
        width = max(len(log.docs), 1)
        return cls(
            inverse.astype(np.int64), (unique // width).astype(np.int32), (unique % width).astype(np.int32)
        )

    @property
    def size(self) -> int:
        return int(self.pair_query.size)


def clicks_of(log: ClickLog, params: ClickModelParams) -> np.ndarray:
    """The clicks the models count: `log.clicked`, less short clicks under `params.min_dwell`."""
    if params.min_dwell is None or log.dwell is None:
        return log.clicked
    return log.clicked & ~(log.dwell < params.min_dwell)


def fit(log: ClickLog, params: ClickModelParams) -> ClickJudgments:
    """Fit `params.model` to the log and grade every pair."""
    clicked = clicks_of(log, params)
    pairs = _Pairs.of(log)
    impressions = np.bincount(pairs.row_pair, minlength=pairs.size).astype(np.int64)
    clicks = np.bincount(pairs.row_pair, weights=clicked, minlength=pairs.size).astype(np.int64)
    fitted = _FITS[params.model](log, pairs, clicked, params)
    return ClickJudgments(
        params=params,
        queries=log.queries,
        docs=log.docs,
        pair_query=pairs.pair_query,
        pair_doc=pairs.pair_doc,
        impressions=impressions,
        clicks=clicks,
        relevance=fitted.relevance,
        grade=grades(fitted.relevance, impressions, params),
        positions=fitted.positions,
        sessions=len(log.sessions),
        rows=log.num_rows,
        iterations=fitted.iterations,
        converged=fitted.converged,
        extra=fitted.extra,
    )


@dataclass(frozen=True, eq=False)
class _Fitted:
    relevance: np.ndarray
    positions: dict[str, list[float]]
    iterations: int = 0
    converged: bool = True
    extra: dict[str, np.ndarray] = field(default_factory=dict)


# --- COEC --------------------------------------------------------------------------------------------


def position_ctr(position: np.ndarray, clicked: np.ndarray) -> np.ndarray:
    """The click-through rate at each position (index 0 is position 1; NaN where nothing was shown)."""
    shown = np.bincount(position - 1)
    hits = np.bincount(position - 1, weights=clicked, minlength=shown.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        return hits / shown


def coec(log: ClickLog, pairs: _Pairs, clicked: np.ndarray, params: ClickModelParams) -> _Fitted:
    """Clicks over expected clicks (Zhang and Jones 2007):

        ctr_r = clicks at position r / impressions at position r      (over the whole log)
        COEC(q, d) = sum_i c_i / sum_i ctr_(r_i)                       (i: the impressions of (q, d))

    1 is a result clicked as often as the average result at the positions it was shown; a pair whose
    positions were never clicked at all has expected clicks 0 and COEC 0.
    """
    ctr = position_ctr(log.position, clicked)
    expected = np.bincount(pairs.row_pair, weights=ctr[log.position - 1], minlength=pairs.size)
    observed = np.bincount(pairs.row_pair, weights=clicked, minlength=pairs.size)
    relevance = np.divide(observed, expected, out=np.zeros(pairs.size), where=expected > 0)
    return _Fitted(relevance, {"ctr": ctr.tolist()})


# --- PBM ---------------------------------------------------------------------------------------------


def pbm_em_step(
    pair: np.ndarray,
    rank: np.ndarray,
    clicked: np.ndarray,
    alpha: np.ndarray,
    gamma: np.ndarray,
    *,
    counts: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One EM step of the position-based model (Chuklin, Markov and de Rijke 2015, section 4.1).

    P(C = 1) = gamma_r * alpha_(q,d). For an impression i of pair u at rank r (0-based codes here):

        P(A_i = 1 | c_i) = c_i + (1 - c_i) * alpha_u (1 - gamma_r) / (1 - alpha_u gamma_r)
        P(E_i = 1 | c_i) = c_i + (1 - c_i) * gamma_r (1 - alpha_u) / (1 - alpha_u gamma_r)
        alpha_u' = mean of P(A_i = 1 | c_i) over the impressions of u
        gamma_r' = mean of P(E_i = 1 | c_i) over the impressions at r

    `counts`: the impressions of each pair and at each rank, when the caller has them already.
    """
    a, g = alpha[pair], gamma[rank]
    miss = 1.0 - a * g
    attracted = np.where(clicked, 1.0, a * (1.0 - g) / miss)
    examined = np.where(clicked, 1.0, g * (1.0 - a) / miss)
    by_pair, by_rank = counts or (
        np.bincount(pair, minlength=alpha.size),
        np.bincount(rank, minlength=gamma.size),
    )
    new_alpha = np.divide(
        np.bincount(pair, weights=attracted, minlength=alpha.size),
        by_pair,
        out=alpha.copy(),
        where=by_pair > 0,
    )
    new_gamma = np.divide(
        np.bincount(rank, weights=examined, minlength=gamma.size),
        by_rank,
        out=gamma.copy(),
        where=by_rank > 0,
    )
    return new_alpha, new_gamma


def pbm(log: ClickLog, pairs: _Pairs, clicked: np.ndarray, params: ClickModelParams) -> _Fitted:
    """The position-based model (Richardson et al. 2007; Craswell et al. 2008), fitted by EM:

        P(C_r = 1 | q, d) = gamma_r * alpha_(q,d)      (examination at rank r times attractiveness)

    `pbm_em_step` holds the update. The likelihood fixes only the products gamma_r * alpha_u, so the
    fit is rescaled to gamma_1 = 1 after every step (the top result is always examined) when position 1
    was shown, which leaves the likelihood unchanged and stops the scale drifting: alpha_u is then the
    click-through rate the result would have at the top. Relevance = alpha.
    """
    rank = log.position - 1
    alpha = np.full(pairs.size, 0.5)
    gamma = np.full(int(rank.max(initial=-1)) + 1, 0.5)
    top_shown = bool(np.any(rank == 0))
    counts = (np.bincount(pairs.row_pair, minlength=alpha.size), np.bincount(rank, minlength=gamma.size))
    iterations, converged = 0, False
    for iterations in range(1, params.iteration_cap + 1):  # noqa: B007 - the count is reported
        new_alpha, new_gamma = pbm_em_step(pairs.row_pair, rank, clicked, alpha, gamma, counts=counts)
        if top_shown:  # the likelihood is the same, and the scale no longer drifts between iterations
            new_alpha, new_gamma = new_alpha * new_gamma[0], new_gamma / new_gamma[0]
        new_alpha = np.clip(new_alpha, _EPS, 1 - _EPS)
        new_gamma = np.clip(new_gamma, _EPS, 1.0)
        change = max(_max_change(new_alpha, alpha), _max_change(new_gamma, gamma))
        alpha, gamma = new_alpha, new_gamma
        if change < params.tolerance:
            converged = True
            break
    shown = np.bincount(rank, minlength=gamma.size) > 0
    return _Fitted(alpha, {"examination": np.where(shown, gamma, np.nan).tolist()}, iterations, converged)


def _max_change(new: np.ndarray, old: np.ndarray) -> float:
    return float(np.max(np.abs(new - old), initial=0.0))


# --- DBN ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Grid:
    """The log as a depth x sessions grid: row r holds every session's result at rank r + 1 in the order
    shown (sessions shorter than the deepest are padded). Rank-major, so that each step of the
    forward-backward pass reads contiguous rows."""

    pair: np.ndarray  # int64, 0 where padded
    click: np.ndarray  # bool, False where padded
    shown: np.ndarray  # bool
    later_click: np.ndarray  # bool: a click at this rank or below
    shown_pair: np.ndarray  # the pair of each shown result, and how many there are of each pair
    shown_count: np.ndarray
    clicked_pair: np.ndarray  # the pair of each click, and how many there are of each pair
    clicked_count: np.ndarray

    @classmethod
    def of(cls, log: ClickLog, pairs: _Pairs, clicked: np.ndarray) -> _Grid:
        order = log.ranked()
        session = log.session[order]
        n = order.size
        starts = np.flatnonzero(np.r_[True, session[1:] != session[:-1]]) if n else np.zeros(0, np.int64)
        lengths = np.diff(np.r_[starts, n])
        column = np.repeat(np.arange(starts.size), lengths)
        rank = np.arange(n) - np.repeat(starts, lengths)
        shape = (int(lengths.max(initial=0)), starts.size)
        pair = np.zeros(shape, dtype=np.int64)
        click = np.zeros(shape, dtype=bool)
        shown = np.zeros(shape, dtype=bool)
        pair[rank, column] = pairs.row_pair[order]
        click[rank, column] = clicked[order]
        shown[rank, column] = True
        later = np.flip(np.logical_or.accumulate(np.flip(click, axis=0), axis=0), axis=0)
        shown_pair, clicked_pair = pair[shown], pair[click]
        return cls(
            pair, click, shown, later,
            shown_pair, np.bincount(shown_pair, minlength=pairs.size),
            clicked_pair, np.bincount(clicked_pair, minlength=pairs.size),
        )  # fmt: skip


def dbn_em_step(
    grid: _Grid, attract: np.ndarray, satisfy: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """One EM step of the dynamic Bayesian network model (Chapelle and Zhang 2009), by forward-backward.

    E_1 = 1;  C_r = 1 iff E_r = 1 and A_r = 1, with P(A_r = 1) = a_u;  P(S_r = 1 | C_r = 1) = s_u,
    S_r = 0 without a click;  P(E_(r+1) = 1 | E_r = 1, S_r = 0) = gamma, and E_(r+1) = 0 otherwise.

    With f_r(e) = P(C_1..C_(r-1), E_r = e) and b_r(e) = P(C_r..C_K | E_r = e), Z = b_1(1):

        P(A_r = 1 | C) = 1 if c_r, else a_u f_r(0) b_r(0) / Z          -> a_u' = mean over impressions of u
        P(S_r = 1 | C) = f_r(1) a_u s_u b_(r+1)(0) / Z   (clicked r)   -> s_u' = mean over clicks on u
        P(E_r = 1, S_r = 0, E_(r+1) = e | C) = f_r(1) P(c_r | E_r = 1) P(S_r = 0 | c_r) T(e) b_(r+1)(e) / Z,
        T(1) = gamma, T(0) = 1 - gamma                                 -> gamma' = sum of e = 1 / sum of both

    over the ranks r that have a result shown after them. b_r(0) is 1 when no click comes at r or below.
    Every session is computed at once: the backward pass one rank at a time, the forward one as a running
    product (f(1)) and a sum restarted at each click (f(0)).
    """
    shown, click = grid.shown, grid.click
    a = attract[grid.pair]
    s = satisfy[grid.pair]
    emit = np.where(click, a, 1.0 - a)  # P(c_r | E_r = 1)
    stay = np.where(click, gamma * (1.0 - s), gamma)  # P(E_(r+1) = 1 | E_r = 1, c_r)
    emit[~shown] = 1.0  # padding: no click, and the walk goes on unchanged
    stay[~shown] = 1.0
    depth, sessions = emit.shape
    back0 = np.vstack([~grid.later_click, np.ones((1, sessions), dtype=bool)])  # b_r(0), b_(K+1)(0) = 1
    back1 = np.ones((depth + 1, sessions))
    for r in range(depth - 1, -1, -1):
        back1[r] = emit[r] * (stay[r] * back1[r + 1] + (1.0 - stay[r]) * back0[r + 1])
    # The forward pass, divided by Z: f_r(1) is a running product; f_r(0) gathers what left the walk
    # since the last click (a click at r means E_r = 1, so f_(r+1)(0) restarts from what leaves at r).
    forward1 = np.empty((depth, sessions))
    forward1[0] = 1.0 / back1[0]
    np.multiply(forward1[0], np.cumprod(emit[:-1] * stay[:-1], axis=0), out=forward1[1:])
    moved = forward1 * emit
    leaving = moved * (1.0 - stay)
    forward0 = np.zeros((depth, sessions))
    for r in range(depth - 1):
        forward0[r + 1] = np.where(click[r], 0.0, forward0[r]) + leaving[r]
    del leaving
    # P(S_r = 1 | C) where clicked, P(A_r = 1 | C) where not.
    post = np.where(click, forward1 * a * s * back0[1:], a * forward0 * back0[:-1])
    left = (moved * np.where(click, 1.0 - s, 1.0))[:-1]
    has_next = shown[1:]
    stay_mass = gamma * float((left * back1[1:depth])[has_next].sum())
    leave_mass = (1.0 - gamma) * float((left * back0[1:depth])[has_next].sum())
    cont_num, cont_den = stay_mass, stay_mass + leave_mass
    a_weight = np.where(click, 1.0, post)[shown]
    new_a = np.divide(
        np.bincount(grid.shown_pair, weights=a_weight, minlength=attract.size), grid.shown_count,
        out=attract.copy(), where=grid.shown_count > 0,
    )  # fmt: skip
    new_s = np.divide(
        np.bincount(grid.clicked_pair, weights=post[click], minlength=satisfy.size), grid.clicked_count,
        out=satisfy.copy(), where=grid.clicked_count > 0,
    )  # fmt: skip
    new_gamma = cont_num / cont_den if cont_den > 0 else gamma
    return new_a, new_s, new_gamma


def dbn(log: ClickLog, pairs: _Pairs, clicked: np.ndarray, params: ClickModelParams) -> _Fitted:
    """The dynamic Bayesian network click model (Chapelle and Zhang, WWW 2009), fitted by EM
    (`dbn_em_step`). A session's results are read in the order shown (by position); relevance is
    a_u * s_u, the chance that the result, once examined, is clicked and satisfies. A pair never
    clicked keeps satisfaction at its starting value 0.5 (its relevance tends to 0 with its a_u)."""
    grid = _Grid.of(log, pairs, clicked)
    attract = np.full(pairs.size, 0.5)
    satisfy = np.full(pairs.size, 0.5)
    gamma = 0.9
    if not log.num_rows:
        return _Fitted(
            np.zeros(0), {"continuation": []}, 0, True, {"attractiveness": attract, "satisfaction": satisfy}
        )
    iterations, converged = 0, False
    for iterations in range(1, params.iteration_cap + 1):  # noqa: B007 - the count is reported
        new_a, new_s, new_gamma = dbn_em_step(grid, attract, satisfy, gamma)
        new_a = np.clip(new_a, _EPS, 1 - _EPS)
        new_s = np.clip(new_s, _EPS, 1 - _EPS)
        new_gamma = float(np.clip(new_gamma, _EPS, 1 - _EPS))
        change = max(_max_change(new_a, attract), _max_change(new_s, satisfy), abs(new_gamma - gamma))
        attract, satisfy, gamma = new_a, new_s, new_gamma
        if change < params.tolerance:
            converged = True
            break
    return _Fitted(
        attract * satisfy,
        {"continuation": [gamma]},
        iterations,
        converged,
        {"attractiveness": attract, "satisfaction": satisfy},
    )


_FITS = {"coec": coec, "pbm": pbm, "dbn": dbn}
