"""Panel 1 of the P08 notebook: sliders and a row picker redrawing the distribution before/after filtering.

build_ui() -> (widgets, figure). `fig._p08_state` holds what was computed, `fig._p08_artists` what was drawn,
so tests set slider values without a kernel and assert on the plotted data. The mine/reference toggle always
shows the code that runs: while mine/p08_sampler.py is a stub, it moves to the reference and the note says why.
"""
import html

import ipywidgets as W
import torch
from matplotlib.patches import Patch

from course.notebook.impl_choice import impl_label, resolve_impl
from course.lang import pick
from course.notebook.layout import panel_box, panel_image, row_sizes, slider_sizes
from course.notebook.plotting import (BEFORE_COLOR, CROSS_COLOR, FONT_PT, KEPT_COLOR, REMOVED_COLOR, fig_text,
                                      new_figure, render_png)
from course.sampling_params import GREEDY_TEMPERATURE

WORKED_PROBS = [0.5, 0.25, 0.15, 0.1]   # the seed page's worked example


def preset_rows() -> dict:
    """The row picker's logits: the worked example, a peaked Zipf-like row (shuffled ids), a flat row."""
    zipf = torch.empty(16)                                                            # [16]
    ranks = torch.arange(1, 17, dtype=torch.float32)                                  # [16]
    zipf[torch.randperm(16, generator=torch.Generator().manual_seed(0))] = -1.3 * torch.log(ranks)
    return {"worked": torch.log(torch.tensor(WORKED_PROBS)),                          # [4]
            "zipf": zipf,                                                             # [16] rank r ~ r^-1.3
            "flat": torch.linspace(0.4, 0.0, 10)}                                     # [10] nearly uniform


def filter_steps(module, row, temperature, top_k, top_p, penalty, prev_tokens) -> dict:
    """Every intermediate of steps 1-5 for one row, computed with module's apply_* functions."""
    row = torch.as_tensor(row, dtype=torch.float32)                                   # [V] fp32
    penalized = module.apply_repetition_penalty(row, list(prev_tokens), penalty)       # [V]
    greedy = temperature < GREEDY_TEMPERATURE                                         # step 2: before dividing
    tempered = penalized if greedy else penalized / temperature                        # [V]
    after_top_k = tempered if greedy else module.apply_top_k(tempered, top_k)          # [V] -inf outside
    after_top_p = after_top_k if greedy else module.apply_top_p(after_top_k, top_p)    # [V] -inf outside
    probs_before = torch.softmax(tempered, -1)                                        # [V]
    if greedy:
        probs_after = torch.nn.functional.one_hot(penalized.argmax(), len(row)).float()  # [V] one-hot
    else:
        probs_after = torch.softmax(after_top_p, -1)                                  # [V] 0 outside kept
    sorted_probs, order = torch.sort(torch.softmax(after_top_k, -1), descending=True, stable=True)  # [V], [V]
    cumulative = torch.cumsum(sorted_probs, -1)                                       # [V] what top-p reads
    mass_before = cumulative - sorted_probs                                           # [V] strictly before
    crossing = None                                                                   # rank of the crossing token
    if not greedy and 0 < top_p < 1:
        finite = int((sorted_probs > 0).sum())
        crossing = min(max(int((mass_before < top_p).sum()) - 1, 0), finite - 1)
    return {"row": row, "penalized": penalized, "tempered": tempered, "after_top_k": after_top_k,
            "after_top_p": after_top_p, "probs_before": probs_before, "probs_after": probs_after,
            "kept": sorted(int(i) for i in torch.nonzero(probs_after > 0).flatten()), "order": order,
            "sorted_probs": sorted_probs, "cumulative": cumulative, "mass_before": mass_before,
            "crossing": crossing, "crossing_token": None if crossing is None else int(order[crossing]),
            "greedy": greedy, "params": dict(temperature=temperature, top_k=top_k, top_p=top_p,
                                             penalty=penalty, prev_tokens=list(prev_tokens))}


