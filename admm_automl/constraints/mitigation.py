"""fairlearn's unfairness mitigations as choices of the search space.

A search over plain learners cannot meet a group-fairness constraint that no plain learner meets:
where the labels themselves differ between groups, every accurate learner predicts the difference.
fairlearn's mitigations trade score for fairness — post-processing (``ThresholdOptimizer``, one
decision threshold per group; Hardt, Price and Srebro, NeurIPS 2016) and reductions
(``ExponentiatedGradient``, a randomised mixture of learners refitted with reweighted rows; Agarwal
et al., ICML 2018) — so a run with such a constraint gets one more module, ``mitigation``, whose
choices wrap the pipeline built so far (:attr:`~admm_automl.space.Module.wraps`). The constraint's
multiplier then steers the search toward a mitigation where the learners alone stay infeasible;
where they are feasible, a mitigation has only its cost in score and fit time to show.

The wrappers read the groups from the raw columns of X, as the constraint does (``group_by`` and
``bins``), so the fitted model predicts from X alone, as it is deployed. Where the groups are not
a column of X but given beside it, as fairlearn takes them (``fit(X, y, sensitive_features=s)``,
``group_by=None``), only the reduction is searched: its mixture of learners predicts from X alone,
while the threshold optimizer's thresholds are per group and would need the groups of every row
it predicts — and every validation score, constraint value and ensemble of a search would have to
carry them (fairlearn's ``ThresholdOptimizer.predict(X, sensitive_features=...)``). Both mitigations predict
as fairlearn's do: at random between two thresholds (or learners) for some rows, which is how
they meet the constraint; ``random_state`` fixes the draws of a call.

``predict_proba`` gives the probabilities the draws are made from, with their ties broken by the
underlying learner's score (weighted :data:`TIE_BREAK`). Those probabilities take only a few
values — 0, 1 and a mixing probability per group for the threshold optimizer — so a ranking
metric read from them alone (AUROC, average precision) counts most pairs of rows as ties and
scores a mitigated pipeline far below the learner whose decisions it shifts (in the constrained
benchmark's first runs, the mitigated pipelines returned on adult, compas and german_credit scored
0.49-0.72 test AUROC, FLAML's unmitigated ones 0.75-0.91). Broken by
the learner's score, the order of rows within one probability level is the learner's, the order
of the levels is the mitigation's, and the decisions (``predict``) are unchanged.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone

from ..exceptions import InvalidParameterError

#: the mitigation constraint for each group-fairness quantity, by fairlearn's names:
#: ``ThresholdOptimizer``'s constraint string and the ``fairlearn.reductions`` moment
TARGETS = {
    "demographic_parity": ("demographic_parity", "DemographicParity"),
    "equalized_odds": ("equalized_odds", "EqualizedOdds"),
    "true_positive_rate_parity": ("true_positive_rate_parity", "TruePositiveRateParity"),
    "false_positive_rate_parity": ("false_positive_rate_parity", "FalsePositiveRateParity"),
}


#: weight of the learner's score (in [0, 1]) added to a mitigation's probabilities to break
#: their ties: small enough not to reorder two probability levels that differ by more than it
TIE_BREAK = 1e-6


def _score_method(estimator: Any) -> str:
    """The method a binary classifier's score is read from: ``predict_proba``, else
    ``decision_function``, else ``predict``."""
    return next(m for m in ("predict_proba", "decision_function", "predict")
                if hasattr(estimator, m))


def _positive(out: Any, method: str) -> np.ndarray:
    """The output of ``method`` as a score of the positive class in [0, 1], increasing with the
    classifier's confidence: the second column of ``predict_proba``, the logistic of
    ``decision_function``, the predicted label (0/1)."""
    out = np.asarray(out, dtype=float)
    if method == "predict_proba":
        return out[:, 1]
    if method == "decision_function":
        return 1.0 / (1.0 + np.exp(-out))
    return out


def _positive_score(estimator: Any, X: Any) -> np.ndarray:
    """A fitted binary classifier's score of the positive class (:func:`_positive`)."""
    method = _score_method(estimator)
    return _positive(getattr(estimator, method)(X), method)


