"""The demo's search team: two retrieval systems over the demo judging project, evaluated and compared.

`demo_search_team_load` (called by `load_demo`) makes the team `search` with `analyst` as an editor and
`lead` as a viewer, links the judging project `python-help` to it and picks its qrels build v1 as the
team's qrels source. It then ranks the project's documents (the standard library's help texts) for its
topics with two small systems computed here for real, uploads both rankings as TREC run files, evaluates
them in this process with the default measures and compares them (randomization test, Holm), so the
leaderboard and the comparison are not empty on first start.

- **BM25** (k1 = 0.9, b = 0.4, Lucene's idf) over lower-cased word tokens with a few stop words removed
  and Harman's S-stemmer.
- **LSA**, the demo's stand-in for a dense retriever (no embedding model can be downloaded here): the
  same tokens weighted by TF-IDF (sublinear tf), reduced by a truncated SVD to `LSA_DIMENSIONS`
  dimensions with numpy, queries folded into that space, documents ranked by cosine.

The team also gets a recommendation set and a fraud score set (`demo_recsys_fraud_load`), generated
here deterministically and evaluated in this process (the recommendations with the default options, the
scores with `FRAUD_OPTIONS`), so their dashboards are not empty either:

- **Recommendations**: a catalog of `RECSYS_ITEMS` items in `len(RECSYS_CATEGORIES)` categories whose
  popularity falls off as a power law; `RECSYS_USERS` users, each fond of two categories, interact with
  items drawn by popularity and taste (the first `HISTORY_PER_USER` are the history, the next
  `HELD_OUT_PER_USER` held out); a popularity-biased recommender lists each user's top `RECSYS_DEPTH`
  unseen items by log-popularity, taste and noise.
- **Fraud scores**: `FRAUD_TRANSACTIONS` card transactions of `FRAUD_ACCOUNTS` accounts over 30 days with
  log-normal amounts; `FRAUD_COMPROMISED` accounts are taken over at some moment, after which most of
  their transactions are frauds (2% of all); a noisy model scores them.

Then the team's runs are pooled into the judging project (`demo_pool_load`: a `bandit-mm-ns` pool
whose budget leaves some twenty pairs to judge), so the demo annotators are served the pool's pairs
first; its build replays every strategy for the planner.

Last, the judging loop runs end to end (`demo_loop_load`, issue 23): the careful simulated annotators
(carol and dave) answer the pool's first `DEMO_LOOP_ANSWERS` pending pairs on their topics q01-q07 (the
curated grade where the demo knows one, else 0: a page the curation does not list for the question is
taken as off-topic; q08-q10 stay alice's and bob's), the pool is re-ordered, a qrels build v2 is made
with v1's parameters, the team's runs are re-scored on it (the re-scoring service called here and its
evaluations run in this process, not on a worker), and the pool's simulation is computed again with v2
as the oracle. So the leaderboard on v2 has its coverage columns, the diff page v1 -> v2 shows what the
new judgments changed, and the pool page shows the yield and the planner.

Then the leaderboard on v2 is scored on the simulated machine judge's labels (`demo_machine_judge_score`,
run here: `annotations.demo.DEMO_JUDGE`, a lenient copy of the careful grades): each run's human-only,
machine-only and prediction-powered estimates with their intervals, the human sample `DEMO_PPI_SAMPLE`
queries drawn at random (seed `DEMO_PPI_SEED`) among the ten people judged, and the rankings on the two
sets of labels compared; so the leaderboard shows the PPI columns and the judge's page the ranking.

Everything is idempotent: a second load finds the team, the runs and sets (by name), the evaluations (one
per input and options) and the comparison, and changes nothing.
"""

from __future__ import annotations

import contextlib
import io
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotations import qrels
from annotations.demo import (
    DEMO_JUDGE,
    DEMO_LEAD,
    SIMULATED_ANNOTATORS,
    SIMULATED_TOPICS,
    SIMULATION_SEED,
    SIMULATION_START,
    expected_grades,
    simulated_answer,
    store_answers,
)
from annotations.models import Document, MachineJudge, Project, QrelsBuild, Task
from evalcore.fraud import FraudOptions
from evalplatform.auth import User
from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from evalplatform.teams import Role, team_member_set
from monitoring.alerts import services as alerts
from monitoring.evaluations import loop
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.machine_judges import services as machine_judges
from monitoring.machine_judges.models import MachineJudgeEvaluation
from monitoring.models import (
    AlertRule,
    Comparison,
    Evaluation,
    FraudScoreEvaluation,
    FraudScoreSet,
    QrelsSource,
    RecommendationEvaluation,
    RecommendationSet,
    Run,
)
from monitoring.pooling import services as pooling
from monitoring.pooling.models import JudgingPool, PoolReprioritise
from monitoring.pooling.planner import pool_simulate
from monitoring.recsys_fraud import services as recsys_fraud

