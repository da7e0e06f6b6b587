"""The search methods by name (``method=`` of the estimator, ``--method`` of the benchmark), as
the solvers are by name: each entry says what the method is in one line, which solvers it uses,
how its own settings are checked, and how it is built from a run's parts.

A method is given as a name or as ``{"name": ..., "params": {...}}``, like a solver. Only FLASH
has settings of its own (:class:`~admm_automl.methods.flash.FlashSettings`); the others are set by
the estimator's parameters (``rho``, ``inner_iter``, ...) and refuse any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..exceptions import InvalidParameterError
from ..solvers import THETA_SOLVERS, Z_SOLVERS
from .admm import ADMMOptimizer
from .baselines import JointOptimizer, SelectionOptimizer
from .flash import FlashOptimizer, FlashSettings


def _no_settings(name: str) -> Callable[[Mapping[str, Any]], Any]:
    def check(params: Mapping[str, Any]) -> None:
        if params:
            raise InvalidParameterError(
                f"method {name!r} takes no params (got {sorted(params)!r}): its settings are the "
                "estimator's parameters"
            )
    return check


@dataclass(frozen=True)
class Method:
    """One search method: its optimiser class, a one-line summary (``admm-automl list``), which
    solvers it uses, whether it has the ADMM split (multipliers, a warm start), the check of its
    own settings, and how it is built."""

    name: str
    cls: type
    summary: str
    uses_theta: bool
    uses_z: bool
    has_split: bool
    check_settings: Callable[[Mapping[str, Any]], Any]
    build: Callable[..., Any]


# How each method is built from a run's parts: ``theta`` / ``z`` make fresh solvers, ``common`` is
# every method's run options (budgets, seed, schedule, constraints, ...).
def _admm(encoding, engine, params, *, theta, z, rho, n_train, space, warm_start, **common):
    return ADMMOptimizer(encoding, engine, theta, z, rho=rho, n_train=n_train,
                         warm_start=warm_start, **common)


def _jopt(encoding, engine, params, *, theta, z, rho, n_train, space, warm_start, **common):
    return JointOptimizer(encoding, engine, theta, space=space, **common)


def _select(encoding, engine, params, *, theta, z, rho, n_train, space, warm_start,
            initial="default", initial_fidelity=None, **common):
    return SelectionOptimizer(encoding, engine, z, n_train=n_train, initial=initial,
                              initial_fidelity=initial_fidelity, **common)


#: options of :func:`make_optimizer` that only ``select`` takes (:class:`SelectionOptimizer`)
SELECT_ONLY = ("initial", "initial_fidelity")


def _flash(encoding, engine, params, *, theta, z, rho, n_train, space, warm_start, **common):
    return FlashOptimizer(encoding, engine, theta, params, **common)


_METHODS = (
    Method("admm", ADMMOptimizer,
           "the ADMM split (Liu et al., AAAI 2020): the θ-solver tunes the chosen algorithms' "
           "hyperparameters, the z-solver chooses the algorithms",
           uses_theta=True, uses_z=True, has_split=True, check_settings=_no_settings("admm"),
           build=_admm),
    Method("jopt", JointOptimizer,
           "one θ-solver over the joint space of every choice and hyperparameter (the JOPT "
           "baseline of Liu et al., 2020)",
           uses_theta=True, uses_z=False, has_split=False, check_settings=_no_settings("jopt"),
           build=_jopt),
    Method("select", SelectionOptimizer,
           "algorithm selection alone by the z-solver, every hyperparameter at its default "
           "(Kishimoto et al., 2021)",
           uses_theta=False, uses_z=True, has_split=False,
           check_settings=_no_settings("select"), build=_select),
    Method("flash", FlashOptimizer,
           "FLASH (Zhang et al., KDD 2016): a D-optimal design of pipelines, EIPS pruning to the "
           "algorithms of the best paths, then the θ-solver on the pruned space",
           uses_theta=True, uses_z=False, has_split=False,
           check_settings=FlashSettings.from_params, build=_flash),
)

#: name -> :class:`Method`, in the order ``admm-automl list`` shows them
METHODS: dict[str, Method] = {m.name: m for m in _METHODS}


def method_spec(method: Any) -> tuple[str, dict[str, Any]]:
    """``(name, params)`` of a method given as a name of :data:`METHODS` or as a mapping
    ``{"name": ..., "params": {...}}``; the params are checked by the method."""
    if isinstance(method, Mapping):
        extra = set(method) - {"name", "params"}
        if "name" not in method or extra:
            raise InvalidParameterError(
                "a method given as a mapping needs the key 'name' and optionally 'params'; got "
                f"{sorted(method)!r}"
            )
        name, params = method["name"], method.get("params") or {}
        if not isinstance(params, Mapping):
            raise InvalidParameterError(f"method params must be a mapping, got {params!r}")
    else:
        name, params = method, {}
    if not isinstance(name, str) or name not in METHODS:
        raise InvalidParameterError(
            f"method must be one of {tuple(METHODS)!r}, got {name!r}"
        )
    METHODS[name].check_settings(params)
    return name, dict(params)


def get_method(method: Any) -> tuple[Method, dict[str, Any]]:
    """The :class:`Method` of a name or ``{name, params}``, and its params."""
    name, params = method_spec(method)
    return METHODS[name], params


def check_training_length(theta_solver: Any, has_length: bool, space_name: str = "") -> None:
    """Refuse a θ-solver that chooses training lengths (``needs_training_length``, ``bapi``) on a
    space where no algorithm declares one (``has_length`` false)."""
    solver = THETA_SOLVERS.create(theta_solver)
    if getattr(solver, "needs_training_length", False) and not has_length:
        where = f"search space {space_name!r}" if space_name else "the search space"
        raise InvalidParameterError(
            f"theta_solver={solver.name!r} chooses how many iterations to train each learner, but "
            f"no algorithm of {where} declares a training length: use search_space='iterative' "
            "or declare `iterations: {parameter, t_min, t_max, method}` on the iterative learners "
            "(docs/search_space.md)"
        )


def make_optimizer(
    method: Any, encoding: Any, engine: Any, *, theta_solver: Any = "bo", z_solver: Any = "cmab",
    rho: float = 1.0, constraint_mode: str = "auto", n_train: int | None = None,
    space: Any = None, warm_start: Any = (), **common: Any,
) -> Any:
    """The optimiser of ``method`` (a name or ``{name, params}``). ``theta_solver`` / ``z_solver``
    are registry specifications (name, ``{name, params}`` or instance); FLASH tunes its pruned
    space with ``theta_solver``. ``constraint_mode="auto"`` is ``"admm"`` for ADMM and
    ``"penalty"`` for the methods without the split; ``space``, the pipeline space of
    ``encoding``, lets JOPT's θ-solver search the conditional joint space natively (``cfo``,
    ``blendsearch``); ``warm_start``, ``(z, θ)`` pairs evaluated first, is ADMM's only;
    ``initial`` and ``initial_fidelity`` (the first pipeline, ``"default"`` or ``"random"``, and
    the fraction of training rows it is first trained on: :class:`SelectionOptimizer`) are
    ``select``'s only. ``common`` goes to every method: ``max_evals``, ``time_budget``, ``seed``,
    ``schedule``, ``constraints``, ``penalty_weight``, ``callback``, ``batch_size``,
    ``deadline``, ..."""
    spec, params = get_method(method)
    given = [key for key in SELECT_ONLY if key in common]
    if given and spec.name != "select":
        raise InvalidParameterError(
            f"{' and '.join(given)} apply to method 'select' only, not to {spec.name!r}"
        )
    common["constraint_mode"] = None if constraint_mode == "auto" else constraint_mode
    if spec.uses_theta:
        check_training_length(theta_solver, encoding.has_training_length)
    return spec.build(
        encoding, engine, params, theta=lambda: THETA_SOLVERS.create(theta_solver),
        z=lambda: Z_SOLVERS.create(z_solver), rho=rho, n_train=n_train, space=space,
        warm_start=warm_start, **common,
    )

