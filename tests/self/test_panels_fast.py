"""The fast-path notebook's panel (one window, certain by the row alone, the exact route), the exact route's
bucket picture, and the benchmark's HTML table: driven without a kernel, checked against the P08 reference."""
import re

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from course import problems  # noqa: E402
from course.notebook import widgets as cw  # noqa: E402
from course.loader import load_module  # noqa: E402

REFERENCE = load_module(problems.get("p08").path("solution"))


def reference_kept(row, temperature, top_k, top_p):
    z = torch.as_tensor(row) / temperature                                            # [V]
    return sorted(torch.nonzero(REFERENCE.apply_top_p(REFERENCE.apply_top_k(z, top_k), top_p) > -torch.inf)
                  .flatten().tolist())


FAST = cw.choose_fast_impl(True, "en")


@pytest.mark.parametrize("row,temperature,top_k,top_p,route,width,certain", [
    ("peaked", 1.0, 40, 0.9, "top_k", 41, True),       # seed 004's setting: one window of top_k + 1
    ("peaked", 1.0, -1, 0.9, "top_p", 64, True),       # top-p only, peaked: the kept set ends inside WINDOW
    ("heavy", 1.0, -1, 0.9, "top_p", 64, False),       # a heavy tail: the kept run reaches the window's last column
    ("flat", 1.0, -1, 0.9, "top_p", 64, False),        # most of V
    ("heavy", 0.7, 200, 0.95, "top_k", 201, True),
    ("flat", 1.0, 1, 0.5, "top_k", 2, True),
    ("bf16", 1.0, 60, 1.0, "top_k", 61, False),        # the 60th value ties the 61st
    ("bf16", 1.0, 59, 0.9, "top_k", 60, True),
    ("peaked", 1.0, 300, 0.9, "exact", None, None),    # top_k > WINDOW_K: no window at all
    ("heavy", 1.0, -1, 1.0, "plain", None, None),      # no filter
])
def test_window_plan_keeps_what_the_reference_keeps_and_says_how(row, temperature, top_k, top_p, route, width, certain):
    logits = cw.window_rows()[row]
    plan = cw.window_plan(FAST, logits, temperature, top_k, top_p)
    assert plan["kept_ids"] == reference_kept(logits, temperature, top_k, top_p)
    assert (plan["route"], plan["width"], plan["certain"]) == (route, width, certain)
    if certain:                                          # the window's own kept set is the answer
        assert plan["window_kept"] == plan["kept_ids"]


def test_certainty_is_judged_by_the_row_alone():
    """The rule compares two values of the row itself: the k-th and the next (top-k), or the last kept value and
    the window's last (top-p only); a wider window shared with peers changes neither the verdict nor the kept set."""
    for name in ("peaked", "heavy", "bf16"):
        x = cw.window_rows()[name][None]                                              # [1, V]
        for k in (5, 40, 59, 60):
            verdicts = set()
            for width in (k + 1, k + 30, 257):                                        # alone, beside wider peers
                z, ids = FAST.canonical_window(*FAST.window_topk(x, width))
                e, _, _, sure = FAST.filter_window(z, torch.tensor([[k]]), torch.tensor([[0.9]]), None, False)
                verdicts.add((bool(sure[0]), tuple(sorted(ids[e > 0].tolist()))))
            assert len(verdicts) == 1, (name, k, verdicts)
            z_sorted = torch.sort(x[0], descending=True).values
            assert verdicts.pop()[0] == bool(z_sorted[k - 1] > z_sorted[k]), (name, k)


