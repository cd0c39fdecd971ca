"""The P08 notebook's empirical check: thousands of draws of one seeded request vs course.oracle's probabilities."""
import torch
from course import oracle
from course.notebook.plotting import BEFORE_COLOR, FONT_PT, fig_text, new_figure


def empirical_histogram(module, row, params, draws=4000, prev_tokens=(), lang="en"):
    """(fig, counts, expected): one seeded request drawn `draws` times vs course.oracle's filtered probabilities."""
    sampler = module.Sampler()
    logits = torch.as_tensor(row, dtype=torch.float32)[None]                          # [1, V]
    counts = [0] * logits.shape[1]
    for _ in range(draws):
        counts[int(sampler.sample(logits, ["h"], [params], [list(prev_tokens)])[0])] += 1
    expected = oracle.probs_for(logits[0].tolist(), params, prev_tokens)
    off = oracle.sigma_violations(counts, expected, draws)
    fig = new_figure(300)
    ax = fig.subplots()
    ax.bar(range(len(counts)), [c / draws for c in counts], 0.6, color=BEFORE_COLOR,
           label=fig_text(lang, f"{draws} 次抽样的频率", f"frequency in {draws} draws"))
    ax.plot(range(len(expected)), expected, "_", color="black", ms=28, mew=2,
            label=fig_text(lang, "oracle 算出的概率", "probability by the oracle"))
    ax.set_xticks(range(len(counts)))
    ax.set_xlabel("token id", fontsize=FONT_PT)
    ax.set_ylabel(fig_text(lang, "频率 / 概率", "frequency / probability"), fontsize=FONT_PT)
    ax.tick_params(labelsize=FONT_PT)
    ax.set_ylim(0, max(max(expected), max(c / draws for c in counts)) * 1.45)   # headroom: the legend sits above
    named = ", ".join(str(t) for t, *_ in off)
    ax.set_title(fig_text(lang, f"偏离超过 6 个标准差的 token：{named or '没有'}",
                          f"tokens off by more than 6 standard deviations: {named or 'none'}"), fontsize=FONT_PT + 1)
    ax.legend(fontsize=FONT_PT, loc="upper center", ncol=2, frameon=False)
    fig._p08_state = {"counts": counts, "expected": expected, "violations": off}
    return fig, counts, expected
