"""The kernel notebook's panel: the threshold search, pass by pass, on one row (§2 top-k, §4 top-p).

The search keeps an interval [lo, hi) of float keys (course/kernel_batch.py: a float32's bits as an int that sorts as
the floats do) with "enough at or above value(lo)" and "not enough at or above value(hi)"; each pass halves it. Top-k
counts columns (enough: at least k), top-p weighs their units (enough: at least quota = ceil(top_p * the 100 %)).
This module re-enacts the bisection on the host to draw it (search_plan: pure, for the tests); the kernel's own
search is the learner's kth_largest / top_p_cut. build_search_panel() -> (widgets, figure); fig._p08_state holds
what the picture shows.
"""
import math

import ipywidgets as W
import torch

from course import kernel_oracle
from course.kernel_batch import KEY_MAX, KEY_MIN
from course.kernel_batch import host_key_value as key_value
from course.lang import pick
from course.notebook.layout import panel_box, panel_image, slider_sizes
from course.notebook.plotting import CROSS_COLOR, FONT_PT, KEPT_COLOR, REMOVED_COLOR, fig_text, new_figure, render_png

PASSES = 32


def demo_row(vocab=40) -> torch.Tensor:
    """A short Zipf-like row with a run of equal values (the panel's row): [V]."""
    g = torch.Generator().manual_seed(3)
    row = -1.2 * torch.log(torch.arange(1, vocab + 1, dtype=torch.float32))
    row[10:14] = row[10]                                                     # four equal values
    return row[torch.randperm(vocab, generator=g)]


def search_plan(row, mode="top_k", k=5, top_p=0.9, passes=PASSES) -> dict:
    """The bisection on row [V] (temperature 1): per pass the interval's two values and the amount at its middle.

    mode 'top_k': enough = at least k columns at or above; mode 'top_p': enough = units at or above >= quota.
    Keys: passes [(lo value, hi value, amount at mid, enough)], answer (value(lo) after the passes), exact (the
    true threshold), kept (columns the answer keeps: z >= answer), goal (k or quota), units, z."""
    z = kernel_oracle.z_of(row, 1.0)
    values = z.tolist()
    if mode == "top_k":
        amount, goal = (lambda v: sum(1 for x in values if x >= v)), k
    else:
        scale = kernel_oracle.scale_of(len(values))
        w = kernel_oracle.numpy_units(z, max(values), scale)
        amount = lambda v: sum(wc for x, wc in zip(values, w) if x >= v)          # noqa: E731
        goal = kernel_oracle.quota(top_p, sum(w))
    lo, hi, trace = KEY_MIN.value, KEY_MAX.value + 1, []
    for _ in range(passes):
        mid = lo + (hi - lo) // 2
        got = amount(key_value(mid))
        enough = got >= goal
        trace.append((key_value(lo), key_value(hi) if hi <= KEY_MAX.value else math.inf, got, enough))
        lo, hi = (mid, hi) if enough else (lo, mid)
    answer = key_value(lo)
    exact = (sorted(values, reverse=True)[k - 1] if mode == "top_k" else
             max(v for v in values if amount(v) >= goal))
    return {"mode": mode, "passes": trace, "answer": answer, "exact": exact, "goal": goal, "z": values,
            "kept": [c for c, v in enumerate(values) if v >= answer], "in_row": answer in values,
            "keys_left": hi - lo}


