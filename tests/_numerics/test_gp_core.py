"""The numpy GP of ``bo`` (``_numerics/gp/``: ``model``, ``acquisition``, ``optim``): MAP
hyperparameters with Optuna's priors around a pessimistic prior mean, analytic gradients,
incremental updates, the log-EI acquisition with gradients and its maximiser, and the ADMM penalty
as a vectorised callable."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from admm_automl.problem import QuadraticPenalty
from admm_automl._numerics import gp as _gp


def data(n=25, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, dim))
    return X, np.sin(4 * X[:, 0]) + X[:, 1] ** 2 + 0.01 * rng.normal(size=n)


@pytest.mark.parametrize("fast_inverse", [False, True])
def test_negative_log_posterior_gradient_matches_finite_differences(fast_inverse):
    X, y = data()
    gp = _gp.MaternGP(X, y, fit=False, fast_inverse=fast_inverse)
    raw = np.array([0.3, -0.2, 0.5, 0.4, -3.0])
    value, grad = gp._loss(raw)
    numeric = optimize.approx_fprime(raw, lambda r: gp._loss(r)[0], 1e-6)
    assert np.isfinite(value)
    np.testing.assert_allclose(grad, numeric, rtol=1e-4, atol=1e-4)
    # the two ways to K⁻¹ differ in rounding only
    other = _gp.MaternGP(X, y, fit=False, fast_inverse=not fast_inverse)._loss(raw)
    np.testing.assert_allclose(other[0], value, rtol=1e-12)
    np.testing.assert_allclose(other[1], grad, rtol=1e-9, atol=1e-12)


def test_map_fit_lowers_the_loss_and_keeps_length_scales_moderate():
    """On 4 points the likelihood alone would send length scales to a bound; the prior
    −(0.1/a + 0.1a) keeps every inverse squared length scale within a decade of 1."""
    X, y = data(n=4)
    default = _gp.KernelParams.default(3).to_raw(_gp.MIN_NOISE)
    gp = _gp.MaternGP(X, y)
    assert gp._loss(gp.params.to_raw(_gp.MIN_NOISE))[0] < gp._loss(default)[0]
    assert np.all((gp.params.inv_sq_lengthscales > 0.1) & (gp.params.inv_sq_lengthscales < 10))
    assert gp.params.noise >= _gp.MIN_NOISE


def test_prediction_interpolates_and_its_gradients_are_exact():
    X, y = data()
    gp = _gp.MaternGP(X, y)
    mean, std = gp.predict(X)
    assert np.max(np.abs(mean - y)) < 0.1 and np.all(std < 0.2 * np.std(y))
    Q = np.random.default_rng(1).random((4, 3))
    _, _, dmean, dstd = gp.predict(Q, grad=True)
    eps = 1e-6
    for j in range(3):
        e = np.zeros(3)
        e[j] = eps
        (mp, sp), (mm, sm) = gp.predict(Q + e), gp.predict(Q - e)
        np.testing.assert_allclose((mp - mm) / (2 * eps), dmean[:, j], rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose((sp - sm) / (2 * eps), dstd[:, j], rtol=1e-3, atol=1e-4)


def test_prior_mean_is_the_worst_observation_far_from_the_data():
    """Away from every observation the posterior returns to the constant prior mean: the
    largest (worst) target by default, their mean with ``prior_mean="mean"``; the prior variance
    is the same either way."""
    X, y = data()
    far = X[:3] + 50.0  # beyond every length scale
    pessimistic = _gp.MaternGP(X, y)
    mean, std = pessimistic.predict(far)
    np.testing.assert_allclose(mean, y.max(), rtol=1e-9)
    np.testing.assert_allclose(std, np.sqrt(pessimistic.params.scale) * y.std(), rtol=1e-9)
    average = _gp.MaternGP(X, y, prior_mean="mean")
    np.testing.assert_allclose(average.predict(far)[0], y.mean(), rtol=1e-9)
    # the same targets, the same fit of the data near it
    assert np.max(np.abs(pessimistic.predict(X)[0] - y)) < 0.1
    # appended points and new targets move the prior mean with the largest target
    grown = pessimistic.append(X[:1] + 0.01, np.append(y, y.max() + 1.0))
    np.testing.assert_allclose(grown.predict(far)[0], y.max() + 1.0, rtol=1e-9)
    with pytest.raises(ValueError, match="prior_mean"):
        _gp.MaternGP(X, y, prior_mean="median")


def test_append_equals_a_full_factorisation_and_with_targets_keeps_the_points():
    X, y = data(n=30)
    first = _gp.MaternGP(X[:20], y[:20])
    grown = first.append(X[20:], y)
    full = _gp.MaternGP(X, y, first.params, fit=False)
    Q = np.random.default_rng(2).random((5, 3))
    # equal up to the conditioning of K (noise variance ~1e-3 of the signal here)
    np.testing.assert_allclose(grown.predict(Q)[0], full.predict(Q)[0], rtol=1e-4)
    np.testing.assert_allclose(grown.predict(Q)[1], full.predict(Q)[1], rtol=1e-4)
    shifted = grown.with_targets(y + 5.0)
    np.testing.assert_allclose(shifted.predict(Q)[0], full.predict(Q)[0] + 5.0, rtol=1e-4)
    assert len(first.X) == 20  # append returns a new GP


def test_log_ei_gradient_with_a_penalty_matches_finite_differences():
    X, y = data()
    gp = _gp.MaternGP(X, y)
    penalty = QuadraticPenalty(3.0, np.array([True, False, True]), np.array([0.2, 0.9]))
    acq = _gp.GPLogEI(gp, float(y.min()), penalty)
    Q = np.random.default_rng(3).random((4, 3))
    values, grads = acq.values_and_grads(Q)
    np.testing.assert_allclose(values, acq(Q))
    # log-EI is ~−1e3 at these points (z ≈ −50 under the pessimistic prior mean), so a step of
    # 1e-6 loses three digits to cancellation; central differences at 1e-4 err by O(1e-8)
    eps = 1e-4
    for j in range(3):
        e = np.zeros(3)
        e[j] = eps
        numeric = (acq(Q + e) - acq(Q - e)) / (2 * eps)
        np.testing.assert_allclose(grads[:, j], numeric, rtol=1e-3, atol=1e-3)


def test_penalty_helpers_use_the_vectorised_form_or_fall_back_to_the_callable():
    penalty = QuadraticPenalty(2.0, np.array([True, False]), np.array([0.5]))
    X = np.array([[0.1, 0.3], [0.9, 0.0]])
    np.testing.assert_allclose(_gp.penalty_rows(penalty, X), [0.16, 0.16])
    np.testing.assert_allclose(_gp.penalty_gradient(penalty, X), [[-0.8, 0.0], [0.8, 0.0]])
    plain = lambda x: penalty(x)  # noqa: E731 - a penalty without rows/gradient
    np.testing.assert_allclose(_gp.penalty_rows(plain, X), [0.16, 0.16])
    np.testing.assert_allclose(_gp.penalty_gradient(plain, X), [[-0.8, 0.0], [0.8, 0.0]],
                               atol=1e-6)


def test_batched_maximiser_polishes_to_the_acquisition_maximum():
    """Observations of (x − 0.37)² on a line: the log-EI maximiser lands next to 0.37."""
    X = np.array([[0.0], [0.2], [0.55], [0.8], [1.0]])
    y = (X[:, 0] - 0.37) ** 2
    gp = _gp.MaternGP(X, y)
    acq = _gp.GPLogEI(gp, float(y.min()))
    ranked = _gp.maximize(acq, 1, np.random.default_rng(0), centres=X[[1]], n_candidates=64,
                          n_starts=4, batched=True,
                          lengthscales=gp.params.inv_sq_lengthscales ** -0.5)
    values = acq(ranked)
    assert values[0] == pytest.approx(values.max())
    assert abs(ranked[0, 0] - 0.37) < 0.1
    assert len(ranked) >= 64 and np.all((ranked >= 0) & (ranked <= 1))


@pytest.mark.parametrize("batched", [False, True])
def test_maximiser_ranks_polished_starts_then_the_other_candidates(batched):
    """Either polish returns every candidate once: the polished starts first (best first), then
    the candidates that were not starts, from the best down."""
    X, y = data(n=12, dim=2, seed=3)
    acq = _gp.GPLogEI(_gp.MaternGP(X, y), float(y.min()))
    ranked = _gp.maximize(acq, 2, np.random.default_rng(1), centres=X[:1], n_candidates=64,
                          n_starts=3, batched=batched)
    assert ranked.shape == (64 + 2 * 16 + 1, 2)  # candidates, 16 perturbations a scale, centre
    values = acq(ranked)
    assert np.all(np.diff(values[:3]) <= 1e-12) and values[0] == pytest.approx(values.max())
    assert np.all(np.diff(values[3:]) <= 1e-12)


def test_fantasies_equal_the_gp_with_the_believed_points_appended():
    """Conditioning the posterior at fixed points on three of them at a believed value, one
    rank-one update each, gives what appending them to the GP gives (the targets' scaling held
    at the GP's); the first prediction is the GP's own."""
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 3))
    y = np.sin(X @ np.array([3.0, 1.0, 2.0])) + 0.1 * rng.normal(size=30)
    gp = _gp.MaternGP(X, y)
    C = rng.uniform(size=(200, 3))
    fantasies = _gp.Fantasies(gp, C)
    for got, want in zip(fantasies.predict(), gp.predict(C)):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    lie, ys, appended = float(y.min()), y.copy(), gp
    for q in (5, 17, 99):
        fantasies.condition(q, lie)
        ys = np.append(ys, lie)
        appended = appended.append(C[q], ys)
        appended.y_mean, appended.y_std = gp.y_mean, gp.y_std
        appended.ys = (appended.y - gp.y_mean) / gp.y_std
        appended.alpha = appended.K_inv @ appended.ys
        for got, want in zip(fantasies.predict(), appended.predict(C)):
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    # a believed point is less uncertain than before, and nearer its believed value
    mean, std = fantasies.predict()
    mean0, std0 = gp.predict(C[17:18])
    assert std[17] < std0[0] and abs(mean[17] - lie) < abs(mean0[0] - lie)


# ------------------------------------------------------- the lies kept from one ask to the next
def _gp_on(X, y, params):
    return _gp.MaternGP(X, y, params, fit=False)


def _same_posterior(a, b, dim, atol=1e-8, seed=5):
    Q = np.random.default_rng(seed).uniform(size=(64, dim))
    ma, sa = a.predict(Q)
    mb, sb = b.predict(Q)
    np.testing.assert_allclose(ma, mb, rtol=0, atol=atol)
    np.testing.assert_allclose(sa, sb, rtol=0, atol=atol)


def test_matern52_value_is_matern52_bit_for_bit():
    from admm_automl._numerics.gp.model import matern52, matern52_value

    rng = np.random.default_rng(0)
    d2 = rng.exponential(size=(37, 23)) * 10.0 ** rng.uniform(-8, 2, size=(37, 23))
    d2[rng.random(d2.shape) < 0.1] = 0.0
    d2[rng.random(d2.shape) < 0.05] = -1e-17  # rounding below 0, as squared distances can be
    assert np.array_equal(matern52(d2)[0], matern52_value(d2))


def test_cho_inverse_is_the_symmetric_inverse_cho_solve_gives():
    """``K⁻¹`` by ``potri`` from the factor: exactly symmetric, equal to the solve with the
    identity up to rounding, and a failure where the factor is singular."""
    from scipy import linalg

    from admm_automl._numerics.gp.model import cho_inverse

    rng = np.random.default_rng(0)
    for n in (1, 7, 150):
        A = rng.normal(size=(n, n))
        K = A @ A.T + 1e-3 * np.eye(n)
        L = linalg.cholesky(K, lower=True)
        inv = cho_inverse(L)
        assert np.array_equal(inv, inv.T)
        want = linalg.cho_solve((L, True), np.eye(n))
        np.testing.assert_allclose(inv, want, rtol=0, atol=1e-10 * np.abs(want).max())
        np.testing.assert_allclose(inv @ K, np.eye(n), atol=1e-6)
    L[3, 3] = 0.0
    with pytest.raises(linalg.LinAlgError):
        cho_inverse(L)


def test_append_factored_keeps_the_factor_and_the_inverse_of_a_fresh_factorisation():
    """Two block updates in a row: with the Cholesky factor kept, ``K⁻¹`` stays that of a fresh
    factorisation to 1e-9 where updating the explicit inverse alone (``append``) drifts (the
    case that made the kept lies use the factor: noise 5e-4, 32 points)."""
    rng = np.random.default_rng(2)
    f = lambda x: float(np.sum((x - 0.3) ** 2))  # noqa: E731
    X = rng.uniform(size=(20, 3))
    g = np.array([f(x) for x in X])
    base = _gp.MaternGP(X, g)
    P, x = rng.uniform(size=(12, 3)), rng.uniform(size=(1, 3))
    y1 = np.concatenate([g, np.full(12, g.min())])
    y2 = np.concatenate([y1, [0.1]])
    factored = base.append_factored(P, y1).append_factored(x, y2)
    fresh = _gp_on(np.vstack([X, P, x]), y2, base.params)
    np.testing.assert_allclose(factored.chol, fresh.chol, rtol=0, atol=1e-9)
    np.testing.assert_allclose(factored.K_inv, fresh.K_inv, rtol=0, atol=1e-9 * np.abs(fresh.K_inv).max())
    _same_posterior(factored, fresh, 3, atol=1e-10)
    drifted = base.append(P, y1).append(x, y2)
    assert np.abs(drifted.K_inv - fresh.K_inv).max() > 100 * np.abs(factored.K_inv - fresh.K_inv).max()


def test_kept_lies_give_the_posterior_of_a_gp_rebuilt_with_them():
    """A run of asks with 12 points pending: at each, the oldest pending point is told (its lie
    becomes its observation), one more is issued, now and then a pending point is dropped
    untold and the lie value moves. The kept GP's posterior equals, to 1e-8, that of a GP
    built afresh on the observations and the current lies — and it was updated, not rebuilt."""
    rng = np.random.default_rng(2)
    dim = 3
    f = lambda x: float(np.sum((x - 0.3) ** 2))  # noqa: E731
    X = list(rng.uniform(size=(20, dim)))
    g = [f(x) for x in X]
    base = _gp.MaternGP(np.array(X), np.array(g))
    base_rows = np.arange(len(X))
    pending = {i: rng.uniform(size=dim) for i in range(12)}
    next_id = 12
    kept = _gp.KeptLies()
    told: dict[int, int] = {}
    for step in range(40):
        if step:
            key = next(iter(pending))  # the oldest ends and is told
            x = pending.pop(key)
            told[key] = len(X)
            X.append(x)
            g.append(f(x))
            if step % 7 == 0:  # one dropped untold (a lost trial)
                pending.pop(next(iter(pending)))
            pending[next_id] = rng.uniform(size=dim)
            next_id += 1
        rows = np.arange(len(X))
        lie = float(min(g))
        gp = kept.update(base, base_rows, rows, np.array(X), np.array(g), pending, lie, told)
        told.clear()
        P = np.array(list(pending.values()))
        fresh = _gp_on(np.vstack([np.array(X), P]),
                       np.concatenate([g, np.full(len(P), lie)]), base.params)
        assert len(gp.X) == len(fresh.X)
        _same_posterior(gp, fresh, dim)
    # built afresh at the first call and after each of the 5 lies dropped untold; else updated
    assert kept.rebuilds == 1 + 5


def test_kept_lies_are_rebuilt_after_new_hyperparameters():
    rng = np.random.default_rng(3)
    X, y = rng.uniform(size=(15, 2)), rng.normal(size=15)
    base = _gp.MaternGP(X, y)
    lies = {0: rng.uniform(size=2), 1: rng.uniform(size=2)}
    kept = _gp.KeptLies()
    rows = np.arange(15)
    first = kept.update(base, rows, rows, X, y, lies, float(y.min()), {})
    fresh = _gp_on(np.vstack([X, np.array(list(lies.values()))]),
                   np.concatenate([y, np.full(2, y.min())]), base.params)
    np.testing.assert_array_equal(first.K_inv, fresh.K_inv)
    refit = _gp.MaternGP(X, y, fit=True, gtol=1e-3)
    assert refit.params is not base.params
    kept.update(refit, rows, rows, X, y, lies, float(y.min()), {})
    assert kept.rebuilds == 2 and kept.gp.params is refit.params
