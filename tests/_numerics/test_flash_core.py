"""FLASH numerics (Zhang et al., KDD 2016): encoding, ridge models, EI/EIPS, greedy D-optimal
design, top-r pruning and validation. The expected numbers were computed by hand from the paper's
formulas, independently of this code (pure arrays, no pipeline fits)."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.exceptions import InvalidParameterError
from admm_automl._numerics import flash as F

TOY = (2, 3)
BENCHMARK = (4, 2, 13, 14)  # the paper's rescaling / balancing / preprocessing / classifier

# A five-observation toy problem on n = [2, 3] (errors in percent, durations in seconds).
TOY_P = np.array(
    [[1, 0, 1, 0, 0], [1, 0, 0, 1, 0], [0, 1, 0, 0, 1], [0, 1, 1, 0, 0], [1, 0, 0, 0, 1]],
    dtype=float,
)
TOY_M = np.array([20.0, 25.0, 12.0, 18.0, 15.0])
TOY_TAU = np.array([10.0, 40.0, 5.0, 12.0, 8.0])
TOY_X = np.array([0.0, 1.0, 0.0, 1.0, 0.0])  # the unseen path (V_2^(1), V_2^(2))


def brute_force_scores(H: np.ndarray, C: np.ndarray, n_eigenvalues: int) -> np.ndarray:
    """The paper's D_ℓ(H + p pᵀ) for every candidate row p, by eigendecomposition."""
    stacked = H[None] + C[:, :, None] * C[:, None, :]
    eig = np.linalg.eigvalsh(stacked)[:, ::-1]
    return np.prod(eig[:, :n_eigenvalues], axis=1)


# ----------------------------------------------------------------------------- encoding


def test_encoding_of_the_papers_toy_path():
    """Choosing V_2^(1) and V_3^(2) on n = [2, 3] gives [0, 1, 0, 0, 1]."""
    np.testing.assert_array_equal(F.encode_paths([1, 2], TOY), [0, 1, 0, 0, 1])
    np.testing.assert_array_equal(F.decode_paths([0, 1, 0, 0, 1], TOY), [1, 2])
    np.testing.assert_array_equal(F.path_offsets(BENCHMARK), [0, 4, 6, 19])


@pytest.mark.parametrize("n_choices", [TOY, BENCHMARK, (1, 3, 1), (5,)])
def test_encode_decode_round_trip_over_all_paths(n_choices):
    """Every path has exactly K ones and decodes back to itself."""
    zs = F.all_paths(n_choices)
    P = F.encode_paths(zs, n_choices)
    assert zs.shape == (F.n_paths(n_choices), len(n_choices))
    assert len({tuple(z) for z in zs.tolist()}) == len(zs)
    assert P.shape == (len(zs), sum(n_choices))
    np.testing.assert_array_equal(P.sum(axis=1), len(n_choices))
    np.testing.assert_array_equal(F.decode_paths(P, n_choices), zs)


def test_encoding_rejects_bad_paths():
    with pytest.raises(InvalidParameterError, match=r"\[0, 3\] is out of range"):
        F.encode_paths([0, 3], TOY)
    with pytest.raises(InvalidParameterError, match="2 integer indices per path"):
        F.encode_paths([0, 1, 2], TOY)
    with pytest.raises(InvalidParameterError, match="integer indices"):
        F.encode_paths([0.0, 1.0], TOY)
    with pytest.raises(InvalidParameterError, match="row 1 is not a path vector"):
        F.decode_paths([[1, 0, 1, 0, 0], [1, 1, 1, 0, 0]], TOY)
    with pytest.raises(InvalidParameterError, match="length N = 5"):
        F.decode_paths([1, 0, 1, 0], TOY)


def test_proposition_1_trace_is_n_times_k():
    """tr(Σ p_i p_iᵀ) = n·K for any n paths, so A-optimality cannot rank designs."""
    rng = np.random.default_rng(3)
    zs = F.all_paths(BENCHMARK)
    for n in (1, 7, 40):
        P = F.encode_paths(zs[rng.integers(len(zs), size=n)], BENCHMARK)
        assert np.trace(P.T @ P) == n * len(BENCHMARK)


