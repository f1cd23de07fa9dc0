"""The preference measures against a reference written as trec_eval 9.0.8's C code runs
(form_prefs_counts.c and m_prefs_*.c: loops over equivalence classes and preference arrays), on random
judgment groups: complete and partial orders, several users, ties in score, -M."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

import numpy as np
import pytest

from evalcore.retrieval import Prefs, Run, evaluate_prefs

MEASURES = [
    "prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
    "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
    "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp",
]  # fmt: skip
Row = tuple[str, str, str, str, float]


def ranks_of(rows: list[Row], run: dict[str, float], max_docs: int | None) -> tuple[dict[str, int], int]:
    """form_prefs_and_ranks: docid ranks (retrieved judged documents first, in score order with ties by
    docno ascending, then the others by docno) and the number of judged documents retrieved."""
    ordered = sorted(run, key=lambda d: (-np.float32(run[d]), d))[:max_docs]
    judged = {row[3] for row in rows}
    retrieved = [d for d in ordered if d in judged]
    rank = {d: i for i, d in enumerate(retrieved)}
    for i, d in enumerate(sorted(judged - set(retrieved))):
        rank[d] = len(retrieved) + i
    return rank, len(retrieved)


class JG:
    """One judgment group's counts, as add_ec_pref_to_jg / add_pa_pref_to_jg count them."""

    def __init__(self, entries: list[tuple[str, float, int]], njr: int, nj: int, ca: dict) -> None:
        self.njr, self.nj = njr, nj
        self.counts: dict[str, int] = defaultdict(int)
        self.partial = len({jsg for jsg, _, _ in entries}) > 1
        if not self.partial:
            levels = sorted({level for _, level, _ in entries}, reverse=True)
            self.ecs = [sorted(r for _, lv, r in entries if lv == level) for level in levels]
            self.levels = levels
            pairs = [
                (a, b) for i, e1 in enumerate(self.ecs) for e2 in self.ecs[i + 1 :] for a in e1 for b in e2
            ]
            for ec, level in zip(self.ecs, levels, strict=True):
                kind = "rel" if level > 0 else "nonrel"
                self.counts[kind] += len(ec)
                self.counts[kind + "_ret"] += sum(1 for r in ec if r < njr)
        else:
            pa = np.zeros((nj, nj), dtype=bool)
            self.rel_array = [-1.0] * nj
            for jsg, level, r in entries:
                self.rel_array[r] = level
                for jsg2, level2, r2 in entries:
                    if jsg2 == jsg and level2 < level:
                        pa[r, r2] = True
            np.fill_diagonal(pa, True)
            while True:
                grown = (pa.astype(int) @ pa.astype(int)) > 0
                if (grown == pa).all():
                    break
                pa = grown
            np.fill_diagonal(pa, False)
            self.pa = pa
            pairs = [(int(a), int(b)) for a, b in zip(*np.nonzero(pa), strict=True)]
            for r, level in enumerate(self.rel_array):
                if level >= 0:  # -1: the document is not in this group
                    group = "rel" if level > 0 else "nonrel"
                    self.counts[group] += 1
                    self.counts[group + "_ret"] += int(r < njr)
        for a, b in pairs:
            ca[(a, b)] += 1
            if a < b:
                self.counts["ful_ret" if b < njr else "ful_imp" if a < njr else "notoccur"] += 1
            else:
                self.counts["poss_ret" if a < njr else "poss_imp" if b < njr else "notoccur"] += 1
        self.counts["poss_ret"] += self.counts["ful_ret"]
        self.counts["poss_imp"] += self.counts["ful_imp"]

    def rnonrel(self, retrieved_only: bool) -> float:
        c, njr = self.counts, self.njr
        big_r, big_n = (c["rel_ret"], c["nonrel_ret"]) if retrieved_only else (c["rel"], c["nonrel"])
        if big_r >= big_n:
            if retrieved_only:
                ful, poss = c["ful_ret"], c["poss_ret"]
            else:
                ful, poss = c["ful_ret"] + c["ful_imp"], c["poss_ret"] + c["poss_imp"] + c["notoccur"]
            ful += c["rel_ret"] * (big_r - big_n)
            poss += c["rel"] * (big_r - big_n)
            return ful / poss if poss else math.nan
        ful = poss = 0
        if not self.partial:
            last = self.ecs[-1][: c["rel_ret"] if retrieved_only else c["rel"]]
            for i, e1 in enumerate(self.ecs):
                targets = [e2 for e2 in self.ecs[i + 1 : len(self.ecs) - 1]] + [last]
                for e2 in targets:
                    for a in e1:
                        if retrieved_only and a >= njr:
                            break
                        for b in e2:
                            if retrieved_only and b >= njr:
                                break
                            if a < b and (retrieved_only or a < njr):
                                ful += 1
                            else:
                                poss += 1
        else:
            limit = njr if retrieved_only else self.nj
            seen, first_discarded = 0, limit
            for i in range(limit):
                if self.rel_array[i] == 0.0:
                    seen += 1
                    if seen == c["rel"] + 1:
                        first_discarded = i
                        break

            def gone(i: int) -> bool:
                return i >= first_discarded and self.rel_array[i] == 0.0

            for i in range(limit):
                for j in range(limit):
                    if self.pa[i, j] and not gone(i) and not gone(j):
                        if i < njr and j > i:
                            ful += 1
                        else:
                            poss += 1
        poss += ful
        return ful / poss if poss else math.nan