@contextmanager
def _quiet_fairlearn() -> Iterator[None]:
    """Hide fairlearn's own deprecated pandas calls."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=FutureWarning, module="fairlearn")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="fairlearn")
        yield


class _GroupMitigation(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """What both mitigations share: binary labels encoded as 0/1 for fairlearn and decoded
    back, groups from the raw columns of X, predictions drawn from :meth:`predict_proba`."""

    estimator: Any
    group_by: Any
    bins: Sequence[float] | None
    constraints: str
    random_state: int | None

    @property
    def reads_sensitive_features(self) -> bool:
        """Whether ``fit`` takes the groups as ``sensitive_features`` (no ``group_by``): the
        search passes each trial's rows of them (:class:`~admm_automl.evaluation.TrialContext`)."""
        return self.group_by is None

    def _groups(self, X: Any, sensitive_features: Any = None) -> np.ndarray:
        from .fairness import make_groups

        if self.group_by is None and sensitive_features is None:
            raise InvalidParameterError(
                f"{type(self).__name__} has no group_by column, so fit needs the groups as "
                "sensitive_features= (one label per row of X)")
        if self.group_by is not None and sensitive_features is not None:
            raise InvalidParameterError(
                f"{type(self).__name__} reads its groups from column(s) {self.group_by!r} of X; "
                "give group_by=None to pass them as sensitive_features= instead")
        groups = make_groups(X, list(self.group_by) if isinstance(self.group_by, tuple)
                             else self.group_by, self.bins, sensitive_features, "mitigation")
        # a row outside every bin has no group for the constraint; fairlearn needs a label
        return np.array(["(none)" if g is None else g for g in groups], dtype=object)

    def _encode(self, y: Any) -> np.ndarray:
        """Check the target and the labels; set ``classes_`` and return ``y`` as 0/1."""
        if self.constraints not in TARGETS:
            raise InvalidParameterError(
                f"{type(self).__name__}: constraints must be one of {sorted(TARGETS)!r}, got "
                f"{self.constraints!r}")
        self.classes_, encoded = np.unique(np.asarray(y), return_inverse=True)
        if len(self.classes_) != 2:
            raise InvalidParameterError(f"{type(self).__name__} supports binary classification "
                                        f"only; y has {len(self.classes_)} classes")
        return encoded

    def fit(self, X: Any, y: Any, sensitive_features: Any = None,
            **fit_params: Any) -> "_GroupMitigation":
        """Fit on (X, y), the groups read from X's ``group_by`` column(s) or, without
        ``group_by``, given as ``sensitive_features`` (one label per row; 2-D: the
        intersection of the columns), as fairlearn's mitigations take them; ``fit_params``: what
        the mitigation's own fit takes (the threshold optimizer's ``learner``)."""
        encoded = self._encode(y)
        groups = self._groups(X, sensitive_features)
        if len(set(groups.tolist())) < 2:
            raise InvalidParameterError(
                f"{type(self).__name__}: the training rows hold a single group "
                f"{groups[0]!r}: a mitigation equalises rates between groups")
        with _quiet_fairlearn():
            self.mitigator_ = self._fit(X, encoded, groups, **fit_params)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        """The probability of each class under the mitigation's randomised decision, its ties
        broken by the underlying learner's score (module docstring)."""
        groups = self._prediction_groups(X)
        score = self._score(X)
        positive = np.asarray(self._pmf(X, score, groups), dtype=float)[:, 1]
        positive = (positive + TIE_BREAK * score) / (1.0 + TIE_BREAK)
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X: Any) -> np.ndarray:
        """One draw per row from the probabilities of the mitigation's randomised decision
        (seeded by ``random_state``)."""
        positive = np.asarray(self._pmf(X, None, self._prediction_groups(X)), dtype=float)[:, 1]
        rng = np.random.default_rng(self.random_state)
        return self.classes_[(rng.random(len(positive)) < positive).astype(int)]

    def _prediction_groups(self, X: Any) -> Any:
        """Hook: what :meth:`_pmf` needs of X's groups, read before anything else of X so that
        a group the mitigation cannot decide for is named first (default: nothing)."""
        return None


class _Scores(BaseEstimator):
    """The scores of a learner, precomputed, as fairlearn's ``ThresholdOptimizer`` reads an
    estimator: ``predict`` of a one-column matrix of scores is that column."""

    def fit(self, S: Any, y: Any = None) -> "_Scores":
        return self

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def predict(self, S: Any) -> np.ndarray:
        return np.asarray(S, dtype=float)[:, 0]


