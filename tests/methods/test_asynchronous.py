"""Asynchronous runs (``asynchronous=True``): a free worker gets the next suggestion at once.

On the toy engine, whose ``submit``/``collect`` simulate workers on a fake clock (a trial ends
``duration`` after it starts; the one that ends first is answered first)."""

from __future__ import annotations

import pytest


import numpy as np

from admm_automl.methods.driver import InFlight, ProposalWaits, RunListener, Schedule
from admm_automl.records import Observation
from admm_automl.testing import SYNTHETIC


def _durations(config):
    """Trial costs 10x apart by learner, so trials end out of submission order."""
    return 10.0 if "forest" in str(config) or "svc" in str(config) else 1.0


class _Watch:
    """Wraps a toy engine's submit/collect: records what is in flight at each submit (a
    request the engine answers at once, from its cache, is not: ``at_once``)."""

    def __init__(self, engine):
        self.engine = engine
        self.in_flight = {}
        self.at_once = set()  # tickets answered at submit, until collected
        self.overlaps = []  # (key submitted, keys already in flight)
        self.max_in_flight = 0
        submit, collect = engine.submit, engine.collect

        def watched_submit(request, time_left=None, tags=None):
            key = engine._key(request)
            self.overlaps.append((key, set(self.in_flight.values())))
            ticket = submit(request, time_left, tags)
            if any(t == ticket for t, _ in engine._ready):
                self.at_once.add(ticket)
                return ticket
            self.in_flight[ticket] = key
            self.max_in_flight = max(self.max_in_flight, len(self.in_flight))
            return ticket

        def watched_collect(timeout=None):
            answers = collect(timeout)
            for ticket, _ in answers:
                self.in_flight.pop(ticket, None)
                self.at_once.discard(ticket)
            return answers

        engine.submit, engine.collect = watched_submit, watched_collect


@pytest.mark.parametrize("theta, z", [("random", "random"), ("bo", "cmab"), ("random", "flash")])
def test_with_one_worker_an_asynchronous_run_has_the_batch_runs_history(make_engine,
                                                                         make_optimizer, theta, z):
    runs = []
    for asynchronous in (False, True):
        engine = make_engine(SYNTHETIC)
        result = make_optimizer("admm", engine, theta=theta, z=z, max_evals=30,
                                asynchronous=asynchronous, batch_size=1).run()
        runs.append(([(c[0], tuple(c[1]), c[3]) for c in engine.calls],
                     [(e.z, e.observation.loss) for e in result.evaluated]))
    assert runs[1] == runs[0]


@pytest.mark.parametrize("theta, z", [("bo", "cmab"), ("random", "random"), ("tpe", "cmab")])
def test_suggestions_in_flight_are_never_proposed_again_and_the_workers_stay_busy(
        make_engine, make_optimizer, fake_clock, theta, z):
    if theta == "tpe":
        pytest.importorskip("optuna")
    engine = make_engine(SYNTHETIC, duration=_durations, clock=fake_clock)
    watch = _Watch(engine)
    result = make_optimizer("admm", engine, theta=theta, z=z, max_evals=60, asynchronous=True,
                            batch_size=4, schedule=Schedule(8, 0, 8), clock=fake_clock).run()
    assert result.n_evals == 60
    assert all(key not in flying for key, flying in watch.overlaps)
    assert watch.max_in_flight == 4
    # every answer was recorded once, in the order the trials ended on the clock
    assert len({e.observation.eval_id for e in result.evaluated if not e.observation.cached}) \
        == len([e for e in result.evaluated if not e.observation.cached])


def test_an_asynchronous_run_ends_trials_sooner_than_batches_when_costs_differ(
        make_engine, make_optimizer):
    """The same 40 evaluations on 4 simulated workers: batches wait for their slowest trial,
    the asynchronous run hands a free worker its next trial, so it ends sooner on the clock."""
    from admm_automl.testing import FakeClock

    ends = {}
    for asynchronous in (False, True):
        clock = FakeClock()
        engine = make_engine(SYNTHETIC, duration=_durations, clock=clock)
        make_optimizer("admm", engine if asynchronous else _ParallelBatches(engine, clock),
                       theta="random", z="random", max_evals=40, asynchronous=asynchronous,
                       batch_size=4, schedule=Schedule(8, 0, 8), clock=clock).run()
        ends[asynchronous] = clock.now
    assert ends[True] < ends[False]