def test_rank_of_the_benchmark_path_space():
    """n = [4, 2, 13, 14]: N = 33, 1,456 paths, and the stacked path matrix has rank 30."""
    P = F.encode_paths(F.all_paths(BENCHMARK), BENCHMARK)
    assert P.shape == (1456, 33)
    assert np.linalg.matrix_rank(P) == 30 == F.path_rank(BENCHMARK)
    assert F.path_rank(TOY) == 4 == np.linalg.matrix_rank(F.encode_paths(F.all_paths(TOY), TOY))


def test_candidate_paths_enumerate_small_spaces_and_stratify_large_ones():
    """Small spaces: all paths; large ones: a duplicate-free sample in which every algorithm of
    every module appears, and which spans the whole path space."""
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(F.candidate_paths(BENCHMARK, rng), F.all_paths(BENCHMARK))
    sizes = (10, 10, 20, 30, 15)  # 900,000 paths
    zs = F.candidate_paths(sizes, rng, max_enumerate=1000, n_candidates=600)
    assert 590 <= len(zs) <= 600
    assert len(np.unique(zs, axis=0)) == len(zs)
    for k, size in enumerate(sizes):
        counts = np.bincount(zs[:, k], minlength=size)
        assert counts.min() >= 600 // size - 1 and counts.max() <= -(-600 // size)
    assert np.linalg.matrix_rank(F.encode_paths(zs, sizes)) == F.path_rank(sizes)


# ----------------------------------------------------------------------------- greedy D-design


def test_greedy_design_on_the_benchmark_layout():
    """n_init = 30 on the 1,456 benchmark paths: 30 distinct paths of rank 30; the paper's D_ℓ
    of the best candidate is positive up to ℓ = 30 and noise (≈ 0) at ℓ = 31."""
    C = F.encode_paths(F.all_paths(BENCHMARK), BENCHMARK)
    design = F.greedy_d_optimal_design(C, 31, np.random.default_rng(0))
    first30 = design.indices[:30]
    assert len(set(first30.tolist())) == 30
    assert np.linalg.matrix_rank(C[first30]) == 30
    H = {0: np.zeros((33, 33))}
    for ell, j in enumerate(design.indices, start=1):
        H[ell] = H[ell - 1] + np.outer(C[j], C[j])
    for ell in (2, 16, 30):
        scores = brute_force_scores(H[ell - 1], C, ell)
        assert scores.max() > 1.0
        # the pick is a brute-force argmax, and its logged score is the brute-force value
        assert scores[design.indices[ell - 1]] == pytest.approx(scores.max(), rel=1e-9)
        assert design.log_scores[ell - 1] == pytest.approx(np.log(scores.max()), rel=1e-9)
    paper_31 = brute_force_scores(H[30], C, 31).max()
    assert abs(paper_31) < 1e-9 * np.exp(design.log_scores[29])


def test_greedy_design_on_the_toy_layout_hits_the_rank_limit_at_four():
    """n = [2, 3] has rank 4: the paper's D_ℓ is positive up to ℓ = 4 and 0 from ℓ = 5; the
    design's own criterion (top min(ℓ, rank) eigenvalues) keeps growing and allows repeats."""
    C = F.encode_paths(F.all_paths(TOY), TOY)
    design = F.greedy_d_optimal_design(C, 7, np.random.default_rng(1))
    H = np.zeros((5, 5))
    for ell, j in enumerate(design.indices, start=1):
        paper = brute_force_scores(H, C, ell).max()
        ours = brute_force_scores(H, C, min(ell, 4))
        if ell <= 4:
            assert paper > 0.5
        else:
            assert abs(paper) < 1e-9
        assert ours[j] == pytest.approx(ours.max(), rel=1e-9)
        assert np.exp(design.log_scores[ell - 1]) == pytest.approx(ours.max(), rel=1e-9)
        H += np.outer(C[j], C[j])
    assert np.linalg.matrix_rank(C[design.indices[:4]]) == 4
    assert len(set(design.indices.tolist())) < 7  # 6 paths, 7 picks


