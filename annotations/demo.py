"""The demo judging project: Python questions judged against the standard library's help texts.

Documents are the 79 help topics of `pydoc_data.topics` (what `help("try")` prints); the queries are
questions a Python programmer asks. Every pooled pair carries the grade a careful judge would give
(`expected`), which picks the gold labels here and can drive simulated annotators later.

The data goes in through the same import code as real files, so the demo exercises it.

`demo_annotations_simulate` adds the answers of four simulated annotators, deterministic from a seed:
carol and dave are careful (the expected grade 82% of the time, else mostly one off; about 20 s a task), eve and
mallory careless (random grades, a few seconds a task, a fifth of them too fast). They answer every gold
task and the pairs of q01-q07; q08-q10 are left to alice and bob, who start with no answers. A qrels
build then keeps carol's and dave's labels and excludes eve's and mallory's. A careful annotator who
strays from the expected grade says why in a comment; with the default parameters a few pairs (q03/try,
q03/with, q05/lambda) are dropped for disagreement, so the adjudication queue has work from the start.
"""

from __future__ import annotations

import json
import random
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from pydoc_data.topics import topics as PYDOC_TOPICS
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import F, Q

from annotations import services
from annotations.imports import import_file
from annotations.models import (
    Annotation,
    Assignment,
    Document,
    GoldLabel,
    MachineJudge,
    MachineJudgeImport,
    Project,
    ProjectMembership,
    Task,
    Topic,
)
from evalplatform.roles import Role as PlatformRole

DEMO_SLUG = "python-help"
# The demo has 11 gold tasks; a careless annotator's too-fast answers do not count, so fewer remain.
DEMO_MIN_GOLD = 8


@dataclass(frozen=True)
class DemoQuery:
    qid: str
    text: str
    description: str
    expected: dict[str, int]  # pydoc topic -> grade a careful judge gives
    gold: tuple[str, ...] = field(default=())  # pairs whose expected grade is published as gold


DEMO_QUERIES: tuple[DemoQuery, ...] = (
    DemoQuery(
        "q01", "how do I catch multiple exceptions",
        "Handle several exception types with one except clause, or one after another.",
        {"try": 4, "exceptions": 3, "raise": 2, "with": 1, "compound": 1, "assert": 1, "lists": 0, "for": 0},
        gold=("try",),
    ),
    DemoQuery(
        "q02", "string formatting with f-strings",
        "How to embed expressions in string literals and control their format.",
        {"strings": 4, "formatstrings": 3, "string-methods": 2, "conversions": 0, "typesseq": 1, "booleans": 0,
         "numbers": 0},
        gold=("booleans",),
    ),
    DemoQuery(
        "q03", "what does the with statement do",
        "What happens when a block is entered and left under `with`, and which methods are called.",
        {"with": 4, "context-managers": 4, "compound": 2, "try": 2, "exceptions": 1, "del": 0, "import": 0},
        gold=("with",),
    ),
    DemoQuery(
        "q04", "difference between a list and a tuple",
        "Mutability, syntax and typical uses of lists versus tuples.",
        {"typesseq": 3, "typesseq-mutable": 3, "lists": 2, "sequence-types": 2, "slicings": 1, "dict": 0,
         "exprlists": 1},
        gold=("dict",),
    ),
    DemoQuery(
        "q05", "how do generators and yield work",
        "What a generator function returns and how `yield` suspends and resumes it.",
        {"yield": 4, "function": 2, "return": 2, "async": 1, "await": 1, "for": 1, "lambda": 0},
        gold=("yield",),
    ),
    DemoQuery(
        "q06", "sort a dictionary by value",
        "Produce the items of a dict ordered by their values.",
        {"typesmapping": 3, "dict": 2, "typesseq-mutable": 2, "lambda": 2, "comparisons": 1, "calls": 0,
         "while": 0},
        gold=("while",),
    ),
    DemoQuery(
        "q07", "how to import a module from another folder",
        "Import code that lives in a different directory or package.",
        {"import": 4, "typesmodules": 2, "execmodel": 1, "naming": 1, "global": 0, "pass": 0},
        gold=("import",),
    ),
    DemoQuery(
        "q08", "what is the difference between is and ==",
        "Identity comparison versus equality comparison.",
        {"comparisons": 4, "objects": 3, "operator-summary": 2, "booleans": 1, "truth": 1, "id-classes": 0,
         "imaginary": 0},
        gold=("comparisons",),
    ),
    DemoQuery(
        "q09", "how do decorators work",
        "What the @ syntax does to functions and classes.",
        {"function": 3, "class": 2, "calls": 1, "lambda": 1, "customization": 0, "break": 0},
        gold=("break",),
    ),
    DemoQuery(
        "q10", "integer division and modulo",
        "Floor division and the remainder of integers, and how they treat negative numbers.",
        {"binary": 4, "numeric-types": 2, "operator-summary": 2, "integers": 1, "numbers": 1, "power": 1,
         "floating": 1, "shifting": 0},
        gold=("binary",),
    ),
)  # fmt: skip

