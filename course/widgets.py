"""The P08 notebook's panels and plots, built by plain functions so tests drive them without a kernel.

Every panel returns its widgets and a matplotlib Figure. The figure is re-rendered into an ipywidgets
Image on each change; `fig._p08_state` holds what was last computed, `fig._p08_artists` what was drawn.
"""
import io
from functools import lru_cache

import ipywidgets as W
import torch
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from course import hints, oracle, state
from course.demo_samplers import invariance_runs
from course.lang import pick
from course.loader import load_module, relpath
from course.problems import get
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams

KEPT_COLOR, REMOVED_COLOR, BEFORE_COLOR = "tab:orange", "lightgray", "tab:blue"
WORKED_PROBS = [0.5, 0.25, 0.15, 0.1]   # the seed page's worked example
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "WenQuanYi Zen Hei", "SimHei", "Microsoft YaHei",
             "PingFang SC", "Heiti SC", "Arial Unicode MS")


def preset_rows() -> dict:
    """The row picker's logits: the worked example, a peaked Zipf-like row (shuffled ids), a flat row."""
    zipf = torch.empty(16)                                                            # [16]
    ranks = torch.arange(1, 17, dtype=torch.float32)                                  # [16]
    zipf[torch.randperm(16, generator=torch.Generator().manual_seed(0))] = -1.3 * torch.log(ranks)
    return {"worked": torch.log(torch.tensor(WORKED_PROBS)),                          # [4]
            "zipf": zipf,                                                             # [16] rank r ~ r^-1.3
            "flat": torch.linspace(0.4, 0.0, 10)}                                     # [10] nearly uniform


@lru_cache(maxsize=None)
def _cjk_font():
    """A Chinese-capable font matplotlib knows (registered as the first sans-serif), or None."""
    from matplotlib import font_manager, rcParams
    names = {f.name for f in font_manager.fontManager.ttflist}
    font = next((n for n in CJK_FONTS if n in names), None)
    if font:
        rcParams["font.sans-serif"] = [font, *rcParams["font.sans-serif"]]
    return font


def fig_text(lang, zh, en) -> str:
    """Figure text: Chinese only where a Chinese font exists (otherwise matplotlib draws empty boxes)."""
    return zh if lang != "en" and _cjk_font() else en


def render_png(fig) -> bytes:
    """The figure as PNG bytes, for an ipywidgets Image (works with or without a kernel)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


# ---- which implementation the notebook shows ----------------------------------------------------
def unfinished(module) -> list:
    """The names of module's steps that still raise NotImplementedError (or are missing) on a tiny input."""
    row = torch.tensor([2.0, 1.0, 0.5])                                               # [3]
    probes = {"apply_repetition_penalty": lambda: module.apply_repetition_penalty(row, [0], 1.5),
              "apply_top_k": lambda: module.apply_top_k(row, 1),
              "apply_top_p": lambda: module.apply_top_p(row, 0.5),
              "Sampler.sample": lambda: module.Sampler().sample(row[None], ["probe"], [SamplingParams(seed=0)], [[]])}
    todo = []
    for name, call in probes.items():
        try:
            call()
        except (NotImplementedError, AttributeError):
            todo.append(name)
        except Exception:            # a bug, not a stub: keep the learner's code so they see it
            pass
    return todo


def choose_impl(use_reference: bool, lang: str = "zh", mine_path=None):
    """(module, note): the learner's mine/p08_sampler.py, or the reference while mine is a stub (the note says so)."""
    problem = get("p08")
    reference = load_module(problem.path("solution"), "reference")
    if use_reference:
        return reference, pick(lang, f"展示参考解 {problem.solution}", f"showing the reference {problem.solution}")
    path = mine_path or problem.path("stub")
    try:
        mine = load_module(path, "mine")
    except Exception as error:
        return reference, pick(lang, f"{relpath(path)} 无法导入（{type(error).__name__}: {error}），先展示参考解",
                               f"{relpath(path)} cannot be imported ({type(error).__name__}: {error}); showing the reference")
    todo = unfinished(mine)
    if todo:
        return reference, pick(
            lang, f"{relpath(path)} 还是桩代码（未实现：{', '.join(todo)}），下面展示的是参考解 {problem.solution}；"
                  f"实现之后重新运行即可看到你自己的代码",
            f"{relpath(path)} is still a stub (not implemented: {', '.join(todo)}); showing the reference "
            f"{problem.solution} instead. Re-run once yours is done to see your own code")
    return mine, pick(lang, f"展示你的实现 {relpath(path)}", f"showing your implementation {relpath(path)}")


