"""The training-length fidelity of the evaluation engine: learning curves, continuation of a held
model (the same model as training from scratch, at the cost of the extra iterations only), the
model store in the worker's one bounded pool of kept things (and a continuation whose model was
evicted from it), and the journal and cache keys of such evaluations."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from admm_automl.evaluation import iterative
from admm_automl.evaluation.executors import ProcessExecutor, SerialExecutor
from admm_automl.evaluation.kept import KeptStore
from admm_automl.run.setup import open_objective
from admm_automl.run.task import prepare_task
from admm_automl.exceptions import InvalidParameterError
from admm_automl.records import Request
from admm_automl.space import Algorithm, Fixed, Float, Int, Iterations, Module, PipelineSpace
from admm_automl.testing import iterative as counting

T_MAX = 20


def _space(method: str) -> PipelineSpace:
    """A scaler and one counting learner with a training length of up to 20 iterations."""
    if method == "partial_fit":
        learner = Algorithm(
            "sgd", "admm_automl.testing.iterative.CountingSGDClassifier",
            (Float("alpha", low=1e-5, high=1e-1, default=1e-3, log=True),
             Fixed("loss", value="log_loss"), Fixed("max_iter", value=T_MAX),
             Fixed("tol", value=None)),
            iterations=Iterations("max_iter", 1, T_MAX, "partial_fit"),
        )
    else:
        learner = Algorithm(
            "hgb", "admm_automl.testing.iterative.CountingHistGradientBoostingClassifier",
            (Float("learning_rate", low=0.01, high=1.0, default=0.1, log=True),
             Int("max_leaf_nodes", low=3, high=31, default=7),
             Fixed("max_iter", value=T_MAX), Fixed("early_stopping", value=False)),
            iterations=Iterations("max_iter", 1, T_MAX, "warm_start"),
        )
    scaler = Algorithm("standard_scaler", "sklearn.preprocessing.StandardScaler")
    return PipelineSpace("counting", (Module("scaler", (scaler,)), Module("estimator", (learner,))))


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(limits=1):  # HistGradientBoosting's OpenMP on a busy machine
        yield


def _context(breast_cancer, method, cv=None, cache_size=256.0):
    space = _space(method)
    X, y = breast_cancer
    task = prepare_task(X, y, space=space, task="classification", target_type="binary",
                        model_seed=7, cv=cv, cache_size=cache_size)
    theta = space.encoding.initial_theta
    return task.context, ((0, 0), theta)


def _held_model(ctx, config):
    z, theta = config
    return iterative.model_store(ctx).take(iterative.model_key(ctx.space, z, theta, 1.0, 0), 10**6)


def test_checkpoints_lie_on_one_grid_and_end_at_the_length():
    assert iterative.checkpoints(100, 0, 100) == list(range(5, 101, 5))
    assert iterative.checkpoints(100, 0, 12) == [5, 10, 12]
    assert iterative.checkpoints(100, 12, 27) == [15, 20, 25, 27]
    assert iterative.checkpoints(20, 0, 3) == [1, 2, 3]
    assert iterative.checkpoints(20, 5, 5) == []


@pytest.mark.parametrize("method", ["partial_fit", "warm_start"])
def test_continuation_gives_the_model_trained_from_scratch_and_costs_only_the_extra(
    breast_cancer, method
):
    """Training to 7 then continuing to 16 gives the same predictions and learning curve as
    training to 16 at once, and trains 16 - 7 = 9 iterations (counted inside the learner)."""
    ctx, (z, theta) = _context(breast_cancer, method)
    counting.TRAINED.clear()
    first = ctx.run(z, theta, 1.0, 7)
    assert counting.TRAINED[method] == 7 and first["trained_iterations"] == 7
    assert first["continued_from"] == 0 and [t for t, _ in first["curve"]] == [1, 2, 3, 4, 5, 6, 7]
    continued = ctx.run(z, theta, 1.0, 16)
    assert counting.TRAINED[method] == 7 + 9, "the continuation retrained from scratch"
    assert continued["continued_from"] == 7 and continued["trained_iterations"] == 9
    assert [t for t, _ in continued["curve"]] == list(range(8, 17))
    model_continued = _held_model(ctx, (z, theta))[1]

    fresh, _ = _context(breast_cancer, method)  # a new context: an empty store
    counting.TRAINED.clear()
    scratch = fresh.run(z, theta, 1.0, 16)
    assert counting.TRAINED[method] == 16 and scratch["continued_from"] == 0
    model_scratch = _held_model(fresh, (z, theta))[1]
    X, _ = breast_cancer
    np.testing.assert_array_equal(model_continued.predict_proba(X), model_scratch.predict_proba(X))
    assert scratch["loss"] == continued["loss"]
    assert dict(map(tuple, scratch["curve"]))[7] == first["loss"]
    assert [v for t, v in scratch["curve"] if t > 7] == [v for _, v in continued["curve"]]


def test_partial_fit_epochs_have_their_own_seeds(breast_cancer):
    """Each epoch shuffles with a seed of its own (a fixed integer would repeat the order)."""
    seeds = {iterative.epoch_seed(7, e) for e in range(50)}
    assert len(seeds) == 50 and iterative.epoch_seed(7, 3) == iterative.epoch_seed(7, 3)
    assert iterative.epoch_seed(7, 3) != iterative.epoch_seed(8, 3)


def test_a_shorter_request_retrains_and_keeps_the_longer_model(breast_cancer):
    ctx, (z, theta) = _context(breast_cancer, "partial_fit")
    counting.TRAINED.clear()
    ctx.run(z, theta, 1.0, 10)
    shorter = ctx.run(z, theta, 1.0, 4)
    assert shorter["continued_from"] == 0 and counting.TRAINED["partial_fit"] == 14
    assert _held_model(ctx, (z, theta))[0] == 10


def test_cross_validation_continues_every_split(breast_cancer):
    ctx, (z, theta) = _context(breast_cancer, "partial_fit", cv=3)
    counting.TRAINED.clear()
    ctx.run(z, theta, 1.0, 5)
    result = ctx.run(z, theta, 1.0, 8)
    assert counting.TRAINED["partial_fit"] == 3 * 8
    assert result["continued_from"] == 5 and result["trained_iterations"] == 3 * 3


def test_store_is_bounded_in_bytes_and_evicts_the_least_recently_used():
    big = np.zeros(100_000)  # ~800 kB pickled
    store = iterative.ModelStore(KeptStore(size_mb=2_000_000 / 2**20))
    store.put("a", 3, big)
    store.put("b", 3, big.copy())
    assert store.take("a", 2) is None  # held for a longer length: not given, still held
    store.put("a", 3, big)  # touched: "b" is now the oldest
    store.put("c", 3, big.copy())
    assert len(store) == 2 and store.n_bytes <= 2_000_000
    assert store.take("b", 5) is None and store.take("a", 5)[0] == 3
    store.put("huge", 1, np.zeros(1_000_000))  # larger than the store: not kept
    assert store.take("huge", 1) is None
    assert store.take("c", 3)[0] == 3 and len(store) == 0 and store.n_bytes == 0


@pytest.mark.parametrize("method", ["partial_fit", "warm_start"])
def test_a_continuation_whose_model_was_evicted_retrains_to_the_same_model(breast_cancer, method):
    """The models share the worker's budget with the fitted prefixes: when prefixes fill it, the
    held model goes, and the continuation trains from scratch to the model, loss and curve of a
    training from scratch (at the full cost)."""
    ctx, (z, theta) = _context(breast_cancer, method, cache_size=2.0)
    counting.TRAINED.clear()
    ctx.run(z, theta, 1.0, 7)
    kept = ctx.kept()
    assert len(iterative.model_store(ctx)) == 1
    kept.put("prefix", "filler", object(), kept.capacity - 1)  # the prefix cache fills the pool
    assert len(iterative.model_store(ctx)) == 0 and kept.evictions("model") == 1
    kept.clear("prefix")
    continued = ctx.run(z, theta, 1.0, 16)
    assert continued["continued_from"] == 0 and continued["trained_iterations"] == 16
    assert counting.TRAINED[method] == 7 + 16
    model_evicted = _held_model(ctx, (z, theta))[1]

    fresh, _ = _context(breast_cancer, method)
    scratch = fresh.run(z, theta, 1.0, 16)
    X, _ = breast_cancer
    np.testing.assert_array_equal(model_evicted.predict_proba(X),
                                  _held_model(fresh, (z, theta))[1].predict_proba(X))
    assert continued["loss"] == scratch["loss"] and continued["curve"] == scratch["curve"]


def test_plain_trials_fill_the_pool_the_models_are_kept_in(breast_cancer):
    """A plain trial's prefixes and an iterative trial's models go to the context's one pool; a
    budget too small for both keeps the most recent, and a budget of 0 keeps nothing (every
    continuation retrains)."""
    ctx, (z, theta) = _context(breast_cancer, "warm_start")
    ctx.run(z, theta, 1.0, 5)
    ctx.run(z, theta, 1.0)  # a plain fit through the prefix cache
    kept = ctx.kept()
    assert kept.count("model") == 1 and kept.count("prefix") == 2  # preprocess, +scaler
    model_bytes, prefix_bytes = kept.bytes_of("model"), kept.bytes_of("prefix")
    assert kept.nbytes == model_bytes + prefix_bytes

    budget = (model_bytes + prefix_bytes - 1) / 2**20  # one byte short of both
    small, _ = _context(breast_cancer, "warm_start", cache_size=budget)
    small.run(z, theta, 1.0, 5)
    small.run(z, theta, 1.0)
    assert small.kept().count("model") == 0 and small.kept().nbytes <= small.kept().capacity
    assert small.run(z, theta, 1.0, 8)["continued_from"] == 0

    off, _ = _context(breast_cancer, "warm_start", cache_size=0)
    off.run(z, theta, 1.0, 5)
    assert off.run(z, theta, 1.0, 8)["continued_from"] == 0 and len(off.kept()) == 0


def test_a_request_without_training_length_for_a_learner_is_refused(breast_cancer):
    from admm_automl.testing import SYNTHETIC

    with pytest.raises(InvalidParameterError, match="none of its algorithms declares"):
        SYNTHETIC.decode((0, 0), SYNTHETIC.encoding.initial_theta, 5)
    space = _space("partial_fit")
    with pytest.raises(InvalidParameterError, match=r"iterations must be an integer in \[1, 20\]"):
        space.decode((0, 0), space.encoding.initial_theta, 21)


def _objective(breast_cancer, executor, tmp_path):
    ctx, config = _context(breast_cancer, "partial_fit")
    return open_objective(ctx, executor=executor, worst_loss=1.0, output_dir=tmp_path), config


def test_journal_records_the_curve_and_the_cache_keys_the_length(breast_cancer, tmp_path):
    from admm_automl.journal import Journal

    objective, (z, theta) = _objective(breast_cancer, SerialExecutor(), tmp_path)
    try:
        short, full, again = objective([Request(z, theta, 1.0, 6), Request(z, theta, 1.0, 20),
                                        Request(z, theta, 1.0, 6)])
        plain = objective([Request(z, theta, 1.0)])[0]
    finally:
        objective.close()
    assert again.cached and short.iterations == 6 and len(short.curve) == 6
    assert full.continued_from == 6 and full.curve[-1] == (20, full.loss)
    assert plain.iterations is None and plain.curve == ()  # a plain fit, not a cache hit of t=20
    records = Journal.read(tmp_path / "journal.jsonl")
    assert [r.get("iterations") for r in records] == [6, 20, None]
    assert records[0]["config"]["estimator__max_iter"] == 6
    assert records[1]["continued_from"] == 6 and records[1]["curve"][-1] == [20, full.loss]


def test_a_worker_process_continues_its_held_model(breast_cancer, tmp_path):
    """With the process pool, a one-job batch goes to the same worker, which holds the model."""
    objective, (z, theta) = _objective(breast_cancer, ProcessExecutor(n_workers=1), tmp_path)
    try:
        (first,) = objective([Request(z, theta, 1.0, 5)])
        (second,) = objective([Request(z, theta, 1.0, 12)])
    finally:
        objective.close()
    assert first.ok and second.ok and second.continued_from == 5