def test_greedy_design_follows_the_brute_force_rule_on_another_layout():
    """On n = [3, 2, 4] every pick of 12 (rank 7) is a maximiser of the top-min(ℓ, 7)
    eigenvalue product, and its logged score is that maximum."""
    sizes = (3, 2, 4)
    C = F.encode_paths(F.all_paths(sizes), sizes)
    design = F.greedy_d_optimal_design(C, 12, np.random.default_rng(5))
    H = np.zeros((9, 9))
    for ell, j in enumerate(design.indices, start=1):
        scores = brute_force_scores(H, C, min(ell, F.path_rank(sizes)))
        if ell > 1:
            assert scores[j] == pytest.approx(scores.max(), rel=1e-9)
        assert design.log_scores[ell - 1] == pytest.approx(np.log(scores[j]), rel=1e-9)
        H += np.outer(C[j], C[j])


def test_greedy_design_randomness_comes_from_the_generator():
    """The same seed gives the same design; different seeds give different ones (random first
    path and random tie-breaks), all of full rank."""
    C = F.encode_paths(F.all_paths(BENCHMARK), BENCHMARK)
    a = F.greedy_d_optimal_design(C, 30, np.random.default_rng(7)).indices
    b = F.greedy_d_optimal_design(C, 30, np.random.default_rng(7)).indices
    c = F.greedy_d_optimal_design(C, 30, np.random.default_rng(8)).indices
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert np.linalg.matrix_rank(C[c]) == 30
    # after (0, 0) on n = [2, 3], the paths sharing no algorithm with it, (1, 1) and (1, 2),
    # tie for the farthest from its span: either may be picked
    toy = F.encode_paths(F.all_paths(TOY), TOY)
    picks = {int(F.greedy_d_optimal_design(toy, 1, np.random.default_rng(s), observed=toy[[0]])
                 .indices[0]) for s in range(20)}
    assert picks == {4, 5}


def test_greedy_design_continues_from_observed_paths():
    """With paths already observed the first pick follows the criterion: once they span the
    path space, it is a path of largest leverage pᵀH⁺p, and the score is pdet(H + ppᵀ)."""
    C = F.encode_paths(F.all_paths(TOY), TOY)
    observed = C[[0, 1, 2, 4, 5]]  # rank 4, path 3 = (1, 0) left out
    H = observed.T @ observed
    design = F.greedy_d_optimal_design(C, 1, np.random.default_rng(0), observed=observed)
    leverage = np.einsum("ij,ij->i", C, (np.linalg.pinv(H) @ C.T).T)
    j = design.indices[0]
    assert leverage[j] == pytest.approx(leverage.max())
    assert np.exp(design.log_scores[0]) == pytest.approx(brute_force_scores(H, C, 4)[j])
    # a rank-deficient start: the pick adds a new direction
    part = F.greedy_d_optimal_design(C, 1, np.random.default_rng(0), observed=C[[0]])
    assert np.linalg.matrix_rank(np.vstack([C[0], C[part.indices[0]]])) == 2


def test_greedy_design_scales_to_a_sampled_space():
    """A 900,000-path space: the design over a stratified sample reaches the full rank."""
    sizes = (10, 10, 20, 30, 15)
    rng = np.random.default_rng(2)
    C = F.encode_paths(F.candidate_paths(sizes, rng, max_enumerate=1000), sizes)
    design = F.greedy_d_optimal_design(C, F.path_rank(sizes), rng)
    assert np.linalg.matrix_rank(C[design.indices]) == F.path_rank(sizes) == 81


# ----------------------------------------------------------------------------- EI / EIPS


@pytest.mark.parametrize(
    "best, xi, mu, s, expected",
    [(10, 0, 12, 2, 0.166631), (10, 0, 8, 2, 2.166631), (20, 100, 25, 5, 7.77e-99)],
)
def test_expected_improvement_sanity_values(best, xi, mu, s, expected):
    assert F.expected_improvement(mu, s, best, xi) == pytest.approx(expected, rel=1e-4)
    assert F.log_expected_improvement(np.array([mu]), np.array([s]), best, xi)[0] == (
        pytest.approx(np.log(expected), rel=1e-4)
    )