# ---- the filter, step by step, with the module's own functions ------------------------------------
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
    """Left: bars before/after filtering (kept set in orange). Right: sorted cumulative, the top_p line, the crossing."""
    ax_bars, ax_cum = fig.axes
    ax_bars.clear()
    ax_cum.clear()
    vocab, kept, top_p = len(steps["row"]), set(steps["kept"]), steps["params"]["top_p"]
    before = ax_bars.bar([i - 0.2 for i in range(vocab)], steps["probs_before"].tolist(), 0.4, color=BEFORE_COLOR,
                         alpha=0.35)
    after = ax_bars.bar([i + 0.2 for i in range(vocab)], steps["probs_after"].tolist(), 0.4,
                        color=[KEPT_COLOR if i in kept else REMOVED_COLOR for i in range(vocab)])
    ax_bars.set_xticks(range(vocab))
    ax_bars.set_xlabel(fig_text(lang, "token id（词表顺序）", "token id (vocab order)"))
    ax_bars.set_ylabel(fig_text(lang, "概率", "probability"))
    ax_bars.set_title(fig_text(lang, f"入围 {sorted(kept)}", f"kept {sorted(kept)}") +
                      (" · greedy = argmax" if steps["greedy"] else ""))
    ax_bars.legend(handles=[Patch(color=BEFORE_COLOR, alpha=0.35, label=fig_text(lang, "过滤前", "before filtering")),
                            Patch(color=KEPT_COLOR, label=fig_text(lang, "过滤后：入围", "after: kept")),
                            Patch(color=REMOVED_COLOR, label=fig_text(lang, "被删", "removed"))], fontsize=8)
    cumulative = steps["cumulative"].tolist()
    (curve,) = ax_cum.plot(range(vocab), cumulative, "o-", color=BEFORE_COLOR,
                           label=fig_text(lang, "降序累计概率", "sorted cumulative"))
    line = ax_cum.axhline(top_p, color="tab:red", ls="--", label=f"top_p = {top_p:.2f}")
    rank = steps["crossing"]
    (marker,) = ax_cum.plot([] if rank is None else [rank], [] if rank is None else [cumulative[rank]], "s", ms=15,
                            mfc="none", mec="tab:red", mew=2, label=fig_text(lang, "越过阈值的 token（保留）",
                                                                            "crossing token (stays)"))
    ax_cum.axvspan(-0.5, len(kept) - 0.5, color=KEPT_COLOR, alpha=0.12)
    ax_cum.set_xticks(range(vocab), [str(int(t)) for t in steps["order"]])
    ax_cum.set_xlabel(fig_text(lang, "token id（按概率降序）", "token id (by descending probability)"))
    ax_cum.set_ylim(0, 1.05)
    ax_cum.legend(fontsize=8, loc="lower right")
    fig._p08_state = steps
    fig._p08_artists = {"before": before, "after": after, "cumulative": curve, "top_p": line, "crossing": marker}


def _numbers(text, kind):
    """'1, 2.5，3' -> [1.0, 2.5, 3.0] (kind=float); ASCII or full-width commas."""
    return [kind(x) for x in text.replace("，", ",").split(",") if x.strip()]


