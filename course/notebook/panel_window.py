"""The fast-path notebook's panel: one row's route, its one window, the kept prefix inside it, and whether the
window is certain (judged by the row alone) or the row takes the exact route.

The numbers come from the fast path's own step functions (course.notebook.impl_choice.FastImpl: the learner's
mine/p08_sampler_fast.py once a step runs, else the reference), the way the given course/fast_batch.py calls
them: route -> window_topk(x, W) with W = top_k + 1 (a top-k row) or WINDOW (a top-p-only row) -> canonical_window on
window / temperature -> filter_window -> certain? An uncertain row, and a row with top_k > WINDOW_K, take the
exact route (course/selection.py, given code). Only the picture's ranking is a plain sort.
build_window_panel() -> (widgets, figure); fig._p08_state holds the numbers the picture shows.
"""
import math

import ipywidgets as W
import torch

from course.lang import pick
from course.notebook.impl_choice import choose_fast_impl
from course.notebook.layout import panel_box, panel_image, row_sizes, slider_sizes
from course.notebook.plotting import (BEFORE_COLOR, CROSS_COLOR, FONT_PT, KEPT_COLOR, REMOVED_COLOR, fig_text,
                                      new_figure, render_png)
from course.sampling_params import SamplingParams

VOCAB = 4096
INF = float("inf")
STEPS = ("route", "window_topk", "canonical_window", "row_total", "filter_window")


def window_rows(vocab=VOCAB) -> dict:
    """Rows for the picker [V] each: Zipf-shaped peaked (alpha 1.5), heavy-tailed (alpha 1.25), nearly flat, and
    the peaked row rounded to bf16 (equal values from rank 60 on: a tie at the k-th value)."""
    g = torch.Generator().manual_seed(0)
    ranks = torch.arange(1, vocab + 1, dtype=torch.float32)                           # [V]
    perm = torch.randperm(vocab, generator=g)                                         # [V] ids in random order
    rows = {}
    for name, alpha in (("peaked", 1.5), ("heavy", 1.25)):
        row = torch.empty(vocab)                                                      # [V]
        row[perm] = -alpha * torch.log(ranks)
        rows[name] = row
    rows["flat"] = 0.05 * torch.randn(vocab, generator=g)                             # [V]
    rows["bf16"] = rows["peaked"].bfloat16().float()                                  # [V] ties
    return rows


def _route_name(routes) -> str:
    return next(name for name in ("greedy", "top_k", "top_p", "plain", "exact") if getattr(routes, name))


def window_plan(fast, row, temperature, top_k, top_p) -> dict:
    """One row through the fast path's steps 2-4: its route, window width W, kept count, certainty and kept ids.

    fast: a FastImpl (course.notebook.impl_choice). route 'top_k' / 'top_p': one window of W columns; certain ->
    the window's kept set; not certain -> the exact route's. route 'exact' (top_k > WINDOW_K): no window.
    route 'plain': no filter, the whole row. Keys: route, width, certain, n_kept, kept_ids, reason (the two values
    certainty compares, or None), sorted_probs / after_k (for the picture), params.
    """
    x = torch.as_tensor(row, dtype=torch.float32)[None]                              # [1, V]
    vocab = x.shape[1]
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p)
    route = _route_name(fast.route([params], vocab))
    temp = torch.tensor([[temperature]])                                              # [1, 1]
    k = torch.tensor([[top_k if 0 < top_k < vocab else 0]])                           # [1, 1] 0 = off
    p = torch.tensor([[top_p if top_p < 1 else INF]])                                 # [1, 1] inf = off
    width, certain, reason, window_kept = None, None, None, None
    if route in ("top_k", "top_p"):
        width = min(vocab, top_k + 1 if route == "top_k" else fast.WINDOW)
        values, ids = fast.window_topk(x, width)                                      # [1, W] step 3
        z, ids = fast.canonical_window(values / temp, ids)                            # [1, W]
        row_mass = fast.row_total(torch.exp(x / temp - z[:, :1])) if route == "top_p" else None  # [1, 1]
        e, _, _, sure = fast.filter_window(z, k, p, row_mass, route == "top_p" and width == vocab)  # step 4
        certain = bool(sure[0])
        n_window = int((e > 0).sum())
        window_kept = sorted(int(i) for i in ids[e > 0])
        if width < vocab:                                                             # the two values it compares
            left = top_k - 1 if route == "top_k" else n_window - 1
            right = top_k if route == "top_k" else width - 1
            reason = (left, float(z[0, left]), right, float(z[0, right]))
    if route == "plain":
        kept_ids = list(range(vocab))
    elif certain:
        kept_ids = window_kept
    else:                                                                             # the exact route, given code
        probs = fast.exact_rows(x, temp, k, p.double(), None, has_top_k=bool(k.item()))  # [1, V]
        kept_ids = torch.nonzero(probs[0] > 0).flatten().tolist()
    z_all, order = torch.sort(x[0] / temperature, descending=True, stable=True)       # [V] the picture's ranking
    probs = torch.softmax(z_all, -1)                                                  # [V]
    n_top_k = int((z_all >= z_all[top_k - 1]).sum()) if 0 < top_k < vocab else vocab
    after_k = probs[:n_top_k] / probs[:n_top_k].sum()                                 # [n_top_k] what top-p reads
    return {"route": route, "width": width, "certain": certain, "reason": reason, "n_kept": len(kept_ids),
            "kept_ids": kept_ids, "window_kept": window_kept, "sorted_probs": probs, "order": order,
            "after_k": after_k, "params": dict(temperature=temperature, top_k=top_k, top_p=top_p),
            "window": fast.WINDOW, "window_k": fast.WINDOW_K}


