"""The exact route's top-p selection (course/selection.py, given code) for one row, as numbers and a picture.

course/selection.py weighs every token e = exp(z - max) and puts it in a bucket by the float bits of e (its
exponent and 7 mantissa bits: `e.view(torch.int32) >> 16`), a histogram of the probabilities on a log scale where
a bucket's upper edge is 2**(1/128) times its lower one. The weights are int64 fixed point (floor(e * 2**(62 -
V.bit_length()))), so a bucket's sum is exact in any order and in any batch. Walking down from the top bucket,
the mass reaches top_p inside one bucket, the crossing bucket: the buckets above it are kept whole, those below
dropped whole, and only the crossing bucket's tokens are ordered (z descending, equal z by id).
top_p_buckets gives one row's numbers (the hints' picture); bucket_select and draw_buckets give the numbers and the
picture for any row (the fast-path notebook no longer walks through the given exact route).
"""
import torch
from matplotlib.patches import Patch

from course.notebook.plotting import BEFORE_COLOR, CROSS_COLOR, FONT_PT, KEPT_COLOR, REMOVED_COLOR, fig_text, new_figure
from course.selection import BUCKET_SHIFT, bucket_cumsum, exact_rows, select_crossing, weights_and_buckets


def bucket_select(row, top_p, temperature=1.0) -> dict:
    """top_p_buckets(row, top_p, temperature) plus 'kept_ids' (the exact route's kept set, from
    course.selection.exact_rows), 'vocab' and 'top_p'."""
    x = torch.as_tensor(row, dtype=torch.float32).reshape(1, -1)                 # [1, V]
    pic = top_p_buckets(x[0], top_p, temperature)
    probs = exact_rows(x, torch.tensor([[temperature]]), torch.zeros(1, 1, dtype=torch.long),
                       torch.tensor([[top_p]], dtype=torch.float64), None, has_top_k=False)  # [1, V]
    return dict(pic, kept_ids=torch.nonzero(probs[0] > 0).flatten().tolist(), vocab=x.shape[1], top_p=top_p)