def build_ui(lang="zh", use_reference=False):
    """(widgets, figure): sliders + row picker redrawing the before/after bars and the cumulative curve."""
    rows = preset_rows()
    w = {"row": W.Dropdown(options=[(pick(lang, "讲义例子 [0.5, 0.25, 0.15, 0.1]", "worked example [0.5, 0.25, 0.15, 0.1]"), "worked"),
                                    (pick(lang, "尖峰（Zipf 形）", "peaked (Zipf-like)"), "zipf"),
                                    (pick(lang, "平坦", "flat"), "flat"), (pick(lang, "自定义", "your own"), "custom")],
                           value="worked", description=pick(lang, "logits 行", "row")),
         "custom": W.Text(value="2.0, 1.2, 0.8, 0.3, -0.5, -1.0", description=pick(lang, "自定义", "your own"),
                          placeholder=pick(lang, "逗号分隔的 logits", "comma-separated logits")),
         "prev_tokens": W.Text(value="0", description=pick(lang, "历史 token", "prev tokens")),
         "temperature": W.FloatSlider(value=1.0, min=0.0, max=3.0, step=0.05, description="temperature"),
         "top_k": W.IntSlider(value=3, min=-1, max=4, description="top_k"),
         "top_p": W.FloatSlider(value=0.6, min=0.01, max=1.0, step=0.01, description="top_p"),
         "penalty": W.FloatSlider(value=1.0, min=0.5, max=3.0, step=0.05, description="penalty"),
         "use_reference": W.ToggleButtons(options=[(pick(lang, "我的 mine/", "mine/"), False),
                                                   (pick(lang, "参考解", "reference"), True)], value=bool(use_reference)),
         "note": W.HTML(), "image": W.Image(format="png")}
    fig = Figure(figsize=(11, 3.8), layout="constrained")
    fig.subplots(1, 2)
    impl = {}
    busy = [False]

    def load(_=None):
        impl["module"], impl["note"] = choose_impl(w["use_reference"].value, lang)
        redraw()

    def redraw(_=None):
        if busy[0]:
            return
        busy[0] = True
        try:
            row = rows.get(w["row"].value)
            row = torch.tensor(_numbers(w["custom"].value, float)) if row is None else row  # [V]
            if len(row) < 2:
                raise ValueError(pick(lang, "至少要 2 个 logits", "give at least 2 logits"))
            w["top_k"].max = len(row)
            prev = _numbers(w["prev_tokens"].value, int)
            if any(not 0 <= t < len(row) for t in prev):
                raise ValueError(pick(lang, f"历史 token 要在 [0, {len(row)}) 内", f"prev tokens must be in [0, {len(row)})"))
            steps = filter_steps(impl["module"], row, w["temperature"].value, w["top_k"].value, w["top_p"].value,
                                 w["penalty"].value, prev)
            draw_filter(fig, steps, lang)
            w["image"].value = render_png(fig)
            w["note"].value = f"<i>{impl['note']}</i>"
        except Exception as error:  # a parse error or the learner's own bug: say it, keep the last picture
            w["note"].value = f"<i>{impl['note']}</i><br><b style='color:#c00'>{type(error).__name__}: {error}</b>"
        finally:
            busy[0] = False

    for name in ("row", "custom", "prev_tokens", "temperature", "top_k", "top_p", "penalty"):
        w[name].observe(redraw, names="value")
    w["use_reference"].observe(load, names="value")
    w["panel"] = W.VBox([W.HBox([w["row"], w["custom"]]), W.HBox([w["temperature"], w["top_k"]]),
                         W.HBox([w["top_p"], w["penalty"]]), W.HBox([w["prev_tokens"], w["use_reference"]]),
                         w["note"], w["image"]])
    load()
    return w, fig


# ---- batch invariance: alone vs inside shuffled batches -------------------------------------------
def draw_invariance(fig, data, lang) -> None:
    """One grid per sampler: rows = alone / each mix, cells = q's token, green where it equals 'alone'."""
    titles = {"right": fig_text(lang, "每人自带骰子（正确）", "own dice per request (right)"),
              "wrong": fig_text(lang, "公用摇号机（故意写错）", "shared lottery machine (WRONG on purpose)")}
    for ax, label in zip(fig.axes, ("right", "wrong")):
        ax.clear()
        alone, runs = data[label]["alone"], data[label]["mixed"]
        grid = [alone] + [r["tokens"] for r in runs]
        same = [[float(t == a) for t, a in zip(tokens, alone)] for tokens in grid]
        ax.imshow(same, cmap=ListedColormap(["#f4a6a6", "#a8dfa8"]), vmin=0, vmax=1, aspect="auto")
        for r, tokens in enumerate(grid):
            for c, token in enumerate(tokens):
                ax.text(c, r, str(token), ha="center", va="center", fontsize=10)
        ax.set_yticks(range(len(grid)), [fig_text(lang, "单独", "alone")] +
                      [f"mix {r['seed']} (B<={max(len(b) for b in r['batches'])})" for r in runs])
        ax.set_xticks(range(len(alone)))
        ax.set_xlabel("step")
        ax.set_title(titles[label], fontsize=10)
    fig._p08_state = data