def tokens_en(n) -> str:
    return f"{n} token" if n == 1 else f"{n} tokens"


def verdict(plan, lang) -> str:
    """One line: the row's route and window, and whether the window decides or the exact route does."""
    n, width, reason = plan["n_kept"], plan["width"], plan["reason"]
    top_k = plan["params"]["top_k"]
    if plan["route"] == "plain":
        return pick(lang, f"不过滤（plain 路线）：按词表顺序在全部 {n} 个 token 上抽样，不需要窗口",
                    f"no filter (the plain route): the row samples over all {tokens_en(n)} in vocab order, no window")
    if plan["route"] == "exact":
        return pick(lang, f"top_k = {top_k} > WINDOW_K = {plan['window_k']}：一开始就走精确路线（course/selection.py），"
                          f"不取窗口；保留 {n} 个 token",
                    f"top_k = {top_k} > WINDOW_K = {plan['window_k']}: the exact route from the start "
                    f"(course/selection.py), no window; keeps {tokens_en(n)}")
    if plan["route"] == "top_k":
        head = pick(lang, f"top_k 路线：一个窗口 W = top_k + 1 = {width} 列", f"top_k route: one window of W = top_k + 1 = {width} columns")
        rule = pick(lang, "第 k 大的值（窗口第 {0} 列）{1:.4g} {2} 第 {3} 列的 {4:.4g}",
                    "the k-th value (the window's column {0}) {1:.4g} {2} column {3}'s {4:.4g}")
    else:
        head = pick(lang, f"top_p 路线：一个窗口 W = WINDOW = {width} 列", f"top_p route: one window of W = WINDOW = {width} columns")
        rule = pick(lang, "最后保留的值（第 {0} 列）{1:.4g} {2} 窗口最后一列（第 {3} 列）的 {4:.4g}",
                    "the last kept value (column {0}) {1:.4g} {2} the window's last (column {3}) {4:.4g}")
    if reason is None:
        why = pick(lang, "窗口就是整行", "the window is the whole row")
    elif reason[0] == reason[2]:                                                      # top-p: kept up to the edge
        why = pick(lang, f"保留的前缀一直到窗口最后一列（第 {reason[0] + 1} 列）", f"the kept prefix runs up to the "
                   f"window's last column ({reason[0] + 1})")
    else:                                       # columns counted from 1, as the picture's ranks are
        why = rule.format(reason[0] + 1, reason[1], ">" if plan["certain"] else "=" if reason[1] == reason[3] else "≤",
                          reason[2] + 1, reason[3])
    if plan["certain"]:
        return pick(lang, f"{head}；{why}：certain，窗口说了算，保留 {n} 个 token",
                    f"{head}; {why}: certain, the window decides; keeps {tokens_en(n)}")
    return pick(lang, f"{head}；{why}：不 certain，保留集合可能延伸到窗口外 → 这一行走精确路线，保留 {n} 个 token",
                f"{head}; {why}: not certain, the kept set may reach past the window -> the exact route; "
                f"keeps {tokens_en(n)}")


