"""Small pipeline spaces for tests: a two-module space of real scikit-learn classes, and synthetic
spaces of fake classes with a loss of known optimum (for the optimisers, without scikit-learn)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..space import space_from_dict

#: prep {none, p(w, k)} x model {a(n, c), b(lr), c}: 6 pipelines with ints, a categorical, a log
#: float and a choice without hyperparameters; the best is prep=p (k=4, w≈0.2) with model=b (lr≈0.01)
SYNTHETIC = space_from_dict({
    "name": "synthetic",
    "initial": {"classification": {"prep": "none", "model": "a"}},
    "modules": [
        {"name": "prep", "choices": [
            {"name": "none"},
            {"name": "p", "class": "fake.P", "hyperparameters": {
                "w": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5},
                "k": {"type": "int", "low": 1, "high": 5, "default": 3}}},
        ]},
        {"name": "model", "choices": [
            {"name": "a", "class": "fake.A", "hyperparameters": {
                "n": {"type": "int", "low": 1, "high": 9, "default": 5},
                "c": {"type": "categorical", "choices": ["x", "y", "z"], "default": "x"}}},
            {"name": "b", "class": "fake.B", "hyperparameters": {
                "lr": {"type": "float", "low": 1e-3, "high": 1.0, "log": True, "default": 0.1}}},
            {"name": "c", "class": "fake.C"},
        ]},
    ],
})


def synthetic_loss(config: dict) -> float:
    """The loss of :data:`SYNTHETIC`'s pipelines (best: prep=p, k=4, w=0.2, model=b, lr=0.01)."""
    loss = {"a": 0.5, "b": 0.3, "c": 0.6}[config["model"]]
    if config["model"] == "a":
        loss += 0.02 * abs(config["model__n"] - 7) + (0.0 if config["model__c"] == "y" else 0.05)
    if config["model"] == "b":
        loss += 0.1 * abs(math.log10(config["model__lr"]) + 2)
    if config["prep"] == "p":
        loss -= 0.1 - 0.05 * abs(config["prep__k"] - 4) - 0.1 * abs(config["prep__w"] - 0.2)
    return loss


def wide_space(extra_prep: int = 0, extra_model: int = 0):
    """prep {none, p(w), q, + extra} x model {a(n, c), b(lr), + extra}; extra choices are plain."""
    prep = [
        {"name": "none"},
        {"name": "p", "class": "fake.P", "hyperparameters": {
            "w": {"type": "float", "low": 0.0, "high": 1.0, "default": 0.5}}},
        {"name": "q", "class": "fake.Q"},
    ] + [{"name": f"p{i}", "class": f"fake.P{i}"} for i in range(extra_prep)]
    model = [
        {"name": "a", "class": "fake.A", "hyperparameters": {
            "n": {"type": "int", "low": 1, "high": 9, "default": 5},
            "c": {"type": "categorical", "choices": ["x", "y", "z"], "default": "x"}}},
        {"name": "b", "class": "fake.B", "hyperparameters": {
            "lr": {"type": "float", "low": 1e-3, "high": 1.0, "log": True, "default": 0.1}}},
    ] + [{"name": f"m{i}", "class": f"fake.M{i}"} for i in range(extra_model)]
    return space_from_dict({
        "name": "synthetic_wide",
        "initial": {"classification": {"prep": "none", "model": "a"}},
        "modules": [{"name": "prep", "choices": prep}, {"name": "model", "choices": model}],
    })


def wide_loss(config: dict) -> float:
    """The loss of :func:`wide_space`'s pipelines (best: prep=p, w=0.2, model=b, lr=0.01)."""
    model, prep = config["model"], config["prep"]
    loss = {"a": 0.5, "b": 0.3}.get(model, 0.4 + 0.01 * len(model))
    loss += {"none": 0.1, "p": 0.0}.get(prep, 0.2)
    if model == "a":
        loss += 0.02 * abs(config["model__n"] - 7)
    if model == "b":
        loss += 0.05 * abs(np.log10(config["model__lr"]) + 2)
    if prep == "p":
        loss += 0.1 * abs(config["prep__w"] - 0.2)
    return float(loss)


def tiny_space(estimators: dict[str, dict[str, Any]] | None = None, name: str = "tiny"):
    """A two-module space: scaler {none, standard} x the given estimator choices.

    ``estimators`` maps a choice name to ``{"class": path, "hyperparameters": {...}}``; the default
    is logistic regression (with C tunable) and Gaussian naive Bayes.
    """
    if estimators is None:
        estimators = {
            "gaussian_nb": {"class": "sklearn.naive_bayes.GaussianNB"},
            "logistic_regression": {
                "class": "sklearn.linear_model.LogisticRegression",
                "hyperparameters": {
                    "C": {"type": "float", "low": 0.01, "high": 100.0, "log": True, "default": 1.0},
                    "max_iter": {"type": "fixed", "value": 100},
                },
            },
        }
    first = next(iter(estimators))
    return space_from_dict(
        {
            "name": name,
            "initial": {"classification": {"scaler": "none", "estimator": first}},
            "modules": [
                {
                    "name": "scaler",
                    "choices": [
                        {"name": "none"},
                        {"name": "standard", "class": "sklearn.preprocessing.StandardScaler"},
                    ],
                },
                {
                    "name": "estimator",
                    "choices": [{"name": k, **v} for k, v in estimators.items()],
                },
            ],
        }
    )


#: fast learners of different kinds (linear, Bayes, neighbours, tree): an ensemble of them beats the
#: best one on the breast-cancer data, so the ensemble's and the stack's tests have something to find
DIVERSE_LEARNERS = {
    "logistic_regression": {"class": "sklearn.linear_model.LogisticRegression", "hyperparameters": {
        "C": {"type": "float", "low": 0.01, "high": 100.0, "log": True, "default": 1.0},
        "max_iter": {"type": "fixed", "value": 500}}},
    "gaussian_nb": {"class": "sklearn.naive_bayes.GaussianNB"},
    "k_neighbors": {"class": "sklearn.neighbors.KNeighborsClassifier", "hyperparameters": {
        "n_neighbors": {"type": "int", "low": 1, "high": 30, "default": 5}}},
    "tree": {"class": "sklearn.tree.DecisionTreeClassifier", "hyperparameters": {
        "max_depth": {"type": "int", "low": 1, "high": 10, "default": 3}}},
}


def diverse_space(*learners: str):
    """:func:`tiny_space` over :data:`DIVERSE_LEARNERS` (all of them, or the ones named)."""
    names = learners or tuple(DIVERSE_LEARNERS)
    return tiny_space({name: DIVERSE_LEARNERS[name] for name in names}, name="diverse")

