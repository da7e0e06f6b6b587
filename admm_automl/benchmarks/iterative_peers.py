"""Multi-fidelity peers over the training length, for the BAPI benchmark: Hyperband (Li et al.,
JMLR 2018) and a BOHB-style method (Falkner, Klein and Hutter, ICML 2018), both from SMAC3
(Lindauer et al., JMLR 2022): its ``HyperbandFacade`` (random configurations, Hyperband's
successive halving) and its ``MultiFidelityFacade`` (a random-forest surrogate with EI proposing
the configurations of the same Hyperband schedule, SMAC3's BOHB-style method).

They search the θ box of one algorithm selection (every active coordinate in [0, 1], the view the
θ-solvers have; the engine projects the discrete ones), with SMAC's budget = the training length
in iterations: ``min_budget = t_max / 27`` and ``η = 3``, four rungs (t_max/27, t_max/9, t_max/3,
t_max) — our choice, as the BAPI paper gives no settings for its baselines. A request goes through
the shared engine at ``iterations = round(budget)``, so a configuration promoted to the next rung
is continued from the model the worker holds, as BAPI's are. SMAC3 is optional
(``pip install 'admm-automl[experiments]'``).
"""

from __future__ import annotations

import logging
import math
import tempfile
import warnings
from typing import Any, Callable

from ..constraints.ranking import Constraints
from ..methods.driver import Budget, Recorder
from ..exceptions import BudgetExhausted, InvalidParameterError, MissingDependencyError
from ..space import PipelineSpace

#: the SMAC3 facades, by our option name
FACADES = ("hyperband", "bohb")
#: Hyperband's halving rate, and the number of rungs below t_max
ETA, RUNGS = 3, 3


def run_smac_multifidelity(
    space: PipelineSpace, engine: Callable[..., Any], budget: Budget, *, seed: int,
    option: str = "bohb",
) -> tuple[int, str]:
    """Hyperband (``option="hyperband"``) or BOHB-style (``"bohb"``) over the training length of the
    one iterative learner of ``space`` (its initial algorithm selection), by ask/tell until the
    budget ends; returns the number of new evaluations and the stop reason."""
    try:
        from ConfigSpace import ConfigurationSpace, Float
        from smac import HyperbandFacade, MultiFidelityFacade, Scenario
        from smac.runhistory.dataclasses import TrialValue
    except ImportError:
        raise MissingDependencyError("the Hyperband and BOHB peers need SMAC3: pip install "
                                     "'admm-automl[experiments]'") from None
    if option not in FACADES:
        raise InvalidParameterError(f"option must be one of {FACADES}, got {option!r}")
    enc = space.encoding
    z = enc.check_z(enc.initial_z)
    length = enc.training_length(z)
    if length is None:
        raise InvalidParameterError(f"the initial pipeline of space {space.name!r} has no "
                                    "training length (`iterations`) to use as the budget")
    active = enc.active(z)
    names = [enc.theta_names[i] for i in active]
    configspace = ConfigurationSpace(seed=seed)
    configspace.add([Float(name, (0.0, 1.0)) for name in names])
    recorder = Recorder(enc, engine, budget, Constraints())
    facade = HyperbandFacade if option == "hyperband" else MultiFidelityFacade
    stop = "time_budget"
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scenario = Scenario(configspace, deterministic=True, seed=seed, n_trials=10**9,
                            min_budget=length.t_max / ETA**RUNGS, max_budget=length.t_max,
                            output_directory=tmp)
        smac = facade(scenario, lambda config, seed=0, budget=1: 0.0,
                      intensifier=facade.get_intensifier(scenario, eta=ETA), overwrite=True,
                      logging_level=logging.ERROR)
        while True:
            info = smac.ask()
            theta = enc.initial_theta.copy()
            theta[active] = [info.config[name] for name in names]
            iterations = min(length.t_max, max(1, int(round(info.budget))))
            try:
                (obs,) = recorder.evaluate([(z, theta, 1.0, iterations)], f"smac3-{option}")
            except BudgetExhausted as exhausted:
                stop = str(exhausted)
                break
            if math.isfinite(obs.loss):
                smac.tell(info, TrialValue(cost=float(obs.loss)))
    return recorder.n_evals, stop