def draw_filter(fig, steps, lang) -> None:
    """Top: bars before/after (kept orange; removed hatched grey at their before-filter height), the legend above
    the bars. Bottom: sorted cumulative curve, the top_p line (hidden when greedy or off), the crossing token; its
    legend above the axes names only what is drawn (no crossing token when greedy or top_p is off)."""
    ax_bars, ax_cum = fig.axes
    ax_bars.clear()
    ax_cum.clear()
    vocab, kept, top_p = len(steps["row"]), set(steps["kept"]), steps["params"]["top_p"]
    before_probs = steps["probs_before"].tolist()
    removed_ids = [i for i in range(vocab) if i not in kept]
    before = ax_bars.bar([i - 0.2 for i in range(vocab)], before_probs, 0.4, color=BEFORE_COLOR, alpha=0.35)
    after = ax_bars.bar([i + 0.2 for i in range(vocab)], steps["probs_after"].tolist(), 0.4,   # removed: height 0
                        color=[KEPT_COLOR if i in kept else REMOVED_COLOR for i in range(vocab)])
    removed = ax_bars.bar([i + 0.2 for i in removed_ids], [before_probs[i] for i in removed_ids], 0.4,
                          facecolor="none", edgecolor=REMOVED_COLOR, hatch="///", linewidth=1)
    ax_bars.set_xticks(range(vocab))
    ax_bars.set_xlabel(fig_text(lang, "token id（词表顺序）", "token id (vocab order)"), fontsize=FONT_PT)
    ax_bars.set_ylabel(fig_text(lang, "概率", "probability"), fontsize=FONT_PT)
    ax_bars.set_ylim(0, max(max(before_probs), max(steps["probs_after"].tolist())) * 1.08)
    ax_bars.tick_params(labelsize=FONT_PT)
    ax_bars.set_title(fig_text(lang, f"入围 {sorted(kept)}", f"kept {sorted(kept)}") +
                      (" · greedy = argmax" if steps["greedy"] else ""), fontsize=FONT_PT + 1, pad=26)
    ax_bars.legend(handles=[Patch(color=BEFORE_COLOR, alpha=0.35, label=fig_text(lang, "过滤前", "before filtering")),
                            Patch(color=KEPT_COLOR, label=fig_text(lang, "过滤后：入围", "after: kept")),
                            Patch(facecolor="none", edgecolor=REMOVED_COLOR, hatch="///",
                                  label=fig_text(lang, "被删（画过滤前的高度）", "removed (height before)"))],
                   fontsize=FONT_PT, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False,
                   borderaxespad=0.2, handlelength=1.5, columnspacing=1.2)
    cumulative = steps["cumulative"].tolist()
    (curve,) = ax_cum.plot(range(vocab), cumulative, "o-", color=BEFORE_COLOR,
                           label=fig_text(lang, "降序累计概率", "sorted cumulative"))
    line = ax_cum.axhline(top_p, color=CROSS_COLOR, ls="--", label=f"top_p = {top_p:.2f}")
    line.set_visible(not steps["greedy"] and 0 < top_p < 1)
    rank = steps["crossing"]
    (marker,) = ax_cum.plot([] if rank is None else [rank], [] if rank is None else [cumulative[rank]], "s", ms=13,
                            mfc="none", mec=CROSS_COLOR, mew=2, label=fig_text(lang, "越过阈值的 token（保留）",
                                                                              "crossing token (stays)"))
    ax_cum.axvspan(-0.5, len(kept) - 0.5, color=KEPT_COLOR, alpha=0.12)
    ax_cum.set_xticks(range(vocab), [str(int(t)) for t in steps["order"]])
    ax_cum.set_xlabel(fig_text(lang, "token id（按概率降序）", "token id (by descending probability)"), fontsize=FONT_PT)
    ax_cum.set_ylabel(fig_text(lang, "累计概率", "cumulative"), fontsize=FONT_PT)
    ax_cum.set_ylim(0, 1.05)
    ax_cum.set_xlim(-0.5, vocab - 0.5)
    ax_cum.tick_params(labelsize=FONT_PT)
    shown = [curve] + ([marker] if rank is not None else []) + ([line] if line.get_visible() else [])
    ax_cum.legend(handles=shown, fontsize=FONT_PT, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
                  frameon=False, borderaxespad=0.2, handlelength=1.5, columnspacing=1.2)  # what is drawn, off the data
    fig._p08_state = steps
    fig._p08_artists = {"before": before, "after": after, "removed": removed, "cumulative": curve, "top_p": line,
                        "crossing": marker}


class InputError(ValueError):
    """What a learner typed into a panel's text box cannot be used; str() is one line in the panel's language."""


# a text box's name, what each entry must be, and an example, in Chinese and English
FIELDS = {float: (("自定义 logits", "有限的数", "例如 2.0, -0.5, 1e-3"), ("your own logits", "finite number", "e.g. 2.0, -0.5, 1e-3")),
          int: (("历史 token", "整数 token id", "例如 0, 3"), ("prev tokens", "whole-number token id", "e.g. 0, 3"))}


def parse_numbers(text, kind, lang="zh") -> list:
    """'1, 2.5，3' -> [1.0, 2.5, 3.0] (kind=float: the custom row; kind=int: the previous tokens); ASCII or
    full-width commas. An entry that is not a finite float (or not an integer) is an InputError naming it, one line
    in lang."""
    field, noun, example = FIELDS[kind][0 if lang != "en" else 1]
    values = []
    for entry in (x.strip() for x in text.replace("，", ",").split(",")):
        if not entry:
            continue
        try:
            value = kind(entry)
        except ValueError:
            value = None
        if value is None or value - value != 0:                                      # inf and nan: not a logit
            raise InputError(pick(lang, f"{field}：“{entry}” 不是{noun}（{example}，用逗号分隔）",
                                  f"{field}: '{entry}' is not a {noun} ({example}, comma-separated)"))
        values.append(value)
    return values


