"""The fast-path notebook's fix cells run the learner's code, and what they print holds. With the untouched stub each
fix cell only says which function to write (test_notebooks.py runs the whole notebook so); here every step is written
(the solution stands in for mine/), and §1-§5 run headless: each fix cell runs the learner's file and prints the
verdict the probe allows."""
import re

import matplotlib

matplotlib.use("Agg")

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from course import problems  # noqa: E402
from course.notebook import prose  # noqa: E402

SETUP = "fast = cw.choose_fast_impl(USE_REFERENCE, LANG)"


def test_every_fix_cell_runs_the_learners_steps_and_its_verdict_holds(tmp_path, monkeypatch):
    fast = problems.get("p08-fast")
    mine = tmp_path / "mine_done.py"
    mine.write_text(fast.path("solution").read_text(encoding="utf-8"), encoding="utf-8")
    path = fast.path("notebook_en")                                    # (the English lines: its verdicts are read)
    nb = nbformat.read(path, as_version=4)
    end = next(i for i, c in enumerate(nb.cells)
               if c.cell_type == "markdown" and c.source.startswith("## After you pass"))
    nb.cells = nb.cells[:end]                                          # §0-§5: the later cells run in the stub's run
    setup = next(c for c in nb.cells if SETUP in c.source)
    setup.source = setup.source.replace(SETUP, SETUP[:-1] + f", mine_path={str(mine)!r})")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("COURSE_STATE", str(tmp_path / "state.json"))
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    printed = re.sub(r"\s+", " ", "\n".join(prose.notebook_printed_lines(nb)))
    assert "this cell runs your code" not in printed, printed
    packed = printed.replace(" ", "")                                   # a long path may be wrapped anywhere
    for step in ("route", "window_topk, canonical_window", "row_total", "filter_window", "FastSampler._uniforms",
                 "inverse_cdf"):
        assert f"code: {step} from {mine}".replace(" ", "") in packed, step
    assert printed.count("it no longer moves") == 2, printed                   # §1 route, §3 row_total
    assert "the first 8 columns agree at both widths" in printed                 # §2, a run inside both windows
    assert "each row bit for bit the same at every W" in printed                 # §4, the kept mass
    kept = re.findall(r"certain (True|False) -> keeps (\d+) \(the whole row: (\d+)\)", printed)
    assert [k[0] for k in kept] == ["False", "False"] and all(k[1] == k[2] for k in kept), kept   # §4, past the window
    assert re.search(r"mixed \[[\d, ]+\] -> same", printed)                    # §5, q alone and mixed