def draw_buckets(sel, lang="zh"):
    """The non-empty buckets from the most likely down (ticks: a bucket's lower edge as a probability): each
    bucket's share of the mass (log y), kept whole / the crossing bucket / dropped whole; the mass from the top
    bucket down (right axis) and top_p. The legend sits above the bars."""
    c = sel["crossing"]
    n = min(len(sel["mass"]), 2 * c + 12)                                        # the crossing bucket mid-picture
    mass = sel["mass"][:n]
    reached = [b + m for b, m in zip(sel["before"][:n], mass)]                    # mass from the top, this included
    fig = new_figure(420)
    ax = fig.subplots()
    colors = [KEPT_COLOR if b < c else CROSS_COLOR if b == c else REMOVED_COLOR for b in range(n)]
    bars = ax.bar(range(n), mass, width=1.0, color=colors, linewidth=0)
    ax.axvline(c, color=CROSS_COLOR, lw=1.5)
    ax.annotate(fig_text(lang, f"越线桶：{sel['tokens'][c]} 个 token，\n只排它们",
                         f"crossing bucket: {sel['tokens'][c]} token(s),\nthe only ones ordered"),
                (c, (max(mass) * min(mass)) ** 0.5), xytext=(6, 0), textcoords="offset points", color=CROSS_COLOR,
                fontsize=FONT_PT, va="center")
    ax.set_yscale("log")
    ticks = sorted({0, c, *range(0, n, max(n // 4, 1))})
    ticks = [t for t in ticks if t == c or abs(t - c) > n // 8]
    ax.set_xticks(ticks, [f"{sel['low'][t]:.1e}" for t in ticks])
    ax.set_xlim(-0.5, n - 0.5)
    ax.tick_params(labelsize=FONT_PT)
    ax.set_xlabel(fig_text(lang, "非空的桶，概率从大到小\n（刻度 = 桶的下沿概率；一个桶 = 指数位 + 7 位尾数）",
                           "non-empty buckets, most likely first\n(ticks: a bucket's lower edge as a probability; "
                           "a bucket = exponent + 7 mantissa bits)"), fontsize=FONT_PT)
    ax.set_ylabel(fig_text(lang, "桶的质量占比（对数轴）", "the bucket's share (log)"), fontsize=FONT_PT)
    twin = ax.twinx()
    (line,) = twin.step(range(n), reached, where="mid", color=BEFORE_COLOR,
                        label=fig_text(lang, "从最上面的桶累计的质量", "mass from the top bucket down"))
    cut = twin.axhline(sel["top_p"], color=CROSS_COLOR, ls="--", label=f"top_p = {sel['top_p']:.2f}")
    twin.set_ylim(0, 1.05)
    twin.set_ylabel(fig_text(lang, "累计质量", "cumulative mass"), fontsize=FONT_PT)
    twin.tick_params(labelsize=FONT_PT)
    handles = [Patch(color=KEPT_COLOR, label=fig_text(lang, "整桶保留", "kept whole")),
               Patch(color=CROSS_COLOR, label=fig_text(lang, "越线桶", "crossing bucket")),
               Patch(color=REMOVED_COLOR, label=fig_text(lang, "整桶删除", "dropped whole")), line, cut]
    ax.legend(handles=handles, fontsize=FONT_PT, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
              frameon=False, borderaxespad=0.2, handlelength=1.5, columnspacing=1.2)
    ax.set_title(fig_text(lang, f"{len(sel['mass'])} 个非空桶；V = {sel['vocab']} 中保留 {sel['kept']} 个",
                          f"{len(sel['mass'])} non-empty buckets; {sel['kept']} of V = {sel['vocab']} kept"),
                 fontsize=FONT_PT + 1, pad=44)
    fig._p08_state = dict(sel, shown=n, reached=reached)
    fig._p08_artists = {"bars": bars, "cumulative": line}
    return fig


def top_p_buckets(row, top_p, temperature=1.0):
    """One row's top-p selection: its non-empty buckets, most likely first, and where the mass crosses top_p.

    row: [V] logits. Returns {'low', 'high': [m] bucket edges as probabilities, 'mass': [m] each bucket's share
    of the probability, 'before': [m] the share of all buckets above it, 'tokens': [m] tokens per bucket,
    'crossing': index (into the m buckets) of the bucket holding the crossing token, 'kept': tokens kept,
    'kept_mass': their share (>= top_p)}. The kept set equals the reference's (solutions/p08_sampler.py).
    """
    x = row.detach().float().reshape(1, -1).cpu()                                # [1, V]
    temp = torch.tensor([[temperature]], dtype=torch.float32)                    # [1, 1]
    z = x / temp                                                                 # [1, V]
    e, bucket, units = weights_and_buckets(z)                               # [1, V] each
    cum = bucket_cumsum(bucket, units)                                      # [1, NB] ascending buckets
    total = cum[0, -1].item()
    quota = torch.tensor([[top_p]], dtype=torch.float32).double().mul(total).ceil().long()  # [1, 1]
    token, z_cut, after = select_crossing(x, temp, bucket, units, cum, quota)
    kept = int(((z > z_cut) | ((z == z_cut) & (torch.arange(x.shape[1]) <= token))).sum())
    ids = torch.bincount(bucket[0], minlength=cum.shape[1]).nonzero()[:, 0].flip(0)  # [m] top bucket first
    mass = torch.diff(cum[0], prepend=cum[0, :1] * 0)[ids].double() / total       # [m]
    scale = float(2 ** (62 - x.shape[1].bit_length())) / total                   # weight -> probability
    edge = lambda b: (b << BUCKET_SHIFT).int().view(torch.float32).double() * scale  # noqa: E731
    return {"low": edge(ids).tolist(), "high": edge(ids + 1).tolist(), "mass": mass.tolist(),
            "before": (mass.cumsum(0) - mass).tolist(),
            "tokens": torch.bincount(bucket[0], minlength=cum.shape[1])[ids].tolist(),
            "crossing": int((ids == bucket[0, token[0, 0]]).nonzero()[0, 0]), "kept": kept,
            "kept_mass": after.item() / total}