DEMO_TEAM_SLUG = "search"
DEMO_TEAM_NAME = "Search team"
DEMO_TEAM_DESCRIPTION = (
    "Ranks the pages of Python's built-in help for programmers' questions. Judged by the python-help "
    "project; its qrels build v1 is the team's test collection."
)
DEMO_EDITOR = "analyst"
DEMO_VIEWER = "lead"
DEMO_PROJECT = "python-help"
DEMO_QRELS_VERSION = 1

BM25_K1 = 0.9
BM25_B = 0.4
LSA_DIMENSIONS = 32
#: Documents retrieved per query (every document, at most: the demo has 79).
RUN_DEPTH = 100
COMPARISON_MEASURES = ("map", "ndcg_cut_10", "P_10", "recip_rank")
COMPARISON_TEST = Comparison.Test.RANDOMIZATION
COMPARISON_CORRECTION = Comparison.Correction.HOLM

STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "in",
    "is", "it", "my", "of", "on", "or", "the", "this", "to", "what", "when", "where", "which", "with", "why",
    "you",
})  # fmt: skip
_TOKEN = re.compile(r"[a-z0-9_]+")


# --- ranking (pure numpy: documents and queries in, a queries x documents score matrix out) ------------


def s_stem(word: str) -> str:
    """Harman's S-stemmer (1991): plural endings only, so `exceptions` meets `exception`."""
    if len(word) <= 3:
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    return [s_stem(token) for token in _TOKEN.findall(text.lower()) if token not in STOP_WORDS]


def term_counts(texts: Sequence[str], vocabulary: dict[str, int]) -> np.ndarray:
    """A texts x vocabulary matrix of term counts; tokens outside the vocabulary are dropped."""
    rows: list[int] = []
    columns: list[int] = []
    for row, text in enumerate(texts):
        ids = [vocabulary[token] for token in tokenize(text) if token in vocabulary]
        rows.extend([row] * len(ids))
        columns.extend(ids)
    flat = np.asarray(rows, dtype=np.int64) * len(vocabulary) + np.asarray(columns, dtype=np.int64)
    counts = np.bincount(flat, minlength=len(texts) * len(vocabulary))
    return counts.reshape(len(texts), len(vocabulary)).astype(np.float64)


def vocabulary_of(texts: Sequence[str]) -> dict[str, int]:
    terms = sorted({token for text in texts for token in tokenize(text)})
    return {term: index for index, term in enumerate(terms)}


def bm25_scores(
    docs: np.ndarray, queries: np.ndarray, *, k1: float = BM25_K1, b: float = BM25_B
) -> np.ndarray:
    """BM25 of every query against every document, from term-count matrices (queries x documents).

    score(q, d) = sum_t qtf(t) * idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl)),
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)) (Lucene's, never negative).

    >>> docs = np.array([[2.0, 0.0], [0.0, 1.0]])
    >>> bm25_scores(docs, np.array([[1.0, 0.0]])).round(4).tolist()
    [[0.8755, 0.0]]
    """
    n_docs = docs.shape[0]
    lengths = docs.sum(axis=1)
    df = np.count_nonzero(docs, axis=0)
    idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-12))
    weights = idf * docs * (k1 + 1) / (docs + norm[:, None])
    return np.asarray(queries @ weights.T)


def lsa_scores(docs: np.ndarray, queries: np.ndarray, *, dimensions: int = LSA_DIMENSIONS) -> np.ndarray:
    """Cosine similarity of queries and documents in a latent semantic space (queries x documents).

    TF-IDF weights (1 + ln tf) * ln(N / df), rows L2-normalised into X; a truncated SVD X = U S V^T keeps
    the first `dimensions` singular vectors; documents are the rows of U S and a query q is folded in as
    q V = (q X^T) U / S. With far fewer documents than terms, U and S come from the eigendecomposition of
    the small Gram matrix X X^T = U S^2 U^T (79 x 79 in the demo) rather than an SVD of X itself.
    """
    n_docs = docs.shape[0]
    idf = np.log(n_docs / np.maximum(np.count_nonzero(docs, axis=0), 1))

    def weighted(counts: np.ndarray) -> np.ndarray:
        tf = np.zeros_like(counts)
        np.log(counts, out=tf, where=counts > 0)
        matrix = np.where(counts > 0, 1.0 + tf, 0.0) * idf
        return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)

    matrix = weighted(docs)
    eigenvalues, eigenvectors = np.linalg.eigh(matrix @ matrix.T)
    order = np.argsort(eigenvalues)[::-1]
    singular = np.sqrt(np.clip(eigenvalues[order], 0.0, None))
    k = min(dimensions, int(np.count_nonzero(singular > singular[0] * 1e-8)))
    u, s = eigenvectors[:, order[:k]], singular[:k]
    doc_vectors = u * s
    query_vectors = (weighted(queries) @ matrix.T) @ u / s
    doc_vectors /= np.maximum(np.linalg.norm(doc_vectors, axis=1, keepdims=True), 1e-12)
    query_vectors /= np.maximum(np.linalg.norm(query_vectors, axis=1, keepdims=True), 1e-12)
    return np.asarray(query_vectors @ doc_vectors.T)