def _rules(interpolation: dict, groups: np.ndarray) -> np.ndarray:
    """fairlearn's fitted ``InterpolatedThresholder.interpolation_dict`` as one row per group of
    ``groups``: ``p0, sign0, t0, p1, sign1, t1, p_ignore, constant``, where operation k is
    ``sign_k × score > sign_k × t_k`` (fairlearn's ``">"``: +1, ``"<"``: −1) and the positive
    probability is ``p_ignore × constant + (1 − p_ignore) × (p0 × op0 + p1 × op1)``, as
    fairlearn's ``_pmf_predict`` computes it.

    Why not fairlearn's ``_pmf_predict``: it validates and reformats its input through pandas at
    every call, which took ~11 ms of a 37 ms prediction of 1 000 rows by a boosted pipeline on
    bank_marketing — a third of the model's latency, paid under a latency limit
    (experiments/README.md, "bank-latency-dp on test rows that can tell")."""
    rows = []
    for group in groups.tolist():
        rule = interpolation[group]
        signs = [1.0 if op.operator == ">" else -1.0 for op in (rule.operation0, rule.operation1)]
        rows.append([rule.p0, signs[0], rule.operation0.threshold,
                     rule.p1, signs[1], rule.operation1.threshold,
                     rule.get("p_ignore", 0.0), rule.get("prediction_constant", 0.0)])
    return np.array(rows, dtype=float)