def reference(rows: list[Row], runs: dict[str, dict[str, float]], max_docs: int | None) -> dict[str, dict]:
    return {
        qid: query_values([row for row in rows if row[0] == qid], runs[qid], max_docs)
        for qid in sorted({row[0] for row in rows})
        if qid in runs
    }


def query_values(q_rows: list[Row], run: dict[str, float], max_docs: int | None) -> dict[str, float]:
    rank, njr = ranks_of(q_rows, run, max_docs)
    ca: dict[tuple[int, int], int] = defaultdict(int)
    jgs = [
        JG([(row[2], row[4], rank[row[3]]) for row in q_rows if row[1] == jg], njr, len(rank), ca)
        for jg in sorted({row[1] for row in q_rows})
    ]
    total: dict[str, int] = defaultdict(int)
    for g in jgs:
        for key, value in g.counts.items():
            total[key] += value

    def ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    def avgjg(ful: Iterable[int], poss: Iterable[int]) -> float:
        s = sum(f / p for f, p in zip(ful, poss, strict=True) if p)
        return s / len(jgs) if s > 0 else 0.0

    def mean_jg(values: list[float]) -> float:
        s = sum(values)
        return s / len(jgs) if s > 0 else 0.0  # a nan fails trec_eval's test too, leaving 0

    def pair(kinds: set[int]) -> float:
        s, n = 0.0, 0
        for i in range(len(rank)):
            for j in range(i + 1, len(rank)):
                if ca[(i, j)] or ca[(j, i)]:
                    kind = 0 if j < njr else 1 if i < njr else 2
                    if kind in kinds:
                        n += 1
                        s += ca[(i, j)] / (ca[(i, j)] + ca[(j, i)]) if kind < 2 else 0.0
        return ratio(s, n)

    c = [g.counts for g in jgs]
    return {
        "prefs_num_prefs_poss": total["poss_ret"] + total["poss_imp"] + total["notoccur"],
        "prefs_num_prefs_ful": total["ful_ret"] + total["ful_imp"],
        "prefs_num_prefs_ful_ret": total["ful_ret"],
        "prefs_simp": ratio(total["ful_ret"] + total["ful_imp"],
                            total["poss_ret"] + total["poss_imp"] + total["notoccur"]),
        "prefs_pair": pair({0, 1, 2}),
        "prefs_avgjg": avgjg([x["ful_ret"] + x["ful_imp"] for x in c],
                             [x["poss_ret"] + x["poss_imp"] + x["notoccur"] for x in c]),
        "prefs_avgjg_Rnonrel": mean_jg([g.rnonrel(False) for g in jgs]),
        "prefs_simp_ret": ratio(total["ful_ret"], total["poss_ret"]),
        "prefs_pair_ret": pair({0}),
        "prefs_avgjg_ret": avgjg([x["ful_ret"] for x in c], [x["poss_ret"] for x in c]),
        "prefs_avgjg_Rnonrel_ret": mean_jg([g.rnonrel(True) for g in jgs]),
        "prefs_simp_imp": ratio(total["ful_ret"] + total["ful_imp"], total["poss_ret"] + total["poss_imp"]),
        "prefs_pair_imp": pair({0, 1}),
        "prefs_avgjg_imp": avgjg([x["ful_ret"] + x["ful_imp"] for x in c],
                                 [x["poss_ret"] + x["poss_imp"] for x in c]),
    }  # fmt: skip


def random_case(rng: np.random.Generator) -> tuple[list[Row], dict[str, dict[str, float]], int | None]:
    """Queries with one to three users; each user holds one consistent latent grade per document and
    judges it in one or several sub-groups (a partial order when several)."""
    rows: list[Row] = []
    runs: dict[str, dict[str, float]] = {}
    docs = [f"d{i}" for i in range(9)]
    for q in range(int(rng.integers(1, 4))):
        qid = f"q{q}"
        for jg in range(int(rng.integers(1, 4))):
            grade = {d: float(rng.choice([0.0, 0.0, 1.0, 2.0, 3.5])) for d in docs}
            for jsg in range(int(rng.choice([1, 1, 2, 3]))):
                for d in rng.choice(docs, size=int(rng.integers(1, 6)), replace=False):
                    rows.append((qid, f"u{jg}", f"s{jsg}", str(d), grade[str(d)]))
        if rng.random() < 0.9:
            retrieved = rng.choice([*docs, "x1", "x2"], size=int(rng.integers(0, 10)), replace=False)
            runs[qid] = {str(d): float(rng.integers(1, 4)) for d in retrieved}
    return rows, runs, (None if rng.random() < 0.6 else int(rng.integers(1, 7)))


@pytest.mark.parametrize("seed", range(40))
def test_it_counts_preferences_as_trec_evals_loops(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(10):
        rows, runs, max_docs = random_case(rng)
        expected = reference(rows, {q: r for q, r in runs.items() if r}, max_docs)
        run_rows = [(q, d, s) for q, r in runs.items() for d, s in r.items()]
        if not expected or not run_rows:
            continue
        prefs = Prefs.from_rows(*(list(c) for c in zip(*rows, strict=True)))
        run = Run.from_dict({q: r for q, r in runs.items() if r})
        result = evaluate_prefs(prefs, run, MEASURES, max_docs=max_docs)
        assert result.qids.tolist() == sorted(expected)
        for name in MEASURES:
            want = [expected[q][name] for q in sorted(expected)]
            np.testing.assert_allclose(result.values[name], want, rtol=1e-12, atol=1e-15, err_msg=name)