def run_text(
    qids: Sequence[str],
    doc_ids: Sequence[str],
    scores: np.ndarray,
    *,
    tag: str,
    depth: int = RUN_DEPTH,
    positive_only: bool = False,
) -> str:
    """A TREC run (`qid Q0 docno rank score tag`): each query's top `depth` documents, best first, ties
    broken by docno descending as trec_eval does."""
    names = np.asarray(doc_ids, dtype=object)
    name_rank = np.argsort(np.argsort(names.astype(str)))
    rounded = np.round(scores, 6)
    lines = []
    for row, qid in enumerate(qids):
        values = rounded[row]
        order = np.lexsort((-name_rank, -values))  # score descending, then docno descending
        if positive_only:
            order = order[values[order] > 0]
        lines += [
            f"{qid} Q0 {names[i]} {rank} {values[i]:.6f} {tag}" for rank, i in enumerate(order[:depth], 1)
        ]
    return "\n".join(lines) + "\n"


# --- the demo team ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DemoSystem:
    name: str
    tag: str
    description: str
    tags: tuple[str, ...]
    rank: Callable[[np.ndarray, np.ndarray], np.ndarray]
    positive_only: bool = False


DEMO_SYSTEMS: tuple[DemoSystem, ...] = (
    DemoSystem(
        name="bm25",
        tag="bm25",
        description=(
            f"BM25 (k1 = {BM25_K1}, b = {BM25_B}) over the help pages' titles and texts: lower-cased words, "
            "a few stop words removed, Harman's S-stemmer. Computed by the demo loader with numpy."
        ),
        tags=("bm25", "lexical", "demo"),
        rank=bm25_scores,
        positive_only=True,
    ),
    DemoSystem(
        name="dense-lsa",
        tag="lsa32",
        description=(
            "Latent semantic analysis, the demo's stand-in for a dense retriever (no embedding model is "
            f"downloaded): TF-IDF, a truncated SVD to {LSA_DIMENSIONS} dimensions with numpy, queries folded "
            "in, documents ranked by cosine. Not a neural model."
        ),
        tags=("dense", "lsa", "demo"),
        rank=lsa_scores,
    ),
)


@dataclass
class DemoSearchTeam:
    team: Team
    qrels: QrelsSource
    runs: list[Run] = field(default_factory=list)
    evaluations: list[Evaluation] = field(default_factory=list)
    comparison: Comparison | None = None
    recommendation_evaluation: RecommendationEvaluation | None = None
    fraud_evaluation: FraudScoreEvaluation | None = None
    pool: JudgingPool | None = None
    #: The loop's second version: v2 built after the careful annotators answered some of the pool.
    qrels_v2: QrelsSource | None = None
    evaluations_v2: list[Evaluation] = field(default_factory=list)
    loop_answers: int = 0
    #: The leaderboard on v2 scored on the simulated machine judge's labels (PPI; the rankings compared).
    machine_judge_scoring: MachineJudgeEvaluation | None = None


def demo_search_team_load() -> DemoSearchTeam | None:
    """Create or find the demo search team with its runs, evaluations and comparison (see the module
    docstring). None when the demo project has no done qrels build v1 to evaluate against."""
    project = Project.objects.filter(slug=DEMO_PROJECT).first()
    build = QrelsBuild.objects.filter(
        project=project, version=DEMO_QRELS_VERSION, status=JobStatus.DONE
    ).first()
    if project is None or build is None:
        return None
    team, qrels = demo_team_create(project=project, build=build)
    analyst = get_user_model().objects.get(username=DEMO_EDITOR)
    demo = DemoSearchTeam(team=team, qrels=qrels)
    demo.runs = demo_runs_upload(team=team, project=project, uploaded_by=analyst)
    with alerts.alerts_checked_here():  # computed here: their alert rules (on a second load) checked here
        for run in demo.runs:
            evaluation = evaluations.evaluation_create(
                run=run, qrels=qrels, created_by=analyst, enqueue=False
            )
            if not evaluation.is_finished:
                evaluations.evaluation_run(evaluation_id=evaluation.pk)
                evaluation.refresh_from_db()
            demo.evaluations.append(evaluation)
        demo.comparison = _demo_comparison(qrels=qrels, runs=demo.runs, created_by=analyst)
        demo.recommendation_evaluation, demo.fraud_evaluation = demo_recsys_fraud_load(
            team=team, uploaded_by=analyst
        )
    demo_alert_rules_create(team=team, qrels=qrels, project=project, created_by=analyst)
    demo.pool = demo_pool_load(project=project, runs=demo.runs)
    with alerts.alerts_checked_here():
        demo_loop_load(demo, project=project, v1=build)
    demo.machine_judge_scoring = demo_machine_judge_score(demo, project=project, created_by=analyst)
    return demo


