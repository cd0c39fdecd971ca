"""The P08 notebook's intuition figure: the talent show's four steps, then where the dice come from."""
import torch
from matplotlib.patches import Patch, Rectangle

from course.notebook.panel_filter import WORKED_PROBS, filter_steps
from course.notebook.plotting import BEFORE_COLOR, FONT_PT, KEPT_COLOR, REMOVED_COLOR, fig_text, new_figure

BATCHES = [["A", "q"], ["B", "C", "q"]]   # q's batches at two steps
DRAWS = 6                                 # random numbers drawn, u0 .. u5


def shared_positions(batches, who="q") -> list:
    """Which draw of ONE shared generator `who` gets at each step: every row before it turned the machine."""
    picks, used = [], 0
    for batch in batches:
        picks.append(used + batch.index(who))
        used += len(batch)
    return picks


def talent_show_figure(module, lang="zh"):
    """(fig, steps): a 2 x 2 grid = the worked example through penalty, temperature, shortlist; below, the dice."""
    steps = filter_steps(module, torch.log(torch.tensor(WORKED_PROBS)), temperature=0.7, top_k=3, top_p=0.8,
                         penalty=1.5, prev_tokens=[1])
    fig = new_figure(560)
    top, bottom = fig.subfigures(2, 1, height_ratios=[2.3, 1])
    score, chance = fig_text(lang, "分数（logit）", "score (logit)"), fig_text(lang, "概率", "probability")
    stages = [(fig_text(lang, "1 评委分（logits）", "1 judges' scores (logits)"), steps["row"], score),
              (fig_text(lang, "2 扣分：token 1 刚唱过", "2 penalty: token 1 sang before"), steps["penalized"], score),
              (fig_text(lang, "3 温度 0.7 → 概率", "3 temperature 0.7 -> chances"), steps["probs_before"], chance),
              (fig_text(lang, "4 划入围线（橙），再抽签", "4 shortlist (orange), then draw"), steps["probs_after"], chance)]
    for i, (ax, (title, values, ylabel)) in enumerate(zip(top.subplots(2, 2).flat, stages)):
        colors = [KEPT_COLOR if i == 3 and t in steps["kept"] else BEFORE_COLOR for t in range(4)]
        ax.bar(range(4), values.tolist(), color=colors)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_title(title, fontsize=FONT_PT + 1)
        ax.set_xticks(range(4))
        ax.set_ylabel(ylabel, fontsize=FONT_PT)
        if i >= 2:
            ax.set_xlabel("token id", fontsize=FONT_PT)
        ax.tick_params(labelsize=FONT_PT)
    ax = bottom.subplots()
    rows = [(fig_text(lang, "公用摇号机", "shared machine"), shared_positions(BATCHES)),
            (fig_text(lang, "自带骰子", "own dice"), list(range(len(BATCHES))))]
    for r, (label, picks) in enumerate(rows):
        for n in range(DRAWS):
            ax.add_patch(Rectangle((n, -r), 0.9, 0.8, color=KEPT_COLOR if n in picks else REMOVED_COLOR, alpha=0.9))
            ax.text(n + 0.45, -r + 0.4, f"u{n}", ha="center", va="center", fontsize=FONT_PT + 1)
        ax.text(-0.15, -r + 0.4, label, ha="right", va="center", fontsize=FONT_PT + 1)
    ax.set_xlim(-2.2, DRAWS)
    ax.set_ylim(-1.1, 0.9)
    ax.axis("off")
    ax.set_title(fig_text(lang, "q 拿到第几个随机数：batch [A, q]，然后 [B, C, q]",
                          "which random number q gets: batches [A, q], then [B, C, q]"), fontsize=FONT_PT + 1)
    bottom.legend(handles=[Patch(color=KEPT_COLOR, alpha=0.9, label=fig_text(lang, "q 拿到的", "q's draws")),
                           Patch(color=REMOVED_COLOR, alpha=0.9, label=fig_text(lang, "别人拿到的，或还没用到",
                                                                                "someone else's, or unused"))],
                  loc="outside lower center", ncol=2, fontsize=FONT_PT, frameon=False)
    fig._p08_state = {"steps": steps, "shared": rows[0][1], "own": rows[1][1]}
    return fig, steps
