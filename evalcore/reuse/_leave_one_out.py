"""Leave-one-run-out reusability of a qrels version (Zobel 1998; Buckley, Dimmick, Soboroff and Voorhees 2007).

A pool is the union of every run's top `depth` documents per query. A run's *unique contributions* are
the pooled (query, document) pairs in its top `depth` and in no other run's top `depth`:

    U(r) = { (q, d) in top_depth(r) : (q, d) not in top_depth(s) for every s != r }

The test removes U(r) from the qrels (those documents become unjudged, which every trec_eval measure
but bpref and infAP reads as non-relevant) and re-scores r on what is left:

    full(r)  = M(r; qrels)            loo(r) = M(r; qrels \\ U(r))          drop(r) = full(r) - loo(r)

Zobel (SIGIR 1998, "How reliable are the results of large-scale information retrieval experiments?")
used it to estimate how a run that took no part in the pool would fare; Buckley et al. (IRJ 2007, "Bias
and the limits of pooling for large collections") report the drop and the run's rank among the others
with its left-out score (the others keep their full scores):

    rank_full(r) = 1 + |{s != r : full(s) > full(r)}|     rank_loo(r) = 1 + |{s != r : full(s) > loo(r)}|

A *group* (the runs sharing a tag: one team's or one system's variants) is left out together: its
unique contributions are the pairs in some member's top `depth` and in no non-member's, and every
member is re-scored on the qrels without them (its rank among the non-members' full scores and the
other members' left-out scores).

bpref (Buckley and Voorhees 2004) and infAP (Yilmaz and Aslam 2006) skip unjudged documents instead of
counting them non-relevant, so their left-out drop is the measure of how much they protect a run that
did not contribute; they are reported beside the main measure.

A *verdict* for a run scored against the version (a "new" run: it may or may not have contributed)
combines its Judged@10 with the largest leave-one-out drop seen on the version (see `Verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from evalcore.pools import pool_run
from evalcore.retrieval import NoCommonQueriesError, Qrels, Run, evaluate, parse_measure

#: The measures reported beside the main one, and the coverage measure of the verdict.
SIDE_MEASURES = ("bpref", "infAP")
COVERAGE_MEASURE = "Judged@10"


@dataclass(frozen=True)
class ReuseParams:
    """How the leave-one-out test is run: the pool depth, the main measure and trec_eval's -l."""

    depth: int = 100
    measure: str = "map"
    rel_level: int = 1

    def __post_init__(self) -> None:
        if self.depth < 1:
            raise ValueError("the pool depth must be at least 1")
        if len(parse_measure(self.measure)) != 1:  # raises for an unknown measure
            raise ValueError(f"{self.measure} names several measures; name one")

    @property
    def measures(self) -> list[str]:
        names = [self.measure, *SIDE_MEASURES, COVERAGE_MEASURE]
        return list(dict.fromkeys(names))


@dataclass(frozen=True)
class VerdictThresholds:
    """A version is reusable for a run when its Judged@10 is at least `min_judged`, the largest
    leave-one-out relative drop on the version is at most `max_relative_drop`, and no run moved more
    than `max_rank_shift` places; below `min_judged_poor` Judged@10 it is not reusable for that run."""

    min_judged: float = 0.9
    min_judged_poor: float = 0.5
    max_relative_drop: float = 0.05
    max_rank_shift: int = 0


DEFAULT_THRESHOLDS = VerdictThresholds()


@dataclass(frozen=True)
class LeaveOutRow:
    """One run's scores with and without the documents it (or its group) alone contributed."""

    run: str
    unique: int  # pairs left out
    unique_relevant: int  # of which judged relevant (rel >= rel_level)
    full: dict[str, float | None]
    left_out: dict[str, float | None]
    rank_full: int
    rank_left_out: int
    group: str | None = None

    def drop(self, measure: str) -> float | None:
        a, b = self.full.get(measure), self.left_out.get(measure)
        return None if a is None or b is None else a - b

    def relative_drop(self, measure: str) -> float | None:
        a, d = self.full.get(measure), self.drop(measure)
        return None if a is None or d is None or a == 0 else d / a

    @property
    def rank_shift(self) -> int:
        """Places lost when left out (positive: ranked lower)."""
        return self.rank_left_out - self.rank_full


@dataclass(frozen=True)
class Verdict:
    run: str
    level: str  # "reusable", "caution" or "not reusable"
    judged_at_10: float | None
    largest_drop: float | None
    largest_relative_drop: float | None
    largest_rank_shift: int

    @property
    def text(self) -> str:
        judged = "n/a" if self.judged_at_10 is None else f"{self.judged_at_10:.2f}"
        if self.largest_drop is None:
            drop = "no leave-one-out drop measured"
        else:
            relative = (
                "" if self.largest_relative_drop is None else f" ({100 * self.largest_relative_drop:.1f}%)"
            )
            drop = f"largest leave-one-out drop {self.largest_drop:.3f}{relative}"
        shift = (
            "no rank change"
            if self.largest_rank_shift == 0
            else f"largest rank change {self.largest_rank_shift} place{'s' if self.largest_rank_shift > 1 else ''}"
        )
        return f"{self.level}: Judged@10 {judged}, {drop}, {shift}"