def cumulative_title(plan) -> tuple:
    """The lower chart's title (zh, en), true to the row's settings: after top-k only when top-k is on."""
    top_k = plan["params"]["top_k"]
    if 0 < top_k < len(plan["sorted_probs"]):
        return f"top-k（k = {top_k}）之后的累计概率：top-p 读的就是它", f"cumulative mass after top-k (k = {top_k}): what top-p reads"
    return "整行的累计概率（top-k 关）：top-p 读的就是它", "cumulative mass of the whole row (top-k off): what top-p reads"


def decades(ax, values) -> None:
    """A log axis from the decade below the smallest positive value to the decade above the largest, labelled at
    the decades only: a nearly flat row gets 10^-4 and 10^-3, not 2.75x10^-4 labels that squeeze the plot."""
    from matplotlib.ticker import LogLocator, NullFormatter
    positive = [v for v in values if v > 0]
    if positive:
        low, high = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
        ax.set_ylim(10.0 ** low, 10.0 ** max(high, low + 1))
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_minor_formatter(NullFormatter())


def draw_window(fig, plan, lang) -> None:
    """Top: sorted probabilities by rank (log axes): kept / in the window but removed / outside the window (when
    the exact route decides: kept / removed), each rank a step one rank wide; a line at W. Bottom: the cumulative mass top-p reads,
    the top_p line, the end of the kept prefix."""
    ax, ax_cum = fig.axes
    ax.clear()
    ax_cum.clear()
    probs, n, width = plan["sorted_probs"].tolist(), plan["n_kept"], plan["width"]
    edge = width if width is not None else n
    shown = min(len(probs), max(4 * max(n, edge), 256))
    if width is None or not plan["certain"]:                                          # the exact route decides
        spans = [(0, n, KEPT_COLOR, fig_text(lang, "入围", "kept")),
                 (n, shown, REMOVED_COLOR, fig_text(lang, "被删", "removed"))]
    else:
        spans = [(0, n, KEPT_COLOR, fig_text(lang, "入围（保留的前缀）", "kept prefix")),
                 (n, min(shown, max(n, edge)), BEFORE_COLOR, fig_text(lang, "窗口内、被删", "in the window, removed")),
                 (max(n, edge), shown, REMOVED_COLOR, fig_text(lang, "窗口外", "outside the window"))]
    for start, stop, color, label in spans:
        if stop > start:                                                              # rank r spans r +- 0.5
            ax.stairs(probs[start:stop], [r + 0.5 for r in range(start, stop + 1)], fill=True, color=color,
                      alpha=0.85, label=label)
    lines = []
    if width is not None:
        lines.append(ax.axvline(width + 0.5, color="black", lw=1))
        ax.text(width + 0.5, 0.97, f" W = {width}", transform=ax.get_xaxis_transform(), fontsize=FONT_PT, va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    decades(ax, probs[:shown])
    ax.set_xlim(0.5, shown + 0.5)
    ax.set_xlabel(fig_text(lang, "名次（按概率降序，对数轴）", "rank by probability (log scale)"), fontsize=FONT_PT)
    ax.set_ylabel(fig_text(lang, "概率（对数轴）", "probability (log)"), fontsize=FONT_PT)
    titles = {"plain": ("不过滤：整行", "no filter: the whole row"),
              "exact": ("top_k > WINDOW_K：精确路线", "top_k > WINDOW_K: the exact route")}
    if plan["route"] in ("top_k", "top_p"):
        titles[plan["route"]] = ("certain：窗口说了算", "certain: the window decides") if plan["certain"] else \
            ("不 certain：精确路线", "not certain: the exact route")
    ax.set_title(fig_text(lang, *titles[plan["route"]]), fontsize=FONT_PT + 1, pad=26)
    ax.tick_params(labelsize=FONT_PT)
    ax.legend(fontsize=FONT_PT, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False,
              borderaxespad=0.2, handlelength=1.5, columnspacing=1.2)                 # above the bars, never on them
    cum = torch.cumsum(plan["after_k"], -1)[:shown].tolist()                          # what top-p reads
    ax_cum.plot(range(1, len(cum) + 1), cum, color=BEFORE_COLOR)
    top_p = plan["params"]["top_p"]
    line = ax_cum.axhline(top_p, color=CROSS_COLOR, ls="--", label=f"top_p = {top_p:.2f}")
    line.set_visible(top_p < 1)
    ax_cum.axvline(n, color=KEPT_COLOR, lw=2, label=fig_text(lang, f"入围 {n} 个", f"{n} kept"))
    if width is not None:
        ax_cum.axvline(width + 0.5, color="black", lw=1, label=f"W = {width}")
    ax_cum.set_xscale("log")
    ax_cum.set_xlim(0.5, shown + 0.5)
    ax_cum.set_ylim(0, 1.05)
    ax_cum.set_xlabel(fig_text(lang, "名次（对数轴）", "rank (log scale)"), fontsize=FONT_PT)
    ax_cum.set_ylabel(fig_text(lang, "累计概率", "cumulative"), fontsize=FONT_PT)
    ax_cum.set_title(fig_text(lang, *cumulative_title(plan)), fontsize=FONT_PT + 1, pad=26)
    ax_cum.tick_params(labelsize=FONT_PT)
    ax_cum.legend(handles=[h for h in ax_cum.get_lines() if h.get_visible() and not h.get_label().startswith("_")],
                  fontsize=FONT_PT, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False,
                  borderaxespad=0.2, handlelength=1.5, columnspacing=1.2)                 # above the curve, never on it
    fig._p08_state = plan
    fig._p08_artists = {"windows": lines, "top_p": line}


def build_window_panel(lang="zh", use_reference=False, mine_path=None):
    """(widgets, figure): a row picker and temperature / top_k / top_p sliders over window_plan; the note names
    the code that ran (mine/p08_sampler_fast.py's steps once they run, else the reference's)."""
    fast = choose_fast_impl(use_reference, lang, mine_path)
    rows = window_rows()
    w = {"row": W.Dropdown(options=[(pick(lang, "尖峰（Zipf，α = 1.5）", "peaked (Zipf, alpha 1.5)"), "peaked"),
                                    (pick(lang, "长尾（α = 1.25）", "heavy tail (alpha 1.25)"), "heavy"),
                                    (pick(lang, "平坦", "flat"), "flat"),
                                    (pick(lang, "尖峰，舍入到 bf16（有并列）", "peaked, rounded to bf16 (ties)"), "bf16")],
                           value="peaked", description=pick(lang, f"logits 行（V = {VOCAB}）", f"row (V = {VOCAB})"),
                           **row_sizes()),
         "temperature": W.FloatSlider(value=1.0, min=0.1, max=2.0, step=0.05, description="temperature", **slider_sizes()),
         "top_k": W.IntSlider(value=40, min=-1, max=400, description=pick(lang, "top_k (-1 关)", "top_k (-1 off)"),
                             **slider_sizes()),
         "top_p": W.FloatSlider(value=0.9, min=0.05, max=1.0, step=0.01, description="top_p", **slider_sizes()),
         "note": W.HTML(), "image": panel_image()}
    fig = new_figure(560)
    fig.subplots(2, 1)
    label = f"<i>{fast.label(*STEPS, width=None)}</i>"

    def redraw(_=None):
        try:
            plan = window_plan(fast, rows[w["row"].value], w["temperature"].value, w["top_k"].value, w["top_p"].value)
            draw_window(fig, plan, lang)
            w["image"].value = render_png(fig)
            w["note"].value = f"<b>{verdict(plan, lang)}</b><br>{label}"
        except Exception as error:  # the learner's own bug: say it, keep the last picture
            w["note"].value = f"<b style='color:#c00'>{type(error).__name__}: {error}</b><br>{label}"

    for name in ("row", "temperature", "top_k", "top_p"):
        w[name].observe(redraw, names="value")
    w["panel"] = panel_box([w["row"], w["temperature"], w["top_k"], w["top_p"], w["note"], w["image"]], lang)
    redraw()
    return w, fig
