"""The numerical core of BAPI (Belakaria et al. 2022): kernels and their derivatives, truncated
moments, the monotone objective GP, the cost GP, the curve-point rule, conservative stopping,
early termination, q-EI and the budget-adaptive horizon, and the helpers of the solver's loop
(initial design, training steps, the cost of a full training, GP_f's data).

Sign convention under test: the model is of a loss, non-increasing in the training length t.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from admm_automl.exceptions import InvalidParameterError
from admm_automl._numerics import bapi
from admm_automl._numerics import gp as _gp
from admm_automl._numerics.bapi import defaults
from admm_automl._numerics.bapi.horizon import _GreedyAcquisition
from admm_automl._numerics.bapi.kernels import (
    ExponentialDecay,
    TimeRBF,
    curve_kernel,
    kernel_parts,
)
from admm_automl._numerics.bapi.truncated import truncated_normal_moments


def curve_loss(X: np.ndarray, t: np.ndarray) -> np.ndarray:
    """A synthetic family: loss(x, t) = a(x) + b·exp(−t / c(x)), decreasing in t."""
    X = np.atleast_2d(X)
    a = 0.1 + 0.5 * np.sum((X - 0.3) ** 2, axis=-1)
    c = 0.05 + 0.2 * X[:, 0]
    return a + 0.4 * np.exp(-np.asarray(t, dtype=float) / c)


def curve_data(n_configs: int, dim: int, seed: int, lengths=(0.2, 0.6, 1.0)):
    """Rows (x, t, loss) of ``n_configs`` curves, each observed at ``lengths`` (some stopped at
    the first)."""
    rng = np.random.default_rng(seed)
    X, t = [], []
    for i, x in enumerate(rng.random((n_configs, dim))):
        for length in lengths if i % 3 else lengths[:1]:
            X.append(x)
            t.append(length)
    X, t = np.array(X), np.array(t)
    return X, t, curve_loss(X, t)


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """Small solves are far slower with a multi-threaded BLAS on a busy machine (as in bo)."""
    with _gp.single_threaded_blas():
        yield


@pytest.fixture(scope="module")
def fitted():
    """A monotone GP_f and a GP_c on 8 curves in 2 dimensions (cost rate 1 + 3·x₁)."""
    X, t, y = curve_data(8, 2, seed=0)
    model = bapi.LearningCurveGP(n_restarts=0).fit(X, t, y)
    cost = bapi.CostGP(n_restarts=0).fit(X, t, t * (1.0 + 3.0 * X[:, 1]))
    return model, cost, X, t, y


# ----------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("kernel", [ExponentialDecay(1.7, 0.3, 0.5), TimeRBF(0.4)])
def test_time_kernel_derivatives_match_finite_differences(kernel):
    ta = np.array([0.1, 0.35, 0.8])
    tb = np.array([0.2, 0.5, 0.95, 1.0])
    h = 1e-5
    d2 = (kernel.time_value(ta, tb + h) - kernel.time_value(ta, tb - h)) / (2 * h)
    np.testing.assert_allclose(kernel.time_d2(ta, tb), d2, rtol=1e-6, atol=1e-9)
    d12 = (
        kernel.time_value(ta + h, tb + h)
        - kernel.time_value(ta + h, tb - h)
        - kernel.time_value(ta - h, tb + h)
        + kernel.time_value(ta - h, tb - h)
    ) / (4 * h * h)
    np.testing.assert_allclose(kernel.time_d12(ta, tb), d12, rtol=1e-4, atol=1e-6)


def test_rbf_second_derivative_has_the_corrected_squared_term():
    """Belakaria et al.'s Eq. 28 writes (t − t') for (t − t')²: at t=2, t'=5, ℓ=1.3 the mixed
    derivative is −0.1785 (the printed form would give +0.1145)."""
    value = TimeRBF(1.3).time_d12(np.array([2.0]), np.array([5.0]))[0, 0]
    assert value == pytest.approx(-0.1785, abs=1e-4)


@pytest.mark.parametrize("time_kernel", ["ed", "rbf"])
def test_curve_kernel_hyperparameter_gradient_matches_finite_differences(time_kernel):
    rng = np.random.default_rng(1)
    Z = np.column_stack([rng.random((6, 2)), rng.uniform(0.1, 1.0, 6)])
    kernel = curve_kernel(2, time_kernel=time_kernel)
    kernel = kernel.clone_with_theta(kernel.theta + rng.normal(0, 0.3, kernel.theta.size))
    _, grad = kernel(Z, eval_gradient=True)
    h = 1e-6
    for i in range(kernel.theta.size):
        step = np.zeros_like(kernel.theta)
        step[i] = h
        numeric = (
            kernel.clone_with_theta(kernel.theta + step)(Z)
            - kernel.clone_with_theta(kernel.theta - step)(Z)
        ) / (2 * h)
        np.testing.assert_allclose(grad[..., i], numeric, rtol=1e-5, atol=1e-8)


def test_product_kernel_reads_x_columns_and_t_column():
    kernel = curve_kernel(2)
    signal, kx, kt, noise = kernel_parts(kernel)
    a = np.array([[0.1, 0.2, 0.3]])
    b = np.array([[0.4, 0.9, 0.7]])
    expected = signal * kx(a, b)[0, 0] * kt.time_value([0.3], [0.7])[0, 0]
    assert kernel(a, b)[0, 0] == pytest.approx(expected)
    same_x_other_t = np.array([[0.1, 0.2, 0.9]])
    assert kx(a, same_x_other_t)[0, 0] == pytest.approx(1.0)  # t does not enter K_x
    assert noise == pytest.approx(1e-4)


# ----------------------------------------------------------------------------- truncated normal
@pytest.mark.parametrize(
    "mean, cov",
    [
        ([0.5, 0.3], [[1.0, 0.5], [0.5, 2.0]]),
        ([-1.0, 2.0], [[1.0, 0.9], [0.9, 1.5]]),
        ([0.2, -0.4, 0.8], [[1.0, 0.3, -0.2], [0.3, 1.0, 0.4], [-0.2, 0.4, 1.2]]),
    ],
)
def test_truncated_moments_match_rejection_sampling(mean, cov):
    mean, cov = np.array(mean), np.array(cov)
    rng = np.random.default_rng(0)
    draws = rng.multivariate_normal(mean, cov, size=400_000)
    kept = draws[(draws <= 0).all(axis=1)]
    mu, sigma = truncated_normal_moments(mean[None], cov[None], 0.0)
    np.testing.assert_allclose(mu[0], kept.mean(axis=0), atol=0.02)
    np.testing.assert_allclose(sigma[0], np.cov(kept.T), atol=0.03)


def test_truncated_moments_are_exact_for_independent_coordinates():
    from scipy.stats import truncnorm

    mean, sd = np.array([0.4, -1.0]), np.array([1.0, 0.5])
    mu, sigma = truncated_normal_moments(mean[None], np.diag(sd**2)[None], 0.0)
    exact = truncnorm(-np.inf, (0 - mean) / sd, loc=mean, scale=sd)
    np.testing.assert_allclose(mu[0], exact.mean(), rtol=1e-9)
    np.testing.assert_allclose(np.diag(sigma[0]), exact.var(), rtol=1e-9)
    assert sigma[0, 0, 1] == pytest.approx(0.0, abs=1e-12)


# ----------------------------------------------------------------------------- objective GP
@pytest.mark.parametrize("time_kernel", ["ed", "rbf"])
def test_monotone_posterior_mean_is_non_increasing_in_t(time_kernel):
    """Loss curves decrease; the monotone model's mean never rises along t on [t_min, 1], at
    configurations near and far from the data, while the plain GP's (BAPI-NM) does here."""
    X, t, y = curve_data(8, 2, seed=1)
    queries = np.random.default_rng(3).random((60, 2))
    grid = np.linspace(0.2, 1.0, 33)
    rises = {}
    for monotone in (True, False):
        model = bapi.LearningCurveGP(monotone=monotone, time_kernel=time_kernel, n_restarts=0)
        mean, _ = model.fit(X, t, y).predict_curves(queries, grid)
        rises[monotone] = float(np.diff(mean, axis=1).max())
    assert rises[True] <= 1e-9
    assert rises[False] > 1e-4


def test_posterior_interpolates_and_reports_latent_and_noisy_std(fitted):
    model, _, X, t, y = fitted
    mean, std = model.predict(X, t)
    np.testing.assert_allclose(mean, y, atol=5e-3)
    _, noisy = model.predict(X, t, include_noise=True)
    np.testing.assert_allclose(noisy**2, std**2 + model.noise_std_**2, rtol=1e-9)
    _, far_std = model.predict(np.array([[0.99, 0.99]]), 0.2)
    assert far_std[0] > 10 * std.max()


def test_joint_covariance_has_the_constrained_marginals(fitted):
    model, *_ = fitted
    Q = np.array([[0.2, 0.3], [0.25, 0.3], [0.9, 0.1]])
    mean, cov = model.joint(Q, 1.0)
    m2, s2 = model.predict(Q, 1.0)
    np.testing.assert_allclose(mean, m2)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), s2, rtol=1e-9)
    assert np.linalg.eigvalsh(cov).min() > -1e-12
    corr = cov[0, 1] / (s2[0] * s2[1])
    assert 0.5 < corr <= 1.0  # close configurations are strongly correlated


