"""TREC-style synthetic collections for pooling simulations, tests and benchmarks.

Each topic has `documents` candidate documents, of which a few are relevant with grade 1 or 2
(about `relevant_share` of them, more for some topics than others). Run s scores document d of a
topic as

    score = quality_s * (1 + grade_d) * [grade_d > 0] + shared * popularity_d + noise_sd

with quality_s spread from weak to strong runs, a popularity shared by every run (so that runs
overlap, as real ones do) and independent normal noise; each run returns its top `depth`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from evalcore.retrieval.data import Qrels, Run

__all__ = ["synthetic_collection"]


def synthetic_collection(
    *,
    topics: int = 25,
    runs: int = 24,
    documents: int = 2000,
    depth: int = 100,
    relevant_share: float = 0.02,
    shared: float = 0.7,
    seed: int = 0,
) -> tuple[list[Run], Qrels]:
    """(runs, complete graded qrels) of a synthetic collection; the same seed gives the same one.

    >>> runs, qrels = synthetic_collection(topics=3, runs=4, documents=200, depth=10, seed=1)
    >>> len(runs), len(runs[0]), qrels.num_queries
    (4, 30, 3)
    """
    rng = np.random.default_rng(seed)
    qids = np.array([f"{401 + t}" for t in range(topics)], dtype=object)
    share = relevant_share * rng.uniform(0.3, 2.0, size=topics)
    grade = np.where(
        rng.random((topics, documents)) < share[:, None], 1 + (rng.random((topics, documents)) < 0.35), 0
    )
    popularity = rng.normal(size=(topics, documents))
    quality = np.linspace(0.2, 2.4, runs)
    rng.shuffle(quality)
    docnames = np.array([f"D{t:03d}-{d:05d}" for t in range(topics) for d in range(documents)], dtype=object)
    docnames = docnames.reshape(topics, documents)
    out = []
    for s in range(runs):
        score = quality[s] * (1 + grade) * (grade > 0) + shared * popularity + rng.normal(size=grade.shape)
        top = (
            np.argpartition(-score, depth - 1, axis=1)[:, :depth]
            if depth < documents
            else np.tile(np.arange(documents), (topics, 1))
        )
        rows = np.repeat(np.arange(topics), top.shape[1])
        cols = top.reshape(-1)
        run = Run.from_codes(qids, rows, docnames[rows, cols].tolist(), np.round(score[rows, cols], 4))
        out.append(replace(run, run_id=f"sys{s + 1:02d}"))
    t, d = np.nonzero(grade)
    qrels = Qrels.from_codes(qids, t, docnames[t, d].tolist(), grade[t, d])
    return out, qrels