#: The leaderboard's PPI in the demo: this many of the ten human-judged topics form the human sample.
DEMO_PPI_SAMPLE = 5
DEMO_PPI_SEED = 24


def demo_machine_judge_score(
    demo: DemoSearchTeam, *, project: Project, created_by: User | None = None
) -> MachineJudgeEvaluation | None:
    """The leaderboard on v2 scored on the demo's machine judge (its job run here; found again on a second
    load, the labels and evaluations being the same). None without v2 or the judge."""
    judge = MachineJudge.objects.filter(project=project, name=DEMO_JUDGE).order_by("-pk").first()
    if demo.qrels_v2 is None or judge is None:
        return None
    job = machine_judges.machine_judge_evaluation_create(
        qrels=demo.qrels_v2, judge=judge, sample=MachineJudgeEvaluation.Sample.RANDOM,
        sample_size=DEMO_PPI_SAMPLE, seed=DEMO_PPI_SEED, created_by=created_by, enqueue=False,
    )  # fmt: skip
    if not job.is_finished:
        machine_judges.machine_judge_evaluation_run(job_id=job.pk)
        job.refresh_from_db()
    return job


#: The demo's pool from the team's runs: an adaptive strategy, each run read to this depth, and a budget
#: a little over the pairs the project's annotators have judged, so that the pool has tasks left to serve.
DEMO_POOL_STRATEGY = "bandit-mm-ns"
DEMO_POOL_DEPTH = 10
DEMO_POOL_EXTRA = 20


def demo_pool_load(*, project: Project, runs: Sequence[Run]) -> JudgingPool:
    """The search team's runs pooled into the judging project (`monitoring.pooling`), built here; found
    again (by strategy and runs) on a second load."""
    wanted = {run.pk for run in runs}
    for found in JudgingPool.objects.filter(project=project, strategy=DEMO_POOL_STRATEGY).prefetch_related(
        "runs"
    ):
        if {run.pk for run in found.runs.all()} == wanted and found.status != JobStatus.FAILED:
            return found
    judged = Task.objects.filter(project=project, label_count__gt=0, is_gold=False).count()
    pool = pooling.pool_create(
        project=project, runs=runs, strategy=DEMO_POOL_STRATEGY, budget=judged + DEMO_POOL_EXTRA,
        depth=DEMO_POOL_DEPTH, created_by=get_user_model().objects.filter(username=DEMO_LEAD).first(),
        enqueue=False,
    )  # fmt: skip
    pooling.pool_build_run(pool_id=pool.pk)
    pool.refresh_from_db()
    return pool


#: The loop's answers: the careful simulated annotators answer this many of the pool's pending tasks on
#: the topics they judge (`annotations.demo.SIMULATED_TOPICS`; q08-q10 stay alice's and bob's), in the
#: pool's priority order, each of them every task.
DEMO_LOOP_ANSWERS = 12
#: Where the loop's answers start: a day after the simulated annotators' first session.
DEMO_LOOP_START = SIMULATION_START + timedelta(days=1)


def demo_loop_load(demo: DemoSearchTeam, *, project: Project, v1: QrelsBuild) -> None:
    """The judging loop end to end (issue 23): the careful annotators answer part of the pool, a qrels
    build v2 with v1's parameters is made here, the team's runs are re-scored on it here (the re-scoring
    service run synchronously, its evaluations run in this process), and the pool's figures and planner
    follow. Idempotent: a done v2 is found again and nothing is answered twice."""
    if demo.pool is None:
        return
    v2 = QrelsBuild.objects.filter(project=project, version=v1.version + 1).first()
    if v2 is None:
        demo.loop_answers = demo_pool_answer(project=project, pool=demo.pool)
        with contextlib.suppress(IntegrityError), transaction.atomic():  # one pending per pool
            PoolReprioritise.objects.create(pool=demo.pool)  # run here, as the worker would
        for job_id in PoolReprioritise.objects.filter(pool=demo.pool, status=JobStatus.PENDING).values_list(
            "pk", flat=True
        ):
            pooling.pool_reprioritise_run(job_id=job_id)
        v2 = qrels.qrels_build_create(
            project=project, created_by=v1.created_by, tolerance=v1.tolerance, aggregation=v1.aggregation,
            min_accuracy=v1.min_accuracy, min_gold=v1.min_gold, min_labels=v1.min_labels,
            use_adjudications=v1.use_adjudications, enqueue=False,
        )  # fmt: skip
        qrels.qrels_build_run(build_id=v2.pk)
        v2.refresh_from_db()
    if v2.status != JobStatus.DONE:
        return
    for evaluation in loop.qrels_build_rescore(build_id=v2.pk, enqueue=False):
        if not evaluation.is_finished:
            evaluations.evaluation_run(evaluation_id=evaluation.pk)
            evaluation.refresh_from_db()
        demo.evaluations_v2.append(evaluation)
    demo.qrels_v2 = QrelsSource.objects.get(team=demo.team, build=v2)
    if demo.pool.simulation.get("qrels") != demo.qrels_v2.pk:  # the planner's oracle: the newest version
        demo.pool = pool_simulate(pool_id=demo.pool.pk)
    demo.pool.refresh_from_db()