DEMO_GUIDELINES = """You will see a question a Python programmer asked and one page of Python's built-in help.
Rate how well the page answers the question, as if you had searched for it.

Consider: does the page answer the question? Would the programmer stop searching after reading it?

- Rate the page, not the question: a good page for a vague question can still be perfectly relevant.
- A page that only mentions the topic in passing is marginally relevant (1).
- A page that answers a related but different question is fairly relevant (2).
- If you are unsure between two grades, choose the lower one.
- Mark the pair unclear (u) only if you cannot judge it at all; skip (s) if you lack the knowledge."""

DEMO_EXAMPLES = [
    {
        "query": "how do I open a file for reading",
        "document": 'Built-in Functions: open(file, mode="r", ...) Open file and return a corresponding file object...',
        "grade": 4,
        "reason": "The page documents exactly the function the programmer needs.",
    },
    {
        "query": "how do I open a file for reading",
        "document": 'The "with" statement ... used to wrap the execution of a block with methods defined by a context manager...',
        "grade": 1,
        "reason": "Files are often opened in a with block, but the page does not say how to open one.",
    },
    {
        "query": "how do I open a file for reading",
        "document": 'The "while" statement is used for repeated execution as long as an expression is true...',
        "grade": 0,
        "reason": "Nothing about files.",
    },
]

DEMO_LEAD = "lead"
DEMO_ANNOTATORS = ("alice", "bob")


@dataclass(frozen=True)
class SimulatedAnnotator:
    username: str
    careful: bool
    # Careless annotators split the ordinary pairs: each takes those of one parity of their position.
    parity: int | None = None


SIMULATED_ANNOTATORS: tuple[SimulatedAnnotator, ...] = (
    SimulatedAnnotator("carol", careful=True),
    SimulatedAnnotator("dave", careful=True),
    SimulatedAnnotator("eve", careful=False, parity=0),
    SimulatedAnnotator("mallory", careful=False, parity=1),
)
SIMULATED_TOPICS = ("q01", "q02", "q03", "q04", "q05", "q06", "q07")
SIMULATION_SEED = 20_260_112
SIMULATION_START = datetime(2026, 1, 12, 9, 0, tzinfo=UTC)


def pydoc_document(key: str) -> tuple[str, str]:
    """(title, text) of a help topic: its first line is the title, underlined with asterisks."""
    lines = PYDOC_TOPICS[key].split("\n")
    underlined = len(lines) > 1 and set(lines[1].strip()) == {"*"}
    return lines[0].strip(), "\n".join(lines[2:] if underlined else lines[1:]).strip("\n")