def test_expected_improvement_underflow_and_its_log_space_ranking():
    """m⁺ = 20, ξ = 100, μ = 25, s = 2 underflows to 0.0; the log form stays finite and still
    ranks larger s and lower μ higher."""
    assert F.expected_improvement(25.0, 2.0, 20.0, 100.0) == 0.0
    log_ei = F.log_expected_improvement(
        np.array([25.0, 25.0, 24.0]), np.array([2.0, 2.5, 2.0]), 20.0, 100.0
    )
    assert np.all(np.isfinite(log_ei))
    assert log_ei[1] > log_ei[0] and log_ei[2] > log_ei[0]
    # the asymptote log s + log φ(u) − 2 log|u| at u = −52.5
    u = -52.5
    assert log_ei[0] == pytest.approx(
        np.log(2.0) - 0.5 * u * u - 0.5 * np.log(2 * np.pi) - 2 * np.log(-u), rel=1e-6
    )


def test_eips_floors_a_non_positive_cost_prediction():
    """A predicted log-cost <= 0 (sub-second runs) is floored at MIN_COST instead of flipping
    the sign of EIPS."""
    ei = F.expected_improvement(12.0, 2.0, 10.0, 0.0)
    got = F.eips(np.array([12.0, 12.0, 12.0]), np.array([2.0] * 3), np.array([2.0, -1.0, 0.0]),
                 10.0, 0.0)
    np.testing.assert_allclose(got, [ei / 2.0, ei / F.MIN_COST, ei / F.MIN_COST])
    log_got = F.log_eips(np.array([12.0, 12.0]), np.array([2.0, 2.0]), np.array([2.0, -1.0]),
                         10.0, 0.0)
    np.testing.assert_allclose(log_got, np.log(got[:2]))


# ----------------------------------------------------------------------------- ridge models


def test_ridge_variant_a_sanity_numbers():
    """λ = 1 with an intercept: the hand-computed β, b, σ_ε², μ(x), s(x), EI, log τ, EIPS."""
    perf = F.fit_ridge(TOY_P, TOY_M, 1.0)
    np.testing.assert_allclose(
        perf.coef, [1.285714, -1.285714, 0.476190, 2.714286, -3.190476], atol=1e-6
    )
    assert perf.intercept == pytest.approx(18.285714, abs=1e-6)
    assert perf.noise_var == pytest.approx(2.565079, abs=1e-6)
    mu, s = perf.predict(TOY_X[None])
    assert mu[0] == pytest.approx(19.714286, abs=1e-6)
    assert s[0] == pytest.approx(2.234168, abs=1e-6)
    ei = F.expected_improvement(mu, s, TOY_M.min(), 0.0)[0]
    assert ei == pytest.approx(1.574e-4, rel=1e-3)
    cost = F.fit_cost_model(TOY_P, TOY_TAU, 1.0, transform="log")  # the paper's E[log τ]
    log_tau = cost.mean(TOY_X[None])
    assert log_tau[0] == pytest.approx(2.897287, abs=1e-6)
    assert F.eips(mu, s, log_tau, TOY_M.min(), 0.0)[0] == pytest.approx(5.434e-5, rel=1e-3)
    assert F.log_eips(mu, s, log_tau, TOY_M.min(), 0.0)[0] == pytest.approx(
        np.log(5.434108e-5), rel=1e-6
    )
    # the paper's ξ = 100 (percent): EI underflows, log-EIPS does not
    assert F.eips(mu, s, log_tau, TOY_M.min(), 100.0)[0] == 0.0
    assert np.isfinite(F.log_eips(mu, s, log_tau, TOY_M.min(), 100.0)[0])


