"""Search spaces: hyperparameter domains, algorithms, modules, their (z, θ) encoding and YAML."""

from .encoding import Encoding
from .hyperparameters import Categorical, Fixed, Float, Hyperparameter, Int
from .loader import list_spaces, load_space, space_from_dict
from .space import PASSTHROUGH, Algorithm, Iterations, Module, PipelineSpace, Stopping

__all__ = [
    "PASSTHROUGH",
    "Algorithm",
    "Categorical",
    "Encoding",
    "Fixed",
    "Float",
    "Hyperparameter",
    "Int",
    "Iterations",
    "Module",
    "PipelineSpace",
    "Stopping",
    "list_spaces",
    "load_space",
    "space_from_dict",
]
