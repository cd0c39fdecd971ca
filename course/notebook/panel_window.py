"""The fast-path notebook's panel: one row's sorted top-k window, the kept prefix inside it, and when the
window must widen or fall back to a full sort.

An ILLUSTRATION of the rule in solutions/p08_sampler_fast.py, computed here with plain sorts so that the
notebook does not depend on that file's internals: a top-k row looks at W = top_k + 1 columns; a top-p-only
row starts at WINDOW columns and widens (x GROW, or to what it provably needs) until the kept set ends
strictly inside the window, or sorts the whole row once a window would cover more than V / SORT_FRACTION.
build_window_panel() -> (widgets, figure); fig._p08_state holds the numbers the picture shows.
"""
import ipywidgets as W
import torch
from matplotlib.figure import Figure

from course.lang import pick
from course.notebook.layout import panel_box, slider_sizes
from course.notebook.plotting import BEFORE_COLOR, CROSS_COLOR, KEPT_COLOR, REMOVED_COLOR, fig_text, render_png

WINDOW, GROW, SORT_FRACTION = 64, 8, 8   # the solution's defaults at the time of writing
VOCAB = 4096
WIDE = {"description_width": "initial"}


def window_rows(vocab=VOCAB) -> dict:
    """Rows for the picker [V] each: Zipf-shaped peaked (alpha 1.5), heavy-tailed (alpha 1.25), nearly flat."""
    g = torch.Generator().manual_seed(0)
    ranks = torch.arange(1, vocab + 1, dtype=torch.float32)                           # [V]
    perm = torch.randperm(vocab, generator=g)                                         # [V] ids in random order
    rows = {}
    for name, alpha in (("peaked", 1.5), ("heavy", 1.25)):
        row = torch.empty(vocab)                                                      # [V]
        row[perm] = -alpha * torch.log(ranks)
        rows[name] = row
    rows["flat"] = 0.05 * torch.randn(vocab, generator=g)                             # [V]
    return rows