def test_path_models_fit_both_models_on_the_same_observations():
    """fit_path_models is the two ridge fits of the sanity vectors together, with m⁺; a NaN value
    enters as the worst value seen, and log-EIPS ranks paths as the separate models do."""
    zs = F.decode_paths(TOY_P, TOY)
    models = F.fit_path_models(zs, TOY_M, TOY_TAU, TOY, transform="log")
    np.testing.assert_allclose(models.perf.coef, F.fit_ridge(TOY_P, TOY_M).coef)
    assert models.best == TOY_M.min() == 12.0
    x = F.decode_paths(TOY_X, TOY)
    assert models.log_eips(x[None], 0.0)[0] == pytest.approx(np.log(5.434108e-5), rel=1e-6)
    failed = F.fit_path_models(zs, np.r_[TOY_M[:4], np.nan], TOY_TAU, TOY)
    np.testing.assert_allclose(failed.perf.coef,
                               F.fit_ridge(TOY_P, np.r_[TOY_M[:4], TOY_M[:4].max()]).coef)
    np.testing.assert_array_equal(F.fill_failed([np.nan, np.inf]), [0.0, 0.0])
    sub = models.subgraph(F.all_paths(TOY), 1, np.random.default_rng(0))
    assert sub.top_paths.tolist() == [[1, 2]]  # lowest mean (13.8) and cost: highest EIPS


def test_censored_rows_teach_the_cost_model_only():
    """A censored row (a time-out) is left out of the performance model and m⁺ and kept in the
    cost model; if every row is censored, none is."""
    zs = F.decode_paths(TOY_P, TOY)
    whole = F.fit_path_models(zs, TOY_M, TOY_TAU, TOY)
    last = np.arange(len(TOY_M)) == len(TOY_M) - 1
    censored = F.fit_path_models(zs, TOY_M, TOY_TAU, TOY, censored=last)
    np.testing.assert_allclose(censored.perf.coef, F.fit_ridge(TOY_P[~last], TOY_M[~last]).coef)
    np.testing.assert_allclose(censored.cost.coef, whole.cost.coef)
    assert censored.best == TOY_M[~last].min()
    every = F.fit_path_models(zs, TOY_M, TOY_TAU, TOY, censored=np.ones(len(TOY_M), bool))
    np.testing.assert_allclose(every.perf.coef, whole.perf.coef)


def test_ridge_variant_a_is_scikit_learns_ridge():
    """Variant A is sklearn's Ridge(alpha) (the released code's model) on any data."""
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    zs = F.all_paths(BENCHMARK)[rng.integers(1456, size=50)]
    P = F.encode_paths(zs, BENCHMARK)
    y = rng.normal(size=50)
    ours = F.fit_ridge(P, y, 0.7)
    ref = Ridge(alpha=0.7).fit(P, y)
    np.testing.assert_allclose(ours.mean(P), ref.predict(P), atol=1e-10)
    np.testing.assert_allclose(ours.coef, ref.coef_, atol=1e-10)


def test_ridge_variant_b_prediction():
    """The paper's Eq. 1 read literally (no intercept, nλ) predicts 6.470588 at x."""
    model = F.fit_ridge(TOY_P, TOY_M, 1.0, fit_intercept=False)
    assert model.intercept == 0.0
    assert model.mean(TOY_X) == pytest.approx(6.470588, abs=1e-6)
    # the variance still uses (PᵀP + λI)⁻¹: the same matrix as Variant A
    np.testing.assert_allclose(model.precision_inv, F.fit_ridge(TOY_P, TOY_M).precision_inv)


def test_ridge_floors_the_std_of_an_interpolating_fit():
    """One observation: σ_ε² = 0, and s is the floor MIN_STD, not 0."""
    model = F.fit_ridge(TOY_P[:1], TOY_M[:1])
    assert model.noise_var == 0.0
    _, s = model.predict(TOY_P)
    np.testing.assert_array_equal(s, F.MIN_STD)
    assert np.isfinite(F.log_eips(*model.predict(TOY_P), None, 20.0, 1.0)).all()