def demo_pool_answer(*, project: Project, pool: JudgingPool) -> int:
    """carol and dave answer the first `DEMO_LOOP_ANSWERS` pending pool tasks of their topics, as careful
    annotators do (`annotations.demo`): the pair's curated grade where the demo knows one; a pair the
    runs brought in that the demo's curation does not list counts as off-topic (grade 0), with the same
    careful noise around it. Returns the answers stored."""
    tasks = list(
        Task.objects.filter(
            pool_links__pool=pool, label_count=0, assigned_count=0, is_gold=False, priority__isnull=False,
            topic__qid__in=SIMULATED_TOPICS,
        ).order_by("priority", "pk")[:DEMO_LOOP_ANSWERS]
    )  # fmt: skip
    if not tasks:
        return 0
    expected = expected_grades(project)
    users = get_user_model().objects.in_bulk(
        [a.username for a in SIMULATED_ANNOTATORS if a.careful], field_name="username"
    )
    rng = random.Random(SIMULATION_SEED + 23)
    answers = []
    for _, user in sorted(users.items()):
        moment = DEMO_LOOP_START
        for task in tasks:
            grade, seconds = simulated_answer(rng, careful=True, expected=expected.get(task.pk, 0))
            answers.append((user, task, grade, seconds, moment, ""))
            moment += timedelta(seconds=seconds + rng.uniform(1, 4))
    store_answers(project, answers)
    return len(answers)


#: The demo's alert rules beside the stream's default embedding ones, one per family, each breaking on
#: the demo's data: (series, name, metric, comparator, threshold, severity). The annotator rule is made
#: for every annotator of the project, at the project's own reliability threshold (`min_gold_accuracy`).
DEMO_RULES: tuple[tuple[str, str, str, str, float | None, str], ...] = (
    # The weaker system's ndcg@10 (about 0.52 on the demo's qrels) under its floor.
    ("run", "dense_lsa_ndcg_floor", "ndcg_cut_10", "<", 0.6, "warning"),
    # The popularity-biased recommender covers about a quarter of the catalog.
    ("recsys", "catalog_coverage_falling", "catalog_coverage", "<", 0.3, "warning"),
    # The noisy card model catches under half the frauds at 1% FPR (the demo evaluation's target FPR).
    ("fraud", "detection_rate_at_1pct_fpr_falling", "detection_rate", "<", 0.5, "critical"),
    # Krippendorff's tentative floor (0.667): the careless annotators pull the project's alpha under it.
    ("project", "ordinal_alpha_floor", "krippendorff_alpha_ordinal", "<", 0.667, "warning"),
    ("annotator", "gold_accuracy_below_reliable", "gold_accuracy", "<", None, "warning"),
)
#: The run name the demo's retrieval rule watches (the weaker system: a nightly run's stand-in).
DEMO_RULE_RUN = "dense-lsa"


def demo_alert_rules_create(
    *, team: Team, qrels: QrelsSource, project: Project, created_by: User | None = None
) -> list[AlertRule]:
    """The demo's alert rules (`DEMO_RULES`), made once (found by series and name), each checked at once
    on its series' latest values: the demo's jobs ran before its rules existed."""
    from annotations.models import ProjectMembership
    from annotations.quality.services import project_quality_url
    from series import subjects

    # The link a live recompute gives the series (and so its alerts' "From"): the quality page, which
    # every member of the team can read; the project's own page is its members' only.
    url = project_quality_url(project)
    annotators = ProjectMembership.objects.filter(project=project, role="annotator").select_related("user")
    made = []
    for kind, name, metric, comparator, threshold, severity in DEMO_RULES:
        if kind == "run":
            targets = [(subjects.run_series(qrels, DEMO_RULE_RUN), name, threshold)]
        elif kind == "recsys":
            targets = [(subjects.recsys_series(team.pk, RECSYS_SET_NAME), name, threshold)]
        elif kind == "fraud":
            targets = [(subjects.fraud_series(team.pk, FRAUD_SET_NAME), name, threshold)]
        elif kind == "project":
            targets = [(subjects.project_series(project, url=url), name, threshold)]
        else:
            targets = [
                (subjects.annotator_series(project, member.user_id, member.user.username, url=url),
                 f"{name}_{member.user.username}", project.min_gold_accuracy)
                for member in annotators
            ]  # fmt: skip
        for series, rule_name, floor in targets:
            rule = AlertRule.objects.filter(series=series, name=rule_name).first()
            if rule is None:
                rule = alerts.alert_rule_create(
                    team=team, series=series, name=rule_name, metric=metric, comparator=comparator,
                    threshold=float(floor if floor is not None else 0.0), severity=severity, created_by=created_by,
                )  # fmt: skip
                alerts.alerts_check_rule(rule)
            made.append(rule)
    return made