def _write_files(folder: Path) -> dict[str, Path]:
    files = {
        "topics": folder / "topics.trec",
        "documents": folder / "documents.jsonl",
        "pool": folder / "pool.tsv",
        "gold": folder / "gold.qrels",
    }
    with files["topics"].open("w") as out:
        for query in DEMO_QUERIES:
            out.write(
                f"<top>\n<num> Number: {query.qid}\n<title> {query.text}\n\n<desc> Description:\n"
                f"{query.description}\n\n</top>\n\n"
            )
    with files["documents"].open("w") as out:
        for key in sorted(PYDOC_TOPICS):
            title, text = pydoc_document(key)
            out.write(json.dumps({"doc_id": key, "title": title, "text": text}) + "\n")
    with files["pool"].open("w") as out:
        out.write("".join(f"{q.qid}\t{key}\n" for q in DEMO_QUERIES for key in q.expected))
    with files["gold"].open("w") as out:
        out.write("".join(f"{q.qid} 0 {key} {q.expected[key]}\n" for q in DEMO_QUERIES for key in q.gold))
    return files


@transaction.atomic
def demo_project_create() -> Project:
    """Create or refresh the demo project; running it twice leaves the same project."""
    users = get_user_model().objects.in_bulk([DEMO_LEAD, *DEMO_ANNOTATORS], field_name="username")
    lead = users[DEMO_LEAD]
    project = Project.objects.filter(slug=DEMO_SLUG).first()
    if project is None:
        project = services.project_create(creator=lead, slug=DEMO_SLUG, name="Python help search")
    project.description = "Which page of Python's built-in help answers a programmer's question?"
    project.guidelines = DEMO_GUIDELINES
    project.guideline_examples = DEMO_EXAMPLES
    project.overlap = 3
    project.min_seconds_per_task = 5
    project.min_gold_items = DEMO_MIN_GOLD
    project.save()
    services.membership_set(project=project, user=lead, role=ProjectMembership.Role.LEAD)
    for username in DEMO_ANNOTATORS:
        services.membership_set(project=project, user=users[username], role=ProjectMembership.Role.ANNOTATOR)
    with tempfile.TemporaryDirectory() as folder:
        for kind, path in _write_files(Path(folder)).items():
            import_file(project=project, kind=kind, path=path)
    _attention_check(project)
    return project


#: The attention check's document id: like the help topics' ids, so that nothing an id shows (in a URL, a
#: log, an export) tells the check apart. It was `attention-check-1`; a refreshed demo renames it.
ATTENTION_CHECK_DOC_ID = "exception-handling"
_FORMER_ATTENTION_CHECK_DOC_ID = "attention-check-1"


def _attention_check(project: Project) -> None:
    topic = Topic.objects.get(project=project, qid="q01")
    Document.objects.filter(project=project, doc_id=_FORMER_ATTENTION_CHECK_DOC_ID).update(
        doc_id=ATTENTION_CHECK_DOC_ID
    )
    if Task.objects.filter(project=project, attention_check__isnull=False).exists():
        return
    services.attention_check_create(
        project=project,
        topic=topic,
        doc_id=ATTENTION_CHECK_DOC_ID,
        title="Exception handling",
        text=(
            "Exceptions are raised when an error occurs and can be handled with try and except.\n\n"
            "This paragraph checks that judges read the page: whatever the question, please rate this page "
            "as not relevant (0)."
        ),
        expected_grade=0,
        reason="The text asks for grade 0.",
    )


def demo_summary(project: Project) -> dict[str, int]:
    return {
        "topics": project.topics.count(),
        "documents": Document.objects.filter(project=project).count(),
        "tasks": project.tasks.count(),
        "gold_tasks": project.tasks.filter(is_gold=True).count(),
        "answers": project.annotations.count(),
    }


# --- simulated annotators -----------------------------------------------------------------------------


