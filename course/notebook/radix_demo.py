"""ILLUSTRATION (not the graded fast path): choose top-p's keep set without a full sort, by powers of two.

1. e = exp(z - max) in (0, 1]; its float exponent puts it in bucket b: e in [2^-b, 2^(1-b)) (bucket 0: the max).
2. Each bucket's mass is summed EXACTLY, as fixed-point integers (floor(e * 2^FRAC_BITS)): integer adds do
   not depend on order or on the batch, so every row gets the same sums alone or with peers.
3. Walk the buckets from the most probable down; the crossing bucket is where the cumulative mass first
   reaches top_p x total. Buckets before it are kept whole, buckets after it are removed.
4. Refine inside the crossing bucket only: sort its few members and keep them while the mass before each
   is < top_p x total (the reference rule: the token that crosses stays).
The fast path in solutions/p08_sampler_fast.py buckets more finely (exponent and 7 mantissa bits, course/selection.py);
top_p_buckets below gives the numbers of its selection for one row, for the hints' picture.
"""
import torch
from matplotlib.figure import Figure

from course.notebook.plotting import BEFORE_COLOR, CROSS_COLOR, KEPT_COLOR, REMOVED_COLOR, fig_text
from course.selection import BUCKET_SHIFT, bucket_cumsum, select_crossing, weights_and_buckets

FRAC_BITS = 40   # fixed point: an e below 2^-40 counts as 0 (its whole bucket is far below any top_p cut)


def bucket_select(z, top_p) -> dict:
    """z [V] (logits / temperature) -> buckets, exact integer masses, the crossing bucket and the kept ids."""
    z = torch.as_tensor(z, dtype=torch.float32)
    e = torch.exp(z - z.max())                                                        # [V] in (0, 1]
    _, exponent = torch.frexp(e)                                           # e = m * 2^exponent, m in [0.5, 1)
    bucket = (1 - exponent).long()                                         # [V] 0 = the max, b: [2^-b, 2^(1-b))
    fixed = torch.floor(e.double() * 2.0 ** FRAC_BITS).long()                         # [V] exact integers
    n_buckets = int(bucket.max()) + 1
    mass = torch.zeros(n_buckets, dtype=torch.long).index_add_(0, bucket, fixed)      # [nb] exact, any order
    count = torch.zeros(n_buckets, dtype=torch.long).index_add_(0, bucket, torch.ones_like(bucket))  # [nb]
    cum = torch.cumsum(mass, 0)                                                       # [nb] integers: exact
    total = int(cum[-1])
    threshold = top_p * total
    crossing = int((cum < threshold).sum()) if top_p < 1 else n_buckets - 1           # first bucket reaching it
    crossing = min(crossing, n_buckets - 1)
    before = 0 if crossing == 0 else int(cum[crossing - 1])                           # mass of the kept buckets
    members = torch.nonzero(bucket == crossing).flatten()                             # [m] only this bucket
    member_mass, order = torch.sort(fixed[members], descending=True, stable=True)     # [m] a small sort
    mass_before = before + torch.cumsum(member_mass, 0) - member_mass                 # [m] integers
    keep_here = members[order[mass_before < threshold]] if top_p < 1 else members     # the crossing token stays
    kept = torch.cat([torch.nonzero(bucket < crossing).flatten(), keep_here])
    if len(kept) == 0:                                                                # never empty: the max stays
        kept = torch.nonzero(bucket == 0).flatten()[:1]
    return {"bucket": bucket, "mass": mass, "count": count, "cum": cum, "total": total, "crossing": crossing,
            "refined": len(members), "kept": sorted(int(i) for i in kept), "top_p": top_p}


def draw_buckets(sel, lang="zh", shown=None):
    """Bar chart: mass per bucket (as a share of the row), the cumulative line, top_p, the crossing bucket."""
    total = sel["total"]
    n = shown or min(len(sel["mass"]), max(sel["crossing"] + 6, 12))
    share = [int(m) / total for m in sel["mass"][:n]]
    cum = [int(c) / total for c in sel["cum"][:n]]
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax = fig.subplots()
    colors = [KEPT_COLOR if b < sel["crossing"] else CROSS_COLOR if b == sel["crossing"] else REMOVED_COLOR
              for b in range(n)]
    bars = ax.bar(range(n), share, color=colors)
    for b in range(n):
        ax.text(b, share[b], str(int(sel["count"][b])), ha="center", va="bottom", fontsize=9)
    (line,) = ax.plot(range(n), cum, "o-", color=BEFORE_COLOR, label=fig_text(lang, "累计质量", "cumulative mass"))
    ax.axhline(sel["top_p"], color=CROSS_COLOR, ls="--", label=f"top_p = {sel['top_p']:.2f}")
    ax.set_xticks(range(n), [f"$2^{{-{b}}}$" for b in range(n)])
    ax.set_ylim(0, 1.12)
    ax.set_xlabel(fig_text(lang, "桶：e = exp(z - max) 落在 [2^-b, 2^(1-b))（柱顶数字 = token 个数）",
                           "bucket: e = exp(z - max) in [2^-b, 2^(1-b))  (number on a bar = its tokens)"))
    ax.set_ylabel(fig_text(lang, "占整行的质量", "share of the row's mass"))
    ax.set_title(fig_text(lang, f"红色桶越过 top_p：只在它的 {sel['refined']} 个 token 里排序；入围 {len(sel['kept'])} 个",
                          f"the red bucket crosses top_p: sort only its {sel['refined']} tokens; {len(sel['kept'])} kept"),
                 fontsize=11)
    ax.legend(fontsize=9, loc="center right")
    fig._p08_state = dict(sel, share=share, shown_cum=cum)
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
