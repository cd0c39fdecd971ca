"""The notebooks run top to bottom headless and are committed clean; their panels, driven without a kernel,
plot exactly what the oracle (course/oracle.py) says; the invariance demo tells right from wrong; hint buttons
reveal the right files."""
import json
import os
import re

import matplotlib

matplotlib.use("Agg")

import nbformat  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from course import hints, oracle, problems  # noqa: E402
from course.notebook import nbstrip, panel_invariance, prose, text  # noqa: E402
from course.notebook import widgets as cw  # noqa: E402
from course.loader import load_module  # noqa: E402
from course.sampling_params import SamplingParams  # noqa: E402
from tests.self.executed_notebook import assert_ran_cleanly  # noqa: E402

ROOT_DIR = problems.ROOT
NOTEBOOKS = {name: p.path("notebook") for name, p in problems.problems().items()}
ALL_NOTEBOOKS = {f"{name}-{lang}": p.path(which) for name, p in problems.problems().items()
                 for lang, which in (("zh", "notebook"), ("en", "notebook_en")) if getattr(p, which)}
CELL_TIMEOUT_S = 120


# ---- (a) the notebooks --------------------------------------------------------------------------
@pytest.mark.parametrize("notebook", list(ALL_NOTEBOOKS))
def test_notebook_is_committed_without_outputs(notebook):
    nb = nbformat.read(ALL_NOTEBOOKS[notebook], as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{ALL_NOTEBOOKS[notebook].name}: cells {dirty} carry outputs; clear them before committing"


STEP = r"(\d+[a-z]?)"     # a stub's step: 4, or one part of a split step: 4a, 4b, 4c


def stub_steps(problem) -> set:
    """The steps of a problem's stub, as written in its TODO tags: {'1', '2', '3', '4a', '4b', '4c', ...}."""
    p = problems.get(problem)
    return set(re.findall(re.escape(p.todo_tag) + STEP + r"\)", p.path("stub").read_text(encoding="utf-8")))


def section_headings(nb) -> dict:
    """{'4a': '## §4a ...', ...}: the notebook's numbered sections by their number, lettered parts included."""
    return {m.group(1): c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"
            for m in [re.match(r"## §" + STEP + " ", c.source)] if m}


@pytest.mark.parametrize("problem", list(NOTEBOOKS))
def test_notebook_has_a_section_per_stub_step(problem):
    """The stub's errors say 'see notebooks/<notebook> §N': every TODO step N (4, or 4a) has a '## §N ' section,
    and every step an error names is a TODO step."""
    p = problems.get(problem)
    stub = p.path("stub")
    if not stub.exists():
        pytest.skip(f"{problem} has no stub yet")
    text = stub.read_text(encoding="utf-8")
    steps = stub_steps(problem)
    assert steps and f"see {p.notebook} §" in text
    raised = {step for _, step in re.findall(r"_todo\((\"?)" + STEP + r"\1, ", text)}
    assert raised and raised <= steps, f"the stub's errors name steps {sorted(raised)}, its TODOs {sorted(steps)}"
    for path in (p.path("notebook"), p.path("notebook_en")):
        headings = section_headings(nbformat.read(path, as_version=4))
        for step in sorted(steps | ({"0"} if problem == "p08" else set())):
            assert step in headings, f"{path.name}: no '## §{step} ' section"


FAST_SECTIONS = {"1": ["route"], "2": ["window_topk", "canonical_window"], "3": ["row_total"], "4": ["filter_window"],
                 "5": ["_uniforms", "free", "inverse_cdf"]}
FAST_PROBES = {"1": ["F7"], "2": ["T2"], "3": ["T3", "F8"], "4": ["T4", "F7"], "5": ["T5", "F4"]}


def fast_section_cells(nb) -> dict:
    """{'1': [cell, ...], ...}: each numbered section's cells, its heading cell first, up to the next '#' or '##'
    heading (a '###' part stays in its section)."""
    sections, current = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown" and re.match(r"##? ", cell.source):
            m = re.match(r"## §" + STEP + " ", cell.source)
            current = m.group(1) if m else None
        if current is not None:
            sections.setdefault(current, []).append(cell)
    return sections


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_fast_notebook_follows_the_stubs_steps_by_name_and_never_widens(lang):
    """§1-§5 are the stub's steps and carry, in their headings, the functions whose errors name that step; §0 says
    why, and no other numbered section exists; each step's section runs the naive version on a probe first (a cell
    that names no code of the learner's), then the step's own functions (a cell that prints whose code ran them),
    and names the grader checks that use its probe; no trace of the old widening window (GROW, SORT_FRACTION, a
    full-sort fallback) in the prose, the code or the panel's module."""
    p = problems.get("p08-fast")
    nb = nbformat.read(p.path("notebook" if lang == "zh" else "notebook_en"), as_version=4)
    headings = section_headings(nb)
    assert set(headings) == set(FAST_SECTIONS) | {"0"}, sorted(headings)
    assert set(FAST_SECTIONS) == stub_steps("p08-fast")
    for step, names in FAST_SECTIONS.items():
        assert all(name in headings[step] for name in names), (step, headings.get(step))
    stub = p.path("stub").read_text(encoding="utf-8")
    for step, names in FAST_SECTIONS.items():                         # the section a stub's error sends one to
        for name in names:
            assert re.search(rf'_todo\("?{step}"?, "(FastSampler\.)?{name}"\)', stub), (step, name)
    sections = fast_section_cells(nb)
    for step, checks in FAST_PROBES.items():
        cells = sections[step]
        prose = "\n".join(c.source for c in cells if c.cell_type == "markdown")
        assert all(re.search(rf"\b{check}\b", prose) for check in checks), (step, checks)
        code = [c.source for c in cells if c.cell_type == "code"]
        assert len(code) >= 2 and "fast.label(" not in code[0], step    # the naive version runs first, unlabelled
        labelled = "\n".join(src for src in code[1:] if "fast.label(" in src)
        for name in FAST_SECTIONS[step]:
            assert name == "free" or re.search(rf'fast\.label\([^)]*"(FastSampler\.)?{name}"', labelled), (step, name)
    text = "\n".join(c.source for c in nb.cells) + (ROOT_DIR / "course/notebook/panel_window.py").read_text()
    assert not re.findall(r"(?i:widen|falls? back|full-sort fallback)|加宽|退回|GROW|SORT_FRACTION", text)
    assert "fast = cw.choose_fast_impl(USE_REFERENCE, LANG)" in text and "fast.label(" in text


# Every notebook runs, in both languages: the code cells are the same (test_notebook_sources.py), but what they
# print is chosen by LANG, and each language's lines are checked.
@pytest.mark.parametrize("notebook", list(ALL_NOTEBOOKS))
def test_notebook_runs_top_to_bottom_headless(notebook, tmp_path, monkeypatch):
    path = ALL_NOTEBOOKS[notebook]
    committed = path.read_text(encoding="utf-8")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("COURSE_STATE", str(tmp_path / "state.json"))   # never the learner's progress file
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()   # raises CellExecutionError, naming the cell, on the first failing cell
    assert_ran_cleanly(notebook, nb)
    # what git sees after a run and a save (the nbstrip clean filter): the committed file, byte for byte
    assert nbstrip.strip_text(nbformat.writes(nb)) == committed


def test_english_prose_lines_are_told_from_numbers_code_and_chinese():
    english = ["caller's tensor untouched: [3.0, -1.0, 0.5, -0.2]", "both tied tokens stay",
               "shared (WRONG)  alone [0, 5]  mixed [0, 4]  -> DIFFERENT", "expected removed-token draws: about 56",
               "row 3 alone == in the batch == padded: True True", "kept columns [2] · total [1.5]"]
    not_english = ["logits (2, 1000) torch.bfloat16 -> row (1000,) torch.float32", "greedy: argmax(row) = 0",
                   "row / 0.0 = [inf, -inf, inf, nan]", "Routes(greedy=[1], top_k=[0], top_p=[2], plain=[3])",
                   "  torch.sum:  [True, True, False, True]", "top_p = 0.9：fp32 保留 119 个 token，bf16 却保留 113 个",
                   "FastSampler.filtered_probs (4, 6)", "WINDOW = 64 · WINDOW_K = 256 · CHUNK = 64",
                   " tensor([[0.0000, 0.6667, 0.0000]])", "代码：penalized_fp32 来自 solutions/p08_sampler_fast.py",
                   "B =  4: 快速路径      182 个 op，1 次同步，1 次上传", "top_k = 300, V = 100 (top_k >= V)"]
    assert [line for line in english if not prose.is_english_prose(line)] == []
    assert [line for line in not_english if prose.is_english_prose(line)] == []
    assert prose.english_share(english + not_english + ["", "  "])[1:] == (english + not_english, 0.3333333333333333)


def test_wrap_breaks_long_lines_by_display_width():
    line = "mine/p08_sampler.py 还是桩代码（未实现：apply_repetition_penalty, apply_top_k），下面展示的是参考解 " * 2
    wrapped = text.wrap(line, 40).split("\n")
    assert len(wrapped) > 1 and max(map(text.columns, wrapped)) <= 40
    assert "".join(w.strip() for w in wrapped).replace(" ", "") == line.replace(" ", "")
    assert text.columns("参考解 ab") == 9 and text.pad("概率", 6) == "概率\u3000"
    assert text.wrap("short") == "short" and text.in_language("en")("中", "en") == "en"
    path = "showing /tmp/" + "a-very-long-folder/" * 8 + "mine.py (every step runs)"    # a word longer than a line
    assert max(map(text.columns, text.wrap(path, 40).split("\n"))) <= 40


# ---- (b) the slider panel, without a kernel -----------------------------------------------------
def crossing_rank(row, temperature, top_k, top_p, penalty, prev):
    """Rank (by descending probability after top-k) of the token whose cumulative first reaches top_p."""
    values = oracle.top_k_filter([v / temperature for v in oracle.penalize(row, prev, penalty)], top_k)
    cumulative = 0.0
    for rank, p in enumerate(sorted(oracle.softmax(values), reverse=True)):
        cumulative += p
        if cumulative >= top_p:
            return rank
    raise AssertionError("top_p never reached")


def assert_panel_matches_oracle(w, fig, row):
    """Bar heights = the oracle's filtered probabilities, orange bars = its kept set, lines where they belong."""
    t, k, p, pen = (w[n].value for n in ("temperature", "top_k", "top_p", "penalty"))
    prev = [int(x) for x in w["prev_tokens"].value.split(",") if x.strip()]
    greedy = t < 1e-5
    if not greedy:
        assert oracle.cut_is_clear([v / t for v in oracle.penalize(row, prev, pen)], k, p), "pick a clearer case"
    expected = oracle.filtered_probs(row, t, k, p, pen, prev)
    art = fig._p08_artists
    heights = [bar.get_height() for bar in art["after"]]
    assert len(heights) == len(row)
    assert max(abs(h - e) for h, e in zip(heights, expected)) <= 1e-6, (heights, expected)
    highlighted = {i for i, bar in enumerate(art["after"]) if bar.get_facecolor() == to_rgba(cw.KEPT_COLOR)}
    assert highlighted == oracle.kept(expected) == set(fig._p08_state["kept"])
    removed = sorted(set(range(len(row))) - highlighted)          # outlined at their before-filter height
    before = fig._p08_state["probs_before"].tolist()
    assert [round(bar.get_x() + bar.get_width() / 2 - 0.2) for bar in art["removed"]] == removed
    assert [bar.get_height() for bar in art["removed"]] == pytest.approx([before[i] for i in removed])
    assert all(bar.get_hatch() and bar.get_height() > 0 for bar in art["removed"])
    assert list(art["top_p"].get_ydata()) == [p, p]
    assert art["top_p"].get_visible() == (not greedy and 0 < p < 1)
    cumulative = list(art["cumulative"].get_ydata())
    penalized = oracle.penalize(row, prev, pen)
    after_k = penalized if greedy else oracle.top_k_filter([v / t for v in penalized], k)   # what top-p reads
    probs = sorted(oracle.softmax(after_k), reverse=True)
    assert max(abs(c - sum(probs[:i + 1])) for i, c in enumerate(cumulative)) <= 1e-6
    marker = list(art["crossing"].get_xdata())
    if greedy or not 0 < p < 1:
        assert marker == []
    else:
        assert marker == [crossing_rank(row, t, k, p, pen, prev)]
        assert fig._p08_state["crossing_token"] == fig._p08_state["order"][marker[0]].item()


@pytest.fixture
def panel():
    w, fig = cw.build_ui(lang="en", use_reference=True)
    return w, fig


def test_panel_starts_on_the_worked_trace(panel):
    w, fig = panel
    row = cw.preset_rows()["worked"].tolist()
    assert (w["top_k"].value, w["top_p"].value) == (3, 0.6)
    assert_panel_matches_oracle(w, fig, row)
    assert [round(h, 3) for h in (b.get_height() for b in fig._p08_artists["after"])] == [0.667, 0.333, 0, 0]
    assert w["image"].value[:4] == b"\x89PNG"


@pytest.mark.parametrize("changes", [
    {"top_p": 0.7},                                           # the crossing token stays: {0, 1}
    {"top_p": 0.7, "top_k": -1},
    {"top_p": 0.8, "top_k": -1, "temperature": 0.5},
    {"top_p": 0.95, "top_k": 4, "temperature": 2.0},
    {"penalty": 1.5, "prev_tokens": "0, 0", "top_k": -1, "top_p": 0.7},
    {"temperature": 0.0},                                     # greedy: one-hot, no crossing marker
    {"top_p": 1.0, "top_k": 2},                               # top-p off
    {"row": "zipf", "top_k": -1, "top_p": 0.8},
    {"row": "zipf", "top_k": 5, "top_p": 0.9, "penalty": 2.0, "prev_tokens": "3"},
    {"row": "flat", "top_k": 7, "top_p": 0.5, "temperature": 0.7},
    {"row": "custom", "custom": "1.5, -0.5, 3.0, 0.2, 0.1", "top_k": -1, "top_p": 0.9},
    {"row": "custom", "custom": "1.5, -0.5, 3.0, 0.2, 0.1", "top_k": 3, "top_p": 0.99, "penalty": 1.3,
     "prev_tokens": "2, 1"},
], ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_panel_redraws_what_the_oracle_says(panel, changes):
    w, fig = panel
    for name in ("row", "custom", "prev_tokens", "temperature", "top_k", "penalty", "top_p"):
        if name in changes:
            w[name].value = changes[name]
            assert w[name].value == changes[name], f"the widget refused {name}={changes[name]}"
    row = cw.preset_rows()[w["row"].value].tolist() if w["row"].value != "custom" else \
        [float(x) for x in w["custom"].value.split(",")]
    assert w["top_k"].max == len(row)
    assert "Error" not in w["note"].value, w["note"].value
    assert_panel_matches_oracle(w, fig, row)


def test_panel_reports_bad_input_and_keeps_the_last_picture(panel):
    w, fig = panel
    w["row"].value = "custom"
    drawn = fig._p08_state
    assert len(drawn["row"]) == 6 and "Error" not in w["note"].value
    w["custom"].value = "1.0, oops"
    assert "your own logits: 'oops' is not a finite number" in w["note"].value and fig._p08_state is drawn
    w["custom"].value = "1.0, 2.0"
    drawn = fig._p08_state
    assert drawn["row"].tolist() == [1.0, 2.0] and "Error" not in w["note"].value
    w["prev_tokens"].value = "99"
    assert "prev tokens must be in [0, 2)" in w["note"].value and fig._p08_state is drawn


def test_panel_toggle_moves_to_the_reference_while_mine_is_a_stub_and_says_why():
    """The toggle is true to the code that runs: asked for mine/ while it is a stub, it shows the reference."""
    w, fig = cw.build_ui(lang="en", use_reference=False)
    assert w["use_reference"].value is True
    assert "code: solutions/p08_sampler.py" in w["note"].value
    assert "mine/p08_sampler.py is still a stub (not implemented: apply_repetition_penalty" in w["note"].value
    assert "the toggle is on the reference" in w["note"].value
    assert_panel_matches_oracle(w, fig, cw.preset_rows()["worked"].tolist())
    w["use_reference"].value = False                              # a click on mine/: still a stub
    assert w["use_reference"].value is True and "still a stub" in w["note"].value
    assert_panel_matches_oracle(w, fig, cw.preset_rows()["worked"].tolist())
    zh, _ = cw.build_ui(lang="zh", use_reference=False)
    assert zh["use_reference"].value is True and "还是桩代码" in zh["note"].value and "切到了参考解" in zh["note"].value
    chosen, _ = cw.build_ui(lang="en", use_reference=True)       # the reference on purpose: no reason given
    assert chosen["use_reference"].value is True and "stub" not in chosen["note"].value
    assert [label for label, _ in zh["use_reference"].options] == ["我的代码 mine/", "参考解 solutions/"]
    assert [label for label, _ in w["use_reference"].options] == ["my code mine/", "reference solutions/"]
    assert w["use_reference"].description == "whose code"


def test_panel_toggle_runs_the_learners_code_once_it_is_done(tmp_path):
    done = write_variant(tmp_path, "finished")
    w, fig = cw.build_ui(lang="en", use_reference=False, mine_path=done)
    assert w["use_reference"].value is False
    assert f"code: {done}" in w["note"].value and "stub" not in w["note"].value
    w["use_reference"].value = True
    assert "code: solutions/p08_sampler.py" in w["note"].value and "stub" not in w["note"].value
    w["use_reference"].value = False
    assert w["use_reference"].value is False and f"code: {done}" in w["note"].value
    assert_panel_matches_oracle(w, fig, cw.preset_rows()["worked"].tolist())


def test_slider_tracks_line_up_and_text_labels_are_never_cut():
    """Every slider has one description width and one width (so one track length); a dropdown's or a text box's
    label takes the width it needs. The browser test measures both on the page."""
    w, _ = cw.build_ui(lang="en", use_reference=True)
    window, _ = cw.build_window_panel("en")
    sliders = [w[n] for n in ("temperature", "top_k", "top_p", "penalty")] + \
              [window[n] for n in ("temperature", "top_k", "top_p")]
    assert {(s.style.description_width, s.layout.width) for s in sliders} == \
        {(cw.slider_sizes()["style"]["description_width"], cw.slider_sizes()["layout"].width)}
    for widget in (w["row"], w["custom"], w["prev_tokens"], window["row"]):
        assert widget.style.description_width == "initial", widget.description


def test_every_panel_carries_a_note_shown_only_while_it_is_not_live():
    """A panel reopened from saved widget state (or after a kernel restart) looks alive; its first child says it
    is not, shown by CSS only on a view ipywidgets marks 'jupyter-widgets-disconnected'."""
    panels = [cw.build_ui("en", True)[0]["panel"], cw.build_invariance_panel("en", True, steps=4, mixes=1)[0]["panel"],
              cw.build_window_panel("en")[0]["panel"], cw.hint_buttons("p08", "en")]
    for panel in panels:
        note = panel.children[0]
        assert "p08-panel" in panel._dom_classes and "p08-stale" in note._dom_classes
        assert "Run All Cells" in note.value and "not connected to a running kernel" in note.value
        assert ".p08-stale { display: none !important; }" in note.value
        assert ".p08-stale.jupyter-widgets-disconnected { display: flex !important; }" in note.value
    assert "重新运行" in cw.stale_note("zh").value


# ---- choose_impl: the learner's code when it exists, the reference while it is a stub -------------
def test_choose_impl_falls_back_from_the_stub_with_a_note_in_either_language():
    stub = problems.get("p08").path("stub")
    for lang, words in (("en", "still a stub"), ("zh", "桩代码")):
        module, note = cw.choose_impl(False, lang)
        assert module.__file__.endswith(os.path.join("solutions", "p08_sampler.py"))
        assert words in note and "apply_top_k" in note
    assert cw.unfinished(load_module(stub)) == ["apply_repetition_penalty", "apply_top_k", "apply_top_p",
                                                   "Sampler.sample"]


def write_variant(tmp_path, name, old=None, new=None):
    text = problems.get("p08").path("solution").read_text(encoding="utf-8")
    if old is not None:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    return path


def test_choose_impl_shows_the_learners_own_code_bugs_included(tmp_path):
    done = write_variant(tmp_path, "finished")
    module, note = cw.choose_impl(False, "en", mine_path=done)
    assert module.__file__ == str(done) and "your implementation" in note
    assert cw.is_learners(module) and not cw.is_learners(cw.choose_impl(False, "en")[0])   # the stub: reference
    buggy = write_variant(tmp_path, "cumsum_bug", "torch.cumsum(probs, dim=-1) - probs", "torch.cumsum(probs, dim=-1)")
    module, _ = cw.choose_impl(False, "en", mine_path=buggy)
    steps = cw.filter_steps(module, cw.preset_rows()["worked"], 1.0, -1, 0.7, 1.0, [])
    assert steps["kept"] == [0]                      # the learner's bug is what the panel shows ...
    assert steps["crossing_token"] == 1              # ... next to the token that should have stayed
    half = write_variant(tmp_path, "half", "    if not 0 < top_p < 1:\n        return logits.clone()",
                         "    raise NotImplementedError('p08 step 5')")
    module, note = cw.choose_impl(False, "en", mine_path=half)
    assert module.__file__.endswith(os.path.join("solutions", "p08_sampler.py")) and "apply_top_p" in note
    broken = tmp_path / "broken.py"
    broken.write_text("def apply_top_k(:\n", encoding="utf-8")
    module, note = cw.choose_impl(False, "en", mine_path=broken)
    assert "cannot be imported" in note and "SyntaxError" in note


@pytest.mark.parametrize("row,kwargs", [
    ([0.3, -1.2, 2.0, 0.0, 1.1, -0.4], dict(temperature=0.8, top_k=4, top_p=0.85, penalty=1.4, prev_tokens=[2, 2, 5])),
    ([1.0, 1.0, 0.5, -2.0], dict(temperature=1.0, top_k=-1, top_p=0.3, penalty=1.0, prev_tokens=[])),
    ([2.0, 1.0, 0.5, 0.25, 0.0], dict(temperature=0.0, top_k=2, top_p=0.5, penalty=3.0, prev_tokens=[0])),
])
def test_filter_steps_with_the_reference_agree_with_the_oracle(row, kwargs):
    module, _ = cw.choose_impl(True)
    steps = cw.filter_steps(module, row, **kwargs)
    expected = oracle.filtered_probs(row, kwargs["temperature"], kwargs["top_k"], kwargs["top_p"], kwargs["penalty"],
                                     kwargs["prev_tokens"])
    assert max(abs(a - b) for a, b in zip(steps["probs_after"].tolist(), expected)) <= 1e-6
    assert set(steps["kept"]) == oracle.kept(expected)
    assert steps["penalized"].tolist() == pytest.approx(oracle.penalize(row, kwargs["prev_tokens"], kwargs["penalty"]))


# ---- (c) the batch-invariance panel -------------------------------------------------------------
def test_invariance_panel_right_sampler_matches_alone_shared_generator_diverges():
    w, fig = cw.build_invariance_panel(lang="en", use_reference=False, steps=6, mixes=2)
    listed = []
    for click in range(2):
        data = fig._p08_state
        assert [r["seed"] for r in data["right"]["mixed"]] == [2 * click, 2 * click + 1]
        assert all(max(len(b) for b in r["batches"]) > 1 for r in data["right"]["mixed"]), "no peers: proves nothing"
        assert all(r["tokens"] == data["right"]["alone"] for r in data["right"]["mixed"])
        assert any(r["tokens"] != data["wrong"]["alone"] for r in data["wrong"]["mixed"])
        assert "right sampler: 0/2 mixes differ" in w["note"].value
        assert f"run {click + 1}" in w["note"].value and data["run"] == click + 1
        assert f"run {click + 1} ·" in invariance_title(fig)                 # the picture says which run it is
        for r in data["right"]["mixed"]:                                      # the peers q really met, listed
            met = {p for b in r["batches"] if "q" in b for p in b if p != "q"}
            assert {p.split(" (")[0] for p in r["peers"]} == met
            assert f"mix {r['seed']} · B " in w["note"].value and ", ".join(r["peers"]) in w["note"].value
        listed.append({p for r in data["right"]["mixed"] for p in r["peers"]})
        w["again"].click()
    assert listed[0] != listed[1]                                             # every run draws new peers


def test_invariance_panel_peers_carry_their_params_and_change_every_run():
    w, fig = cw.build_invariance_panel(lang="en", use_reference=True, steps=6, mixes=3)
    runs = []
    for _ in range(3):
        runs.append([tuple(r["peers"]) for r in fig._p08_state["right"]["mixed"]])
        w["again"].click()
    assert all(p.count("(seed ") == 1 and ", T " in p for run in runs for mix in run for p in mix)
    assert not [p for run in runs for mix in run for p in mix if "(seed 7," in p]   # q's own seed is q's alone
    assert len({mix for run in runs for mix in run}) == 9                    # nine mixes, nine peer lists
    assert panel_invariance.mix_seeds(1, 3) == [0, 1, 2] and panel_invariance.mix_seeds(2, 3) == [3, 4, 5]


def invariance_title(fig):
    return fig.axes[0].get_title()


# ---- the empirical histogram --------------------------------------------------------------------
def test_empirical_histogram_counts_follow_the_oracle():
    module, _ = cw.choose_impl(True)
    params = SamplingParams(top_k=2, seed=3)
    fig, counts, expected = cw.empirical_histogram(module, torch.log(torch.tensor(cw.WORKED_PROBS)), params, draws=2000)
    assert sum(counts) == 2000 and counts[2] == counts[3] == 0
    assert expected == pytest.approx([2 / 3, 1 / 3, 0, 0])
    assert not oracle.sigma_violations(counts, expected, 2000)
    assert [round(b.get_height() * 2000) for b in fig.axes[0].patches] == counts
    fig.canvas.draw()                                                 # the legend never covers an oracle mark
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent()
    marks = ax.transData.transform(list(zip(range(4), expected)))
    assert not any(box.x0 - 20 <= x <= box.x1 + 20 and box.y0 - 5 <= y <= box.y1 + 5 for x, y in marks)


# ---- (d) hint buttons ---------------------------------------------------------------------------
@pytest.mark.parametrize("problem", list(NOTEBOOKS))
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_hint_buttons_reveal_that_levels_file_and_record_it(problem, lang, tmp_path, monkeypatch):
    state_file = tmp_path / "state.json"
    monkeypatch.setenv("COURSE_STATE", str(state_file))
    box = cw.hint_buttons(problem, lang)
    buttons, out = box.children[-2].children, box.children[-1]
    buttons, confirm = buttons[:3], box._p08_buttons["confirm"]
    assert [b.description[-2:] for b in buttons] == ["L1", "L2", "L3"] and out.outputs == ()
    assert confirm.layout.display == "none"
    for level in (2, 1, 3):
        buttons[level - 1].click()
        text = hints.hint_path(problem, level, lang).read_text(encoding="utf-8")
        if level == 3:                                     # L3 asks first, like ./check.sh --hint 3
            assert out.outputs[0]["data"]["text/markdown"] != text and "L3" in box._p08_state["text"]
            assert confirm.layout.display is None and 3 not in box._p08_state["revealed"]
            confirm.click()
        assert out.outputs[0]["data"]["text/markdown"] == text == box._p08_state["text"]
    assert confirm.layout.display == "none"
    assert json.loads(state_file.read_text(encoding="utf-8"))[problem]["hints_seen"] == [1, 2, 3]
