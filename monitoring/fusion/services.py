"""Fusing a team's runs into a new run of the team: `fusion_create` checks the request and queues the job
on commit; `fusion_run`, the task's one call, reads the input runs (and, to optimise, the qrels), fuses
them with `evalcore.fusion` exactly as `manage.py fuse_runs` does, and stores the fused TREC file as a
run of the team (`monitoring.files.uploads.run_upload`, as an upload), with its provenance on the job row.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from django.db import transaction

from evalcore.errors import EvalCoreError
from evalcore.fusion import (
    METHOD_OPTION,
    WEIGHTED_METHODS,
    FusionParams,
    OptionError,
    fuse,
    optimization_json,
    optimize_fusion,
    write_trec_run,
)
from evalcore.retrieval import UnknownMeasureError, parse_measure
from evalplatform.auth import User
from evalplatform.errors import InputError
from evalplatform.jobs import JobError, JobOutcome, ProgressFn, job_enqueue_on_commit, job_run
from evalplatform.models import Team
from monitoring.evaluations.services import read_qrels, read_run
from monitoring.files.uploads import run_upload
from monitoring.fusion.models import (
    DEFAULT_DEPTH,
    DEFAULT_FOLDS,
    DEFAULT_MEASURE,
    DEFAULT_STEP,
    DEFAULTS,
    Fusion,
)
from monitoring.models import QrelsSource, Run

#: The job's hard time limit on the worker.
TIME_LIMIT = 30 * 60
#: What `optimize` can search: the weights of these methods, or rrf's k.
OPTIMIZABLE = (*WEIGHTED_METHODS, "rrf")


class OptionInputError(InputError):
    """A method's option refused: `option` names the field (the form and the API show the message there)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


def fusion_params(
    *, method: str, norm: str | None, weights: Sequence[float] | None, k: float, runs: int,
    gamma: float = DEFAULTS.gamma, sigma: float = DEFAULTS.sigma, phi: float = DEFAULTS.phi,
) -> FusionParams:  # fmt: skip
    """The fusion's parameters checked as evalcore checks them; InputError with the reason
    (`OptionInputError`, naming the option, for an option out of its range)."""
    try:
        params = FusionParams(
            method, norm=norm, weights=tuple(weights) if weights else None, k=k, gamma=gamma, sigma=sigma,
            phi=phi,
        )  # fmt: skip
    except OptionError as error:
        raise OptionInputError(error.option, str(error)) from None
    except ValueError as error:
        raise InputError(str(error)) from None
    if params.weights is not None:
        if params.method not in WEIGHTED_METHODS:
            raise InputError(f"Only {', '.join(WEIGHTED_METHODS)} take weights, not {params.method}.")
        if len(params.weights) != runs:
            raise InputError(f"Give one weight per run: {len(params.weights)} weights for {runs} runs.")
    return params


def check_measure(measure: str) -> str:
    """A measure the search can maximise: one arithmetic-mean measure of the registry."""
    try:
        specs = parse_measure(measure)
    except (UnknownMeasureError, ValueError) as error:
        raise InputError(str(error)) from None
    if len(specs) != 1 or specs[0].measure.text or specs[0].key.startswith("gm_"):
        raise InputError(f"{measure}: give one arithmetic-mean measure, such as map or ndcg_cut_10.")
    return measure


def check_step(step: float) -> float:
    """A weight grid step that divides 1, as `evalcore.fusion.optimize.weight_grid` needs."""
    units = round(1.0 / step) if step > 0 else 0
    if units < 1 or abs(units * step - 1.0) > 1e-9:
        raise InputError(f"The weight step must divide 1 (0.1, 0.25, ...), not {step:g}.")
    return step


@transaction.atomic
def fusion_create(
    *,
    team: Team,
    runs: Sequence[Run],
    method: str,
    norm: str | None = DEFAULTS.norm,
    weights: Sequence[float] | None = None,
    k: float = DEFAULTS.k,
    gamma: float = DEFAULTS.gamma,
    sigma: float = DEFAULTS.sigma,
    phi: float = DEFAULTS.phi,
    qrels: QrelsSource | None = None,
    measure: str = DEFAULT_MEASURE,
    folds: int = DEFAULT_FOLDS,
    step: float = DEFAULT_STEP,
    seed: int = 0,
    name: str = "",
    depth: int = DEFAULT_DEPTH,
    created_by: User | None = None,
    enqueue: bool = True,
) -> Fusion:
    """A fusion of two or more of the team's runs (in the order given: the weights follow it), queued on
    commit. With `qrels`, the weights (wsum, wmnz) or k (rrf) are chosen by grid search on it, with
    `folds`-fold cross-validation over queries reporting the held-out score of `measure`."""
    distinct = list({run.pk: run for run in runs}.values())
    if len(distinct) < 2:
        raise InputError("Choose at least two different runs to fuse.")
    if any(run.team_id != team.pk for run in distinct) or (qrels is not None and qrels.team_id != team.pk):
        raise InputError("Every run and the qrels must belong to the team.")
    params = fusion_params(
        method=method, norm=norm, weights=weights, k=k, gamma=gamma, sigma=sigma, phi=phi, runs=len(distinct)
    )
    if depth < 1:
        raise InputError("The depth must be at least 1.")
    if qrels is not None:
        if params.method not in OPTIMIZABLE:
            raise InputError(f"Only {', '.join(OPTIMIZABLE)} can be optimised, not {params.method}.")
        check_measure(measure)
        if folds < 2:
            raise InputError("Cross-validation needs at least 2 folds.")
        check_step(step)
    fusion = Fusion.objects.create(
        team=team, inputs=[{"id": run.pk, "name": run.name} for run in distinct], method=params.method,
        norm=params.norm or "", weights=list(params.weights) if params.weights is not None else None,
        k=params.k, gamma=params.gamma, sigma=params.sigma, phi=params.phi, depth=depth,
        name=(name.strip() or f"fused-{params.method}")[:200], qrels=qrels,
        optimize=qrels is not None, measure=measure if qrels is not None else "", folds=folds, seed=seed,
        step=step, created_by=created_by,
    )  # fmt: skip
    if enqueue:
        job_enqueue_on_commit(fusion)
    return fusion


