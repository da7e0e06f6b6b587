"""Dataset loading: bundled sets, a directory of CSVs, and OpenML (no network: fetch_openml is
replaced by a fake that records its arguments or fails as it does offline)."""

from __future__ import annotations

import gzip
from urllib.error import URLError

import numpy as np
import pandas as pd
import pytest

from admm_automl import datasets
from admm_automl.config import load_config
from admm_automl.exceptions import DataError, UnknownComponentError


class FakeFetch:
    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[dict] = []
        self.error = error

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        if self.error is not None:
            raise self.error
        from sklearn.utils import Bunch

        X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]})
        return Bunch(data=X, target=pd.Series(["p", "n", "p"], name="class"))


@pytest.fixture
def fake_fetch(monkeypatch):
    fake = FakeFetch()
    monkeypatch.setattr("sklearn.datasets.fetch_openml", fake)
    return fake


def test_openml_by_name_and_by_id_use_the_cache_dir(fake_fetch, tmp_path):
    X, y = datasets.load_dataset("openml:credit-g", cache_dir=tmp_path)
    assert list(X.columns) == ["a", "b"] and list(y) == ["p", "n", "p"]
    datasets.load_dataset("openml:31")
    by_name, by_id = fake_fetch.calls
    assert by_name["name"] == "credit-g" and by_name["version"] == "active"
    assert by_name["data_home"] == str(tmp_path)
    assert by_id["data_id"] == 31 and "name" not in by_id and by_id["data_home"] is None


def test_openml_offline_and_not_cached_is_a_clear_data_error(monkeypatch):
    monkeypatch.setattr("sklearn.datasets.fetch_openml", FakeFetch(URLError("no network")))
    with pytest.raises(DataError, match="could not fetch OpenML dataset 'credit-g'.*first use needs network"):
        datasets.load_openml("credit-g")


def test_openml_unknown_name_and_empty_name(monkeypatch):
    monkeypatch.setattr("sklearn.datasets.fetch_openml", FakeFetch(ValueError("No active dataset nope found")))
    with pytest.raises(DataError, match="OpenML dataset 'nope': No active dataset"):
        datasets.load_dataset("openml:nope")
    with pytest.raises(DataError, match="needs a name or an id"):
        datasets.load_dataset("openml:")


def test_load_dataset_reads_the_data_dir_then_the_bundled_sets(tmp_path):
    with gzip.open(tmp_path / "toy.csv.gz", "wt") as fh:
        fh.write("f1,f2,target\n1,2,0\n3,4,1\n")
    X, y = datasets.load_dataset("toy", tmp_path)
    assert X.shape == (2, 2) and list(y) == [0, 1]
    with pytest.raises(UnknownComponentError, match="toy"):
        datasets.load_dataset("toi", tmp_path)
    X, y = datasets.load_dataset("iris")
    assert X.shape == (150, 4) and set(np.unique(y)) == {0, 1, 2}


def test_config_accepts_an_openml_dataset(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("data:\n  dataset: openml:credit-g\n")
    assert load_config(path).data["dataset"] == "openml:credit-g"