def _simulated_users() -> dict[str, Any]:
    """The simulated annotators' accounts: annotators with no usable password (nobody logs in as them)."""
    user_model = get_user_model()
    group, _ = Group.objects.get_or_create(name=PlatformRole.ANNOTATOR.value)
    users = {}
    for simulated in SIMULATED_ANNOTATORS:
        user, created = user_model.objects.get_or_create(
            username=simulated.username,
            defaults={"first_name": simulated.username.title(), "email": f"{simulated.username}@example.org"},
        )
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
        user.groups.add(group)
        users[simulated.username] = user
    return users


def expected_grades(project: Project) -> dict[int, int]:
    """Task id -> the grade a careful judge gives (gold labels for gold tasks)."""
    expected = {(q.qid, key): grade for q in DEMO_QUERIES for key, grade in q.expected.items()}
    rows = Task.objects.filter(project=project).values_list("id", "topic__qid", "document__doc_id")
    grades = {task_id: expected[(qid, doc)] for task_id, qid, doc in rows if (qid, doc) in expected}
    grades.update(GoldLabel.objects.filter(task__project=project).values_list("task_id", "grade"))
    return grades


@transaction.atomic
def demo_annotations_simulate(project: Project) -> int:
    """Answer the demo project as carol, dave, eve and mallory; returns the answers created (0 if done before).

    The project switches to flagging too-fast answers (rather than refusing them), which is how the
    careless annotators' hurried answers are on record.
    """
    users = _simulated_users()
    for user in users.values():
        services.membership_set(project=project, user=user, role=ProjectMembership.Role.ANNOTATOR)
    if Annotation.objects.filter(project=project, annotator__in=users.values()).exists():
        return 0
    project.too_fast_policy = Project.TooFastPolicy.FLAG
    project.save(update_fields=["too_fast_policy"])
    expected = expected_grades(project)
    # The imported pairs only: a pool built from runs later may add pairs no careful grade is known for.
    tasks = [
        task
        for task in Task.objects.filter(project=project)
        .filter(Q(is_gold=True) | Q(topic__qid__in=SIMULATED_TOPICS))
        .order_by("pk")
        if task.pk in expected
    ]
    rng = random.Random(SIMULATION_SEED)
    answers = []
    for simulated in SIMULATED_ANNOTATORS:
        mine = [
            task for position, task in enumerate(tasks)
            if task.is_gold or simulated.parity is None or position % 2 == simulated.parity
        ]  # fmt: skip
        rng.shuffle(mine)
        moment = SIMULATION_START
        for task in mine:
            grade, seconds = simulated_answer(rng, careful=simulated.careful, expected=expected[task.pk])
            comment = _simulated_comment(careful=simulated.careful, grade=grade, expected=expected[task.pk])
            answers.append((users[simulated.username], task, grade, seconds, moment, comment))
            moment += timedelta(seconds=seconds + rng.uniform(1, 4))
    store_answers(project, answers)
    return len(answers)


def simulated_answer(rng: random.Random, *, careful: bool, expected: int) -> tuple[int, float]:
    if careful:
        draw = rng.random()
        off = 0 if draw < 0.82 else rng.choice((-1, 1)) * (1 if draw < 0.96 else 2)
        grade = min(4, max(0, expected + off))
        return grade, round(min(120.0, max(8.0, rng.lognormvariate(3.1, 0.35))), 1)
    return rng.randint(0, 4), round(rng.uniform(3.5, 11.0), 1)


def _simulated_comment(*, careful: bool, grade: int, expected: int) -> str:
    """What a careful annotator notes when unsure (they stray from the expected grade); careless ones never
    comment. Uses no randomness, so the answers are the same as without comments."""
    if not careful or grade == expected:
        return ""
    if grade < expected:
        return "Only part of the page is about the question, so I chose the lower grade."
    return "The page answers the question well enough, I think, though not directly."