class ThresholdOptimizerClassifier(_GroupMitigation):
    """fairlearn's ``ThresholdOptimizer`` around ``estimator``: one threshold (or a random choice
    between two) per group on the estimator's scores maximises ``objective`` subject to
    ``constraints`` holding exactly on the training rows.

    The thresholds are chosen on held-out scores: those of ``cv`` estimators each fitted without
    the rows it scores (stratified folds), as scikit-learn's ``TunedThresholdClassifierCV``
    and AutoGluon's decision-threshold calibration choose a threshold; the estimator is then
    fitted on every row. fairlearn's own ``fit`` chooses them on the scores of the rows the
    estimator was fitted on, which a learner that fits its training rows closely (deep trees,
    boosting, nearest neighbours) separates almost perfectly: thresholds that equalise those
    scores do not equalise the scores of new rows (on compas, extra trees of unlimited depth
    post-processed for equalized odds ≤ 0.088 reached 0.11 on the test rows; in a synthetic test
    a forest's equalized odds difference on new rows was above 0.3 this way, below 0.08 with
    held-out scores). ``cv=None`` is fairlearn's way, at about a third of the cost.
    ``cv="folds"`` (the default): in a cross-validated trial, each fold's thresholds are chosen
    on the other folds' validation scores (:meth:`fit_learner`), at no fit beyond the learner's
    own; fitted anywhere else (the refit on all rows, a holdout trial), 3 inner folds.

    Its groups are columns of X (``group_by``), which it reads again at every prediction; a
    model whose groups are given beside X (``sensitive_features``) is mitigated by
    :class:`ExponentiatedGradientClassifier`, whose predictions need no groups (module
    docstring).

    Parameters
    ----------
    estimator : classifier
        What is post-processed (in a search: the pipeline before this step).
    group_by, bins
        The sensitive column(s) of X and the edges for a numeric one, as the constraint's.
    constraints : str
        One of :data:`TARGETS` (fairlearn's names).
    objective : {"accuracy_score", "balanced_accuracy_score"}
        What the thresholds maximise.
    grid_size : int
        Thresholds tried per group.
    cv : int, None or "folds", default="folds"
        Folds of the held-out scores the thresholds are chosen on (None: the training scores;
        ``"folds"``: a trial's other folds, else 3).
    random_state : int, optional
        Seeds the randomised predictions and the folds.
    """

    def __init__(self, estimator: Any = None, *, group_by: Any = None,
                 bins: Sequence[float] | None = None, constraints: str = "demographic_parity",
                 objective: str = "accuracy_score", grid_size: int = 1000,
                 cv: int | str | None = "folds",
                 random_state: int | None = None) -> None:
        self.estimator = estimator
        self.group_by = group_by
        self.bins = bins
        self.constraints = constraints
        self.objective = objective
        self.grid_size = grid_size
        self.cv = cv
        self.random_state = random_state

    def fit(self, X: Any, y: Any, sensitive_features: Any = None, *,
            learner: Any = None) -> "ThresholdOptimizerClassifier":
        """Fit the learner and choose the thresholds on its held-out scores (class docstring).
        ``sensitive_features`` is refused (the groups are X's ``group_by`` columns, read again
        at every prediction). ``learner``: a copy of ``estimator`` the caller has fitted on
        (X, y) already (a trial's pipeline with its rounds stopped early on its validation
        rows), taken as the fitted learner; the held-out scores still come from ``cv``'s
        folds."""
        return super().fit(X, y, sensitive_features, learner=learner)

    def _groups(self, X: Any, sensitive_features: Any = None) -> np.ndarray:
        if self.group_by is None:
            raise InvalidParameterError(
                "ThresholdOptimizerClassifier needs group_by, the column(s) of X it reads the "
                "groups from at fit and at every prediction; for groups given as "
                "sensitive_features= use ExponentiatedGradientClassifier, whose predictions "
                "need none")
        return super()._groups(X, sensitive_features)

    def _fit(self, X: Any, y: np.ndarray, groups: np.ndarray, learner: Any = None) -> Any:
        from sklearn.model_selection import StratifiedKFold, cross_val_predict

        if self.cv is not None and self.cv != "folds" and not (isinstance(self.cv, int)
                                                               and self.cv >= 2):
            raise InvalidParameterError(f"ThresholdOptimizerClassifier: cv must be None, an "
                                        f"int >= 2 or 'folds', got {self.cv!r}")
        self.estimator_ = clone(self.estimator) if learner is None else learner
        if self.cv is None:
            if learner is None:
                self.estimator_.fit(X, y)
            scores = _positive_score(self.estimator_, X)
        else:
            folds = StratifiedKFold(3 if self.cv == "folds" else int(self.cv), shuffle=True,
                                    random_state=0 if self.random_state is None
                                    else self.random_state)
            method = _score_method(self.estimator_)
            scores = _positive(cross_val_predict(clone(self.estimator), X, y, cv=folds,
                                                 method=method), method)
            if learner is None:
                self.estimator_.fit(X, y)
        return self._thresholds(scores, y, groups)

    def _thresholds(self, scores: np.ndarray, y: np.ndarray, groups: np.ndarray) -> Any:
        from fairlearn.postprocessing import ThresholdOptimizer

        self.groups_ = np.array(sorted(set(groups.tolist())), dtype=object)
        mitigator = ThresholdOptimizer(
            estimator=_Scores(), constraints=TARGETS[self.constraints][0],
            objective=self.objective, grid_size=self.grid_size, prefit=True,
            predict_method="predict",
        ).fit(scores[:, None], y, sensitive_features=groups)
        self.rules_ = _rules(mitigator.interpolated_thresholder_.interpolation_dict,
                             self.groups_)
        return mitigator

    # -- the thresholds from scores held out elsewhere: a trial's other folds
    def fit_learner(self, X: Any, y: Any, *, learner: Any = None) -> "ThresholdOptimizerClassifier":
        """Fit the learner alone, on every row; the thresholds are then chosen by
        :meth:`fit_thresholds` on scores the caller held out. ``learner``: a copy of
        ``estimator`` the caller has fitted on (X, y) already (a trial's pipeline with its
        rounds stopped early on its validation rows), taken as it is.

        With ``cv="folds"`` a cross-validated trial calls this on each fold's training rows and
        takes each fold's thresholds from the other folds' validation scores
        (:func:`admm_automl.evaluation.trial.run_trial`): the scores are held out, as ``cv``'s
        are, but cost no fits beyond the learner's own — one fit a fold, where ``cv=3`` makes
        four. Measured on the three fairness tasks of ``experiments/constrained.py``: a
        mitigated trial took 1.25 times its plain pipeline's time (median of 36; 3.35 with
        ``cv=3``), and whole 60 s searches (15 a way, run alternately) were feasible on the test
        rows in 13 runs with it against 7 with ``cv=3``, having evaluated 7 pipelines (median)
        against 5; its bound had called 2 of 36 pipelines feasible that were over the limit on
        test, ``cv=3``'s 1 (experiments/README.md, "The threshold optimizer's cost" and run B″).
        """
        encoded = self._encode(y)
        self.estimator_ = clone(self.estimator).fit(X, encoded) if learner is None else learner
        return self

    def held_out(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """The fitted learner's scores of rows it was not fitted on, and their groups: what
        :meth:`fit_thresholds` of another fold's model takes."""
        return self._score(X), self._groups(X)

    def fit_thresholds(self, scores: np.ndarray, y: Any,
                       groups: np.ndarray) -> "ThresholdOptimizerClassifier":
        """Choose the thresholds on held-out ``scores`` of rows with labels ``y`` (among the
        classes :meth:`fit_learner` saw) and ``groups`` (:meth:`held_out`)."""
        y = np.asarray(y)
        unseen = ~np.isin(y, self.classes_)
        if unseen.any():
            raise InvalidParameterError(
                f"ThresholdOptimizerClassifier: labels {sorted(set(y[unseen].tolist()))!r} of the "
                f"held-out rows are not among the classes it was fitted on "
                f"{self.classes_.tolist()!r}")
        with _quiet_fairlearn():
            self.mitigator_ = self._thresholds(np.asarray(scores, dtype=float),
                                               np.searchsorted(self.classes_, y), groups)
        return self

    def _prediction_groups(self, X: Any) -> np.ndarray:
        """The row of :attr:`rules_` (the fitted group) of each row of X.

        Raises
        ------
        ValueError
            Naming the column and the values, for a group that had no rows at fit (a new
            value, or a missing one, ``"(none)"``, where every training row had a value):
            fairlearn's thresholds for it are those of no group, and it would predict the
            negative class for every such row, in silence.
        """
        values, index = np.unique(self._groups(X).astype(str), return_inverse=True)
        fitted = {g: i for i, g in enumerate(self.groups_.tolist())}
        unseen = [v for v in values.tolist() if v not in fitted]
        if unseen:
            raise ValueError(
                f"{type(self).__name__}: group_by {self.group_by!r} has values {unseen!r} "
                f"(\"(none)\": missing, or outside every bin) that no training row had, so it "
                f"has no threshold for them; it was fitted on groups {self.groups_.tolist()!r}. "
                "Map them to a fitted group, or refit with rows of them")
        return np.array([fitted[v] for v in values.tolist()], dtype=int)[index.ravel()]

    def _pmf(self, X: Any, score: np.ndarray | None = None,
             groups: np.ndarray | None = None) -> np.ndarray:
        """fairlearn's interpolated thresholds (:func:`_rules`) applied to the scores of X's
        rows, each row by its group's."""
        groups = self._prediction_groups(X) if groups is None else groups
        score = self._score(X) if score is None else score
        p0, sign0, t0, p1, sign1, t1, p_ignore, constant = self.rules_[groups].T
        positive = p0 * (sign0 * score > sign0 * t0) + p1 * (sign1 * score > sign1 * t1)
        positive = p_ignore * constant + (1.0 - p_ignore) * positive
        return np.column_stack([1.0 - positive, positive])

    def _score(self, X: Any) -> np.ndarray:
        return _positive_score(self.estimator_, X)


class ExponentiatedGradientClassifier(_GroupMitigation):
    """fairlearn's ``ExponentiatedGradient`` reduction around ``estimator``: up to ``max_iter``
    copies of the estimator fitted on reweighted rows, mixed so that ``constraints`` holds on the
    training rows within ``eps``.

    The estimator must take ``sample_weight`` in ``fit`` (a pipeline: its last step), as the
    reduction reweights the rows; one that does not fails the trial with fairlearn's message.
    Its predictions need no groups, so they may be given at fit alone (``group_by=None``,
    ``fit(X, y, sensitive_features=s)``), as fairlearn's ``ExponentiatedGradient`` takes them.

    Parameters
    ----------
    estimator : classifier
        What is reweighted (in a search: the pipeline before this step).
    group_by, bins
        The sensitive column(s) of X and the edges for a numeric one, as the constraint's;
        ``group_by=None``: the groups are ``fit``'s ``sensitive_features`` (binned at ``bins``).
    constraints : str
        One of :data:`TARGETS` (fairlearn's names).
    eps : float
        The constraint violation allowed on the training rows.
    max_iter : int
        Rounds of the reduction (each fits one more copy of the estimator).
    random_state : int, optional
        Seeds the randomised predictions.
    """

    def __init__(self, estimator: Any = None, *, group_by: Any = None,
                 bins: Sequence[float] | None = None, constraints: str = "demographic_parity",
                 eps: float = 0.01, max_iter: int = 50, random_state: int | None = None) -> None:
        self.estimator = estimator
        self.group_by = group_by
        self.bins = bins
        self.constraints = constraints
        self.eps = eps
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit(self, X: Any, y: np.ndarray, groups: np.ndarray) -> Any:
        """The reduction on the pipeline's last step, its steps before fitted once.

        A pipeline's weights reach its last step only (``step__sample_weight``); the steps
        before it are fitted on the same rows, unweighted, in every round of the reduction. So
        they are fitted once here (``prefix_``) and the reduction reweights the learner alone
        on their output: the same model, without refitting and re-applying the preprocessing
        in each of the reduction's fits and predictions (fairlearn fits the learner about
        three times a round: 17 fits for 5 rounds; on 3600 rows of adult, a third of the time
        went to the preprocessing)."""
        import fairlearn.reductions

        estimator = clone(self.estimator)
        self.prefix_ = None
        if hasattr(estimator, "steps") and len(estimator.steps) > 1:
            self.prefix_ = estimator[:-1]
            X = self.prefix_.fit_transform(X, y)
            estimator = estimator.steps[-1][1]
        elif hasattr(estimator, "steps"):
            estimator = estimator.steps[-1][1]
        moment = getattr(fairlearn.reductions, TARGETS[self.constraints][1])()
        return fairlearn.reductions.ExponentiatedGradient(
            estimator, moment, eps=self.eps, max_iter=self.max_iter,
        ).fit(X, y, sensitive_features=groups)

    def _inner(self, X: Any) -> Any:
        """X as the reduction's learners take it: through the fitted steps before them."""
        prefix = getattr(self, "prefix_", None)
        return X if prefix is None else prefix.transform(X)

    def _pmf(self, X: Any, score: np.ndarray | None = None, groups: Any = None) -> np.ndarray:
        return self.mitigator_._pmf_predict(self._inner(X))

    def _score(self, X: Any) -> np.ndarray:
        """The mixture's weighted mean of its learners' scores."""
        X = self._inner(X)
        weights = np.asarray(self.mitigator_.weights_, dtype=float)
        return sum(w * _positive_score(h, X) for w, h in
                   zip(weights, self.mitigator_.predictors_) if w > 0) / weights.sum()


def mitigation_module(constraint: Any, sensitive_features: bool = False) -> Any:
    """The ``mitigation`` module for a group-fairness ``constraint``: ``none``, fairlearn's
    threshold optimizer and its exponentiated-gradient reduction toward the constraint's
    quantity, with the constraint's groups fixed; None where no mitigation targets the
    constraint's quantity (an AUROC or accuracy spread) or the deployed model would have no
    groups to read.

    Where the constraint has no ``group_by`` and ``sensitive_features`` says the search is given
    the groups beside X (``fit(X, y, sensitive_features=s)``), the module holds ``none`` and the
    reduction alone, with ``group_by=None``: the search passes each fit its rows' groups, and
    the fitted mixture predicts from X alone. The threshold optimizer is left out there: it
    needs the groups of every row it predicts (module docstring).

    Tuned: the threshold optimizer's objective (accuracy, or balanced accuracy where a class is
    rare); the reduction's allowed violation ``eps`` (log-scale from 0.001 to 0.1, fairlearn's
    0.01 by default) and its rounds ``max_iter`` (5 to 50; 20 by default rather than
    fairlearn's 50, and 5 as the cheap start, because every round fits the pipeline once more
    and a search pays for that in its budget).
    """
    from ..space import Algorithm, Categorical, Fixed, Float, Int, Module

    target = getattr(constraint, "mitigation_target", None)
    if target is None or not hasattr(constraint, "group_by"):
        return None
    group_by = constraint.group_by
    if group_by is None and not sensitive_features:
        return None
    fixed = (
        Fixed("group_by", value=tuple(group_by) if isinstance(group_by, list) else group_by),
        Fixed("bins", value=None if constraint.bins is None else tuple(constraint.bins)),
        Fixed("constraints", value=target),
    )
    reduction = Algorithm(
        "exponentiated_gradient", f"{__name__}.ExponentiatedGradientClassifier", fixed + (
            Float("eps", low=0.001, high=0.1, log=True, default=0.01),
            Int("max_iter", low=5, high=50, log=True, default=20, low_cost=5),
        ), task="classification")
    if group_by is None:
        return Module("mitigation", (Algorithm("none"), reduction), wraps=True)
    return Module("mitigation", (
        Algorithm("none"),
        Algorithm("threshold_optimizer", f"{__name__}.ThresholdOptimizerClassifier", fixed + (
            Categorical("objective", choices=("accuracy_score", "balanced_accuracy_score"),
                        default="accuracy_score"),
        ), task="classification"),
        reduction,
    ), wraps=True)


def is_mitigated(config: dict) -> bool:
    """Whether the pipeline of ``config`` ends in a mitigation of :func:`mitigation_module`: it
    then predicts by random draws from its probabilities (module docstring), which an average of
    its probabilities with other pipelines' does not keep (:mod:`admm_automl.final.ensemble`)."""
    return config.get("mitigation", "none") != "none"


#: how many of the portfolio's leading configurations are also evaluated mitigated, first, when
#: the space searches mitigations (:func:`mitigated_starts`)
MITIGATED_STARTS = 2

#: the rounds of the reduction in a mitigated start where it is the only mitigation: its cheap
#: end (each round fits the pipeline once more)
START_ROUNDS = 5


def mitigated_starts(configs: list[dict], space: Any) -> list[dict]:
    """The warm start's configurations for a space that searches fairness mitigations (its last
    module is :func:`mitigation_module`'s): the first :data:`MITIGATED_STARTS` of ``configs``
    mitigated, then ``configs`` as they are, then the rest of them mitigated; ``configs``
    unchanged for any other space. Mitigated means post-processed by the threshold optimizer at
    its defaults, or — where the groups are given beside X and the reduction is the only
    mitigation — wrapped in the reduction at :data:`START_ROUNDS` rounds with the learner at
    its low-cost point (the fewest trees and leaves its hyperparameters declare, where a
    cost-frugal search starts; Wu et al. 2021): the reduction fits its learner about three
    times a round, and the portfolio's own learners reduced at 5 rounds took 8-65 s each on a
    tenth of adult's rows on a shared core, past their trial time limits under a 60 s budget
    (experiments/README.md, "Fairness with the groups beside X"). ADMM's first
    z-step takes them in that order until the evaluations show the plain learners far over the
    constraint: then the mitigated ones come first
    (:meth:`~admm_automl.constraints.ranking.Constraints.evidence_order`).

    Why: the portfolio was learned without constraints, so its pipelines are all unmitigated; a
    constraint no plain learner meets (labels that differ between the groups) then has no
    feasible pipeline until a z-step reaches a mitigation, and under a short budget on
    cross-validated data ADMM's first θ-step (16 evaluations) may use all of it — on the
    constrained benchmark's compas task ADMM made 21 evaluations in 120 s, none mitigated, and
    returned an infeasible model while an unconstrained search stumbled on a feasible
    mitigated one. The threshold optimizer is the cheap mitigation (a few extra fits of the
    learner, against one per round of the reduction) and the one that reaches a parity for any
    learner; ADMM then starts from the best of the warm start by the constraints' rank.
    """
    module = space.modules[-1] if space.modules else None
    if module is None or not module.wraps or module.name != "mitigation":
        return list(configs)
    names = [a.name for a in module.choices]
    if "threshold_optimizer" in names:
        mitigated = [{**c, "mitigation": "threshold_optimizer"} for c in configs]
    elif "exponentiated_gradient" in names:
        mitigated = [{**c, **_low_cost(c, space), "mitigation": "exponentiated_gradient",
                      "mitigation__max_iter": START_ROUNDS} for c in configs]
    else:
        return list(configs)
    return mitigated[:MITIGATED_STARTS] + list(configs) + mitigated[MITIGATED_STARTS:]


def _low_cost(config: dict, space: Any) -> dict:
    """The hyperparameters of ``config``'s algorithms that declare a low-cost value (the fewest
    trees, leaves or iterations; :mod:`admm_automl.space.hyperparameters`) set to it."""
    out = {}
    for module in space.modules:
        choice = config.get(module.name)
        algorithm = next((a for a in module.choices if a.name == choice), None)
        for hp in () if algorithm is None else algorithm.tunable:
            if hp.low_cost is not None:
                out[f"{module.name}__{hp.name}"] = hp.low_cost
    return out
