"""FLASH numerics (Zhang et al., KDD 2016): pure functions on arrays, no solver protocol.

FLASH's first layer is a linear model over *pipeline paths*: a path picks one algorithm per
module and is encoded as the concatenation of one one-hot block per module (length
``N = Σ_k n_k``, exactly ``K`` ones). This package holds everything FLASH computes on those
vectors, a module per step:

* :mod:`.paths` — the encoding and its vectorised decoding, the set of all paths and a stratified
  sample of it when the space is too large to enumerate;
* :mod:`.ridge` — the ridge performance model and the ridge cost model with their Gaussian
  predictive distribution (the paper's Eq. 1 and predictive variance);
* :mod:`.acquisition` — expected improvement (Eq. 2) and EI per unit of predicted log-cost
  (EIPS, Eq. 4), as written and in log space; :mod:`.models` — both models fitted together on a
  run's observations;
* :mod:`.design` — the greedy D-optimal initial design (the paper's Algorithm 2);
* :mod:`.observed` — a run's observed paths, costs and values as arrays grown at each tell
  (:class:`ObservedPaths`), so that an ask does not convert every observation again;
* :mod:`.pruning` — the top-r pruning of the algorithm graph (end of Phase 2 of the paper's
  Algorithm 1);
* :mod:`.validation` and :mod:`.defaults` — parameter validation and the defaults.

Every name is importable from the package itself (``from admm_automl._numerics import flash as
F``; ``F.fit_path_models``).

The solver that drives these (``ask``/``tell``, phases, the θ back end) lives elsewhere and passes
arrays in. Every choice the paper leaves open is stated where it is made, with its reason; the
authors' released code (github.com/yuyuz/FLASH) settles several of them and is cited as such.

Units. FLASH's experiments minimise the *percent* classification error and use ξ = 100 in
Phase 2. This package's losses are on the metric's own scale ([0, 1] for an error rate), so ξ is
given in loss units and the default ``DEFAULT_XI = 1.0`` is the paper's ξ = 100 rescaled.

References
----------
Y. Zhang, M. T. Bahadori, H. Su, J. Sun. FLASH: Fast Bayesian Optimization for Data Analytic
Pipelines. KDD 2016 (arXiv:1602.06468).
J. Snoek, H. Larochelle, R. P. Adams. Practical Bayesian Optimization of Machine Learning
Algorithms. NeurIPS 2012 (expected improvement per second).
S. Ament et al. Unexpected Improvements to Expected Improvement for Bayesian Optimization.
NeurIPS 2023 (stable log-EI).
"""

from .defaults import (COST_TRANSFORMS, DEFAULT_COST_TRANSFORM, DEFAULT_FIT_INTERCEPT,
                       DEFAULT_MAX_ENUMERATE, DEFAULT_N_CANDIDATES, DEFAULT_RIDGE_ALPHA,
                       DEFAULT_TOP_R, DEFAULT_XI, DEFAULT_XI_SELECT, MIN_COST, MIN_SECONDS, MIN_STD,
                       TIE_ATOL)
from .paths import (all_paths, candidate_paths, check_n_choices, decode_paths, encode_paths,
                    _is_int, n_paths, path_columns, path_offsets, path_rank)
from .validation import (check_cost_transform, check_n_init, check_n_prune, check_ridge_alpha,
                         check_top_r, check_xi)
from .acquisition import (eips, expected_improvement, log_eips, log_expected_improvement,
                          rank_with_random_ties)
from .ridge import fit_cost_model, fit_ridge, fit_ridge_columns, RidgePathModel, transform_cost
from .pruning import build_subgraph, Subgraph, subgraph_masks
from .models import fill_failed, fit_path_models, fit_path_models_columns, PathModels
from .design import d_criterion, Design, greedy_d_optimal_design
from .observed import ObservedPaths
