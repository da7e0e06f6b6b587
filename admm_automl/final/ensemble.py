"""Constraint-aware ensemble selection (Caruana et al., ICML 2004; Liu et al., AAAI 2020, appendix
on ensembles).

Greedy forward selection *with replacement* over the validation predictions of the evaluated
pipelines (out-of-fold with cross-validation) that the search kept in memory: start empty, and
``size`` times add the pipeline whose addition gives the averaged predictions (class probabilities,
or regression values) the lowest loss. The ensemble is the best prefix of that sequence, so its
validation loss is never above the best single member's (the first step picks it). Weights are the
counts of each member.

With constraints, only pipelines that met them are candidates, and the ensemble itself is then
measured like a pipeline — fitted on each split's training rows, every constraint measured on the
validation rows (latency, disparate impact, metric bounds, model size) — and kept only if it meets
them all. The result is a plain scikit-learn :class:`~sklearn.ensemble.VotingClassifier` (soft
voting) or :class:`~sklearn.ensemble.VotingRegressor` of the member pipelines with their weights;
the best single pipeline, refitted anyway, joins it as it is (scikit-learn's ``FrozenEstimator``)
rather than being fitted a second time.

A stack layer (:mod:`.stacking`: a second-layer model fitted on the members' out-of-fold
predictions) is tried over the weighted ensemble's members and the best candidate of each
learner they do not use (while their refits fit in the time left), and replaces the weighted
average when its own out-of-fold loss is lower than the weighted ensemble's and the best single
pipeline's.

A pipeline that ends in a fairness mitigation (:mod:`admm_automl.constraints.mitigation`) is
never a member, and no ensemble is built when the best pipeline is one: a mitigation meets its
constraint by predicting at random between two decisions for some rows, while soft voting
thresholds the average of the members' probabilities, which keeps neither member's group rates
and moves them by whole bands of rows when a mixing probability crosses the threshold (on
compas, two threshold-optimized members at 0.065 and 0.067 equalized odds difference on the test
rows made a weighted ensemble at 0.20, after 0.048 measured over the folds).

With cross-validation (and no constraints) the members are bags of the fold models their
evaluations fitted (:mod:`.bagging`), kept from the search, rather than refits on all rows.

Under a time budget the members must also be refitted in what is left of it: each candidate's
refit time is estimated from its measured fit time
(:func:`~admm_automl.final.library.refit_seconds_estimate`; with constraints, plus the fits that measure
the ensemble), and a step may add a new member only while the estimated refits of all members fit
in the time left (``time_left``); choosing a member again costs nothing.

Choices where the papers are silent: the candidates are the best :data:`ENSEMBLE_POOL` (Liu et
al.'s e_max = 32) by the constraints' rank and the best of each learner; losses are compared on
the pooled validation predictions (with cross-validation this is the loss of all out-of-fold
predictions at once, which for AUROC differs slightly from the mean of the folds' losses that
``best_loss_`` reports), and an ensemble is used only when it is strictly better than the best
single pipeline on that measure and has at least two members.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone

from ..constraints.base import combine_splits, measure_all
from ..constraints.mitigation import is_mitigated
from ..evaluation.data import take_rows
from ..evaluation.splits import nested_order
from ..evaluation.trial import TrialContext
from ..records import Observation
from .labels import fit_on_labels
from .library import ENSEMBLE_POOL
from .outcome import Evaluation, SearchOutcome
from .stacking import StackedClassifier, StackedRegressor, final_layer, meta_features, \
    stack_out_of_fold

__all__ = ["ENSEMBLE_POOL", "EnsembleChoice", "build_ensemble", "ensemble_selection",
           "fit_ensemble", "held_out_losses"]


def ensemble_selection(
    predictions: Sequence[np.ndarray], loss: Callable[[np.ndarray], float], size: int,
    costs: Sequence[float] | None = None, allowance: float | None = None, bags: int = 1,
    random_state: int = 0,
) -> tuple[np.ndarray, float]:
    """Greedy ensemble selection with replacement (Caruana et al., 2004), bagged or not.

    Parameters
    ----------
    predictions : sequence of arrays
        The candidates' validation predictions, all of one shape; ties go to the earlier one.
    loss : callable
        Loss of averaged predictions (lower is better).
    size : int
        Selection steps.
    costs, allowance : sequence of float, float, optional
        A candidate's cost is paid when it first joins; a step considers only the members so far
        and the candidates whose cost still fits in ``allowance`` (the selection ends early when
        none does). None: no limit.
    bags : int, default=1
        With more than one, *bagged* ensemble selection (Caruana et al. 2004, their remedy for
        a selection that overfits the rows it hill-climbs on): ``bags`` selections, each over a
        random half of the candidates (each kept with probability 1/2, seeded by
        ``random_state``), whose weights, each bag's normalised to sum to 1, are averaged. A
        candidate's cost is paid once, by the first bag that takes it.

    Returns
    -------
    weights : array
        How often each candidate was chosen in the best prefix (int counts); bagged, the
        average of the bags' normalised counts (floats summing to 1).
    best_loss : float
        The loss of the weighted average.
    """
    if size < 1 or not len(predictions):
        raise ValueError(f"need size >= 1 and candidates, got size={size!r}, "
                         f"{len(predictions)} candidates")
    if bags < 1:
        raise ValueError(f"need bags >= 1, got {bags!r}")
    paid = np.zeros(len(predictions), dtype=bool)
    if bags == 1:
        return _greedy(predictions, loss, size, costs, allowance, paid)
    rng = np.random.default_rng(random_state)
    weights = np.zeros(len(predictions))
    for _ in range(bags):
        bag = rng.random(len(predictions)) < 0.5
        if not bag.any():
            bag[rng.integers(len(predictions))] = True
        counts, _ = _greedy(predictions, loss, size, costs, allowance, paid, bag)
        if counts.any():
            weights += counts / counts.sum()
            paid |= counts > 0
    if not weights.any():
        return weights, np.inf
    weights /= weights.sum()
    return weights, float(loss(np.tensordot(weights, np.stack(predictions), axes=1)))


def _greedy(predictions: Sequence[np.ndarray], loss: Callable[[np.ndarray], float], size: int,
            costs: Sequence[float] | None, allowance: float | None, paid: np.ndarray,
            bag: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """One greedy selection (:func:`ensemble_selection`) over the candidates in ``bag`` (all
    when None); those ``paid`` for already (by an earlier bag) join at no cost."""
    counts = np.zeros(len(predictions), dtype=int)
    total = np.zeros_like(np.asarray(predictions[0], dtype=float))
    best_counts, best_loss = counts, np.inf
    spent = 0.0 if costs is None else float(np.sum(np.asarray(costs)[paid]))
    pool = range(len(predictions)) if bag is None else np.flatnonzero(bag)
    for step in range(1, size + 1):
        eligible = [j for j in pool if counts[j] or paid[j] or allowance is None
                    or costs is None or spent + costs[j] <= allowance]
        if not eligible:
            break
        losses = [loss((total + predictions[j]) / step) for j in eligible]
        j = eligible[int(np.argmin(losses))]
        if not counts[j] and not paid[j] and costs is not None:
            spent += costs[j]
        counts = counts.copy()
        counts[j] += 1
        total = total + predictions[j]
        if min(losses) < best_loss:
            best_counts, best_loss = counts, float(min(losses))
    return best_counts, best_loss


class _Fixed(BaseEstimator):
    """A stand-in estimator that returns given predictions, so that any scorer (built-in or the
    user's) scores averaged predictions as it scores a fitted pipeline."""

    def __init__(self, values: np.ndarray, classes: np.ndarray | None = None) -> None:
        self.values = values
        self.classes = classes

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.values

    def predict(self, X: Any) -> np.ndarray:
        if self.classes is None:
            return self.values
        return self.classes[np.argmax(self.values, axis=1)]


class _FixedClassifier(ClassifierMixin, _Fixed):
    @property
    def classes_(self) -> np.ndarray:
        return self.classes


class _FixedRegressor(RegressorMixin, _Fixed):
    pass


def pooled_rows(ctx: TrialContext) -> np.ndarray:
    """The validation rows of every split, in split order: the rows of the kept (pooled
    out-of-fold) predictions."""
    return np.concatenate([split.valid for split in ctx.splits])


def pooled_targets(ctx: TrialContext) -> np.ndarray:
    """The targets of :func:`pooled_rows`."""
    return ctx.y[pooled_rows(ctx)]


def prediction_loss(ctx: TrialContext, positions: np.ndarray | None = None
                    ) -> Callable[[np.ndarray], float]:
    """Loss of pooled validation predictions (rows in split order) under the run's metric; with
    ``positions``, of predictions of those pooled positions only."""
    y = pooled_targets(ctx)
    if positions is not None:
        y = y[positions]
    fast = ctx.metric.shortcut(y, ctx.labels)  # the scorer's value without its checks
    if fast is not None:
        return fast
    scorer = ctx.metric.make_scorer(ctx.labels)
    dummy_X = np.zeros((len(y), 1))

    def loss(values: np.ndarray) -> float:
        fixed = (_FixedClassifier(values, ctx.labels) if ctx.labels is not None
                 else _FixedRegressor(values))
        return ctx.metric.loss(scorer, fixed, dummy_X, y)

    return loss


@dataclass
class EnsembleChoice:
    """A selected ensemble (unfitted), its members' weights by eval_id, its pooled validation loss
    and that of the best single pipeline, and its measured constraint values."""

    model: Any
    weights: dict[int, float]
    loss: float
    single_loss: float
    constraints: dict[str, float]
    #: "weighted" (the members' predictions averaged with ``weights``) or "stack" (a second
    #: layer fitted on their out-of-fold predictions, :mod:`.stacking`; every weight 1)
    kind: str = "weighted"


def build_ensemble(outcome: SearchOutcome, size: int, best_eval_id: int,
                   time_left: float | None = None, stacking: bool = True,
                   check: str = "in_sample", bags: int = 1) -> EnsembleChoice | None:
    """The ensemble of a finished search (module docstring), or None when there is none to build
    (in ``time_left`` seconds, if given), it is not better than the best single pipeline
    (``best_eval_id``), or it misses a constraint. ``check="held_out"`` also asks of each kind
    of ensemble that its selection beat the single best on rows it was not selected on
    (:func:`held_out_losses`); ``bags`` > 1 selects the weighted ensemble by bagged selection
    (:func:`ensemble_selection`, seeded by the run's seed)."""
    ctx, constraints = outcome.task.context, outcome.constraints
    kept = outcome.predictions
    if size < 1 or best_eval_id not in kept:
        return None
    if time_left is not None:  # a search that ran to the end of its budget leaves it below 0:
        time_left = max(time_left, 0.0)  # what costs nothing to fit (the bags) still fits
    evaluations = outcome.by_eval_id
    observed = {i: evaluations[i].observation for i in kept}
    candidates = sorted((i for i in kept if not len(constraints) or constraints.feasible(observed[i])),
                        key=lambda i: constraints.rank(observed[i]))
    if best_eval_id not in candidates:  # nothing met the constraints: the least violating stays
        return None
    if is_mitigated(evaluations[best_eval_id].config):  # module docstring: never averaged
        return None
    candidates = [i for i in candidates if not is_mitigated(evaluations[i].config)]
    loss = prediction_loss(ctx)
    predictions = [kept[i] for i in candidates]
    costs = None
    if time_left is not None:
        n_rows = len(ctx.y)
        # with constraints, measuring the ensemble fits it once more per split
        measuring = (sum(len(split.train) for split in ctx.splits) / n_rows
                     if len(constraints) else 0.0)
        refit = {i: evaluations[i].refit_seconds for i in candidates}
        costs = [_fit_cost(outcome, evaluations[i], refit[i], i == best_eval_id)
                 + measuring * refit[i] for i in candidates]
    seed = _seed(ctx)
    counts, ens_loss = ensemble_selection(predictions, loss, size, costs, time_left, bags, seed)
    single_loss = loss(kept[best_eval_id])
    weights = {candidates[j]: c.item() for j, c in enumerate(counts) if c}
    options = []  # (validation loss, kind, member weights, unfitted model), the better first
    if len(weights) >= 2 and ens_loss < single_loss:
        options.append((ens_loss, "weighted", weights, _voting(ctx, evaluations, weights)))
    stack_oof = None
    if stacking:
        members = _stack_members(evaluations, candidates, weights, costs, time_left)
        stack = None if len(members) < 2 else _stack(ctx, evaluations, members, kept, loss)
        if stack is not None and stack[0] < min(ens_loss, single_loss):
            options.insert(0, (stack[0], "stack", dict.fromkeys(members, 1), stack[1]))
            stack_oof = stack[2]
    if check == "held_out" and options:
        held_out = held_out_losses(ctx, predictions, size, costs, time_left, stack_oof, bags)
        if held_out is not None:
            options = [o for o in options if held_out[o[1]] < held_out["single"]]
    for option_loss, kind, members, model in options:
        measured = measure_constraints(ctx, model) if len(constraints) else {}
        if not len(constraints) or constraints.feasible(Observation(option_loss,
                                                                    constraints=measured)):
            return EnsembleChoice(model, members, option_loss, single_loss, measured, kind)
    return None


def _fit_cost(outcome: SearchOutcome, evaluation: Evaluation, refit: float, best: bool) -> float:
    """Seconds to get a member fitted on all rows (``refit``: its estimated refit): none for a
    bag the search kept (:mod:`.bagging`); where the run keeps bags but lost this one (an
    evaluation of an earlier session), its trial's fits again; else a refit, none for the best
    pipeline (refitted anyway, and reused)."""
    if evaluation.eval_id in outcome.models:
        return 0.0
    if outcome.models_dir is not None:
        return evaluation.observation.fit_time + evaluation.seconds_saved
    return 0.0 if best else refit


def _stack_members(evaluations: dict[int, Evaluation], candidates: list[int],
                   weights: dict[int, int], costs: list[float] | None,
                   allowance: float | None) -> list[int]:
    """The stack's members: the weighted ensemble's, then the best candidate of each learner
    none of them uses (a second layer learns most from members that differ), in rank order, each
    while the refits of all fit in ``allowance`` seconds."""
    cost = dict(zip(candidates, costs)) if costs is not None else {}
    members = list(weights)
    spent = sum(cost.get(i, 0.0) for i in members)
    learners = {evaluations[i].z[-1] for i in members}
    for i in candidates:
        learner = evaluations[i].z[-1]
        if learner in learners or (allowance is not None and spent + cost.get(i, 0.0) > allowance):
            continue
        members.append(i)
        learners.add(learner)
        spent += cost.get(i, 0.0)
    return members


def fit_ensemble(choice: EnsembleChoice, X: Any, y: Any, y_search: Any,
                 fitted: dict[int, Any]) -> Any:
    """``choice.model`` fitted on all of (X, y) (by
    :func:`~admm_automl.final.labels.fit_on_labels`); the members in ``fitted`` (eval_id -> a
    model fitted already: a pipeline fitted on all of it, such as ``best_pipeline_``, or the bag
    of its fold models) are taken as they are, wrapped in scikit-learn's ``FrozenEstimator``."""
    from sklearn.frozen import FrozenEstimator

    model = clone(choice.model)
    frozen = {f"eval{i}": FrozenEstimator(pipeline) for i, pipeline in fitted.items()}
    model.set_params(estimators=[(name, frozen.get(name, member))
                                 for name, member in model.estimators])
    return fit_on_labels(model, X, y, y_search)


def _members(ctx: TrialContext, evaluations: dict[int, Evaluation], ids: Iterable[int]
             ) -> list[tuple[str, Any]]:
    """The unfitted pipelines of evaluations ``ids``, named ``eval<id>``, as the refit builds them
    (at the length a trial shrunk to fit its time limit ran at: ``observation.iterations``)."""
    members = []
    for eval_id in ids:
        member = evaluations[eval_id]
        members.append((f"eval{eval_id}", ctx.pipeline(
            member.z, member.theta, iterations=member.observation.iterations,
            rounds=member.observation.refit_rounds)))
    return members


def _voting(ctx: TrialContext, evaluations: dict[int, Evaluation], weights: dict[int, int]
            ) -> Any:
    """The unfitted VotingClassifier (soft) / VotingRegressor of the weighted member pipelines."""
    from sklearn.ensemble import VotingClassifier, VotingRegressor

    members = _members(ctx, evaluations, weights)
    w = [float(c) for c in weights.values()]
    if ctx.labels is not None:
        return VotingClassifier(members, voting="soft", weights=w)
    return VotingRegressor(members, weights=w)


def _stack(ctx: TrialContext, evaluations: dict[int, Evaluation], members: list[int],
           kept: dict[int, np.ndarray], loss: Callable[[np.ndarray], float]
           ) -> tuple[float, Any, np.ndarray] | None:
    """The second layer's out-of-fold ``loss`` over the pooled validation rows, the stack of
    ``members`` under it, fitted on their kept out-of-fold predictions (:mod:`.stacking`), and
    those out-of-fold predictions of the second layer; None when the validation rows lack a
    class the run has."""
    from sklearn.frozen import FrozenEstimator

    y = pooled_targets(ctx)
    classification = ctx.labels is not None
    if classification and len(np.unique(y)) < len(ctx.labels):
        return None
    groups = _row_groups(ctx)
    meta = meta_features([kept[i] for i in members], classification)
    seed = _seed(ctx)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            oof, final = stack_out_of_fold(meta, y, groups, final_layer(classification, seed),
                                           random_state=seed)
    except ValueError:  # too few rows of a class to score it
        return None
    kind = StackedClassifier if classification else StackedRegressor
    return loss(oof), kind(_members(ctx, evaluations, members), FrozenEstimator(final)), oof


def held_out_losses(ctx: TrialContext, predictions: Sequence[np.ndarray], size: int,
                    costs: Sequence[float] | None = None, allowance: float | None = None,
                    stack_oof: np.ndarray | None = None, bags: int = 1
                    ) -> dict[str, float] | None:
    """Each choice's loss on pooled validation rows it was not made on: the validation rows cut
    in two halves (:func:`_halves`), the best single candidate and the greedy selection
    (:func:`ensemble_selection` with the same ``size``, ``costs``, ``allowance`` and
    ``bags``) chosen on one half and scored on the other, both ways, averaged — by kind:
    ``"single"``, ``"weighted"`` and, given the stack's out-of-fold predictions ``stack_oof``,
    ``"stack"`` (its second layer is out-of-fold already; its members are the weighted
    ensemble's, chosen on all rows, so its reading is only partly held out). None when a half
    lacks a class.

    Why: the ensemble is chosen over the single best when its pooled validation loss is lower —
    the loss the greedy selection itself minimised, over up to 32 candidates and 16 steps. On a
    few hundred rows that comparison favours the ensemble by its own fit to the rows (Caruana
    et al. 2006 report ensemble selection overfitting its hill-climbing set when that set is
    small). Scoring the two *procedures* on rows neither chose on is a nested comparison, as
    nested cross-validation scores a tuned model; the single best is chosen again on each half,
    so the two are compared alike."""
    halves = _halves(ctx)
    if halves is None:
        return None
    out = dict.fromkeys(["single", "weighted"] + (["stack"] if stack_oof is not None else []),
                        0.0)
    for chosen_on, scored_on in (halves, halves[::-1]):
        loss_c, loss_s = prediction_loss(ctx, chosen_on), prediction_loss(ctx, scored_on)
        on_c = [np.asarray(p)[chosen_on] for p in predictions]
        on_s = np.stack([np.asarray(p)[scored_on] for p in predictions])
        single = int(np.argmin([loss_c(p) for p in on_c]))
        counts, _ = ensemble_selection(on_c, loss_c, size, costs, allowance, bags, _seed(ctx))
        out["single"] += loss_s(on_s[single]) / 2
        out["weighted"] += loss_s(np.tensordot(counts, on_s, axes=1) / counts.sum()) / 2
        if stack_oof is not None:
            out["stack"] += loss_s(np.asarray(stack_oof)[scored_on]) / 2
    return out


def _seed(ctx: TrialContext) -> int:
    """The run's seed, for what the ensemble draws (0 when the run has none or a generator)."""
    return int(ctx.random_state) if isinstance(ctx.random_state, (int, np.integer)) else 0


def _halves(ctx: TrialContext) -> tuple[np.ndarray, np.ndarray] | None:
    """Two halves of the pooled validation positions, cut by row — the copies of a row that
    repeated folds validate fall in one half — and stratified by class (the run's seed); None
    when either half would lack a class the validation rows have."""
    rows = pooled_rows(ctx)
    unique = np.unique(rows)
    if len(unique) < 2:
        return None
    classification = ctx.labels is not None
    seed = _seed(ctx)
    rng = np.random.default_rng(seed)
    order = nested_order(ctx.y[unique], rng) if classification else rng.permutation(len(unique))
    first = np.isin(rows, unique[order[:len(unique) // 2]])
    halves = np.flatnonzero(first), np.flatnonzero(~first)
    if classification:
        y = pooled_targets(ctx)
        if any(len(np.unique(y[h])) < len(np.unique(y)) for h in halves):
            return None
    return halves


def _row_groups(ctx: TrialContext) -> np.ndarray:
    """The group of each pooled validation row for scoring a second layer: the first split that
    validates its row — the split itself, unless the folds are repeated, whose copies of a row
    must fall in one group (a layer fitted on one copy would be scored on another)."""
    first = np.zeros(len(ctx.y), dtype=int)
    for i, split in reversed(list(enumerate(ctx.splits))):
        first[split.valid] = i
    return first[pooled_rows(ctx)]


def measure_constraints(ctx: TrialContext, model: Any) -> dict[str, float]:
    """Every constraint of ``ctx`` measured on ``model`` as a trial measures a pipeline: fitted on
    each split's training rows, measured on its validation rows, averaged over the splits."""
    measured: dict[str, list[float]] = {}
    for split in ctx.splits:
        fitted = clone(model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted.fit(take_rows(ctx.X, split.train), ctx.y[split.train])
            X_valid, y_valid = take_rows(ctx.X, split.valid), ctx.y[split.valid]
            measure_all(ctx.measures, fitted, X_valid, y_valid, split.valid, measured)
    return combine_splits(measured, ctx.splits, ctx.measures)

