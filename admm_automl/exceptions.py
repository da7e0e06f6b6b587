"""Errors and warnings raised by admm-automl.

Every error subclasses a built-in (``ValueError``, ``RuntimeError``, ``ImportError``) as well as
:class:`ADMMAutoMLError`, so ``except ValueError`` keeps working in user and scikit-learn code.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ADMMAutoMLError(Exception):
    """Base class of every error raised by this package."""


class InvalidParameterError(ADMMAutoMLError, ValueError, TypeError):
    """A parameter of an estimator, solver, constraint or space is invalid."""


class UnknownComponentError(InvalidParameterError):
    """A name that no registry knows (solver, constraint, search space, metric)."""


class ConfigError(ADMMAutoMLError, ValueError):
    """A YAML configuration or search-space file does not follow its schema."""


class DataError(ADMMAutoMLError, ValueError):
    """The data given to ``fit`` cannot be used (shapes, inf values, a single class, ...)."""


class ResumeError(ADMMAutoMLError, ValueError):
    """An output directory holds the journal of a different run (other data, metric, splits, ...)."""


class RunDirectoryError(ADMMAutoMLError, ValueError):
    """Something other than a plain file is where a run directory keeps one of its files: a
    symbolic link (never followed, so that a link planted in a shared directory cannot make a run
    write over, or read, the file it points to) or a special file such as a FIFO (never opened,
    since opening one can block forever)."""


class RunLockedError(ADMMAutoMLError, RuntimeError):
    """Another process is writing the output directory (its ``fit`` holds the directory's lock)."""


class MissingDependencyError(ADMMAutoMLError, ImportError):
    """An optional dependency is not installed."""


class SolverError(ADMMAutoMLError, RuntimeError):
    """A solver was used outside its protocol."""


class WorkerError(ADMMAutoMLError, RuntimeError):
    """Worker processes cannot start (the message gives their own reason), or none is left."""


class SearchError(ADMMAutoMLError, RuntimeError):
    """The search ended without a pipeline to refit: every evaluation failed, or the time budget
    ended before one finished."""


class UnknownSuggestionError(SolverError):
    """``tell`` received a suggestion the solver never asked."""


class BudgetExhausted(ADMMAutoMLError):
    """Internal control flow: the evaluation or time budget is used up. Never escapes ``fit``."""


class ADMMAutoMLWarning(UserWarning):
    """Base class of the warnings of this package."""


class ConstraintViolationWarning(ADMMAutoMLWarning):
    """No evaluated pipeline met every constraint; the least violating one was returned."""


class IdentifierColumnWarning(ADMMAutoMLWarning):
    """A text column looks like an identifier: one-hot encoding makes it as many features as it
    has distinct values."""


class RunDirectoryWarning(ADMMAutoMLWarning):
    """The run directory could not be written at the end of ``fit`` (the fitted model is kept),
    or a file a resumed run reads back is damaged (it is treated as missing)."""


class ModelVersionWarning(ADMMAutoMLWarning):
    """A fitted estimator was loaded (unpickled) by another version of admm-automl than the one
    that fitted it: it may predict differently or fail; fit it again with this version, or load
    it with the version it names (scikit-learn's ``InconsistentVersionWarning`` says the same of
    scikit-learn's own objects)."""


class SubsampleOnlyWarning(ADMMAutoMLWarning):
    """The returned pipeline was evaluated on a subsample only, and chosen by its score there: no
    pipeline was evaluated on all training rows before the search ended, or it beat every one
    that was by a margin."""


class EvaluationFailedWarning(ADMMAutoMLWarning):
    """Some pipelines failed during the search (they were recorded with the worst loss)."""


def did_you_mean(name: str, options: Iterable[str]) -> str:
    """Return ``" Did you mean 'x'?"`` for the closest option, or ``""``."""
    close = difflib.get_close_matches(str(name), list(options), n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def unknown_name_message(kind: str, name: object, options: Iterable[str],
                         aliases: dict[str, str] | None = None) -> str:
    """The message of an :class:`UnknownComponentError`: the name, a suggestion (the option an
    alias in ``aliases`` names, such as 'auroc' for 'roc_auc', else the closest spelling) and
    the choices, each once."""
    options = sorted(set(options))
    listed = ", ".join(repr(o) for o in options) or "none"
    alias = (aliases or {}).get(str(name).lower().replace("-", "_").replace(" ", "_"))
    hint = f" Did you mean {alias!r}?" if alias in options else did_you_mean(str(name), options)
    return f"Unknown {kind} {name!r}.{hint} Available: {listed}."


class TimeBudgetWarning(ADMMAutoMLWarning):
    """The search overran its time budget (the serial executor cannot stop a running fit)."""


class DriverBoundWarning(ADMMAutoMLWarning):
    """The workers waited for proposals: the driver, not the trials, set the pace of the run."""


class SolverFallbackWarning(ADMMAutoMLWarning):
    """A solver could not use its model (e.g. the GP fit failed) and fell back to a simpler step."""
