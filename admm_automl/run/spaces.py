"""The search space of a task, and what the estimator asks of a space before a search: the
space a search of a task on so many rows searches, with fairlearn's mitigations where they apply
(:func:`task_space`), and whether every learner of a space has a method such as ``predict_proba``
(:func:`space_has`)."""

from __future__ import annotations

from typing import Any

from ..exceptions import InvalidParameterError
from ..space.space import PipelineSpace


def task_space(search_space: Any, task: str, n_rows: int, constraints: Any = None,
               fairness_mitigation: Any = False, theta_solver: Any = None,
               sensitive_features: bool = False) -> PipelineSpace:
    """The space a search of ``task`` on ``n_rows`` rows searches: ``search_space`` (a name, a
    file or a space) without the algorithms of the other task or too slow for that many rows,
    and with fairlearn's mitigations for the first group-fairness constraint they apply to
    (``fairness_mitigation`` "auto" or True; :func:`~admm_automl.constraints.mitigation_module`;
    ``sensitive_features``: the fit is given the groups beside X, which a constraint without
    ``group_by`` compares), unless ``theta_solver`` trains learners for chosen lengths (BAPI): a
    wrapped learner cannot be continued.

    Raises
    ------
    InvalidParameterError
        ``fairness_mitigation=True`` where no constraint can be mitigated.
    """
    from ..constraints import make_constraints, mitigation_module
    from ..space import load_space

    space = load_space(search_space).for_task(task).for_data(n_rows)
    if fairness_mitigation is False or space.modules[-1].wraps:
        return space
    from ..solvers import THETA_SOLVERS

    found = [m for c in make_constraints(constraints)
             if (m := mitigation_module(c, sensitive_features)) is not None]
    by_length = theta_solver is not None and getattr(THETA_SOLVERS.create(theta_solver),
                                                     "needs_training_length", False)
    if task == "classification" and found and not by_length:
        return space.wrapped(found[0])
    if fairness_mitigation is True:
        raise InvalidParameterError(
            "fairness_mitigation=True needs a classification task, a θ-solver that does not "
            "choose training lengths, and a group-fairness constraint that fairlearn's "
            "mitigations equalise (demographic parity, equalized odds or equal opportunity; "
            "disparate_impact with metric selection_rate, tpr or fpr) whose groups are columns "
            "of X (group_by) or given as fit(..., sensitive_features=)")
    return space


def space_has(search_space: Any, task: str | None, attr: str) -> bool:
    """Whether every learner of ``search_space`` for ``task`` (None: any) has ``attr`` (such as
    ``predict_proba``), so that a pipeline the search returns is sure to have it; True for a
    space that cannot be loaded (``fit`` reports that)."""
    from ..space import load_space
    from ..space.space import import_class

    try:
        return all(hasattr(import_class(a.class_path), attr)
                   for a in load_space(search_space).modules[-1].choices
                   if a.class_path is not None and (task is None or a.task in ("any", task)))
    except Exception:  # an invalid space is reported by fit
        return True

