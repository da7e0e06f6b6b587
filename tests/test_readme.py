"""The README's first example runs as written (three evaluations on one holdout split instead of 60 seconds),
so the first thing a new user tries works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_first_python_example_runs(tmp_path):
    code = re.search(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S).group(1)
    assert "time_budget=60" in code
    script = tmp_path / "example.py"
    script.write_text("import warnings\nwarnings.simplefilter('ignore')\n"
                      + code.replace("time_budget=60", "max_evals=3, cv=None, ensemble_size=0"))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1].split()
    assert 0.5 < float(last[0]) <= 1.0 and last[1] in ("True", "False")