@dataclass(frozen=True)
class ReuseReport:
    params: ReuseParams
    runs: list[LeaveOutRow]
    groups: list[LeaveOutRow] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        def row(r: LeaveOutRow) -> dict[str, object]:
            return {
                "run": r.run,
                "group": r.group,
                "unique": r.unique,
                "unique_relevant": r.unique_relevant,
                "full": r.full,
                "left_out": r.left_out,
                "drop": {m: r.drop(m) for m in r.full},
                "relative_drop": {m: r.relative_drop(m) for m in r.full},
                "rank_full": r.rank_full,
                "rank_left_out": r.rank_left_out,
                "rank_shift": r.rank_shift,
            }

        return {
            "depth": self.params.depth,
            "measure": self.params.measure,
            "rel_level": self.params.rel_level,
            "runs": [row(r) for r in self.runs],
            "groups": [row(r) for r in self.groups],
            "verdicts": [
                {
                    "run": v.run,
                    "level": v.level,
                    "judged_at_10": v.judged_at_10,
                    "largest_drop": v.largest_drop,
                    "largest_relative_drop": v.largest_relative_drop,
                    "largest_rank_shift": v.largest_rank_shift,
                    "text": v.text,
                }
                for v in self.verdicts
            ],
        }


# --- the pool --------------------------------------------------------------------------------------


def _pair_keys(qids: Sequence[str] | np.ndarray, docs: Sequence[str] | np.ndarray) -> np.ndarray:
    """One string per (query, document) pair; \\x1f separates the ids (no TREC id holds it)."""
    q = np.asarray(qids, dtype=object)
    d = np.asarray(docs, dtype=object)
    return (q + "\x1f" + d) if q.size else np.zeros(0, dtype=object)


def qrels_pair_keys(qrels: Qrels) -> np.ndarray:
    return _pair_keys(qrels.qids[qrels.qid_codes], qrels.docno_strings())


@dataclass(frozen=True)
class Pool:
    """The runs' top-`depth` pairs as codes into `keys`: `member[r]` the sorted codes of run r's pairs,
    `count[k]` how many runs pooled pair k."""

    keys: np.ndarray
    member: list[np.ndarray]
    count: np.ndarray

    @classmethod
    def of(cls, runs: Sequence[Run], depth: int) -> Pool:
        tops = [pool_run(run, depth) for run in runs]
        per_run = [_pair_keys([q for q, _ in top], [d for _, d in top]) for top in tops]
        sizes = [len(keys) for keys in per_run]
        joined = np.concatenate(per_run) if per_run else np.zeros(0, dtype=object)
        keys, inverse = np.unique(joined, return_inverse=True) if joined.size else (joined, np.zeros(0, int))
        inverse = inverse.reshape(-1)
        member = [np.unique(part) for part in np.split(inverse, np.cumsum(sizes)[:-1])] if sizes else []
        count = np.bincount(inverse, minlength=len(keys)) if len(keys) else np.zeros(0, dtype=np.int64)
        return cls(keys=keys, member=member, count=count)

    def unique_to(self, members: Sequence[int]) -> np.ndarray:
        """Keys of the pairs that the runs `members` pooled and no other run did."""
        inside = np.zeros(len(self.keys), dtype=np.int64)
        for r in members:
            inside[self.member[r]] += 1
        return self.keys[(inside > 0) & (inside == self.count)]


# --- scoring ---------------------------------------------------------------------------------------


def _scores(qrels: Qrels, run: Run, params: ReuseParams) -> dict[str, float | None]:
    try:
        aggregate = evaluate(qrels, run, params.measures, rel_level=params.rel_level).aggregate
    except NoCommonQueriesError:
        return dict.fromkeys(params.measures)
    return {name: float(aggregate[parse_measure(name)[0].key]) for name in params.measures}


def rank_among(value: float | None, others: Sequence[float | None]) -> int:
    """1 + how many of `others` score strictly higher (None scores never outrank)."""
    if value is None:
        return len([o for o in others if o is not None]) + 1
    return 1 + sum(1 for o in others if o is not None and o > value)


