"""The fast-path notebook's panel (window, kept prefix, widen / fall back), the power-of-two bucket
illustration, and the benchmark's HTML table: driven without a kernel, checked against the P08 reference."""
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


@pytest.mark.parametrize("row,temperature,top_k,top_p,widths,fallback", [
    ("peaked", 1.0, 40, 0.9, [41], False),           # seed 004's setting: one topk is enough
    ("peaked", 1.0, -1, 0.9, [64], False),           # top-p only, peaked: the first window holds it
    ("heavy", 1.0, -1, 0.9, [64, 512], False),       # a heavy tail: widen once
    ("flat", 1.0, -1, 0.9, [64], True),              # most of V: fall back to the full sort
    ("heavy", 0.7, 200, 0.95, [201], False),
    ("flat", 1.0, 1, 0.5, [2], False),
])
def test_window_plan_keeps_what_the_reference_keeps_and_says_how(row, temperature, top_k, top_p, widths, fallback):
    logits = cw.window_rows()[row]
    plan = cw.window_plan(logits, temperature, top_k, top_p)
    assert plan["kept_ids"] == reference_kept(logits, temperature, top_k, top_p)
    assert (plan["widths"], plan["fallback"]) == (widths, fallback)


def test_window_panel_redraws_on_each_slider_and_names_the_outcome():
    w, fig = cw.build_window_panel("en")
    assert "one topk is enough" in w["note"].value
    assert [line.get_xdata()[0] for line in fig._p08_artists["windows"]] == [41]
    first = w["image"].value
    w["row"].value, w["top_k"].value = "heavy", -1
    assert "widened to 512" in w["note"].value and w["image"].value != first
    assert [line.get_xdata()[0] for line in fig._p08_artists["windows"]] == [64, 512]
    w["row"].value = "flat"
    assert "full sort" in w["note"].value and fig._p08_state["fallback"]
    w["top_p"].value = 1.0
    assert "no filter" in w["note"].value and not fig._p08_artists["top_p"].get_visible()
    assert fig._p08_state["kept_ids"] == list(range(len(cw.window_rows()["flat"])))


@pytest.mark.parametrize("row", ["peaked", "heavy", "flat"])
@pytest.mark.parametrize("top_p", [0.3, 0.9, 0.99])
def test_bucket_selection_keeps_the_reference_top_p_set(row, top_p):
    logits = cw.window_rows()[row]
    sel = cw.bucket_select(logits, top_p)
    assert sel["kept"] == reference_kept(logits, 1.0, -1, top_p)
    assert int(sel["mass"].sum()) == sel["total"] and sel["count"].sum() == len(logits)


def test_bucket_sums_are_exact_whatever_the_order():
    logits = cw.window_rows()["heavy"]
    perm = torch.randperm(len(logits), generator=torch.Generator().manual_seed(1))
    a, b = cw.bucket_select(logits, 0.9), cw.bucket_select(logits[perm], 0.9)
    assert torch.equal(a["mass"], b["mass"]) and a["crossing"] == b["crossing"]
    assert sorted(perm[b["kept"]].tolist()) == a["kept"]


def test_bucket_figure_highlights_the_crossing_bucket():
    sel = cw.bucket_select(cw.window_rows()["heavy"], 0.9)
    fig = cw.draw_buckets(sel, "en")
    cum = fig._p08_state["shown_cum"]
    c = sel["crossing"]
    assert cum[c] >= 0.9 > (cum[c - 1] if c else 0)
    colors = [bar.get_facecolor() for bar in fig._p08_artists["bars"]]
    assert colors.count(colors[c]) == 1                       # only the crossing bucket has its colour


def result(name, ms):
    fast = ms["fast"]
    return {"name": name, "B": 8, "V": 4096, "logits": "flat", "ms": ms, "ratio": {m: t / fast for m, t in ms.items()}}


def test_benchmark_html_table_and_the_sentence_for_a_loss():
    results = [result("seed 004", {"reference": 9.0, "full_sort": 8.0, "blog": 0.5, "fast": 1.0, "floor": 0.1}),
               result("top-p only", {"reference": 3.0, "full_sort": 1.9, "blog": 2.5, "fast": 2.0, "floor": 0.1})]
    table = cw.results_html(results, "en")
    assert "<table" in table and table.count("<tr>") == 3 and "<b>1.00</b>" in table and "8×4096" in table
    assert table.count("background") == 2                     # blog in case 1, full sort in case 2
    assert "9.00 <span style='color:#666'>×9</span>" in table and "0.50 <span style='color:#666'>×0.5</span>" in table
    cells = re.findall(r"<td style='([^']*)'>", table)
    assert len(cells) == 2 * 8 and all("white-space:nowrap" in c for c in cells)   # one line per cell
    assert "overflow-x:auto" in table                          # too narrow a page scrolls the table instead
    assert "median ms" in table
    assert [(r["name"], m) for r, m in cw.losing_cases(results)] == [("seed 004", "blog"), ("top-p only", "full_sort")]
    text = cw.explain_losses(results, "en")
    assert "blog (buggy) was faster in seed 004" in text and "full sort was faster in top-p only" in text
    assert "every case" in cw.explain_losses(results[:0], "en")