def test_with_points_conditions_without_refitting(fitted):
    model, *_ = fitted
    x = np.array([[0.8, 0.8]])
    before_mean, before_std = model.predict(x, 0.4)
    updated = model.with_points(x, [0.4], [0.3])
    after_mean, after_std = updated.predict(x, 0.4)
    assert abs(after_mean[0] - 0.3) < 0.1 * abs(before_mean[0] - 0.3)
    assert after_std[0] < min(before_std[0], model.noise_std_)  # one noisy look: below the noise
    np.testing.assert_array_equal(updated.kernel_.theta, model.kernel_.theta)
    assert len(updated.y_) == len(model.y_) + 1 and len(model.y_) == len(fitted[4])


def test_fit_is_deterministic_for_a_fixed_generator():
    X, t, y = curve_data(6, 2, seed=2)
    thetas = [
        bapi.LearningCurveGP(n_restarts=1)
        .fit(X, t, y, rng=np.random.default_rng(seed))
        .kernel_.theta
        for seed in (7, 7)
    ]
    np.testing.assert_array_equal(thetas[0], thetas[1])


def test_objective_gp_rejects_bad_input():
    model = bapi.LearningCurveGP(n_restarts=0)
    X = np.array([[0.2, 0.4]])
    with pytest.raises(InvalidParameterError, match="not fitted"):
        model.predict(X, 1.0)
    with pytest.raises(InvalidParameterError, match=r"training fractions in \(0, 1\].*1\.5"):
        model.fit(X, [1.5], [0.3])
    with pytest.raises(InvalidParameterError, match=r"unit box.*1\.2"):
        model.fit(np.array([[0.2, 1.2]]), [0.5], [0.3])
    with pytest.raises(InvalidParameterError, match="finite loss"):
        model.fit(X, [0.5], [np.nan])
    with pytest.raises(InvalidParameterError, match="rng"):
        bapi.LearningCurveGP(n_restarts=2).fit(X, [0.5], [0.3])
    with pytest.raises(InvalidParameterError, match=r"time_kernel.*'exp'"):
        bapi.LearningCurveGP(time_kernel="exp")
    with pytest.raises(InvalidParameterError, match=r"t_min must lie in \(0, 1\].*0"):
        bapi.LearningCurveGP(t_min=0)