def test_the_next_step_takes_the_workers_a_step_leaves_idle_at_its_end(make_engine,
                                                                       make_optimizer,
                                                                       fake_clock):
    """8 workers, steps of 8 evaluations, costs 10x apart: a step hands over once all its trials
    are submitted and a worker is idle, leaving at most half of them in flight, so the next
    step's trials start beside them; every trial is recorded once, none is left running."""
    engine = make_engine(SYNTHETIC, duration=_durations, clock=fake_clock)
    running, beside = {}, []  # (phase, iteration) of each trial in flight; of those at a submit
    submit, collect = engine.submit, engine.collect

    def watched_submit(request, time_left=None, tags=None):
        step = (tags["phase"], tags["admm_iter"])
        beside.append((step, list(running.values())))
        ticket = submit(request, time_left, tags)
        running[ticket] = step
        return ticket

    def watched_collect(timeout=None):
        answers = collect(timeout)
        for ticket, _ in answers:
            running.pop(ticket, None)
        return answers

    engine.submit, engine.collect = watched_submit, watched_collect
    result = make_optimizer("admm", engine, theta="random", z="random", max_evals=80,
                            asynchronous=True, batch_size=8, schedule=Schedule(8, 0, 8),
                            clock=fake_clock).run()
    overlapped = 0
    for step, others in beside:
        earlier = [o for o in others if o != step]
        overlapped += bool(earlier)
        for other in set(earlier):  # what a step left in flight: at most half its 8
            assert earlier.count(other) <= 4, (step, others)
        assert len(others) < 8
    assert overlapped >= 5  # the steps did overlap
    assert result.n_evals == 80 and not engine._running and not engine._ready
    fresh = [e.observation.eval_id for e in result.evaluated if not e.observation.cached]
    assert len(fresh) == len(set(fresh)) == 80


class _ParallelBatches:
    """The toy engine's batches run as on as many workers as requests: every request starts
    at the batch's start on the clock, and the batch ends with its slowest."""

    def __init__(self, engine, clock):
        self.engine, self.clock = engine, clock

    def __call__(self, requests, time_left=None, tags=None):
        start, end, out = self.clock.now, self.clock.now, []
        for request in requests:
            self.clock.now = start
            out += self.engine([request], time_left, tags)
            end = max(end, self.clock.now)
        self.clock.now = end
        return out


@pytest.mark.slow
def test_an_asynchronous_fit_on_two_worker_processes_journals_every_evaluation_once(tmp_path):
    """Through the estimator, the engine and the process pool: the budget is exact, every
    evaluation is recorded once, in the journal's order of arrival, and the history matches.
    The small space keeps each trial short: what is tested is the asynchronous path, not the
    default space's learners (which took this test 76 s)."""
    import json

    from sklearn.datasets import load_breast_cancer

    from admm_automl import ADMM
    from admm_automl.testing import tiny_space

    X, y = load_breast_cancer(return_X_y=True)
    model = ADMM(search_space=tiny_space(), max_evals=16, inner_iter=4, inner_iter_step=0, n_jobs=2, asynchronous=True,
                 executor="process", ensemble_size=0, random_state=0,
                 output_dir=tmp_path).fit(X[:300], y[:300])
    assert model.n_evals_ == 16
    records = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    ids = [r["eval_id"] for r in records if "eval_id" in r]
    assert ids == list(range(len(ids))) and len(set(r["key"] for r in records if "key" in r)) \
        == len(ids)
    assert len(model.history_) == len(ids) and model.score(X[300:], y[300:]) > 0.8


@pytest.mark.parametrize("asynchronous", [False, True])
def test_no_step_makes_fewer_evaluations_than_there_are_workers(make_engine, make_optimizer,
                                                                fake_clock, asynchronous):
    """A θ-step of 4 evaluations on 8 workers would leave half of them idle: each sub-problem
    call gets at least as many evaluations as there are workers (the schedule is kept where it
    asks for more); and the floor must be at least 1."""
    from admm_automl.exceptions import InvalidParameterError

    assert [Schedule(4, 4, 16, floor=8)(t) for t in range(5)] == [8, 8, 12, 16, 16]
    with pytest.raises(InvalidParameterError, match="floor >= 1"):
        Schedule(4, 4, 16, floor=0)
    engine = make_engine(SYNTHETIC, duration=_durations, clock=fake_clock)
    result = make_optimizer("admm", engine, theta="random", z="random", max_evals=80,
                            asynchronous=asynchronous, batch_size=8,
                            schedule=Schedule(4, 4, 16), clock=fake_clock).run()
    theta = [e for e in result.evaluated if e.phase == "theta"]
    per_step = {}
    for e in theta:
        per_step[e.iteration] = per_step.get(e.iteration, 0) + 1
    steps = list(per_step.values())[:-1]  # the last may be cut by the budget
    assert steps and min(steps) >= 8, per_step