def store_answers(project: Project, answers: list[tuple[Any, Task, int, float, datetime, str]]) -> None:
    """Assignments and annotations in bulk, and the task counters they imply."""
    minimum = project.min_seconds_per_task
    assignments = Assignment.objects.bulk_create(
        [
            Assignment(
                project=project, task=task, annotator=user,
                state=Assignment.State.RELEASED if seconds < minimum else Assignment.State.LABELLED,
                reserved_at=start, expires_at=start + project.reservation_timeout,
                answered_at=start + timedelta(seconds=seconds),
            )
            for user, task, _, seconds, start, _ in answers
        ]
    )  # fmt: skip
    Annotation.objects.bulk_create(
        [
            Annotation(
                assignment=assignment, project=project, task=task, annotator=user, grade=grade,
                seconds_spent=seconds, too_fast=seconds < minimum, created_at=assignment.answered_at,  # type: ignore[misc]
                comment=comment,
            )
            for assignment, (user, task, grade, seconds, _, comment) in zip(assignments, answers, strict=True)
        ]
    )  # fmt: skip
    counted: dict[int, int] = {}
    for assignment in assignments:
        if assignment.state == Assignment.State.LABELLED:
            counted[assignment.task_id] = counted.get(assignment.task_id, 0) + 1
    for task_id in sorted(counted):
        Task.objects.filter(pk=task_id).update(
            assigned_count=F("assigned_count") + counted[task_id],
            label_count=F("label_count") + counted[task_id],
        )


# --- a simulated machine judge --------------------------------------------------------------------------

DEMO_JUDGE = "umbrela-sim"
DEMO_JUDGE_SEED = 20_261_127
#: The routing the demo runs once, so the judge's page lists routed pairs.
DEMO_ROUTE = {"budget": 12, "confidence_below": 0.5, "topic_agreement_below": 0.5, "sample_share": 0.1}


def demo_machine_labels(project: Project) -> list[dict[str, Any]]:
    """A noisy, lenient copy of the careful judge's grades for every task, with confidences, seeded.

    A quarter of the grades are one higher (the judge is lenient), one in twenty one lower; a grade the
    judge changed carries a lower confidence (0.25-0.65) than one it kept (0.55-0.99), so the confidence
    bands on its page mean something, as a fair LLM judge's do.
    """
    rng = random.Random(DEMO_JUDGE_SEED)
    top = max(project.grades)
    expected = expected_grades(project)
    rows = Task.objects.filter(project=project).order_by("topic__qid", "document__doc_id")
    labels = []
    for task_id, qid, doc_id in rows.values_list("id", "topic__qid", "document__doc_id"):
        if task_id not in expected:
            continue
        draw = rng.random()
        grade = expected[task_id] + (1 if draw < 0.25 else -1 if draw < 0.30 else 0)
        grade = min(top, max(0, grade))
        changed = grade != expected[task_id]
        confidence = round(rng.uniform(0.25, 0.65) if changed else rng.uniform(0.55, 0.99), 2)
        rationale = "partly answers the question" if changed else "matches the question"
        labels.append(
            {"qid": qid, "doc_id": doc_id, "label": grade, "confidence": confidence, "rationale": rationale}
        )
    return labels


def demo_machine_judge_load(project: Project) -> MachineJudge:
    """Import the simulated judge's labels through the same import as a file of real ones, then route its
    doubtful pairs once; both are idempotent, so loading the demo again changes nothing."""
    from annotations.machine_judges.routing import RouteParams, judge_route
    from annotations.machine_judges.services import judge_labels_import

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{DEMO_JUDGE}.jsonl"
        path.write_text(
            "".join(json.dumps(row) + "\n" for row in demo_machine_labels(project)), encoding="utf-8"
        )
        result = judge_labels_import(
            project=project, name=DEMO_JUDGE, path=path, kind=MachineJudge.Kind.LLM,
            model="simulated: a noisy, lenient copy of the expected grades",
            configuration="UMBRELA-style prompt (simulated; no model was called)",
        )  # fmt: skip
    judge = MachineJudge.objects.select_related("project").get(pk=result.judge)
    judge_route(judge=judge, params=RouteParams(seed=DEMO_JUDGE_SEED % 1000, **DEMO_ROUTE))  # type: ignore[arg-type]
    return judge