# ----------------------------------------------------------------------------- cost GP
def test_cost_gp_recovers_a_linear_cost_with_configuration_dependent_rate():
    rng = np.random.default_rng(4)
    X = rng.random((12, 2))
    t = rng.choice([0.2, 0.5, 1.0], size=12)
    rate = lambda Z: 2.0 * np.exp(2.0 * Z[:, 0])  # noqa: E731  (rates spanning e²)
    model = bapi.CostGP(n_restarts=0).fit(X, t, t * rate(X))
    Q = np.array([[0.2, 0.5], [0.8, 0.5]])
    np.testing.assert_allclose(model.rate(Q), rate(Q), rtol=0.05)
    np.testing.assert_allclose(model.predict_cost(Q, 0.9, 0.4), 0.5 * model.rate(Q), rtol=1e-12)
    assert model.predict_cost(Q, 0.3, 0.6).tolist() == [0.0, 0.0]  # already trained further
    assert model.median_cost_ == pytest.approx(np.median(t * rate(X)))


def test_cost_gp_with_one_observation_uses_its_rate_everywhere():
    model = bapi.CostGP().fit(np.array([[0.3]]), [0.5], [2.0])
    np.testing.assert_allclose(model.predict_cost(np.array([[0.0], [1.0]]), 1.0), [4.0, 4.0])
    with pytest.raises(InvalidParameterError, match="costs must be finite and >= 0"):
        bapi.CostGP().fit(np.array([[0.3]]), [0.5], [-1.0])