class _PendingProbe(RunListener):
    """At every submit and every recorded answer, the recorder's pending set against what the
    engine really has in flight (a :class:`_Watch`)."""

    def __init__(self, watch):
        self.watch, self.checks, self.mismatches = watch, 0, []

    def _check(self, recorder):
        self.checks += 1
        if set(recorder.pending.points) != set(self.watch.in_flight):
            self.mismatches.append((sorted(recorder.pending.points), sorted(self.watch.in_flight)))

    def evaluating(self, recorder, points, phase):
        self._check(recorder)

    def evaluated(self, recorder, items):
        self._check(recorder)


@pytest.mark.parametrize("theta, z", [("bo", "cmab"), ("random", "random")])
def test_the_pending_set_is_the_trials_in_flight_after_every_submit_and_answer(
        make_engine, make_optimizer, fake_clock, theta, z):
    """8 workers, 80 evaluations, trial costs 10x apart: before every submit and after every
    recorded answer the engine's pending set holds exactly the trials in flight, and it is
    empty when the run ends."""
    engine = make_engine(SYNTHETIC, duration=_durations, clock=fake_clock)
    watch = _Watch(engine)
    probe = _PendingProbe(watch)
    recorder = {}

    class _Keep(RunListener):
        def run_started(self, rec, name):
            recorder["it"] = rec

    result = make_optimizer("admm", engine, theta=theta, z=z, max_evals=80, asynchronous=True,
                            batch_size=8, schedule=Schedule(8, 0, 8), clock=fake_clock,
                            listeners=[probe, _Keep()]).run()
    assert result.n_evals == 80 and watch.max_in_flight == 8
    assert probe.checks > 160 and not probe.mismatches, probe.mismatches[:3]
    assert not recorder["it"].pending.points and not watch.in_flight


def test_a_sub_problems_view_of_the_pending_set_follows_submits_and_answers():
    """Random submits and answers: a view holds the configurations of the points in flight it
    can propose, and its identities are those of exactly those configurations."""
    rng = np.random.default_rng(0)
    pending = InFlight()
    pending.add(0, ((0,), np.array([0.5]), 1.0))  # in flight before the view is made
    view = pending.view(lambda p: p[0] if p[0][0] % 2 == 0 else None)  # even pipelines only
    identity = lambda config, fidelity: (tuple(config), fidelity)  # noqa: E731
    view.identities(identity)
    flying = {0: ((0,), np.array([0.5]), 1.0)}
    for ticket in range(1, 300):
        if flying and rng.random() < 0.45:
            gone = list(flying)[int(rng.integers(len(flying)))]
            del flying[gone]
            pending.remove(gone)
        else:
            point = ((int(rng.integers(6)),), rng.uniform(size=1), 1.0)
            flying[ticket] = point
            pending.add(ticket, point)
        assert set(pending.points) == set(flying)
        even = [p for p in flying.values() if p[0][0] % 2 == 0]
        assert sorted(view()) == sorted((p[0], p[2]) for p in even)
        want = {}
        for p in even:
            want[identity(p[0], p[2])] = want.get(identity(p[0], p[2]), 0) + 1
        assert dict(view.identities(identity)) == want