def draw_search(fig, plan, lang) -> None:
    """Left: the interval per pass (clipped to the row's range); right: the row's values, kept ones coloured."""
    fig.clear()
    ax_pass, ax_row = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    z = plan["z"]
    top, bottom = max(z) + 0.5, min(v for v in z if v > -math.inf) - 0.5
    clip = lambda v: min(max(v, bottom), top)                                 # noqa: E731
    los = [clip(lo) for lo, *_ in plan["passes"]]
    his = [clip(hi) for _, hi, *_ in plan["passes"]]
    n = range(1, len(plan["passes"]) + 1)
    ax_pass.fill_between(n, los, his, step="post", color=KEPT_COLOR, alpha=0.3,
                         label=fig_text(lang, "区间 [value(lo), value(hi))", "interval [value(lo), value(hi))"))
    ax_pass.axhline(plan["exact"], color=CROSS_COLOR, ls="--", lw=1,
                    label=fig_text(lang, "要找的值", "the value sought"))
    ax_pass.set_ylim(bottom, top)
    ax_pass.set_xlabel(fig_text(lang, "遍历次数", "pass"), fontsize=FONT_PT)
    ax_pass.set_ylabel("z", fontsize=FONT_PT)
    ax_pass.legend(fontsize=FONT_PT, loc="upper right")
    ax_pass.tick_params(labelsize=FONT_PT)
    colors = [KEPT_COLOR if c in plan["kept"] else REMOVED_COLOR for c in range(len(z))]
    ax_row.scatter(range(len(z)), z, c=colors, s=14)
    ax_row.axhline(plan["answer"], color=CROSS_COLOR, lw=1)
    ax_row.set_xlabel(fig_text(lang, "列", "column"), fontsize=FONT_PT)
    ax_row.set_title(fig_text(lang, f"保留 {len(plan['kept'])} 列（z >= 阈值）", f"{len(plan['kept'])} kept (z >= threshold)"),
                     fontsize=FONT_PT)
    ax_row.tick_params(labelsize=FONT_PT)
    fig._p08_state = plan


def verdict(plan, lang) -> str:
    what = pick(lang, "第 k 大的值", "the k-th value") if plan["mode"] == "top_k" else pick(lang, "top-p 的截断值", "top-p's cut")
    if plan["answer"] == plan["exact"]:
        return pick(lang, f"{len(plan['passes'])} 次遍历之后停在 {plan['answer']:.7g}：正是{what}，这一行的一个值",
                    f"after {len(plan['passes'])} passes: {plan['answer']:.7g}, {what}, a value of the row")
    return pick(lang, f"{len(plan['passes'])} 次遍历之后停在 {plan['answer']:.7g}，{what}是 {plan['exact']:.7g}："
                      f"区间里还剩 {plan['keys_left']} 个 key" + ("，而且这个值不在这一行里" if not plan["in_row"] else ""),
                f"after {len(plan['passes'])} passes: {plan['answer']:.7g}, while {what} is {plan['exact']:.7g}: "
                f"{plan['keys_left']} keys are left in the interval" + (", and that value is not in the row"
                                                                        if not plan["in_row"] else ""))


def build_search_panel(lang="zh", row=None):
    """(widgets, figure): the mode (top-k / top-p), k, top_p and the number of passes, over search_plan."""
    row = demo_row() if row is None else row
    w = {"mode": W.ToggleButtons(options=[("top-k", "top_k"), ("top-p", "top_p")], value="top_k"),
         "k": W.IntSlider(value=5, min=1, max=len(row), description="k", **slider_sizes()),
         "top_p": W.FloatSlider(value=0.9, min=0.05, max=0.99, step=0.01, description="top_p", **slider_sizes()),
         "passes": W.IntSlider(value=PASSES, min=1, max=PASSES, description=pick(lang, "遍历次数", "passes"),
                               **slider_sizes()),
         "note": W.HTML(), "image": panel_image()}
    fig = new_figure(300)

    def redraw(_=None):
        plan = search_plan(row, w["mode"].value, w["k"].value, w["top_p"].value, w["passes"].value)
        draw_search(fig, plan, lang)
        w["image"].value = render_png(fig)
        w["note"].value = f"<b>{verdict(plan, lang)}</b>"

    for name in ("mode", "k", "top_p", "passes"):
        w[name].observe(redraw, names="value")
    w["panel"] = panel_box([w["mode"], w["k"], w["top_p"], w["passes"], w["note"], w["image"]], lang)
    redraw()
    return w, fig