# ----------------------------------------------------------------------------- curve points
def test_curve_points_keep_the_last_point_and_then_the_most_uncertain(fitted):
    model, *_ = fitted
    x = np.array([0.7, 0.9])
    t = np.arange(1, 21) / 20
    chosen = bapi.select_curve_points(model, x, t, max_points=3)
    assert len(chosen) == 3 and chosen[-1] == 19
    # the second point is the one of largest variance once the last point is known
    after_last = model.with_points(x[None], [1.0], [0.3])
    variance = np.diag(after_last.latent_covariance(np.repeat(x[None], 20, axis=0), t)).copy()
    variance[19] = -np.inf
    assert int(np.argmax(variance)) in chosen
    assert bapi.select_curve_points(model, x, t, max_points=1).tolist() == [19]
    assert bapi.select_curve_points(None, x, t, max_points=3).tolist() == [0, 10, 19]
    assert bapi.select_curve_points(None, x, t[:2], max_points=3).tolist() == [0, 1]
    with pytest.raises(InvalidParameterError, match="increasing"):
        bapi.select_curve_points(model, x, t[::-1])


def test_running_best_is_the_cumulative_minimum():
    assert bapi.running_best([0.5, 0.4, 0.45, 0.3]).tolist() == [0.5, 0.4, 0.4, 0.3]


# ----------------------------------------------------------------------------- stopping
def test_conservative_stopping_picks_the_exact_length_on_an_exponential_curve():
    """loss(T) = 0.1 + 0.8·exp(−T/12) on T = 10…100 (t_max = 100), ε = 0.01: the first T with
    loss(T) − loss(100) ≤ ε is ⌈−12·ln(ε/0.8 + e^{−100/12})⌉ = 53."""
    grid = defaults.length_grid(100, 0.1)
    iterations = grid * 100
    curves = np.vstack([0.1 + 0.8 * np.exp(-iterations / 12), 0.1 + 0.8 * np.exp(-iterations / 4)])
    expected = [
        math.ceil(-scale * math.log(0.01 / 0.8 + math.exp(-100 / scale))) / 100
        for scale in (12, 4)
    ]
    assert expected[0] == 0.53
    np.testing.assert_allclose(bapi.conservative_stopping(curves, grid, 0.01), expected)
    assert bapi.conservative_stopping(curves[0], grid, 0.0) == 1.0
    assert bapi.conservative_stopping(curves[0], grid, 1.0) == 0.1


def test_conservative_stopping_of_the_fitted_gp_on_a_noise_free_curve():
    lengths = np.arange(10, 101, 10) / 100
    losses = 0.1 + 0.8 * np.exp(-lengths * 100 / 12)
    model = bapi.LearningCurveGP(t_min=0.1, n_restarts=0).fit(
        np.full((10, 1), 0.5), lengths, losses
    )
    grid = defaults.length_grid(100, 0.1)
    assert bapi.stopping_lengths(model, np.array([[0.5]]), grid, 0.01)[0] == pytest.approx(
        0.53, abs=0.02
    )


def test_conservative_stopping_rejects_bad_input():
    grid = np.array([0.5, 1.0])
    with pytest.raises(InvalidParameterError, match="epsilon must lie in"):
        bapi.conservative_stopping([0.3, 0.2], grid, -0.1)
    with pytest.raises(InvalidParameterError, match="t_grid must be increasing"):
        bapi.conservative_stopping([0.3, 0.2, 0.1], grid)