def test_a_cache_hit_answered_at_submit_is_never_in_flight_and_recorded_once(make_engine,
                                                                             fake_clock):
    """A point the engine answers at once from its cache does not enter the in-flight set, its
    views or the workers' waits; it holds its worker's place until it is collected (so a
    sub-problem's loop tells it before asking again, as when it went through the in-flight set),
    and that collect records it once, as a cache hit: listeners, ``on_done``, the evaluation
    count and the incumbent see it as before."""
    from admm_automl.constraints.ranking import Constraints
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget, Recorder

    engine = make_engine(SYNTHETIC, duration=_durations, clock=fake_clock)
    seen = {"evaluating": [], "evaluated": []}

    class _Listen(RunListener):
        def evaluating(self, recorder, points, phase):
            seen["evaluating"].append(len(points))

        def evaluated(self, recorder, items):
            seen["evaluated"].append([(i.z, i.observation.cached) for i in items])

    recorder = Recorder(SYNTHETIC.encoding, engine, Budget(10, Deadline(None, clock=lambda: fake_clock.now)),
                        Constraints(()), listeners=[_Listen()], workers=4)
    configs = []
    view = recorder.pending.view(lambda p: configs.append(p[0]) or p[0])
    z = tuple(0 for _ in SYNTHETIC.encoding.n_choices)
    point = (z, np.full(len(SYNTHETIC.encoding.theta_names), 0.5), 1.0)
    done = []
    first = recorder.submit(point, "z", on_done=done.append)
    assert recorder.in_flight == 1 and first in recorder.pending.points and len(view) == 1
    [(ticket, fresh)] = recorder.collect()
    assert ticket == first and not fresh.cached and recorder.n_evals == 1
    best = recorder.incumbent
    again = recorder.submit(point, "z", on_done=done.append)  # the cache answers it at once
    assert recorder.in_flight == 0 and not recorder.pending.points and len(view) == 0
    assert configs == [z] and not recorder.waits._slots
    assert recorder.outstanding == 1 and recorder.free_workers() == 3
    [(ticket, cached)] = recorder.collect()
    assert ticket == again and cached.cached and cached.loss == fresh.loss
    assert recorder.n_evals == 1 and len(recorder.evaluated) == 2 and recorder.incumbent is best
    assert recorder.evaluated[-1].observation is cached and len(recorder.fresh) == 1
    assert done == [fresh, cached] and seen["evaluating"] == [1, 1]
    assert seen["evaluated"] == [[(z, False)], [(z, True)]]
    assert recorder.outstanding == 0 and recorder.free_workers() == 4
    assert recorder.collect() == [] and len(recorder.evaluated) == 2
    # one left uncollected at the end of a run is drained, once
    recorder.submit(point, "z", on_done=done.append)
    recorder.drain()
    assert len(recorder.evaluated) == 3 and len(done) == 3 and recorder.outstanding == 0


def test_workers_waiting_for_proposals_are_measured_and_a_warning_given():
    """Answers of 1 s trials, each worker's next trial submitted 0.3 s after it was freed:
    the waits add up to 30 % of the trials' time, and a warning says so; submitted at once,
    nothing is said. A cache hit took no worker and counts for nothing."""
    import warnings

    from admm_automl.exceptions import DriverBoundWarning

    for delay, warned in ((0.3, True), (0.0, False)):
        waits, now = ProposalWaits(workers=4), 0.0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for ticket in range(40):
                waits.answered(now, Observation(0.5, duration=1.0), ticket)
                waits.submitted(now + delay, ticket + 100)
                waits.answered(now + delay, Observation(0.5, cached=True), ticket + 100)
                waits.submitted(now + delay, ticket + 200)
                now += 1.0
        assert waits.trials == 40 and waits.busy == 40.0
        assert waits.share == pytest.approx(delay)
        assert any(issubclass(w.category, DriverBoundWarning)
                   and "waited for proposals" in str(w.message) for w in caught) == warned


@pytest.mark.parametrize("z", ["cmab", "random"])
def test_the_z_solver_is_told_answers_another_step_recorded(make_engine, make_optimizer,
                                                            fake_clock, monkeypatch, z):
    """8 workers, costs 10x apart: a z-step hands over its workers with trials in flight, which
    end during the θ-step; their answers reach the z-solver before its next step, so it never
    holds more suggestions pending than there are trials in flight (they stayed pending for
    good: a pull of reward 0 that is never proposed again)."""
    import admm_automl.methods.admm as admm

    seen = []
    z_step = admm._ADMMRun.z_step

    def watched(self, n, warm=False):
        out = z_step(self, n, warm)
        seen.append((len(self.z_solver.pending_), self.recorder.in_flight))
        return out

    monkeypatch.setattr(admm._ADMMRun, "z_step", watched)
    engine = make_engine(SYNTHETIC, duration=_durations, clock=fake_clock)
    result = make_optimizer("admm", engine, theta="random", z=z, max_evals=120,
                            asynchronous=True, batch_size=8, schedule=Schedule(8, 0, 8),
                            clock=fake_clock).run()
    assert result.n_evals == 120 and len(seen) >= 5
    assert any(flying for _, flying in seen)  # the steps did leave trials in flight
    assert all(pending <= flying for pending, flying in seen), seen