def test_window_panel_redraws_on_each_slider_and_names_the_outcome():
    w, fig = cw.build_window_panel("en")
    assert "top_k route" in w["note"].value and "certain, the window decides" in w["note"].value
    assert [line.get_xdata()[0] for line in fig._p08_artists["windows"]] == [41.5]   # after rank W's step
    assert "code: route, window_topk, canonical_window, row_total, filter_window from solutions/p08_sampler_fast.py" \
        in w["note"].value                                   # mine/ is still a stub: the reference ran, and says so
    first = w["image"].value
    w["row"].value, w["top_k"].value = "heavy", -1
    assert "top_p route" in w["note"].value and "not certain" in w["note"].value and "exact route" in w["note"].value
    assert w["image"].value != first and not fig._p08_state["certain"]
    assert [line.get_xdata()[0] for line in fig._p08_artists["windows"]] == [64.5]
    w["row"].value, w["top_k"].value = "bf16", 60
    assert "column 60" in w["note"].value and "not certain" in w["note"].value      # counted from 1, as ranks are
    w["top_k"].value = 300
    assert "WINDOW_K = 256" in w["note"].value and fig._p08_artists["windows"] == []
    w["row"].value, w["top_k"].value, w["top_p"].value = "flat", -1, 1.0
    assert "no filter" in w["note"].value and not fig._p08_artists["top_p"].get_visible()
    assert fig._p08_state["kept_ids"] == list(range(len(cw.window_rows()["flat"])))
    for text in (w["note"].value, *[t.get_text() for t in fig.findobj(matplotlib.text.Text)]):
        assert not re.search(r"widen|fall(s)? back|full sort|GROW|SORT_FRACTION", text, re.I), text


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_window_panel_says_what_it_draws():
    """One kept token: "keeps 1 token", drawn one rank wide (rank 1 spans 0.5..1.5), not a hairline; with no
    window the legend names no window; every control takes its own row, the top_k slider with a long track."""
    w, fig = cw.build_window_panel("en")
    w["row"].value, w["top_k"].value = "flat", 1
    assert "keeps 1 token" in w["note"].value and "1 tokens" not in w["note"].value
    kept = fig.axes[0].patches[0]
    assert kept.get_label() == "kept prefix" and list(kept.get_data().edges) == [0.5, 1.5]
    assert legend_texts(fig.axes[0]) == ["kept prefix", "in the window, removed", "outside the window"]
    for top_k, top_p in ((300, 0.9), (-1, 1.0)):                  # the exact route, the plain route: no window
        w["top_k"].value, w["top_p"].value = top_k, top_p
        assert fig._p08_state["width"] is None
        assert "outside the window" not in legend_texts(fig.axes[0]) and legend_texts(fig.axes[0])[0] == "kept"
    assert all(w[name].layout.width == w["row"].layout.width for name in ("temperature", "top_k", "top_p"))
    assert w["row"].style.description_width == "initial"
    zh, _ = cw.build_window_panel("zh")
    zh["row"].value, zh["top_k"].value = "flat", 1
    assert "保留 1 个 token" in zh["note"].value


def test_window_panel_runs_the_learners_steps_once_they_run(tmp_path):
    """A finished mine/ runs in the panel (and the note says so); a step still a stub is the reference's."""
    solution = problems.get("p08-fast").path("solution").read_text(encoding="utf-8")
    done = tmp_path / "done.py"
    done.write_text(solution, encoding="utf-8")
    w, _ = cw.build_window_panel("en", mine_path=done)
    assert f"from {done}" in w["note"].value and "solutions/" not in w["note"].value
    start = solution.index("def filter_window(")
    body = solution.index("\n", solution.index('"""', solution.index('"""', start) + 3)) + 1   # after the docstring
    half = tmp_path / "half.py"
    half.write_text(solution[:body] + "    raise NotImplementedError('p08-fast step 4 filter_window')\n"
                    + solution[body:], encoding="utf-8")
    fast = cw.choose_fast_impl(False, "en", half)
    assert fast.stub_steps == ["filter_window", "FastSampler"]
    assert fast.window_topk.__module__ != fast.reference.__name__ and fast.filter_window is fast.reference.filter_window
    assert "filter_window" in fast.note and "stands in" in fast.note
    w, _ = cw.build_window_panel("en", mine_path=half)
    assert f"route, window_topk, canonical_window, row_total from {half}" in w["note"].value
    assert "filter_window from solutions/p08_sampler_fast.py" in w["note"].value
    stub = cw.choose_fast_impl(False, "zh")
    assert stub.mine_steps == [] and "还是桩代码" in stub.note


@pytest.mark.parametrize("row", ["peaked", "heavy", "flat"])
@pytest.mark.parametrize("top_p", [0.3, 0.9, 0.99])
def test_bucket_selection_keeps_the_reference_top_p_set(row, top_p):
    logits = cw.window_rows()[row]
    sel = cw.bucket_select(logits, top_p)
    assert sel["kept_ids"] == reference_kept(logits, 1.0, -1, top_p) and sel["kept"] == len(sel["kept_ids"])
    assert abs(sum(sel["mass"]) - 1) < 1e-9 and sum(sel["tokens"]) == len(logits)