def _flat_curves():
    """Five learning curves whose losses span 0.0015 in all (0.1000–0.1015), each converging
    by 0.001–0.002 from the first check at 20 % of t_max to t_max: configurations that differ
    by as little as the methods of a small tabular benchmark."""
    grid = np.linspace(0.2, 1.0, 17)
    drops = [0.001, 0.0013, 0.0015, 0.0018, 0.002]
    rates = [3.0, 4.0, 5.0, 6.0, 8.0]
    return grid, [0.1 + d * np.exp(-r * (grid - 0.2)) / (1 - np.exp(-r * 0.8))
                  - d * np.exp(-r * 0.8) / (1 - np.exp(-r * 0.8)) for d, r in zip(drops, rates)]


def test_automatic_epsilon_does_not_stop_every_flat_curve_at_its_first_check():
    """ε = 0.01, the paper's "1 % degradation", stops every one of these curves at its first
    check; the paper's rule for a metric without a natural scale (the smallest degradation from
    t_max in the data) gives an ε below every curve's drop, so they train further."""
    grid, curves = _flat_curves()
    means = np.array(curves)
    assert np.all(means[:, 0] - means[:, -1] <= 0.002 + 1e-12)
    assert np.all(bapi.conservative_stopping(means, grid, 0.01) == grid[0])
    epsilon = bapi.automatic_epsilon([(grid, y) for y in curves])
    gaps = np.concatenate([y[:-1] - y[-1] for y in curves])
    assert epsilon == pytest.approx(gaps[gaps > 0].min()) and 0 < epsilon < 1e-4
    stops = bapi.conservative_stopping(means, grid, epsilon)
    assert np.all(stops > grid[0]) and np.all(stops >= 0.9)


def test_automatic_epsilon_takes_positive_gaps_of_curves_that_reached_t_max():
    """Pairs with t = t_max (gap 0), negative gaps (a noisy curve) and curves not observed at
    t_max do not count; without any pair there is no ε."""
    t = np.array([0.2, 0.6, 1.0])
    assert bapi.automatic_epsilon([(t, np.array([0.30, 0.25, 0.24])),
                                   (t, np.array([0.20, 0.19, 0.195])),  # -0.005 and 0.005
                                   (t[:2], np.array([0.5, 0.1001]))]) == pytest.approx(0.005)
    assert bapi.automatic_epsilon([(t[:2], np.array([0.5, 0.4]))]) is None
    assert bapi.automatic_epsilon([(t, np.array([0.2, 0.2, 0.2]))]) is None
    with pytest.raises(InvalidParameterError, match="one loss per length"):
        bapi.automatic_epsilon([(t, np.array([0.2, 0.2]))])


@pytest.fixture(scope="module")
def termination_setup():
    rng = np.random.default_rng(0)
    X = np.repeat(rng.random((6, 2)), 3, axis=0)
    t = np.tile([0.2, 0.6, 1.0], 6)
    y = curve_loss(X, t)
    model = bapi.LearningCurveGP(n_restarts=0).fit(X, t, y)
    return model, float(y.min()), defaults.length_grid(20)


def _observe(x, upto, grid):
    lengths = grid[grid <= upto + 1e-9]
    return lengths, curve_loss(x, lengths)


def test_early_termination_continues_a_promising_curve_until_its_stopping_length(
    termination_setup,
):
    model, incumbent, grid = termination_setup
    good = np.array([0.3, 0.3])  # the optimum of the family
    first = bapi.check_termination(
        model, good, *_observe(good, 0.2, grid), t_grid=grid, incumbent=incumbent
    )
    assert not first.stop and first.reason == "continue"
    assert first.mean < incumbent
    assert first.t_next == pytest.approx(min(first.t_stop, 0.2 + defaults.CHECK_FRACTION))
    done = bapi.check_termination(
        model, good, *_observe(good, 1.0, grid), t_grid=grid, incumbent=incumbent
    )
    assert done.stop and done.reason == "converged" and done.t_next == 1.0