@transaction.atomic
def demo_team_create(*, project: Project, build: QrelsBuild) -> tuple[Team, QrelsSource]:
    """The team, its two members, the project linked to it and the build as its qrels source."""
    users = get_user_model().objects.in_bulk([DEMO_EDITOR, DEMO_VIEWER], field_name="username")
    team, _ = Team.objects.get_or_create(
        slug=DEMO_TEAM_SLUG, defaults={"name": DEMO_TEAM_NAME, "description": DEMO_TEAM_DESCRIPTION}
    )
    team_member_set(team=team, user=users[DEMO_EDITOR], role=Role.EDITOR)
    team_member_set(team=team, user=users[DEMO_VIEWER], role=Role.VIEWER)
    if project.team_id != team.pk:
        project.team = team
        project.save(update_fields=["team"])
    qrels = uploads.qrels_source_for_build(team=team, build=build, by=users[DEMO_EDITOR])
    return team, qrels


def demo_runs_upload(*, team: Team, project: Project, uploaded_by: User) -> list[Run]:
    """The demo systems' runs over the project's topics and documents, uploaded once (found by name)."""
    existing = {
        run.name: run for run in Run.objects.filter(team=team, name__in=[s.name for s in DEMO_SYSTEMS])
    }
    missing = [system for system in DEMO_SYSTEMS if system.name not in existing]
    if missing:
        texts = demo_run_texts(project, systems=missing)
        for system in missing:
            handle = io.BytesIO(texts[system.name].encode())
            handle.name = f"{system.name}.run"
            existing[system.name] = uploads.run_upload(
                team=team, upload=handle, name=system.name, description=system.description,
                tags=system.tags, fmt="trec", uploaded_by=uploaded_by,
            )  # fmt: skip
    return [existing[system.name] for system in DEMO_SYSTEMS]


def demo_run_texts(project: Project, *, systems: Sequence[DemoSystem] = DEMO_SYSTEMS) -> dict[str, str]:
    """Each system's run over the project's topics and documents (attention checks left out), as text."""
    topics = list(project.topics.order_by("qid").values_list("qid", "title"))
    documents = list(
        Document.objects.filter(project=project)
        .exclude(tasks__attention_check__isnull=False)
        .order_by("doc_id")
        .values_list("doc_id", "title", "text")
    )
    doc_texts = [f"{title}\n{text}" for _, title, text in documents]
    vocabulary = vocabulary_of(doc_texts)
    docs = term_counts(doc_texts, vocabulary)
    queries = term_counts([title for _, title in topics], vocabulary)
    qids = [qid for qid, _ in topics]
    doc_ids = [doc_id for doc_id, _, _ in documents]
    return {
        system.name: run_text(
            qids, doc_ids, system.rank(docs, queries), tag=system.tag, positive_only=system.positive_only
        )
        for system in systems
    }


def _demo_comparison(*, qrels: QrelsSource, runs: list[Run], created_by: User) -> Comparison:
    wanted = {run.pk for run in runs}
    candidates = (
        Comparison.objects.filter(
            team=qrels.team, qrels=qrels, test=COMPARISON_TEST, correction=COMPARISON_CORRECTION
        )
        .exclude(status=JobStatus.FAILED)
        .prefetch_related("runs")
    )
    comparison = next(
        (
            found
            for found in candidates.order_by("pk")
            if {run.pk for run in found.runs.all()} == wanted and found.measures == list(COMPARISON_MEASURES)
        ),
        None,
    )
    if comparison is None:
        comparison = evaluations.comparison_create(
            qrels=qrels, runs=runs, measures=COMPARISON_MEASURES, test=COMPARISON_TEST,
            correction=COMPARISON_CORRECTION, created_by=created_by, enqueue=False,
        )  # fmt: skip
    if comparison.status != JobStatus.DONE:
        evaluations.comparison_run(comparison_id=comparison.pk)
        comparison.refresh_from_db()
    return comparison


def demo_team_summary(demo: DemoSearchTeam) -> dict[str, object]:
    """What `load_demo --json` prints about the team."""
    return {
        "slug": demo.team.slug,
        "qrels": demo.qrels.name,
        "runs": [
            {
                "name": evaluation.run.name,
                "status": evaluation.status,
                "aggregate": {row.measure: row.value for row in evaluation.results},
            }
            for evaluation in demo.evaluations
        ],
        "comparison": {
            "status": demo.comparison.status if demo.comparison else None,
            "significant": sorted(
                demo.comparison.pairs.filter(significant=True).values_list("measure", flat=True)
            )
            if demo.comparison
            else [],
        },
        "recommendation": _evaluation_summary(demo.recommendation_evaluation),
        "fraud": _evaluation_summary(demo.fraud_evaluation),
        "pool": None if demo.pool is None else {"strategy": demo.pool.strategy, **demo.pool.summary()},
        "loop": None
        if demo.qrels_v2 is None
        else {
            "qrels": demo.qrels_v2.name,
            "leaderboard": demo.qrels_v2.get_absolute_url(),
            "diff": reverse("monitoring:leaderboard-diff", args=[demo.team.slug, demo.qrels_v2.pk]),
            "machine_judge": None
            if demo.machine_judge_scoring is None
            else {
                "status": demo.machine_judge_scoring.status,
                "human_queries": len(demo.machine_judge_scoring.human_sample.get("queries", [])),
                "leaderboard": demo.qrels_v2.get_absolute_url()
                + f"?judge={demo.machine_judge_scoring.judge_id}",
            },
            "runs": [
                {
                    "name": e.run.name,
                    "status": e.status,
                    "map": _measure(e, "map"),
                    "judged_10": _measure(e, "Judged@10"),
                }
                for e in demo.evaluations_v2
            ],
        },
    }