def test_cost_transforms():
    tau = np.array([0.0, 0.5, 10.0])
    np.testing.assert_allclose(F.transform_cost(tau, "log"), np.log([F.MIN_SECONDS, 0.5, 10.0]))
    np.testing.assert_allclose(F.transform_cost(tau, "log1p"), np.log1p(tau))
    np.testing.assert_array_equal(F.transform_cost(tau, "identity"), tau)
    model = F.fit_cost_model(TOY_P, TOY_TAU, transform="identity")
    np.testing.assert_allclose(model.mean(TOY_P), F.fit_ridge(TOY_P, TOY_TAU).mean(TOY_P))
    with pytest.raises(InvalidParameterError, match=r"durations must be finite and >= 0.*-1\.0"):
        F.transform_cost([1.0, -1.0])
    with pytest.raises(InvalidParameterError, match=r"got \[inf\]"):
        F.transform_cost([np.inf], "log1p")


def test_ridge_rejects_bad_inputs():
    with pytest.raises(InvalidParameterError, match=r"finite targets.*nan"):
        F.fit_ridge(TOY_P, np.array([1.0, np.nan, 2.0, 3.0, 4.0]))
    with pytest.raises(InvalidParameterError, match=r"shape \(n, N\).*\(5, 5\) and \(4,\)"):
        F.fit_ridge(TOY_P, TOY_M[:4])
    with pytest.raises(InvalidParameterError, match="n >= 1"):
        F.fit_ridge(np.zeros((0, 5)), np.zeros(0))
    with pytest.raises(InvalidParameterError, match="ridge_alpha must be a finite number > 0"):
        F.fit_ridge(TOY_P, TOY_M, 0.0)


# ----------------------------------------------------------------------------- ranking, pruning


def _additive_model(coef: list[float]) -> F.RidgePathModel:
    """A model with known means; identity precision gives every path the same s on one layout."""
    coef = np.asarray(coef, dtype=float)
    return F.RidgePathModel(coef, 0.0, 1.0, np.eye(len(coef)))


def test_rank_with_random_ties():
    rng = np.random.default_rng(0)
    order = F.rank_with_random_ties(np.array([0.1, 3.0, -np.inf, 2.0]), rng)
    np.testing.assert_array_equal(order, [1, 3, 0, 2])
    firsts = {int(F.rank_with_random_ties(np.array([1.0, 1.0 + 1e-12, 1.0, 0.0]), rng)[0])
              for _ in range(40)}
    assert firsts == {0, 1, 2}  # scores within TIE_ATOL are ties; the clear loser never leads
    with pytest.raises(InvalidParameterError, match="NaN"):
        F.rank_with_random_ties(np.array([1.0, np.nan]), rng)


def test_build_subgraph_keeps_the_algorithms_of_the_top_paths():
    """μ(z) = a[z1] + b[z2] with a = [0, 1], b = [0, 5, 2]: by ξ = 0 EI the best paths are
    (0,0), (1,0), (0,2); G′ is the product of their algorithms per module."""
    perf = _additive_model([0.0, 1.0, 0.0, 5.0, 2.0])
    zs = F.all_paths(TOY)
    rng = np.random.default_rng(0)
    one = F.build_subgraph(perf, None, zs, TOY, 0.0, 1, rng)
    assert [m.tolist() for m in one.masks] == [[True, False], [True, False, False]]
    two = F.build_subgraph(perf, None, zs, TOY, 0.0, 2, rng)
    np.testing.assert_array_equal(two.top_paths, [[0, 0], [1, 0]])
    assert two.n_choices == (2, 1) and two.kept() == ((0, 1), (0,))
    three = F.build_subgraph(perf, None, zs, TOY, 0.0, 3, rng)
    assert three.kept() == ((0, 1), (0, 2))  # 4 paths in G′ from the top 3
    assert F.build_subgraph(perf, None, zs, TOY, 0.0, 6, rng).n_choices == TOY


