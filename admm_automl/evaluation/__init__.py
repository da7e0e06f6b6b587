"""The evaluation engine, the black box only: splits, metrics, the trial as it runs in a worker,
executors, the trials' timeout and probe rules, and the cached, journaled objective."""

from .dask_executor import DaskExecutor
from .executors import ProcessExecutor, SerialExecutor
from .metrics import Metric, get_metric, list_metrics
from .objective import PipelineObjective
from .policy import TrialPolicy
from .splits import Split, make_splits, nested_order
from .trial import TrialContext, run_trial

__all__ = [
    "DaskExecutor",
    "Metric",
    "PipelineObjective",
    "ProcessExecutor",
    "SerialExecutor",
    "Split",
    "TrialContext",
    "TrialPolicy",
    "get_metric",
    "list_metrics",
    "make_splits",
    "nested_order",
    "run_trial",
]