def _measure(evaluation: Evaluation, measure: str) -> float | None:
    return next((row.value for row in evaluation.results if row.measure == measure), None)


def _evaluation_summary(
    evaluation: RecommendationEvaluation | FraudScoreEvaluation | None,
) -> dict[str, object]:
    if evaluation is None:
        return {"status": None}
    return {
        "status": evaluation.status,
        "url": evaluation.get_absolute_url(),
        "metrics": evaluation.metric_values(),
    }


# --- the recommendation set and the fraud score set ---------------------------------------------------

RECSYS_SET_NAME = "popular-top20"
RECSYS_SEED = 2024
RECSYS_ITEMS = 1_500
RECSYS_USERS = 600
RECSYS_DEPTH = 20
HISTORY_PER_USER = 15
HELD_OUT_PER_USER = 5
#: How steeply popularity falls with an item's rank (a Zipf exponent).
POPULARITY_EXPONENT = 1.1
RECSYS_CATEGORIES = (
    "books", "music", "films", "games", "kitchen", "garden", "toys", "sport", "travel", "beauty",
    "health", "office", "pets", "tools", "fashion",
)  # fmt: skip

FRAUD_SET_NAME = "card-model-v3"
FRAUD_SEED = 404
FRAUD_TRANSACTIONS = 20_000
FRAUD_ACCOUNTS = 1_000
FRAUD_COMPROMISED = 40
FRAUD_DAYS = 30
FRAUD_START = np.datetime64("2026-01-01T00:00:00", "s")
#: The demo's fraud evaluation: 1% FPR, an investigation costs 5, a missed fraud its amount, 200 alerts.
FRAUD_OPTIONS = FraudOptions(target_fpr=0.01, fp_cost=5.0, fn_cost=1.0, budget=200)