def test_early_termination_stops_a_poor_curve_and_uses_the_penalty(termination_setup):
    model, incumbent, grid = termination_setup
    poor = np.array([0.95, 0.95])
    curve = _observe(poor, 0.4, grid)
    kwargs = dict(t_grid=grid, incumbent=incumbent, current_std="unconditioned")
    result = bapi.check_termination(model, poor, *curve, **kwargs)
    assert result.stop and result.reason == "poor" and result.t_next == 0.4
    assert result.mean >= incumbent and result.std <= defaults.TAU * result.std_current
    # the τ test decides: with the uncertainty at t taken after conditioning (tiny on a
    # noise-free curve) the model is not yet sure enough of t_stop to stop
    strict = bapi.check_termination(model, poor, *curve, t_grid=grid, incumbent=incumbent)
    assert strict.std_current < result.std_current
    assert strict.stop == (strict.std <= defaults.TAU * strict.std_current)
    assert (
        bapi.check_termination(model, poor, *curve, **{**kwargs, "incumbent": None}).reason
        != "poor"
    )
    good = np.array([0.3, 0.3])
    plain = bapi.check_termination(model, good, *_observe(good, 0.4, grid), **kwargs)
    shifted = bapi.check_termination(
        model, good, *_observe(good, 0.4, grid), penalty=lambda Z: np.full(len(Z), 1.0), **kwargs
    )
    assert plain.reason == "continue" and shifted.reason == "poor"
    assert shifted.mean == pytest.approx(plain.mean + 1.0)


def test_early_termination_validates_its_parameters(termination_setup):
    model, incumbent, grid = termination_setup
    x = np.array([0.5, 0.5])
    curve = _observe(x, 0.4, grid)
    with pytest.raises(InvalidParameterError, match=r"tau must lie in \[1, inf\], got 0.5"):
        bapi.check_termination(model, x, *curve, t_grid=grid, incumbent=incumbent, tau=0.5)
    with pytest.raises(InvalidParameterError, match="current_std"):
        bapi.check_termination(model, x, *curve, t_grid=grid, incumbent=incumbent, current_std="x")
    with pytest.raises(InvalidParameterError, match="one loss per length"):
        bapi.check_termination(model, x, curve[0], curve[1][:-1], t_grid=grid, incumbent=incumbent)


# ----------------------------------------------------------------------------- EI and q-EI
def test_monte_carlo_q_ei_of_one_point_matches_the_closed_form():
    base = bapi.normal_base_samples(4096, 1, np.random.default_rng(0))
    mean, std, threshold = np.array([[0.3], [0.5], [0.1]]), np.array([0.1, 0.2, 0.05]), 0.35
    mc = bapi.q_expected_improvement(mean, (std**2)[:, None, None], threshold, base)
    exact = _gp.expected_improvement(mean[:, 0], std, threshold)
    np.testing.assert_allclose(mc, exact, rtol=0.01)


def test_monte_carlo_q_ei_of_two_points_matches_brute_force():
    mean = np.array([0.3, 0.35])
    cov = np.array([[0.01, 0.006], [0.006, 0.02]])
    threshold = 0.32
    draws = np.random.default_rng(1).multivariate_normal(mean, cov, size=400_000)
    brute = np.maximum(threshold - draws.min(axis=1), 0).mean()
    base = bapi.normal_base_samples(4096, 2, np.random.default_rng(0))
    assert bapi.q_expected_improvement(mean, cov, threshold, base) == pytest.approx(
        brute, rel=0.01
    )


def test_greedy_increment_equals_q_ei_of_the_joint_batch(fitted):
    """The fast greedy step (pending samples fixed, one Cholesky row added) is the MC q-EI of the
    whole batch with the same base samples."""
    model, _, _, _, y = fitted
    base = bapi.normal_base_samples(256, 3, np.random.default_rng(0))
    pending = np.array([[0.3, 0.3], [0.5, 0.2]])
    candidates = np.array([[0.32, 0.28], [0.9, 0.9], [0.1, 0.6]])
    penalty = lambda Z: 0.05 * Z[:, 0]  # noqa: E731
    threshold = float(y.min())
    acquisition = _GreedyAcquisition(
        model, model.marginals(pending, 1.0), threshold, penalty, base
    )
    fast = acquisition(candidates)
    for c, value in zip(candidates, fast, strict=True):
        mean, cov = model.joint(np.vstack([pending, c]), 1.0)
        batch = bapi.q_expected_improvement(
            mean + penalty(np.vstack([pending, c])), cov, threshold, base
        )
        assert value == pytest.approx(math.log(batch), abs=1e-6)
    first = _GreedyAcquisition(model, None, threshold, penalty, base)(candidates)
    mean, std = model.predict(candidates, 1.0)
    np.testing.assert_allclose(
        first, _gp.log_expected_improvement(mean + penalty(candidates), std, threshold)
    )


