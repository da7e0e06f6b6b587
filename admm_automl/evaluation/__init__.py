"""The evaluation engine: splits, metrics, workers, executors and the cached, journaled objective."""

from .dask_executor import DaskExecutor
from .executors import ProcessExecutor, SerialExecutor
from .metrics import Metric, get_metric, list_metrics
from .objective import PipelineObjective
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
    "get_metric",
    "list_metrics",
    "make_splits",
    "nested_order",
    "run_trial",
]