def _gumbel_top(rng: np.random.Generator, log_weights: np.ndarray, k: int) -> np.ndarray:
    """k distinct columns per row, drawn without replacement with probabilities proportional to
    exp(log_weights) (the Gumbel-top-k trick), in the order drawn."""
    keys = log_weights + rng.gumbel(size=log_weights.shape)
    top = np.argpartition(-keys, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(keys, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def _csv(header: str, rows: Sequence[Sequence[object]]) -> str:
    return header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)


def demo_recsys_texts(*, seed: int = RECSYS_SEED) -> dict[str, str]:
    """The demo recommendation set's four files as CSV text: recs, interactions, items, history."""
    rng = np.random.default_rng(seed)
    item_ids = [f"item{i:04d}" for i in range(RECSYS_ITEMS)]
    category = rng.integers(0, len(RECSYS_CATEGORIES), RECSYS_ITEMS)
    log_popularity = -POPULARITY_EXPONENT * np.log1p(np.arange(RECSYS_ITEMS))
    fond = np.zeros((RECSYS_USERS, len(RECSYS_CATEGORIES)), dtype=bool)
    fond[np.arange(RECSYS_USERS)[:, None], rng.integers(0, len(RECSYS_CATEGORIES), (RECSYS_USERS, 2))] = True
    taste = fond[:, category]  # users x items: the item is in one of the user's categories
    seen = _gumbel_top(rng, log_popularity + np.log(3.0) * taste, HISTORY_PER_USER + HELD_OUT_PER_USER)
    history, held_out = seen[:, :HISTORY_PER_USER], seen[:, HISTORY_PER_USER:]
    scores = log_popularity + taste + rng.normal(0.0, 1.0, taste.shape)
    np.put_along_axis(scores, history, -np.inf, axis=1)  # never recommend what the user has seen
    top = np.argsort(-scores, axis=1, kind="stable")[:, :RECSYS_DEPTH]
    users = [f"user{u:04d}" for u in range(RECSYS_USERS)]

    def pairs(matrix: np.ndarray) -> list[tuple[str, str]]:
        return [(users[u], item_ids[i]) for u in range(matrix.shape[0]) for i in matrix[u]]

    return {
        "recs": _csv("user,item,rank", [
            (users[u], item_ids[i], rank) for u in range(RECSYS_USERS) for rank, i in enumerate(top[u], 1)
        ]),
        "interactions": _csv("user,item", pairs(held_out)),
        "items": _csv("item,category", [(item_ids[i], RECSYS_CATEGORIES[c]) for i, c in enumerate(category)]),
        "history": _csv("user,item", pairs(history)),
    }  # fmt: skip


def demo_fraud_text(*, seed: int = FRAUD_SEED) -> str:
    """The demo fraud score set as CSV text: id,score,label,amount,entity,timestamp."""
    rng = np.random.default_rng(seed)
    n = FRAUD_TRANSACTIONS
    account = rng.integers(0, FRAUD_ACCOUNTS, n)
    seconds = np.sort(rng.integers(0, FRAUD_DAYS * 86_400, n))
    amount = np.round(rng.lognormal(3.5, 1.0, n), 2)
    compromised = rng.choice(FRAUD_ACCOUNTS, FRAUD_COMPROMISED, replace=False)
    onset = np.full(FRAUD_ACCOUNTS, np.inf)
    onset[compromised] = rng.uniform(2, FRAUD_DAYS - 3, FRAUD_COMPROMISED) * 86_400
    # After the takeover, the fraudster uses the card often: move some transactions onto those accounts.
    moved = rng.random(n) < 0.008
    account[moved] = rng.choice(compromised, int(moved.sum()))
    label = (seconds >= onset[account]) & (rng.random(n) < 0.85)
    amount[label] = np.round(amount[label] * rng.uniform(1.5, 4.0, int(label.sum())), 2)
    logit = -4.0 + 2.6 * label + 0.35 * np.log(amount) + rng.normal(0.0, 1.3, n)
    score = np.round(1.0 / (1.0 + np.exp(-logit)), 6)
    stamps = (FRAUD_START + seconds.astype("timedelta64[s]")).astype(str)
    rows = [
        (
            f"t{i:06d}",
            f"{score[i]:.6f}",
            int(label[i]),
            f"{amount[i]:.2f}",
            f"acct{account[i]:04d}",
            f"{stamps[i]}Z",
        )
        for i in range(n)
    ]
    return _csv("id,score,label,amount,entity,timestamp", rows)


def _named_file(name: str, text: str) -> io.BytesIO:
    handle = io.BytesIO(text.encode())
    handle.name = name
    return handle


def demo_recsys_fraud_load(
    *, team: Team, uploaded_by: User
) -> tuple[RecommendationEvaluation, FraudScoreEvaluation]:
    """The team's demo recommendation set and fraud score set (found by name, else generated and
    uploaded), each evaluated in this process with the demo's options (found, else computed)."""
    recommendations = RecommendationSet.objects.filter(team=team, name=RECSYS_SET_NAME).first()
    if recommendations is None:
        texts = demo_recsys_texts()
        recommendations = recsys_fraud.recommendation_set_upload(
            team=team, name=RECSYS_SET_NAME, uploaded_by=uploaded_by,
            description=(
                f"A popularity-biased recommender's top {RECSYS_DEPTH} for {RECSYS_USERS} users over a catalog "
                f"of {RECSYS_ITEMS} items in {len(RECSYS_CATEGORIES)} categories, generated by the demo loader "
                f"(popularity falls off as a power law; {HELD_OUT_PER_USER} held-out interactions per user)."
            ),
            **{role: _named_file(f"{role}.csv", text) for role, text in texts.items()},
        )  # fmt: skip
    scores = FraudScoreSet.objects.filter(team=team, name=FRAUD_SET_NAME).first()
    if scores is None:
        scores = recsys_fraud.fraud_score_set_upload(
            team=team, name=FRAUD_SET_NAME, uploaded_by=uploaded_by,
            scores=_named_file("card-scores.csv", demo_fraud_text()),
            description=(
                f"A noisy card-fraud model's scores for {FRAUD_TRANSACTIONS:,} transactions of "
                f"{FRAUD_ACCOUNTS:,} accounts over {FRAUD_DAYS} days, {FRAUD_COMPROMISED} of them taken over; "
                "generated by the demo loader."
            ),
        )  # fmt: skip
    recsys_evaluation = recsys_fraud.recommendation_evaluation_create(
        recommendation_set=recommendations, created_by=uploaded_by, enqueue=False
    )
    if not recsys_evaluation.is_finished:
        recsys_fraud.recommendation_evaluation_run(evaluation_id=recsys_evaluation.pk)
        recsys_evaluation.refresh_from_db()
    fraud_evaluation = recsys_fraud.fraud_evaluation_create(
        score_set=scores, options=FRAUD_OPTIONS, created_by=uploaded_by, enqueue=False
    )
    if not fraud_evaluation.is_finished:
        recsys_fraud.fraud_evaluation_run(evaluation_id=fraud_evaluation.pk)
        fraud_evaluation.refresh_from_db()
    return recsys_evaluation, fraud_evaluation