# ----------------------------------------------------------------------------- horizon
FAST_PLAN = dict(n_candidates=128, n_polish=1, polish_maxiter=5, n_base_samples=64)


def test_horizon_shrinks_as_the_budget_does(fitted):
    model, cost, _, _, y = fitted
    grid = defaults.length_grid(20)
    plan = lambda budget: bapi.plan_horizon(  # noqa: E731
        model,
        cost,
        budget,
        incumbent=float(y.min()),
        t_grid=grid,
        rng=np.random.default_rng(3),
        **FAST_PLAN,
    )
    full = plan(math.inf)
    assert len(full) == defaults.H_MAX
    budgets = [
        full.cost.sum() + 1e-9,
        full.cost[:2].sum() + 1e-9,
        full.cost[0] + 1e-9,
        full.cost[0] / 10,
    ]
    lengths = [len(plan(b)) for b in budgets]
    assert lengths == [4, 2, 1, 1]
    tiny = plan(full.cost[0] / 10)
    np.testing.assert_array_equal(tiny.X, full.X[:1])  # the first pick even when it does not fit
    assert tiny.budget_left < 0
    two = plan(budgets[1])
    assert two.cost.sum() <= budgets[1] and two.budget_left == pytest.approx(
        budgets[1] - two.cost.sum()
    )
    np.testing.assert_allclose(full.cost, cost.predict_cost(full.X, full.t_stop))
    np.testing.assert_allclose(full.t_stop, bapi.stopping_lengths(model, full.X, grid))


def test_horizon_is_deterministic_and_follows_the_penalty(fitted):
    model, cost, _, _, y = fitted
    grid = defaults.length_grid(20)
    kwargs = dict(incumbent=float(y.min()), t_grid=grid, h_max=2, **FAST_PLAN)
    a = bapi.plan_horizon(model, cost, math.inf, rng=np.random.default_rng(5), **kwargs)
    b = bapi.plan_horizon(model, cost, math.inf, rng=np.random.default_rng(5), **kwargs)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.t_stop, b.t_stop)
    # a penalty that makes everything but the corner x ≈ (1, 1) hopeless moves the horizon there
    corner = lambda Z: 5.0 * np.sum((Z - 1.0) ** 2, axis=1)  # noqa: E731
    shifted = bapi.plan_horizon(
        model,
        cost,
        math.inf,
        rng=np.random.default_rng(5),
        penalty=corner,
        **{**kwargs, "incumbent": float(y.min()) + 0.5},
    )
    assert np.all(np.linalg.norm(shifted.X - 1.0, axis=1) < 0.5)


def test_horizon_charges_only_the_extra_iterations_of_a_resumable_configuration(fitted):
    model, cost, _, _, y = fitted
    grid = defaults.length_grid(20)
    kwargs = dict(incumbent=float(y.min()), t_grid=grid, h_max=1, **FAST_PLAN)
    fresh = bapi.plan_horizon(model, cost, math.inf, rng=np.random.default_rng(5), **kwargs)
    resumed = bapi.plan_horizon(
        model,
        cost,
        math.inf,
        rng=np.random.default_rng(5),
        resumable_X=fresh.X,
        resumable_t=[0.2],
        **kwargs,
    )
    np.testing.assert_array_equal(resumed.X, fresh.X)
    assert resumed.t_start[0] == 0.2
    assert resumed.cost[0] == pytest.approx(cost.predict_cost(fresh.X, fresh.t_stop, 0.2)[0])
    assert resumed.cost[0] < fresh.cost[0]
    with pytest.raises(InvalidParameterError, match="resumable_X and resumable_t"):
        bapi.plan_horizon(
            model, cost, 1.0, rng=np.random.default_rng(0), resumable_X=fresh.X, **kwargs
        )
    with pytest.raises(InvalidParameterError, match=r"budget must lie in \[0, inf\], got -1"):
        bapi.plan_horizon(model, cost, -1, rng=np.random.default_rng(0), **kwargs)