def build_ui(lang="zh", use_reference=False, mine_path=None):
    """(widgets, figure): sliders + row picker redrawing the before/after bars and the cumulative curve.
    mine_path: the learner's file (default mine/p08_sampler.py)."""
    rows = preset_rows()
    w = {"row": W.Dropdown(options=[(pick(lang, "讲义例子 [0.5, 0.25, 0.15, 0.1]", "worked example [0.5, 0.25, 0.15, 0.1]"), "worked"),
                                    (pick(lang, "尖峰（Zipf 形）", "peaked (Zipf-like)"), "zipf"),
                                    (pick(lang, "平坦", "flat"), "flat"), (pick(lang, "自定义", "your own"), "custom")],
                           value="worked", description=pick(lang, "logits 行", "row"), **row_sizes()),
         "custom": W.Text(value="2.0, 1.2, 0.8, 0.3, -0.5, -1.0", description=pick(lang, "自定义", "your own"),
                          placeholder=pick(lang, "逗号分隔的 logits", "comma-separated logits"), **row_sizes()),
         "prev_tokens": W.Text(value="0", description=pick(lang, "历史 token", "prev tokens"), **row_sizes()),
         "temperature": W.FloatSlider(value=1.0, min=0.0, max=3.0, step=0.05, description="temperature", **slider_sizes()),
         "top_k": W.IntSlider(value=3, min=-1, max=4, description="top_k", **slider_sizes()),
         "top_p": W.FloatSlider(value=0.6, min=0.01, max=1.0, step=0.01, description="top_p", **slider_sizes()),
         "penalty": W.FloatSlider(value=1.0, min=0.5, max=3.0, step=0.05, description="penalty", **slider_sizes()),
         "use_reference": W.ToggleButtons(options=[(pick(lang, "我的代码 mine/", "my code mine/"), False),
                                                   (pick(lang, "参考解 solutions/", "reference solutions/"), True)],
                                          value=bool(use_reference), description=pick(lang, "用谁的代码", "whose code"),
                                          style={"button_width": "auto", "description_width": "initial"}),
         "note": W.HTML(), "image": panel_image()}
    fig = new_figure(560)
    fig.subplots(2, 1, height_ratios=[1.15, 1])
    impl = {}
    busy = [False]

    def load(_=None):
        chosen = resolve_impl(w["use_reference"].value, lang, mine_path)
        impl["module"], impl["note"] = chosen["module"], chosen["note"]
        impl["label"] = f"<i>{impl_label(impl['module'], lang)}</i>"
        if chosen["stand_in"]:        # mine cannot run yet: the toggle shows what runs, the note says why
            impl["label"] += "<div style='line-height:1.4'>" + pick(
                lang, f"{chosen['stand_in']}，所以切到了参考解；实现之后重新运行这个单元。",
                f"{chosen['stand_in']}, so the toggle is on the reference; re-run this cell once yours is done.") + "</div>"
            w["use_reference"].unobserve(load, names="value")
            w["use_reference"].value = True
            w["use_reference"].observe(load, names="value")
        redraw()

    def redraw(_=None):
        if busy[0]:
            return
        busy[0] = True
        try:
            row = rows.get(w["row"].value)
            row = torch.tensor(parse_numbers(w["custom"].value, float, lang)) if row is None else row  # [V]
            if len(row) < 2:
                raise InputError(pick(lang, "自定义 logits：至少要 2 个（用逗号分隔）", "your own logits: give at least 2 "
                                                                                 "(comma-separated)"))
            w["top_k"].max = len(row)
            prev = parse_numbers(w["prev_tokens"].value, int, lang)
            if any(not 0 <= t < len(row) for t in prev):
                raise InputError(pick(lang, f"历史 token 要在 [0, {len(row)}) 内", f"prev tokens must be in [0, {len(row)})"))
            steps = filter_steps(impl["module"], row, w["temperature"].value, w["top_k"].value, w["top_p"].value,
                                 w["penalty"].value, prev)
            draw_filter(fig, steps, lang)
            w["image"].value = render_png(fig)
            w["note"].value = impl["label"]
        except InputError as error:  # what was typed: one line in the panel's language, keep the last picture
            w["note"].value = f"{impl['label']}<br><b style='color:#c00'>{html.escape(str(error), quote=False)}</b>"
        except Exception as error:  # the learner's own bug: say it as Python does, keep the last picture
            w["note"].value = f"{impl['label']}<br><b style='color:#c00'>{type(error).__name__}: {error}</b>"
        finally:
            busy[0] = False

    for name in ("row", "custom", "prev_tokens", "temperature", "top_k", "top_p", "penalty"):
        w[name].observe(redraw, names="value")
    w["use_reference"].observe(load, names="value")
    w["panel"] = panel_box([w["row"], w["custom"], w["temperature"], w["top_k"], w["top_p"], w["penalty"],
                            w["prev_tokens"], w["use_reference"], w["note"], w["image"]], lang)
    load()
    return w, fig