def test_build_subgraph_divides_by_the_predicted_cost():
    """A path slightly worse but 10× cheaper in predicted log-cost wins under EIPS."""
    perf = _additive_model([0.0, 0.1, 0.0, 5.0, 5.0])
    cost = F.RidgePathModel(np.array([5.0, 0.5, 0.0, 0.0, 0.0]), 0.0, 0.0, np.eye(5))
    zs = F.all_paths(TOY)
    sub = F.build_subgraph(perf, cost, zs, TOY, 0.0, 1, np.random.default_rng(0))
    np.testing.assert_array_equal(sub.top_paths, [[1, 0]])
    without = F.build_subgraph(perf, None, zs, TOY, 0.0, 1, np.random.default_rng(0))
    np.testing.assert_array_equal(without.top_paths, [[0, 0]])


def test_build_subgraph_breaks_ties_at_random():
    """A flat model: every path ties, and the kept path varies with the generator."""
    flat = _additive_model([0.0] * 5)
    zs = F.all_paths(TOY)
    kept = {tuple(F.build_subgraph(flat, None, zs, TOY, 0.0, 1, np.random.default_rng(seed))
                  .top_paths[0].tolist()) for seed in range(30)}
    assert len(kept) >= 4


# ----------------------------------------------------------------------------- validation


def test_defaults_are_the_papers():
    """r = 10, ξ = 100 % (1.0 in [0, 1] loss units), ξ = 0 for pruning, ridge α = 1 with an
    intercept; n_init = n_prune = N − K + 1 = 30 on the benchmark. The cost model is on
    log(1 + τ) rather than the paper's log τ (positive for sub-second runs)."""
    assert F.DEFAULT_TOP_R == 10
    assert F.DEFAULT_XI == 1.0 and F.DEFAULT_XI_SELECT == 0.0
    assert F.DEFAULT_RIDGE_ALPHA == 1.0 and F.DEFAULT_FIT_INTERCEPT is True
    assert F.DEFAULT_COST_TRANSFORM == "log1p"
    assert F.check_n_init(None, BENCHMARK) == 30 == F.check_n_prune(None, BENCHMARK)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: F.check_n_init(0), "n_init must be an integer >= 1, got 0"),
        (lambda: F.check_n_init(2.5), "n_init must be an integer >= 1, got 2.5"),
        (lambda: F.check_n_init(True), "n_init must be an integer >= 1, got True"),
        (lambda: F.check_n_init(None), "n_init=None"),
        (lambda: F.check_n_prune(-1), "n_prune must be an integer >= 0, got -1"),
        (lambda: F.check_top_r(0, 6), r"top_r must be an integer between 1 and .* \(6\), got 0"),
        (lambda: F.check_top_r(7, 6), r"between 1 and the number of paths \(6\), got 7"),
        (lambda: F.check_ridge_alpha(0), "ridge_alpha must be a finite number > 0, got 0"),
        (lambda: F.check_ridge_alpha(-1.0), "got -1.0"),
        (lambda: F.check_ridge_alpha(float("inf")), "got inf"),
        (lambda: F.check_xi(-0.5), r"xi must be a finite number >= 0 \(in loss units\), got -0.5"),
        (lambda: F.check_xi(float("nan"), "xi_select"), "xi_select must be .* got nan"),
        (lambda: F.check_cost_transform("sqrt"), r"'log', 'log1p', 'identity', got 'sqrt'"),
        (lambda: F.check_n_choices([]), "non-empty sequence of integers >= 1, got \\[\\]"),
        (lambda: F.check_n_choices([2, 0]), r"got \[2, 0\]"),
        (lambda: F.check_n_choices(3), "sequence of module sizes, got 3"),
        (lambda: F.build_subgraph(_additive_model([0.0] * 5), None, F.all_paths(TOY), TOY,
                                  0.0, 7, np.random.default_rng(0)), r"\(6\), got 7"),
        (lambda: F.greedy_d_optimal_design(np.eye(3), 0, np.random.default_rng(0)),
         "n_init must be an integer >= 1, got 0"),
    ],
)
def test_validation_errors_name_the_bad_value(call, message):
    with pytest.raises(InvalidParameterError, match=message):
        call()


