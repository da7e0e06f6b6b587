"""The prefix cache of fitted pipeline steps (admm_automl/evaluation/prefix_cache.py): a hit gives
bit-identical losses to fitting the whole pipeline and saves the prefix fits; keys, the bounded
pool, its eviction and its counters; the one budget it shares with the partly trained models
(admm_automl/evaluation/kept.py), which follows memory_limit."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone

from admm_automl.evaluation import get_metric
from admm_automl.evaluation.iterative import ModelStore
from admm_automl.evaluation.kept import KeptStore, kept_budget_mb
from admm_automl.evaluation.prefix_cache import PrefixCache, fit_pipeline, prefix_keys
from admm_automl.exceptions import InvalidParameterError
from admm_automl.space import space_from_dict
from admm_automl.testing import CountingScaler

SPACE = space_from_dict({
    "name": "prefix",
    "modules": [
        {"name": "scaler", "choices": [
            {"name": "none"},
            {"name": "counting", "class": "admm_automl.testing.CountingScaler"}]},
        {"name": "transformer", "choices": [
            {"name": "none"},
            {"name": "rbf", "class": "sklearn.kernel_approximation.RBFSampler",
             "hyperparameters": {"gamma": {"type": "float", "low": 0.01, "high": 1.0, "log": True,
                                           "default": 0.1},
                                 "n_components": {"type": "fixed", "value": 50}}}]},
        {"name": "estimator", "choices": [
            {"name": "logistic_regression", "class": "sklearn.linear_model.LogisticRegression",
             "hyperparameters": {"C": {"type": "float", "low": 0.01, "high": 100.0, "log": True,
                                       "default": 1.0},
                                 "max_iter": {"type": "fixed", "value": 300}}}]},
    ],
})


@pytest.fixture(scope="module")
def data():
    from sklearn.datasets import load_breast_cancer
    from sklearn.impute import SimpleImputer

    X, y = load_breast_cancer(return_X_y=True)
    return X[:300], y[:300], X[300:400], y[300:400], SimpleImputer()


def config(scaler=1, transformer=1, gamma=0.1, C=1.0):
    z, theta = SPACE.encode({"scaler": ["none", "counting"][scaler],
                             "transformer": ["none", "rbf"][transformer],
                             "estimator": "logistic_regression", "estimator__C": C,
                             **({"transformer__gamma": gamma} if transformer else {})})
    return z, theta


def loss_with_cache(cache, data, z, theta, split=0, fidelity=1.0, seed=0):
    X, y, Xv, yv, prep = data
    pipeline = SPACE.to_pipeline(z, theta, preprocessor=clone(prep), random_state=seed)
    keys = prefix_keys(SPACE, z, theta, split=split, fidelity=fidelity, random_state=seed)
    fit = fit_pipeline(pipeline, keys, X, y, Xv, cache)
    metric = get_metric("roc_auc", "classification", "binary")
    scorer = metric.make_scorer(np.unique(y))
    return metric.loss(scorer, fit.pipeline[-1], fit.valid, yv), fit


def loss_without_cache(data, z, theta, seed=0):
    X, y, Xv, yv, prep = data
    pipeline = SPACE.to_pipeline(z, theta, preprocessor=clone(prep), random_state=seed).fit(X, y)
    metric = get_metric("roc_auc", "classification", "binary")
    return metric.loss(metric.make_scorer(np.unique(y)), pipeline, Xv, yv), pipeline


def test_a_hit_gives_bit_identical_losses_and_saves_the_prefix_fits(data):
    cache = PrefixCache()
    first, fit = loss_with_cache(cache, data, *config(C=1.0))
    assert not fit.hit and cache.misses == 1 and len(cache) == 3  # preprocess, +scaler, +rbf
    before = CountingScaler.n_fits
    second, fit = loss_with_cache(cache, data, *config(C=7.0))  # same prefix, another estimator
    assert CountingScaler.n_fits == before  # the scaler was not fitted again
    assert fit.hit and fit.fits_saved == 3 and fit.seconds_saved > 0
    assert (cache.hits, cache.fits_saved) == (1, 3)
    expected, plain = loss_without_cache(data, *config(C=7.0))
    assert second == expected  # bit-identical, not approximately equal
    assert first == loss_without_cache(data, *config(C=1.0))[0]
    Xv = data[2]
    np.testing.assert_array_equal(fit.pipeline.predict_proba(Xv), plain.predict_proba(Xv))


def test_a_longer_prefix_is_continued_from_the_longest_cached_one(data):
    cache = PrefixCache()
    loss_with_cache(cache, data, *config(gamma=0.1))
    before = CountingScaler.n_fits
    loss, fit = loss_with_cache(cache, data, *config(gamma=0.5))  # shares preprocess + scaler
    assert CountingScaler.n_fits == before and fit.fits_saved == 2
    assert loss == loss_without_cache(data, *config(gamma=0.5))[0]
    assert len(cache) == 4


def test_keys_name_the_steps_split_fidelity_and_seed():
    z, theta = config()
    keys = prefix_keys(SPACE, z, theta, split=0, fidelity=1.0, random_state=0)
    assert len(keys) == 3 and keys[0] == "split=0|fidelity=1|seed=0|preprocess"
    assert "scaler=counting" in keys[1] and "transformer__gamma" in keys[2]
    for other in ({"split": 1}, {"fidelity": 0.5}, {"random_state": 1}):
        args = {"split": 0, "fidelity": 1.0, "random_state": 0, **other}
        assert not set(prefix_keys(SPACE, z, theta, **args)) & set(keys)
    bare = prefix_keys(SPACE, *config(scaler=0), split=0, fidelity=1.0, random_state=0)
    assert bare[1] == bare[0]  # a passthrough step shares the key of the prefix before it
    assert len(prefix_keys(SPACE, z, theta, split=0, fidelity=1.0, random_state=0,
                           preprocessor=None)) == 2
    # the same steps after a preprocessor that encodes the categories otherwise share nothing
    ordinal = prefix_keys(SPACE, z, theta, split=0, fidelity=1.0, random_state=0,
                          preprocessor="ordinal")
    assert len(ordinal) == len(keys) and not set(ordinal) & set(keys)


def test_another_split_or_seed_is_a_miss(data):
    cache = PrefixCache()
    loss_with_cache(cache, data, *config())
    before = CountingScaler.n_fits
    assert not loss_with_cache(cache, data, *config(), split=1)[1].hit
    assert not loss_with_cache(cache, data, *config(), seed=3)[1].hit
    assert CountingScaler.n_fits == before + 2


def test_the_pool_is_bounded_and_evicts_the_least_recently_used(data):
    one_entry = 300 * 30 * 8 + 100 * 30 * 8  # the preprocessed train and validation rows
    cache = PrefixCache(size_mb=2.5 * one_entry / 2**20)
    loss_with_cache(cache, data, *config(scaler=1, transformer=0))  # preprocess, +scaler
    assert len(cache) == 2 and cache.nbytes <= cache.capacity
    loss_with_cache(cache, data, *config(scaler=1, transformer=1))  # + rbf: one must go
    assert cache.evictions >= 1 and cache.nbytes <= cache.capacity
    keys = prefix_keys(SPACE, *config(), split=0, fidelity=1.0, random_state=0)
    assert keys[0] not in cache and keys[2] in cache  # the least recently used went first
    tiny = PrefixCache(size_mb=1e-3)  # smaller than any entry: nothing is stored
    loss_with_cache(tiny, data, *config())
    assert len(tiny) == 0 and tiny.nbytes == 0


def test_size_zero_turns_the_cache_off_and_bad_sizes_are_refused(data):
    off = PrefixCache(0)
    before = CountingScaler.n_fits
    a = loss_with_cache(off, data, *config())[0]
    b = loss_with_cache(off, data, *config())[0]
    assert a == b and CountingScaler.n_fits == before + 2 and len(off) == 0
    assert off.stats()["hits"] == 0 and off.stats()["misses"] == 2
    for bad in (-1, float("nan"), float("inf"), "big", True):
        with pytest.raises(InvalidParameterError, match="cache size must be a finite number"):
            PrefixCache(bad)


def test_prefixes_and_models_share_one_budget_and_evict_each_other(data):
    """Filling the pool with one kind evicts the other, least recently used first, and the two
    together never exceed the budget."""
    one_entry = 300 * 30 * 8 + 100 * 30 * 8  # the preprocessed train and validation rows
    store = KeptStore(size_mb=4.5 * one_entry / 2**20)
    cache, models = PrefixCache(store=store), ModelStore(store)
    assert cache.capacity == store.capacity
    models.put("m", 5, np.zeros(one_entry // 8))  # a model about the size of one prefix entry
    assert len(models) == 1 and models.n_bytes > one_entry
    loss_with_cache(cache, data, *config(scaler=1, transformer=1))  # three prefixes: one must go
    assert len(models) == 0 and models.take("m", 5) is None  # the oldest, the model, went first
    assert len(cache) == 3 and store.evictions("model") == 1 and cache.evictions == 0
    assert store.nbytes == cache.nbytes <= store.capacity

    keys = prefix_keys(SPACE, *config(), split=0, fidelity=1.0, random_state=0)
    assert cache.get(keys[0]) is not None  # touched: keys[1] is now the oldest
    models.put("m", 5, np.zeros(2 * one_entry // 8))  # filling with a model evicts prefixes
    assert len(models) == 1 and cache.evictions >= 1 and keys[1] not in cache
    assert keys[0] in cache and store.nbytes == cache.nbytes + models.n_bytes <= store.capacity
    assert models.take("m", 5)[0] == 5 and len(models) == 0

    before = CountingScaler.n_fits  # an evicted prefix is fitted again, with the same loss
    loss, fit = loss_with_cache(cache, data, *config(scaler=1, transformer=1))
    assert CountingScaler.n_fits == before + 1 and fit.hit and fit.fits_saved == 1
    assert loss == loss_without_cache(data, *config())[0]


def test_the_budget_follows_memory_limit(data, monkeypatch):
    """cache_size MiB for everything a worker keeps, at most a quarter of memory_limit; a search
    hands that budget to its trial context, whose prefixes and models share one pool."""
    from admm_automl import ADMM
    from admm_automl.evaluation import TrialContext
    from admm_automl.evaluation.iterative import model_store
    from admm_automl.run import setup

    assert kept_budget_mb(256.0, None) == 256.0
    assert kept_budget_mb(256.0, 400) == 100.0 and kept_budget_mb(256.0, 4096) == 256.0

    seen = []

    def stop(*args, cache_size, **kwargs):
        seen.append(cache_size)
        raise LookupError("stop here")

    monkeypatch.setattr(setup, "prepare_task", stop)
    X, y = data[0], data[1]
    for limit, expected in ((400, 100.0), (None, 256.0)):
        with pytest.raises(LookupError, match="stop here"):
            ADMM(max_evals=2, memory_limit=limit, cache_size=256.0, random_state=0).fit(X, y)
        assert seen.pop() == expected

    ctx = TrialContext(SPACE, X, y, [], get_metric("roc_auc", "classification", "binary"),
                       cache_size=kept_budget_mb(256.0, 400))
    assert ctx.kept().capacity == ctx.prefix_cache().capacity == 100 * 2**20
    assert ctx.prefix_cache().store is ctx.kept() is model_store(ctx).store
    import pickle

    assert "_kept" not in pickle.loads(pickle.dumps(ctx)).__dict__  # each worker has its own


def test_keys_must_match_the_pipeline(data):
    z, theta = config()
    pipeline = SPACE.to_pipeline(z, theta, preprocessor=clone(data[4]))
    with pytest.raises(InvalidParameterError, match=r"one key per step before the estimator \(3\)"):
        fit_pipeline(pipeline, ["a"], *data[:3], PrefixCache())


def test_what_a_worker_reports_of_its_cache_reaches_the_journal_and_history():
    """A trial result with ``prefix_cache`` counters (what the worker will report once the pool
    is wired in) is kept in the journal record and becomes ``cache:*`` columns of history_."""
    from admm_automl.evaluation import PipelineObjective, SerialExecutor
    from admm_automl.journal import Journal
    from admm_automl.records import Request
    from admm_automl.final.results import records_to_frame

    class Task:
        space = SPACE

        def run(self, z, theta, fidelity):
            return {"status": "ok", "loss": 0.25, "prefix_cache": {"hits": 1, "misses": 0,
                                                                   "fits_saved": 2,
                                                                   "seconds_saved": 0.5}}

    objective = PipelineObjective(Task(), SerialExecutor(), Journal(), worst_loss=1.0)
    objective([Request(*config())])
    (record,) = objective.journal.records
    assert record["prefix_cache"]["fits_saved"] == 2
    frame = records_to_frame(objective.journal.records)
    assert frame.loc[0, "cache:seconds_saved"] == 0.5 and "prefix_cache" not in frame


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::admm_automl.exceptions.EvaluationFailedWarning")
def test_a_search_gives_the_same_history_with_and_without_the_prefix_cache(breast_cancer):
    """Wired into the engine: the same seed and budget give identical losses with the pool on
    and off, the pool reports the prefix fits it saved, and history_/prefix_cache_ show it."""
    from admm_automl import ADMM

    X, y = breast_cancer
    common = dict(search_space="paper_small", theta_solver="random", z_solver="random",
                  inner_iter=4, inner_iter_step=0, max_evals=24, random_state=0,
                  executor="serial", cv=None)
    on = ADMM(**common).fit(X, y)
    off = ADMM(**common, cache_size=0).fit(X, y)
    assert on.history_["loss"].tolist() == off.history_["loss"].tolist()
    assert on.history_["pipeline"].tolist() == off.history_["pipeline"].tolist()
    assert on.prefix_cache_["hits"] > 0 and on.prefix_cache_["fits_saved"] > 0
    assert on.history_["cache:hits"].sum() == on.prefix_cache_["hits"]
    assert off.prefix_cache_ == {"hits": 0, "misses": 0, "fits_saved": 0, "seconds_saved": 0.0,
                                 "hit_rate": 0.0}
    assert "cache:hits" not in off.history_.columns
