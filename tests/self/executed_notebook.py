"""What a notebook that ran top to bottom must show, however it ran: headless (test_notebooks.py) or in a real
JupyterLab and saved (test_browser.py). One set of checks, so a notebook the browser test runs need not run a
second time headless: a browser test names its notebook with the `runs_notebook` mark, and tests/self/conftest.py
skips that notebook's headless run while the browser test is selected and can run."""
import re

from course.notebook import prose, text
from course.problems import ROOT

LONG_FLOAT = re.compile(r"\d\.\d{9,}")   # -0.20000000298023224: print rounded values


def assert_ran_cleanly(notebook, nb, roots=(ROOT,)):
    """notebook: 'p08-fast-en'; nb: the executed notebook (nbformat). No error, a figure, rounded floats, no stderr,
    its language's prose, lines within the page, and the text the notebook must print. `roots`: folders the run
    prints as paths (they vary), whose lines are left out."""
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure was drawn"
    noisy = [o.text for o in outputs if o.output_type == "stream" and LONG_FLOAT.search(o.text)]
    assert not noisy, f"unrounded floats printed: {noisy}"
    assert not [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    lines = [line for line in prose.notebook_printed_lines(nb) if not any(str(root) in line for root in roots)]
    assert_prints_its_language(notebook, lines)
    wide = [line for line in lines if text.columns(line) > text.LINE_COLUMNS]
    assert not wide, f"lines wider than the page at a 1024 px window ({text.LINE_COLUMNS} columns): {wide}"
    printed = "\n".join(lines)
    if notebook.startswith("p08-fast"):      # the stub: each fix cell says what to write, and runs no reference
        en = notebook.endswith("en")
        assert ("is still a stub" if en else "还是桩代码") in printed
        packed = re.sub(r"\s+", "", printed)                             # wrapped lines joined, spaces aside
        streams = "FastSampler's __init__, _uniforms and free" if en else "FastSampler 的 __init__、_uniforms 和 free"
        for todo, names in ((1, ["route"]), (2, ["window_topk", "canonical_window"]), (3, ["row_total"]),
                            (4, ["filter_window"]), (5, [streams]), (5, ["inverse_cdf"])):
            shown = (f"write {' and '.join(names)} (TODO(p08-fast.{todo})) in mine/p08_sampler_fast.py" if en else
                     f"mine/p08_sampler_fast.py 里写好 {'、'.join(names)}（TODO(p08-fast.{todo})）")
            assert re.sub(r"\s+", "", shown) in packed, shown
        ran = re.search(r"(code: |代码：)(route|window_topk|row_total|filter_window|inverse_cdf)\b", printed)
        assert not ran, printed                                           # no fix cell ran a step of the reference
        # the prose on the blog's clamp_min says "about 50 in every million draws": what the cell computes
        draws = re.findall(r"(?:in 1,000,000 steps: about|1,000,000 步里预计抽到被删 token：约) (\d+)", printed)
        assert len(draws) == 1 and 40 <= int(draws[0]) <= 60, draws
    elif notebook.startswith("p08-kernel"):                            # the stub's steps are not run for it: each says
        assert ("not written yet" if notebook.endswith("en") else "还没写") in printed   # which function to write
        assert not re.search(r"code: \w+ from|代码：\w+ 来自", printed), printed
    else:                                                              # the stub ran nothing: §5 never says "yours"
        assert not re.search(r"your apply_top_p|你的 apply_top_p", printed), printed
        assert ("the reference" if notebook.endswith("en") else "参考解") in printed


def assert_prints_its_language(notebook, lines):
    """Chinese: at most MAX_ENGLISH_SHARE English-prose lines (course/notebook/prose.py); English: no Chinese."""
    english, _, share = prose.english_share(lines)
    if notebook.endswith("-zh"):
        assert share <= prose.MAX_ENGLISH_SHARE, f"{share:.0%} of the printed lines are English prose: {english}"
    else:
        assert not [line for line in lines if prose.CJK.search(line)], lines
        assert share >= 0.3, f"only {share:.0%} of the English notebook's lines read as English"
