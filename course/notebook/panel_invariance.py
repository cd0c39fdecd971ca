"""Panel 2 of the P08 notebook: request q (seed 7) alone vs inside shuffled, changing batches, for the
learner's sampler and for a shared-generator sampler that is wrong on purpose (course/notebook/demo_samplers.py).
Each click runs new mixes (the run counter moves the mixes' seeds on), so the peers listed under the button, each
with its own seed and temperature, change from run to run."""
import ipywidgets as W
from matplotlib.colors import ListedColormap

from course.notebook.demo_samplers import invariance_runs
from course.notebook.impl_choice import choose_impl, impl_label
from course.lang import pick
from course.notebook.layout import panel_box, panel_image
from course.notebook.plotting import FONT_PT, fig_text, new_figure, render_png


def peers_of(run) -> list:
    """The peers that shared at least one batch with q in one mixed run, each with its params: 'peer2 (seed 41, T 0.7)'."""
    return run["peers"]


def mix_seeds(run_number, mixes) -> list:
    """The seeds of run n's mixes: every run draws new peers, and run n is the same on every machine."""
    return list(range((run_number - 1) * mixes, run_number * mixes))


def mix_name(lang, seed) -> str:
    return pick(lang, f"混合 {seed}", f"mix {seed}")


def draw_invariance(fig, data, lang, run_number=1) -> None:
    """One grid per sampler, one above the other: rows = alone / each mix, cells = q's token, green where it
    equals 'alone'."""
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
                ax.text(c, r, str(token), ha="center", va="center", fontsize=FONT_PT + 1)
        ax.set_yticks(range(len(grid)), [fig_text(lang, "单独", "alone")] +
                      [fig_text(lang, mix_name("zh", r["seed"]), mix_name("en", r["seed"])) +
                       f" (B ≤ {max(len(b) for b in r['batches'])})" for r in runs])
        ax.set_xticks(range(len(alone)))
        ax.tick_params(labelsize=FONT_PT)
        ax.set_xlabel(fig_text(lang, "第几步（step）", "step"), fontsize=FONT_PT)
        ax.set_title(fig_text(lang, f"第 {run_number} 次运行 · ", f"run {run_number} · ") + titles[label],
                     fontsize=FONT_PT + 1)
    fig._p08_state = dict(data, run=run_number)


def build_invariance_panel(lang="zh", use_reference=False, steps=8, vocab=12, mixes=3):
    """(widgets, figure): request q (seed 7) alone and in shuffled batches, right sampler vs shared generator."""
    module, _ = choose_impl(use_reference, lang)
    fig = new_figure(2 * (70 + 30 * (mixes + 1)))
    fig.subplots(2, 1)
    w = {"again": W.Button(description=pick(lang, "换一批同伴再跑一次", "run again with another batch mix"),
                           layout=W.Layout(width="auto")),
         "note": W.HTML(), "image": panel_image()}
    runs = [0]

    def run(_=None):
        runs[0] += 1
        data = invariance_runs(module, mix_seeds(runs[0], mixes), steps, vocab)
        draw_invariance(fig, data, lang, runs[0])
        w["image"].value = render_png(fig)
        verdict = {k: sum(r["tokens"] != data[k]["alone"] for r in data[k]["mixed"]) for k in data}
        lines = [mix_name(lang, r["seed"]) + " · B " + " ".join(str(len(b)) for b in r["batches"]) + " · " +
                 pick(lang, "同伴 ", "peers ") + (", ".join(peers_of(r)) or "-") for r in data["right"]["mixed"]]
        w["note"].value = (f"<i>{impl_label(module, lang)}</i><br><b>" + pick(lang, f"第 {runs[0]} 次运行", f"run {runs[0]}") +
                           "</b> · " + pick(
            lang, f"正确做法：{verdict['right']}/{mixes} 次混合与单独不同；公用 generator：{verdict['wrong']}/{mixes} 次不同",
            f"right sampler: {verdict['right']}/{mixes} mixes differ from alone; shared generator: "
            f"{verdict['wrong']}/{mixes} differ") + "<div style='font-size:90%;line-height:1.4'>" + "<br>".join(lines) + "</div>")

    w["again"].on_click(run)
    w["panel"] = panel_box([w["again"], w["note"], w["image"]], lang)
    run()
    return w, fig