# --- a simulated search log, as a click-model judge -----------------------------------------------------

DEMO_CLICK_JUDGE = "clicks-dbn-sim"
DEMO_CLICK_LOG = "python-help-clicks.csv"
DEMO_CLICK_SEED = 20_261_128
DEMO_CLICK_SESSIONS = 80  # per query
#: Per expected grade 0-4: the chance a result catches the eye (attractiveness), and that a click on it
#: ends the search (satisfaction). Their product, DBN's relevance, lands inside the default boundaries'
#: bucket of each grade, so a perfect fit gives the expected grade; the log's noise and the positions
#: make the fit miss some, as a real one would.
DEMO_ATTRACT = (0.15, 0.45, 0.63, 0.77, 0.9)
DEMO_SATISFY = (0.15, 0.45, 0.63, 0.77, 0.9)
DEMO_CONTINUATION = 0.8


def demo_click_log(project: Project) -> str:
    """A search log (CSV) of people asking the demo's questions, as typed (each topic's title): every
    session shows up to six of the topic's pooled help pages in a random order, and clicks follow the
    dynamic Bayesian network model from the pages' expected grades. Seeded: the same text every time."""
    rng = random.Random(DEMO_CLICK_SEED)
    expected = expected_grades(project)
    pages: dict[tuple[str, str], list[tuple[str, int]]] = {}
    rows = Task.objects.filter(project=project).order_by("topic__qid", "document__doc_id")
    for task_id, qid, title, doc_id in rows.values_list(
        "id", "topic__qid", "topic__title", "document__doc_id"
    ):
        if task_id in expected:
            pages.setdefault((qid, title), []).append((doc_id, expected[task_id]))
    lines = ["session,query,doc,position,clicked"]
    for (qid, title), docs in pages.items():
        for s in range(DEMO_CLICK_SESSIONS):
            shown = rng.sample(docs, min(6, len(docs)))
            examined = True
            for position, (doc_id, grade) in enumerate(shown, start=1):
                grade = min(grade, 4)
                clicked = examined and rng.random() < DEMO_ATTRACT[grade]
                lines.append(f"{qid}-{s},{_csv_field(title)},{doc_id},{position},{int(clicked)}")
                satisfied = clicked and rng.random() < DEMO_SATISFY[grade]
                examined = examined and not satisfied and rng.random() < DEMO_CONTINUATION
    return "\n".join(lines) + "\n"


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def demo_click_judge_load(project: Project) -> MachineJudge:
    """Import the simulated log through the same job as an uploaded one (DBN, the default grade
    boundaries), run here in the process; the judges' page lists it. Idempotent: a done import of the
    demo's log is not made again."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotations.machine_judges.clicks import ClickImportParams
    from annotations.machine_judges.imports import judge_import_create, judge_import_run

    done = MachineJudgeImport.objects.filter(project=project, original_name=DEMO_CLICK_LOG, status="done")
    job = done.order_by("pk").first()
    if job is None:
        params = ClickImportParams(model="dbn", name=DEMO_CLICK_JUDGE, min_impressions=10)
        job = judge_import_create(
            project=project, source=MachineJudgeImport.Source.CLICK_LOG, parameters=params.as_dict(),
            upload=SimpleUploadedFile(DEMO_CLICK_LOG, demo_click_log(project).encode()), enqueue=False,
        )  # fmt: skip
        judge_import_run(job_id=job.pk)
        job.refresh_from_db()
    if job.judge_id is None:
        raise RuntimeError(f"the demo's search log was not imported: {job.error}")
    return MachineJudge.objects.select_related("project").get(pk=job.judge_id)