def test_bucket_sums_are_exact_whatever_the_order():
    logits = cw.window_rows()["heavy"]
    perm = torch.randperm(len(logits), generator=torch.Generator().manual_seed(1))
    a, b = cw.bucket_select(logits, 0.9), cw.bucket_select(logits[perm], 0.9)
    assert a["mass"] == b["mass"] and a["crossing"] == b["crossing"]
    assert sorted(perm[b["kept_ids"]].tolist()) == a["kept_ids"]


def test_bucket_figure_highlights_the_crossing_bucket():
    sel = cw.bucket_select(cw.window_rows()["heavy"], 0.9)
    fig = cw.draw_buckets(sel, "en")
    reached = fig._p08_state["reached"]
    c = sel["crossing"]
    assert reached[c] >= 0.9 > (reached[c - 1] if c else 0)
    colors = [bar.get_facecolor() for bar in fig._p08_artists["bars"]]
    assert colors.count(colors[c]) == 1                       # only the crossing bucket has its colour
    assert f"{sel['tokens'][c]} token(s)" in " ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def result(name, ms):
    fast = ms["fast"]
    return {"name": name, "B": 8, "V": 4096, "logits": "flat", "ms": ms, "ratio": {m: t / fast for m, t in ms.items()}}


def test_a_floor_above_the_fast_path_is_never_shown_unmarked():
    """One read of the logits cannot cost more than the fast path, which reads them too: such a case is noise, marked
    in the HTML table and the text table, and the verdict says why."""
    from course import bench
    from course.bench import machine
    over = dict(result("V sweep", {"reference": 9.0, "full_sort": 8.0, "blog": 5.0, "fast": 4.0, "floor": 7.4}),
                spread={})
    fine = dict(result("V sweep", {"reference": 9.0, "full_sort": 8.0, "blog": 5.0, "fast": 4.0, "floor": 1.0}),
                spread={})
    for r in (over, fine):
        r.update(mix="seed004", B=64, V=151936, device="cpu")
    rows = cw.results_html([over, fine], "en").split("<tbody>")[1].split("</tr>")
    assert rows[0].startswith("<tr style='color:#999'>") and ">~ V sweep<" in rows[0] and ">V sweep<" in rows[1]
    assert [line[0] for line in bench.format_table([over, fine]).splitlines()[2:]] == ["~", "V"]
    assert "longer than the fast path" in machine.verdict([over, fine], None, "en")
    assert "比快速路径还慢" in machine.verdict([over, fine], None, "zh")


def test_benchmark_html_table_and_the_sentence_for_a_loss():
    results = [result("seed 004", {"reference": 9.0, "full_sort": 8.0, "blog": 0.5, "fast": 1.0, "floor": 0.1}),
               result("top-p only", {"reference": 3.0, "full_sort": 1.9, "blog": 2.5, "fast": 2.0, "floor": 0.1})]
    table = cw.results_html(results, "en")
    assert "<table" in table and table.count("<tr>") == 3 and "<b>1.00</b>" in table and "8×4096" in table
    assert table.count("background") == 2                     # blog in case 1, full sort in case 2
    assert "9.00 <span style='color:#666'>×9</span>" in table and "0.50 <span style='color:#666'>×0.5</span>" in table
    cells = re.findall(r"<td style='([^']*)'>", table)
    assert len(cells) == 2 * 7 and all("white-space:nowrap" in c for c in cells)   # one line per cell
    assert "Every case's logits are flat." in table             # one shape: said once, not a column
    assert "overflow-x:auto" in table                          # too narrow a page scrolls the table instead
    assert "median ms" in table
    assert re.search(r"<td style='[^']*'>0\.10</td></tr>", table)    # the floor: its ms, no ratio to the fast path
    assert [(r["name"], m) for r, m in cw.losing_cases(results)] == [("seed 004", "blog"), ("top-p only", "full_sort")]
    text = cw.explain_losses(results, "en")
    assert "The blog's code (buggy) was faster than the fast path in seed 004" in text
    assert "The full sort was faster than the fast path in top-p only" in text
    assert "every case" in cw.explain_losses(results[:0], "en")