def test_select_member_maximises_ei_per_cost_and_skips_idle_members(fitted):
    model, cost, _, _, y = fitted
    X = np.array([[0.3, 0.3], [0.3, 0.3], [0.9, 0.9]])
    t_stop = np.array([0.6, 0.6, 0.6])
    incumbent = float(y.min())
    horizon = bapi.Horizon(X, t_stop, np.zeros(3), np.array([2.0, 1.0, 1.0]), 0.0)
    assert bapi.select_member(model, cost, horizon, incumbent=incumbent) == 1  # same EI, cheaper
    idle = bapi.Horizon(X, t_stop, np.array([0.0, 0.6, 0.0]), np.array([2.0, 0.0, 1.0]), 0.0)
    assert bapi.select_member(model, cost, idle, incumbent=incumbent) == 0
    # a penalty against the first two configurations turns the choice to the third
    penalty = lambda Z: np.where(Z[:, 0] < 0.5, 10.0, 0.0)  # noqa: E731
    assert bapi.select_member(model, cost, horizon, incumbent=incumbent, penalty=penalty) == 2


# ----------------------------------------------------------------------------- defaults
def test_defaults_and_grids():
    assert (defaults.TAU, defaults.CHECK_FRACTION, defaults.EPSILON, defaults.H_MAX) == (
        2.0,
        0.2,
        0.01,
        4,
    )
    assert defaults.PTS_PER_CURVE == 3
    assert defaults.n_initial(1) == 3 and defaults.n_initial(5) == 6
    assert defaults.check_interval(100) == 20 and defaults.check_interval(3) == 1
    np.testing.assert_allclose(defaults.length_grid(10), np.arange(2, 11) / 10)
    with pytest.raises(InvalidParameterError, match="t_max must be an integer >= 1, got 0"):
        defaults.length_grid(0)
    with pytest.raises(InvalidParameterError, match="t_max must be an integer >= 1, got True"):
        defaults.check_interval(True)
    np.testing.assert_allclose(defaults.check_grid(7, 0.3), np.arange(2, 8) / 7)  # p = 2


# ----------------------------------------------------------------------------- solver helpers
def test_training_steps_go_p_at_a_time_or_to_the_goal_without_a_model():
    assert bapi.first_length(100, 0, 20, 1.0, checked=True) == 20
    assert bapi.first_length(100, 90, 20, 1.0, checked=True) == 100
    assert bapi.first_length(100, 30, 20, 0.5, checked=False) == 50
    assert bapi.first_length(100, 60, 20, 0.5, checked=False) == 61  # at least one more
    assert bapi.next_length(100, 40, 0.55) == 55
    assert bapi.next_length(100, 40, 0.4) == 41 and bapi.next_length(100, 99, 1.0) == 100


def test_full_training_cost_is_the_median_cost_scaled_to_t_max():
    assert bapi.full_training_cost([], []) is None
    assert bapi.full_training_cost([1.0, 4.0, 3.0], [0.5, 1.0, 0.25]) == pytest.approx(4.0)


def test_initial_design_starts_at_the_start_and_counts_what_is_known():
    start = np.full(2, 0.5)
    design = bapi.initial_design(2, 0, start, np.random.default_rng(0))
    assert len(design) == 3 and np.array_equal(design[0], start)  # max(3, d + 1)
    again = bapi.initial_design(2, 0, start, np.random.default_rng(0))
    np.testing.assert_array_equal(np.array(design), np.array(again))
    assert len(bapi.initial_design(2, 2, None, np.random.default_rng(0))) == 1
    assert bapi.initial_design(2, 5, start, np.random.default_rng(0)) == []


def test_curve_dataset_takes_the_chosen_points_of_every_curve():
    t = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    curves = [(np.array([0.1, 0.2]), t, 1.0 - t), (np.array([0.7, 0.3]), t[:2], 2.0 - t[:2])]
    X, T, Y = bapi.curve_dataset(None, curves, 3)
    assert X.shape == (5, 2) and T.shape == Y.shape == (5,)
    np.testing.assert_allclose(T, [0.2, 0.6, 1.0, 0.2, 0.4])  # evenly spaced, the last kept
    np.testing.assert_allclose(Y, [0.8, 0.4, 0.0, 1.8, 1.6])
