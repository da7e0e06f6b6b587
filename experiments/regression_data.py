"""A data directory of regression datasets, for learning the ``default`` space's regression
portfolio (``experiments/portfolio.py --task regression``).

The shared benchmark data are binary classification only. The regression datasets come from Luis
Torgo's collection of regression datasets (the DELVE, StatLib and UCI sets that OpenML also holds:
abalone, ailerons, california_housing, cpu_act, elevators, kinematics, puma32H, …), as ARFF files
in the public repository ``genyang/datasets`` at commit ``9cf25ea6e5b376a5a2a98092cb6ab8b03f05adcf``
— the same repository and commit the shared ``bank8FM``, ``cpu_small``, ``delta_ailerons`` and
``puma8NH`` files were made from (binarised there; those four are left out here so that the two
tasks' portfolios learn from different data). The synthetic ``friedman`` and ``mv`` are left out
too.

This script reads the ARFF files from a folder (``--source``: a clone of that repository at that
commit, or any folder holding the files) and writes each as ``<out>/<name>.csv.gz`` in the shared
data's format (features in their order, the target last as ``target``) with a ``MANIFEST.tsv``
(rows, columns, source, SHA-256 of the ARFF). Keep the output outside this repository, as the
shared data are, and give it to ``portfolio.py`` by ``--data-dir``::

    git clone https://github.com/genyang/datasets torgo && git -C torgo checkout 9cf25ea
    python experiments/regression_data.py --source torgo --out ../regression-data
    nice python experiments/portfolio.py --task regression --data-dir ../regression-data --parallel 2
"""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

REPOSITORY = "genyang/datasets"
COMMIT = "9cf25ea6e5b376a5a2a98092cb6ab8b03f05adcf"
#: the ARFF files used (their last attribute, ``class``, is the target)
DATASETS = ("abalone", "ailerons", "autoMpg", "autoPrice", "bank32NH", "boston_housing",
            "california_housing", "cpu_act", "delta_elevators", "elevators", "house_8L",
            "kinematics", "puma32H", "stock")


def convert(path: Path):
    """The ARFF file as a frame: nominal values as text, the last attribute renamed ``target``."""
    import pandas as pd
    from scipy.io import arff

    data, _ = arff.loadarff(path)
    frame = pd.DataFrame(data)
    for column in frame.columns[frame.dtypes == object]:
        frame[column] = frame[column].str.decode("utf-8")
    return frame.rename(columns={frame.columns[-1]: "target"})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True,
                        help=f"folder of the ARFF files ({REPOSITORY} at {COMMIT[:7]})")
    parser.add_argument("--out", required=True, help="the data directory to write")
    args = parser.parse_args(argv)
    source, out = Path(args.source), Path(args.out)
    missing = [n for n in DATASETS if not (source / f"{n}.arff").is_file()]
    if missing:
        raise SystemExit(f"{source} lacks {', '.join(f'{n}.arff' for n in missing)}; it should be "
                         f"a clone of {REPOSITORY} at {COMMIT[:7]}")
    out.mkdir(parents=True, exist_ok=True)
    rows = ["name\trows\tcols\ttask\tsource_repo\tsource_path\tsource_commit\tsha256"]
    for name in DATASETS:
        path = source / f"{name}.arff"
        frame = convert(path)
        frame.to_csv(out / f"{name}.csv.gz", index=False)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        rows.append(f"{name}\t{len(frame)}\t{frame.shape[1]}\tregression\t{REPOSITORY}\t"
                    f"{name}.arff\t{COMMIT}\t{digest}")
        print(f"{name}: {len(frame)} rows, {frame.shape[1] - 1} features", flush=True)
    (out / "MANIFEST.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    print(f"wrote {len(DATASETS)} datasets to {out}")


if __name__ == "__main__":
    main()
