"""The picture of top-p by selection (solutions/p08_sampler_fast.py), as data for the fast-path notebook.

    from course.selection import top_p_buckets
    pic = top_p_buckets(logits_row, top_p=0.9)       # a dict of plain lists and numbers, ready to plot

The fast path puts every token of a row in a bucket by the float bits of its weight exp(z - max): a
histogram of the probabilities on a log scale (one bucket = an exponent and 7 mantissa bits, so its upper
edge is 2**(1/128) times its lower edge). Adding the weights bucket by bucket from the top, the mass
crosses top_p inside one bucket; only that bucket's tokens are ordered, the rest is decided whole.
"""
import torch

from course.baselines import _solution


def top_p_buckets(row, top_p, temperature=1.0):
    """One row's top-p selection: its non-empty buckets, most likely first, and where the mass crosses top_p.

    row: [V] logits. Returns {'low', 'high': [m] bucket edges as probabilities, 'mass': [m] each bucket's share
    of the probability, 'before': [m] the share of all buckets above it, 'tokens': [m] tokens per bucket,
    'crossing': index (into the m buckets) of the bucket holding the crossing token, 'kept': tokens kept,
    'kept_mass': their share (>= top_p)}. The kept set equals the reference's (solutions/p08_sampler.py).
    """
    fast = _solution("p08-fast")
    x = row.detach().float().reshape(1, -1).cpu()                                # [1, V]
    temp = torch.tensor([[temperature]], dtype=torch.float32)                    # [1, 1]
    z = x / temp                                                                 # [1, V]
    e, bucket, units = fast.weights_and_buckets(z)                               # [1, V] each
    cum = fast.bucket_cumsum(bucket, units)                                      # [1, NB] ascending buckets
    total = cum[0, -1].item()
    quota = torch.tensor([[top_p]], dtype=torch.float32).double().mul(total).ceil().long()  # [1, 1]
    token, z_cut, after = fast.select_crossing(x, temp, bucket, units, cum, quota)
    kept = int(((z > z_cut) | ((z == z_cut) & (torch.arange(x.shape[1]) <= token))).sum())
    ids = torch.bincount(bucket[0], minlength=cum.shape[1]).nonzero()[:, 0].flip(0)  # [m] top bucket first
    mass = torch.diff(cum[0], prepend=cum[0, :1] * 0)[ids].double() / total       # [m]
    scale = float(2 ** (62 - x.shape[1].bit_length())) / total                   # weight -> probability
    edge = lambda b: (b << fast.BUCKET_SHIFT).int().view(torch.float32).double() * scale  # noqa: E731
    return {"low": edge(ids).tolist(), "high": edge(ids + 1).tolist(), "mass": mass.tolist(),
            "before": (mass.cumsum(0) - mass).tolist(),
            "tokens": torch.bincount(bucket[0], minlength=cum.shape[1])[ids].tolist(),
            "crossing": int((ids == bucket[0, token[0, 0]]).nonzero()[0, 0]), "kept": kept,
            "kept_mass": after.item() / total}
