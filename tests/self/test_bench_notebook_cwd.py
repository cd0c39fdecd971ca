"""The fast-path notebook's benchmark cell times the learner's mine/p08_sampler_fast.py wherever the notebook runs
from: JupyterLab starts a notebook's kernel in the notebook's own folder (notebooks/ or notebooks/en/), a script may
run it from the repo root. The learner's file is found from the repo root, never from the working folder.

The repo is a temporary copy of its shape (course.problems.ROOT pointed at it) whose mine/p08_sampler_fast.py is the
solution, a learner's file that runs; the cell is the built notebook's own benchmark cell, run as it is, on smaller
cases."""
import json
import math
import re
import shutil

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from IPython.display import HTML, Markdown  # noqa: E402

from course import bench, problems  # noqa: E402
from course.notebook import bench_figures as bf  # noqa: E402
from course.notebook import widgets as cw  # noqa: E402

REAL_ROOT = problems.ROOT
SMALL_CASES = [("seed 004: k40 p.9", 4, 512, "seed004", "peaked"), ("heterogeneous", 4, 512, "mixed", "peaked")]


def benchmark_cell(notebook) -> str:
    """The source of the built notebook's code cell that times the learner's file (the one calling learner_impl)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    found = [source for source in sources if "bf.learner_impl(" in source]
    assert len(found) == 1, f"{notebook}: {len(found)} code cells call bf.learner_impl"
    return found[0]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repo-shaped folder whose learner file runs: course.toml, solutions/, mine/p08_sampler_fast.py (the solution)
    and the notebook folders; course.problems.ROOT points at it."""
    root = tmp_path / "repo"
    for folder in ("mine", "solutions", "notebooks/en"):
        (root / folder).mkdir(parents=True)
    shutil.copy(REAL_ROOT / "course.toml", root / "course.toml")
    for name in ("p08_sampler.py", "p08_sampler_fast.py"):
        shutil.copy(REAL_ROOT / "solutions" / name, root / "solutions" / name)
    shutil.copy(REAL_ROOT / "solutions" / "p08_sampler_fast.py", root / "mine" / "p08_sampler_fast.py")
    monkeypatch.setattr(problems, "ROOT", root)
    monkeypatch.setattr(bf, "TABLE_CASES", SMALL_CASES)           # the cell's own call, on small batches
    return root


@pytest.mark.parametrize("where, lang", [("notebooks/en", "en"), ("notebooks", "zh"), (".", "en")])
def test_the_notebooks_benchmark_times_mine_from_any_working_folder(repo, monkeypatch, capsys, where, lang):
    notebook = REAL_ROOT / ("notebooks/en" if lang == "en" else "notebooks") / "p08_fast_path.ipynb"
    cell = benchmark_cell(notebook)
    monkeypatch.chdir(repo / where)
    fast = cw.choose_fast_impl(False, lang)                       # the notebook's setup cell: USE_REFERENCE = False
    assert fast.yours("FastSampler") and fast.mine_path == "mine/p08_sampler_fast.py"
    shown = []
    exec(cell, {"fast": fast, "LANG": lang, "bench": bench, "cw": cw, "HTML": HTML, "Markdown": Markdown,
                "display": shown.append})
    printed = capsys.readouterr().out
    assert "no such file" not in printed and "not timed" not in printed and "不计时" not in printed, printed
    assert printed.splitlines()[0].startswith("yours = mine/p08_sampler_fast.py"), printed
    table = next(d.data for d in shown if isinstance(d, HTML))
    heads = re.findall(r"<th\b[^>]*>(.*?)</th>", table)
    yours = next(i for i, h in enumerate(heads) if "mine/" in h)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1])
    assert len(rows) == len(SMALL_CASES)
    for row in rows:
        cell_text = re.sub(r"<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>", row)[yours])
        ms = float(cell_text.split()[0])                        # '0.41 ×1.1': a number, not '-'
        assert math.isfinite(ms) and ms > 0, row


def test_a_relative_learner_path_is_taken_from_the_repo_root(repo, monkeypatch):
    """What the notebook's panels and benchmark are given (relpath's 'mine/...') names one file from any folder."""
    from course.bench import learner
    monkeypatch.chdir(repo / "notebooks" / "en")
    assert learner.repo_file("mine/p08_sampler_fast.py") == repo / "mine" / "p08_sampler_fast.py"
    assert learner.repo_file(repo / "mine" / "p08_sampler_fast.py") == repo / "mine" / "p08_sampler_fast.py"
    fast = cw.choose_fast_impl(False, "en", mine_path="mine/p08_sampler_fast.py")
    assert fast.mine_steps and not fast.stub_steps and fast.error is None