@dataclass(frozen=True)
class FusionOutput:
    path: Path
    lines: int
    queries: int
    params: FusionParams
    optimization: dict[str, Any] | None


def fusion_run(*, fusion_id: int) -> JobOutcome:
    """Claim, compute and store a fusion (the task's one call). Idempotent: a finished fusion is not
    fused again, and the fused run is stored in the transaction that marks the job done."""
    with tempfile.TemporaryDirectory(prefix="fusion-") as folder:
        compute = partial(_fuse, folder=Path(folder))
        return job_run(Fusion, pk=fusion_id, compute=compute, store=_store_fusion)


def _fuse(fusion: Fusion, progress: ProgressFn, *, folder: Path) -> FusionOutput:
    found = {run.pk: run for run in Run.objects.filter(team_id=fusion.team_id, pk__in=fusion.input_ids)}
    gone = [item["name"] for item in fusion.inputs if int(item["id"]) not in found]
    if gone:
        raise JobError(f"Input runs deleted since the fusion was asked for: {', '.join(gone)}.")
    runs = []
    for index, pk in enumerate(fusion.input_ids):
        progress(0.6 * index / len(found), f"reading {found[pk].name}")
        runs.append(read_run(found[pk]))
    params, optimization = fusion.params(), None
    try:
        if fusion.optimize:
            if fusion.qrels_id is None:
                raise JobError("The qrels to optimise on were deleted.")
            progress(0.6, "reading the qrels")
            qrels = read_qrels(fusion.qrels)  # type: ignore[arg-type]
            progress(0.65, "searching the weights")
            found_opt = optimize_fusion(
                runs, qrels, params, measure=fusion.measure, folds=fusion.folds, seed=fusion.seed, step=fusion.step,
            )  # fmt: skip
            params, optimization = found_opt.params, optimization_json(found_opt)
        progress(0.9, "fusing")
        fused = fuse(runs, params, run_id=fusion.tag)
        path = folder / f"{fusion.name}.run".replace("/", "-")
        lines = write_trec_run(fused, path, tag=fusion.tag, depth=fusion.depth)
    except (EvalCoreError, UnknownMeasureError, ValueError) as error:
        raise JobError(str(error)) from None
    return FusionOutput(path, lines, fused.num_queries, params, optimization)


def provenance_text(fusion: Fusion, params: FusionParams, optimization: dict[str, Any] | None) -> str:
    """One line saying how the run was made, for the run's description."""
    names = ", ".join(item["name"] for item in fusion.inputs)
    text = f"Fusion #{fusion.pk}: {params.method} (norm {params.norm or 'none'}) of {names}"
    if params.weights is not None:
        text += "; weights " + ",".join(f"{w:g}" for w in params.weights)
    option = METHOD_OPTION.get(params.method)
    if option is not None:
        text += f"; {option}={getattr(params, option):g}"
    if optimization is not None and fusion.qrels is not None:
        held_out = optimization["mean_test_score"]
        text += (
            f"; chosen on {fusion.qrels.name} by {fusion.folds}-fold cross-validation, held-out "
            f"{optimization['measure']} {held_out:.4f}"
            if held_out is not None
            else ""
        )
    return text + "."


def _store_fusion(fusion: Fusion, output: FusionOutput) -> None:
    with output.path.open("rb") as handle:
        run = run_upload(
            team=fusion.team, upload=handle, name=fusion.name, fmt="trec", uploaded_by=fusion.created_by,
            description=provenance_text(fusion, output.params, output.optimization),
            tags=["fused", output.params.method],
        )  # fmt: skip
    Run.objects.filter(pk=run.pk).update(num_queries=output.queries, num_rows=output.lines)
    fusion.result = run
    fusion.num_queries, fusion.num_rows = output.queries, output.lines
    fusion.optimization = output.optimization
    if output.params.weights is not None:
        fusion.weights = list(output.params.weights)
    fusion.k = output.params.k