def test_validators_return_normalised_values():
    assert F.check_n_init(np.int64(5)) == 5 and type(F.check_n_init(np.int64(5))) is int
    assert F.check_n_prune(0) == 0
    assert F.check_top_r(6, 6) == 6
    assert F.check_ridge_alpha(2) == 2.0 and F.check_xi(0) == 0.0
    assert F.check_n_choices(np.array([2, 3])) == (2, 3)


# -------------------------------------------- sufficient statistics and gathers (many workers)
def _reference_rank(scores, rng, atol):
    """rank_with_random_ties as written before its fast path: one lexsort of every position."""
    values = np.asarray(scores, dtype=float)
    order = np.argsort(-values, kind="stable")
    ordered = values[order]
    with np.errstate(invalid="ignore"):
        new_group = np.diff(ordered) < -atol
    group = np.concatenate([[0], np.cumsum(new_group)])
    return order[np.lexsort((rng.random(len(values)), group))]


def test_rank_with_random_ties_is_the_full_lexsort_bit_for_bit():
    gen = np.random.default_rng(0)
    for t in range(400):
        n = int(gen.integers(1, 80))
        scores = np.round(gen.normal(size=n), int(gen.integers(0, 3)))
        if t % 3 == 0:
            scores[gen.random(n) < 0.2] = -np.inf
        if t % 5 == 0:
            scores = scores + gen.random(n) * 1e-14  # within the tie tolerance
        seed = int(gen.integers(2**31))
        got = F.rank_with_random_ties(scores, np.random.default_rng(seed))
        want = _reference_rank(scores, np.random.default_rng(seed), F.TIE_ATOL)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_models_from_columns_and_gram_match_the_one_hot_fit(fit_intercept):
    sizes = (4, 2, 5, 3)
    gen = np.random.default_rng(1)
    z = np.stack([gen.integers(0, k, size=60) for k in sizes], axis=1)
    values = gen.normal(size=60)
    values[3] = np.nan  # a failed run: filled alike
    seconds = gen.exponential(size=60)
    censored = gen.random(60) < 0.2
    observed = F.ObservedPaths(sizes)
    for i in range(60):
        observed.append(tuple(int(j) for j in z[i]), float(seconds[i]), bool(censored[i]), i)
    np.testing.assert_array_equal(observed.gram, F.encode_paths(z, sizes).T @ F.encode_paths(z, sizes))
    dense = F.fit_path_models(z, values, seconds, sizes, fit_intercept=fit_intercept,
                              censored=censored)
    fast = F.fit_path_models_columns(observed.columns.array, values, seconds, sizes,
                                     observed.gram, fit_intercept=fit_intercept,
                                     censored=censored, censored_gram=observed.censored_gram)
    for a, b in ((dense.perf, fast.perf), (dense.cost, fast.cost)):
        np.testing.assert_allclose(b.coef, a.coef, atol=1e-10)
        np.testing.assert_allclose(b.intercept, a.intercept, atol=1e-10)
        np.testing.assert_allclose(b.noise_var, a.noise_var, atol=1e-10)
        np.testing.assert_allclose(b.precision_inv, a.precision_inv, atol=1e-10)
    assert fast.best == dense.best
    paths = F.all_paths(sizes)
    np.testing.assert_allclose(fast.log_eips_columns(F.path_columns(paths, sizes), 0.1),
                               dense.log_eips(paths, 0.1), rtol=0, atol=1e-9)


def test_observed_paths_score_again_only_for_a_new_owner():
    observed = F.ObservedPaths((3, 2))
    calls = []

    def value(z, item):
        calls.append(item)
        return float(item)

    for i in range(4):
        observed.append((i % 3, i % 2), 1.0, False, i)
    first, second = object(), object()
    np.testing.assert_array_equal(observed.values(value, first), [0, 1, 2, 3])
    observed.append((0, 0), 1.0, False, 4)
    np.testing.assert_array_equal(observed.values(value, first), [0, 1, 2, 3, 4])
    assert calls == [0, 1, 2, 3, 4]  # the new row only
    observed.values(value, second)
    assert calls == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]  # a new owner (new duals): all again
    assert observed.distinct == {(0, 0), (1, 1), (2, 0), (0, 1)}