def window_plan(row, temperature, top_k, top_p) -> dict:
    """The kept set in sorted order and the windows the fast path would try for this row."""
    vocab = len(row)
    z, order = torch.sort(torch.as_tensor(row, dtype=torch.float32) / temperature, descending=True, stable=True)  # [V]
    probs = torch.softmax(z, -1)                                                      # [V] sorted, whole row
    top_k_on, top_p_on = 0 < top_k < vocab, 0 < top_p < 1
    n_top_k = int((z >= z[top_k - 1]).sum()) if top_k_on else vocab                  # ties with the k-th stay
    after_k = probs[:n_top_k] / probs[:n_top_k].sum()                                 # [n_top_k] what top-p reads
    mass_before = torch.cumsum(after_k, -1) - after_k                                 # [n_top_k]
    n_kept = max(int((mass_before < top_p).sum()), 1) if top_p_on else n_top_k
    n_kept = min(n_kept, n_top_k)
    cap = max(vocab // SORT_FRACTION, 1)
    width, widths, fallback = min(vocab, top_k + 1 if top_k_on else WINDOW), [], False
    while top_k_on or top_p_on:                                                       # no filter: no window at all
        widths.append(width)
        if width >= vocab:
            break                                                                     # the window is the whole row
        last = z[width - 1]
        holds = n_kept <= width and z[n_kept - 1] > last and (not top_k_on or z[top_k - 1] > last)
        if holds:
            break
        if top_k_on or width >= cap:                                                  # a tie past the window, or
            fallback = True                                                           # no window would pay off
            break
        width = min(cap, max(width * GROW, n_kept + 1))
        if width >= cap and n_kept + 1 > cap:
            fallback = True
            break
    return {"sorted_probs": probs, "order": order, "after_k": after_k, "n_top_k": n_top_k, "n_kept": n_kept,
            "widths": widths, "fallback": fallback, "first_holds": len(widths) == 1 and not fallback,
            "kept_ids": sorted(int(i) for i in order[:n_kept]), "params": dict(temperature=temperature, top_k=top_k,
                                                                            top_p=top_p)}


def verdict(plan, lang) -> str:
    """One line: does the first window hold the kept set, or how does the row widen / fall back?"""
    widths, n = plan["widths"], plan["n_kept"]
    if not widths:
        return pick(lang, f"不过滤：按词表顺序在全部 {n} 个 token 上抽样，不需要窗口",
                    f"no filter: the row samples over all {n} tokens in vocab order, no window needed")
    if plan["fallback"]:
        return pick(lang, f"保留 {n} 个 token；窗口 {widths} 装不下（或并列延伸到窗口外）→ 退回整行排序",
                    f"keeps {n} tokens; windows {widths} cannot hold them (or a tie runs past the edge) -> full sort")
    if len(widths) == 1:
        return pick(lang, f"保留 {n} 个 token，都在第一个窗口 W = {widths[0]} 之内：一次 topk 就够",
                    f"keeps {n} tokens, all inside the first window W = {widths[0]}: one topk is enough")
    return pick(lang, f"保留 {n} 个 token：W = {widths[0]} 不够，加宽为 {' → '.join(map(str, widths[1:]))}",
                f"keeps {n} tokens: W = {widths[0]} is too narrow, widened to {' -> '.join(map(str, widths[1:]))}")


def draw_window(fig, plan, lang) -> None:
    """Left: sorted probabilities by rank (log x): kept / in the window / outside; dashed lines = windows tried.
    Right: the cumulative mass top-p reads, the top_p line, the end of the kept prefix."""
    ax, ax_cum = fig.axes
    ax.clear()
    ax_cum.clear()
    probs, n = plan["sorted_probs"].tolist(), plan["n_kept"]
    last_w = plan["widths"][-1] if plan["widths"] else len(probs)
    shown = min(len(probs), max(4 * max(n, last_w), 256))
    ranks = list(range(1, shown + 1))
    spans = [(0, n, KEPT_COLOR, fig_text(lang, "入围（保留的前缀）", "kept prefix")),
             (n, min(shown, max(n, last_w)), BEFORE_COLOR, fig_text(lang, "窗口内、未入围", "in the window, removed")),
             (max(n, last_w), shown, REMOVED_COLOR, fig_text(lang, "窗口外", "outside the window"))]
    for start, stop, color, label in spans:
        if stop > start:
            ax.fill_between(ranks[start:stop], probs[start:stop], step="mid", color=color, alpha=0.8, label=label)
    lines = []
    for i, width in enumerate(plan["widths"]):
        lines.append(ax.axvline(width, color="black", ls="--" if i < len(plan["widths"]) - 1 else "-", lw=1))
        ax.text(width, 0.98, f" W={width}", transform=ax.get_xaxis_transform(), fontsize=10, va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(fig_text(lang, "名次（按概率降序，对数轴）", "rank by probability (log scale)"))
    ax.set_ylabel(fig_text(lang, "概率", "probability"))
    ax.set_title(fig_text(lang, "fallback：整行排序" if plan["fallback"] else "窗口装下了入围集合",
                          "fallback: full sort" if plan["fallback"] else "the window holds the kept set"), fontsize=11)
    ax.legend(fontsize=9, loc="lower left")
    after_k = plan["after_k"]
    cum = torch.cumsum(after_k, -1)[:shown].tolist()                                  # what top-p reads
    ax_cum.plot(range(1, len(cum) + 1), cum, color=BEFORE_COLOR)
    top_p = plan["params"]["top_p"]
    line = ax_cum.axhline(top_p, color=CROSS_COLOR, ls="--", label=f"top_p = {top_p:.2f}")
    line.set_visible(top_p < 1)
    ax_cum.axvline(n, color=KEPT_COLOR, lw=2, label=fig_text(lang, f"入围 {n} 个", f"{n} kept"))
    ax_cum.set_xscale("log")
    ax_cum.set_ylim(0, 1.05)
    ax_cum.set_xlabel(fig_text(lang, "名次（对数轴）", "rank (log scale)"))
    ax_cum.set_title(fig_text(lang, "top-k 之后的累计概率", "cumulative mass after top-k"), fontsize=11)
    ax_cum.legend(fontsize=9, loc="lower right")
    fig._p08_state = plan
    fig._p08_artists = {"windows": lines, "top_p": line}


def build_window_panel(lang="zh"):
    """(widgets, figure): a row picker and temperature / top_k / top_p sliders over the window plan."""
    rows = window_rows()
    w = {"row": W.Dropdown(options=[(pick(lang, "尖峰（Zipf，α = 1.5）", "peaked (Zipf, alpha 1.5)"), "peaked"),
                                    (pick(lang, "长尾（α = 1.25）", "heavy tail (alpha 1.25)"), "heavy"),
                                    (pick(lang, "平坦", "flat"), "flat")], value="peaked",
                           description=pick(lang, f"logits 行（V = {VOCAB}）", f"row (V = {VOCAB})"), style=WIDE),
         "temperature": W.FloatSlider(value=1.0, min=0.1, max=2.0, step=0.05, description="temperature", **slider_sizes()),
         "top_k": W.IntSlider(value=40, min=-1, max=400, description="top_k (-1 off)", **slider_sizes()),
         "top_p": W.FloatSlider(value=0.9, min=0.05, max=1.0, step=0.01, description="top_p", **slider_sizes()),
         "note": W.HTML(), "image": W.Image(format="png")}
    fig = Figure(figsize=(11, 3.8), layout="constrained")
    fig.subplots(1, 2)

    def redraw(_=None):
        plan = window_plan(rows[w["row"].value], w["temperature"].value, w["top_k"].value, w["top_p"].value)
        draw_window(fig, plan, lang)
        w["image"].value = render_png(fig)
        w["note"].value = f"<b>{verdict(plan, lang)}</b>"

    for name in ("row", "temperature", "top_k", "top_p"):
        w[name].observe(redraw, names="value")
    w["panel"] = panel_box([W.HBox([w["row"], w["temperature"]]), W.HBox([w["top_k"], w["top_p"]]), w["note"],
                            w["image"]], lang)
    redraw()
    return w, fig