def _leave_out(
    qrels: Qrels,
    qrels_keys: np.ndarray,
    runs: Sequence[Run],
    names: Sequence[str],
    full: list[dict[str, float | None]],
    members: Sequence[int],
    pool: Pool,
    params: ReuseParams,
    group: str | None,
) -> list[LeaveOutRow]:
    unique = pool.unique_to(members)
    removed = np.isin(qrels_keys, unique)
    reduced = qrels.take(np.flatnonzero(~removed))  # a qrels subset: the left-out pairs are unjudged
    relevant = int(np.count_nonzero(removed & (qrels.rels >= params.rel_level)))
    left = {r: _scores(reduced, runs[r], params) for r in members}
    m = params.measure
    rows = []
    for r in members:
        others_full = [full[s][m] for s in range(len(runs)) if s != r and s not in members]
        others_left = [left[s][m] for s in members if s != r]
        rows.append(
            LeaveOutRow(
                run=names[r],
                unique=int(np.count_nonzero(removed)),
                unique_relevant=relevant,
                full=full[r],
                left_out=left[r],
                rank_full=rank_among(full[r][m], [full[s][m] for s in range(len(runs)) if s != r]),
                rank_left_out=rank_among(left[r][m], others_full + others_left),
                group=group,
            )
        )
    return rows


def leave_one_out(
    qrels: Qrels,
    runs: Mapping[str, Run],
    *,
    params: ReuseParams = ReuseParams(),
    tags: Mapping[str, Sequence[str]] | None = None,
    thresholds: VerdictThresholds = DEFAULT_THRESHOLDS,
) -> ReuseReport:
    """The leave-one-run-out table of `runs` (name -> run) on `qrels`; see the module docstring.

    `tags` maps a run's name to its tags: each tag shared by at least two runs (and not by all of them)
    is a group left out together. Every run is scored once on the full qrels and once per leave-out on a
    qrels subset, through `evalcore.retrieval.evaluate` (one vectorised call per run and qrels).

    >>> qrels = Qrels.from_dict({"q": {"a": 1, "b": 1, "c": 0}})
    >>> runs = {"A": Run.from_dict({"q": {"a": 2.0, "c": 1.0}}), "B": Run.from_dict({"q": {"b": 2.0, "c": 1.0}})}
    >>> report = leave_one_out(qrels, runs, params=ReuseParams(depth=1))
    >>> [(r.run, r.full["map"], r.left_out["map"]) for r in report.runs]
    [('A', 0.5, 0.0), ('B', 0.5, 0.0)]
    """
    names = list(runs)
    run_list = [runs[n] for n in names]
    pool = Pool.of(run_list, params.depth)
    keys = qrels_pair_keys(qrels)
    full = [_scores(qrels, run, params) for run in run_list]
    rows = [
        row
        for r in range(len(names))
        for row in _leave_out(qrels, keys, run_list, names, full, [r], pool, params, None)
    ]
    groups: list[LeaveOutRow] = []
    for tag, members in _groups(names, tags or {}).items():
        groups.extend(_leave_out(qrels, keys, run_list, names, full, members, pool, params, tag))
    report = ReuseReport(params=params, runs=rows, groups=groups)
    verdicts = [
        verdict(name, scores.get(COVERAGE_MEASURE), report, thresholds)
        for name, scores in zip(names, full, strict=True)
    ]
    return ReuseReport(params=params, runs=rows, groups=groups, verdicts=verdicts)


def _groups(names: Sequence[str], tags: Mapping[str, Sequence[str]]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        for tag in dict.fromkeys(str(t) for t in tags.get(name, ())):
            groups.setdefault(tag, []).append(i)
    return {tag: members for tag, members in sorted(groups.items()) if 2 <= len(members) < len(names)}


def verdict(
    run: str,
    judged_at_10: float | None,
    report: ReuseReport,
    thresholds: VerdictThresholds = DEFAULT_THRESHOLDS,
) -> Verdict:
    """A plain verdict for `run` scored on the version: its Judged@10 and the largest single-run
    leave-one-out drop and rank shift seen on the version (`report.runs`)."""
    m = report.params.measure
    # The row with the largest relative drop (the criterion), its absolute drop beside it.
    drops = [(r.drop(m), r.relative_drop(m)) for r in report.runs if r.drop(m) is not None]
    largest = (
        max(drops, key=lambda d: (d[1] if d[1] is not None else -np.inf, d[0])) if drops else (None, None)
    )
    relative = largest[1]
    shift = max((r.rank_shift for r in report.runs), default=0)
    level = "reusable"
    if judged_at_10 is None or judged_at_10 < thresholds.min_judged_poor:
        level = "not reusable"
    elif (
        judged_at_10 < thresholds.min_judged
        or (relative is not None and relative > thresholds.max_relative_drop)
        or shift > thresholds.max_rank_shift
    ):
        level = "caution"
    return Verdict(
        run=run,
        level=level,
        judged_at_10=judged_at_10,
        largest_drop=largest[0],
        largest_relative_drop=relative,
        largest_rank_shift=max(shift, 0),
    )
