"""Registries: decorator registration, lookup, did-you-mean errors and entry-point plug-ins."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from admm_automl import ADMM
from admm_automl.exceptions import (
    ADMMAutoMLWarning,
    InvalidParameterError,
    UnknownComponentError,
)
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS, BaseThetaSolver, BaseZSolver, Registry
from admm_automl.solvers import registry as registry_module
from admm_automl.solvers.theta import RandomThetaSolver
from admm_automl.solvers.z import RandomZSolver

GROUP = "admm_automl.test_theta_solvers"


def make_registry() -> Registry:
    """A fresh registry with one built-in, so that the global ones are never touched."""
    reg = Registry("theta solver", BaseThetaSolver, GROUP)

    @reg.register("random")
    class Builtin(BaseThetaSolver):
        """Built-in test solver."""

        def __init__(self, scale: float = 1.0) -> None:
            self.scale = scale

        def _ask(self):
            return self.rng_.uniform(size=self.problem_.dim) * self.scale, None

    return reg


class GoodPlugin(BaseThetaSolver):
    """A third-party θ-solver."""

    def __init__(self, step: float = 0.5) -> None:
        self.step = step

    def _ask(self):
        return np.full(self.problem_.dim, self.step), None


class NotASolver:
    pass


class FakeEntryPoint:
    """Just enough of importlib.metadata.EntryPoint."""

    def __init__(self, name, value, target=None, error=None):
        self.name, self.value, self.group = name, value, GROUP
        self._target, self._error = target, error

    def load(self):
        if self._error is not None:
            raise self._error
        return self._target


@pytest.fixture
def fake_entry_points(monkeypatch):
    """Install fake entry points; returns a setter taking the list for GROUP."""
    installed: list = []
    calls: list = []

    def entry_points(*, group=None, **kwargs):
        calls.append(group)
        return list(installed) if group == GROUP else []

    monkeypatch.setattr(registry_module.metadata, "entry_points", entry_points)

    def install(eps):
        installed[:] = eps
        return calls

    return install


# ----------------------------------------------------------------------------- registration / lookup
def test_register_get_create():
    reg = make_registry()
    cls = reg.get("random")
    assert cls.name == "random"
    assert reg.names() == ["random"] and "random" in reg and "other" not in reg and 3 not in reg
    assert reg.describe("random") == "Built-in test solver."
    a = reg.create("random")
    assert type(a) is cls and a.scale == 1.0
    b = reg.create({"name": "random", "params": {"scale": 2.5}})
    assert type(b) is cls and b.scale == 2.5
    c = reg.create({"name": "random"})
    assert c.scale == 1.0
    assert reg.create("random") is not reg.create("random")


def test_create_copies_instances():
    reg = make_registry()
    original = reg.create({"name": "random", "params": {"scale": [1, 2]}})
    copy = reg.create(original)
    assert copy is not original and type(copy) is type(original)
    assert copy.get_params() == original.get_params()
    assert copy.scale is not original.scale  # a deep copy: nothing shared
    copy.scale.append(3)
    assert original.scale == [1, 2]


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"params": {}}, r"needs the keys 'name' and optionally 'params'; got \['params'\]"),
        ({"name": "random", "extra": 1}, r"got \['extra', 'name'\]"),
        ({"name": "random", "params": {"nope": 1}}, r"theta solver 'random': .*'nope'"),
        (3.5, r"must be a registered name, a mapping \{name, params\} or a BaseThetaSolver instance"),
        (RandomZSolver(), r"BaseThetaSolver instance; got RandomZSolver\(\)"),
    ],
)
def test_create_rejects_bad_specs(spec, message):
    with pytest.raises(InvalidParameterError, match=message):
        make_registry().create(spec)


def test_collision_raises():
    reg = make_registry()
    builtin = reg.get("random")
    with pytest.raises(RuntimeError, match=r"theta solver 'random' is already registered"):

        @reg.register("random")
        class Other(BaseThetaSolver):
            def _ask(self):
                return None, None

    assert reg.get("random") is builtin
    reg.register("random")(builtin)  # registering the same class again is harmless
    assert reg.get("random") is builtin


def test_unknown_name_did_you_mean():
    reg = make_registry()
    with pytest.raises(
        UnknownComponentError, match=r"^Unknown theta solver 'randm'\. Did you mean 'random'\? Available: 'random'\.$"
    ) as info:
        reg.get("randm")
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnknownComponentError, match=r"^Unknown theta solver 'xyz'\. Available: 'random'\.$"):
        reg.create("xyz")


def test_global_registries_hold_the_builtins():
    assert THETA_SOLVERS.get("random") is RandomThetaSolver
    assert Z_SOLVERS.get("random") is RandomZSolver
    with pytest.raises(UnknownComponentError, match=r"Unknown z solver 'randm'\. Did you mean 'random'\?"):
        Z_SOLVERS.get("randm")


def _unregistered(registry: Registry, preferred: str) -> str:
    return preferred if preferred not in registry else f"{preferred}_not_registered"


def test_admm_fit_with_unknown_theta_solver():
    """fit fails before any work, naming the registered θ-solvers."""
    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.array([0, 1] * 10)
    name = _unregistered(THETA_SOLVERS, "bo")
    listed = ", ".join(repr(n) for n in THETA_SOLVERS.names())
    with pytest.raises(UnknownComponentError, match=rf"Unknown theta solver '{name}'\..* Available: {listed}\."):
        ADMM(theta_solver=name, z_solver=_unregistered(Z_SOLVERS, "blds")).fit(X, y)


def test_admm_fit_with_unknown_z_solver():
    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.array([0, 1] * 10)
    name = _unregistered(Z_SOLVERS, "blds")
    listed = ", ".join(repr(n) for n in Z_SOLVERS.names())
    with pytest.raises(UnknownComponentError, match=rf"Unknown z solver '{name}'\..* Available: {listed}\."):
        ADMM(z_solver=name).fit(X, y)


# ----------------------------------------------------------------------------- plug-ins
def test_good_plugin_becomes_available(fake_entry_points):
    calls = fake_entry_points([FakeEntryPoint("good", "pkg.mod:GoodPlugin", GoodPlugin)])
    reg = make_registry()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a good plug-in warns nothing
        assert reg.names() == ["good", "random"]
    assert calls == [GROUP]
    solver = reg.create({"name": "good", "params": {"step": 0.25}})
    assert isinstance(solver, GoodPlugin) and solver.step == 0.25
    assert GoodPlugin.name == "good"
    reg.names()
    assert calls == [GROUP]  # plug-ins are discovered once


def test_plugins_loaded_lazily_on_unknown_name(fake_entry_points):
    fake_entry_points([FakeEntryPoint("good", "pkg.mod:GoodPlugin", GoodPlugin)])
    reg = make_registry()
    assert reg.get("good") is GoodPlugin


@pytest.mark.parametrize(
    "ep, message",
    [
        (
            FakeEntryPoint("broken", "pkg.broken:Solver", error=ImportError("No module named 'pkg'")),
            r"theta solver plug-in 'broken' \(pkg\.broken:Solver\) could not be loaded: No module named 'pkg'",
        ),
        (
            FakeEntryPoint("wrongtype", "pkg.mod:NotASolver", NotASolver),
            r"plug-in 'wrongtype' .*could not be loaded: .*NotASolver.* is not a subclass of BaseThetaSolver",
        ),
        (
            FakeEntryPoint("zsolver", "pkg.mod:RandomZSolver", RandomZSolver),
            r"plug-in 'zsolver' .*is not a subclass of BaseThetaSolver",
        ),
        (
            FakeEntryPoint("random", "evil.mod:Random", GoodPlugin),
            r"plug-in 'evil\.mod:Random' would shadow the built-in theta solver 'random'; skipped",
        ),
    ],
    ids=["broken", "not-a-class-of-base", "wrong-base", "shadowing"],
)
def test_bad_plugins_are_skipped_with_a_warning(fake_entry_points, ep, message):
    fake_entry_points([ep, FakeEntryPoint("good", "pkg.mod:GoodPlugin", GoodPlugin)])
    reg = make_registry()
    builtin = reg._classes["random"]
    with pytest.warns(ADMMAutoMLWarning, match=message):
        names = reg.names()
    assert names == ["good", "random"]
    assert reg.get("random") is builtin
    with pytest.raises(UnknownComponentError, match=r"Available: 'good', 'random'\."):
        reg.get("broken" if ep.name != "random" else "nothing")


def test_bad_plugins_all_at_once(fake_entry_points):
    fake_entry_points(
        [
            FakeEntryPoint("broken", "pkg.broken:Solver", error=RuntimeError("boom")),
            FakeEntryPoint("notsolver", "pkg:NotASolver", NotASolver),
            FakeEntryPoint("random", "evil:Random", GoodPlugin),
            FakeEntryPoint("good", "pkg.mod:GoodPlugin", GoodPlugin),
        ]
    )
    reg = make_registry()
    with pytest.warns(ADMMAutoMLWarning) as record:
        names = reg.names()
    assert names == ["good", "random"]
    messages = [str(w.message) for w in record]
    assert len(messages) == 3
    assert any("'broken'" in m and "boom" in m for m in messages)
    assert any("'notsolver'" in m for m in messages)
    assert any("shadow" in m for m in messages)


def test_global_registries_use_their_entry_point_groups():
    assert THETA_SOLVERS.group == "admm_automl.theta_solvers"
    assert Z_SOLVERS.group == "admm_automl.z_solvers"
    assert THETA_SOLVERS.base is BaseThetaSolver and Z_SOLVERS.base is BaseZSolver