def build_invariance_panel(lang="zh", use_reference=False, steps=8, vocab=12, mixes=3):
    """(widgets, figure): request q (seed 7) alone and in shuffled batches, right sampler vs shared generator."""
    module, note = choose_impl(use_reference, lang)
    fig = Figure(figsize=(11, 1.2 + 0.5 * mixes), layout="constrained")
    fig.subplots(1, 2)
    w = {"again": W.Button(description=pick(lang, "换一批同伴再跑一次", "run again with another batch mix")),
         "note": W.HTML(), "image": W.Image(format="png")}
    first = [0]

    def run(_=None):
        seeds = list(range(first[0], first[0] + mixes))
        first[0] += mixes
        data = invariance_runs(module, seeds, steps, vocab)
        draw_invariance(fig, data, lang)
        w["image"].value = render_png(fig)
        verdict = {k: sum(r["tokens"] != data[k]["alone"] for r in data[k]["mixed"]) for k in data}
        w["note"].value = (f"<i>{note}</i><br>" + pick(
            lang, f"正确做法：{verdict['right']}/{mixes} 次混合与单独不同；公用 generator：{verdict['wrong']}/{mixes} 次不同",
            f"right sampler: {verdict['right']}/{mixes} mixes differ from alone; shared generator: "
            f"{verdict['wrong']}/{mixes} differ"))

    w["again"].on_click(run)
    w["panel"] = W.VBox([w["again"], w["note"], w["image"]])
    run()
    return w, fig


# ---- thousands of draws vs the oracle -----------------------------------------------------------
def empirical_histogram(module, row, params, draws=4000, prev_tokens=()):
    """(fig, counts, expected): one seeded request drawn `draws` times vs course.oracle's filtered probabilities."""
    sampler = module.Sampler()
    logits = torch.as_tensor(row, dtype=torch.float32)[None]                          # [1, V]
    counts = [0] * logits.shape[1]
    for _ in range(draws):
        counts[int(sampler.sample(logits, ["h"], [params], [list(prev_tokens)])[0])] += 1
    expected = oracle.probs_for(logits[0].tolist(), params, prev_tokens)
    off = oracle.sigma_violations(counts, expected, draws)
    fig = Figure(figsize=(7, 3), layout="constrained")
    ax = fig.subplots()
    ax.bar(range(len(counts)), [c / draws for c in counts], 0.6, color=BEFORE_COLOR, label=f"{draws} draws")
    ax.plot(range(len(expected)), expected, "_", color="black", ms=28, mew=2, label="oracle")
    ax.set_xticks(range(len(counts)))
    ax.set_xlabel("token id")
    ax.set_title(f"off by > 6 sigma: {[t for t, *_ in off] or 'none'}", fontsize=10)
    ax.legend(fontsize=8)
    fig._p08_state = {"counts": counts, "expected": expected, "violations": off}
    return fig, counts, expected


# ---- hints ---------------------------------------------------------------------------------------
def hint_buttons(problem="p08", lang="zh"):
    """L1/L2/L3 buttons; a click shows that level's markdown (course.hints.read) and records it as seen."""
    out = W.Output()
    buttons = [W.Button(description=pick(lang, f"提示 L{n}", f"hint L{n}")) for n in hints.LEVELS]
    box = W.VBox([W.HBox(buttons), out])
    box._p08_state = {"revealed": [], "text": ""}

    def reveal(level):
        text = hints.read(problem, level, lang)
        out.outputs = ({"output_type": "display_data", "metadata": {},
                        "data": {"text/markdown": text, "text/plain": text}},)
        box._p08_state["revealed"].append(level)
        box._p08_state["text"] = text
        try:
            state.record_hint(problem, level)   # ./check.sh list shows it, as after --hint N
        except OSError:
            pass

    for level, button in zip(hints.LEVELS, buttons):
        button.on_click(lambda _button, level=level: reveal(level))
    return box
