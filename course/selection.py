"""Top-p by selection, no sort: the fast path's steps (solutions/p08_sampler_fast.py imports them; the numbers
of one row's selection, for a picture: course.notebook.radix_demo.top_p_buckets).

The fast path puts every token of a row in a bucket by the float bits of its weight exp(z - max): a
histogram of the probabilities on a log scale (one bucket = an exponent and 7 mantissa bits, so its upper
edge is 2**(1/128) times its lower edge). Adding the weights bucket by bucket from the top, the mass
crosses top_p inside one bucket; only that bucket's tokens are ordered, the rest is decided whole.
"""
import torch

BUCKET_SHIFT = 16    # a bucket: the float bits of a weight without the low 16 (exponent and 7 mantissa bits)
N_BUCKETS = (0x3F800000 >> BUCKET_SHIFT) + 1    # weights lie in [0, 1]; 0x3F800000 is the bits of 1.0


def _exp_(t):
    """t.exp_() for a new contiguous t; on the CPU 2k-32k elements go in pieces of 2048 (same bits: elementwise).

    There torch.exp splits such sizes across threads with a small grain, and on a busy 2-core machine the
    wait for the second thread costs a whole time slice (about 8 ms, measured); pieces of 2048 stay on one.
    """
    if t.device.type == "cpu" and 2048 < t.numel() < 32768:
        for piece in t.view(-1).split(2048):
            piece.exp_()
        return t
    return t.exp_()


def weights_and_buckets(z, out=None):
    """z [n, V] -> e = exp(z - max) [n, V], bucket [n, V] int64 (grows with e), units [n, V] int64.

    bucket = e's float bits >> 16: a log-scale histogram bin (exponent and 7 mantissa bits); units = floor(e *
    2**(62 - V.bit_length())): fixed-point weights whose int64 sums are exact (< 2**62), in any order.
    out: optional buffers (e, bucket, units, scratch fp32), reused across calls (fresh 10-100 MB tensors
    cost page faults that can exceed the arithmetic on a CPU).
    """
    e, bucket, units, scratch = out or (torch.empty_like(z), *(torch.empty(z.shape, dtype=torch.long,
                                        device=z.device) for _ in range(2)), torch.empty_like(z))
    _exp_(torch.sub(z, z.amax(-1, keepdim=True), out=e))                         # [n, V] in [0, 1], max -> 1
    torch.bitwise_right_shift(e.view(torch.int32), BUCKET_SHIFT, out=bucket)     # [n, V]
    units.copy_(torch.mul(e, 2.0 ** (62 - e.shape[-1].bit_length()), out=scratch))  # [n, V] floor: fixed point
    return e, bucket, units


def bucket_cumsum(bucket, weight):
    """[n, N_BUCKETS] int64: the weight of each bucket and all below it (integer adds: exact in any order)."""
    ones = torch.ones(1, 1, dtype=torch.long, device=bucket.device).expand(bucket.shape)
    hist = torch.zeros(bucket.shape[0], N_BUCKETS, dtype=torch.long, device=bucket.device)  # [n, NB]
    return hist.scatter_add_(1, bucket, ones if weight is None else weight).cumsum_(-1)


def bucket_of(cum, quota):
    """[n, 1]: the bucket holding the token where the weight from the top first reaches quota (1 <= quota)."""
    return torch.searchsorted(cum, cum[:, -1:] - quota, right=True)


def bucket_members(x, temp, bucket, weight, cum, wanted):
    """The tokens of the wanted buckets [n, N_BUCKETS] bool, in the reference's order, with the weight ahead.

    Order: row, then descending z = x / temp, equal z by ascending id (the reference's stable sort). One pass
    over [n, V] finds them; only they are sorted. weight: units [n, V] or None (1 per token: counts).
    Returns (rows, ids, z, before, after) [c] each: before = the weight of every token ahead of it in its row.
    """
    n, vocab = bucket.shape
    rows, ids = wanted.gather(1, bucket).nonzero(as_tuple=True)                  # [c] row by row, ids ascending
    at = rows * vocab + ids                                                      # [c] flat positions in [n, V]
    z = _flat(x).index_select(0, at) / temp[:, 0].index_select(0, rows) + 0.0    # [c] as x / temp; -0 -> 0
    bits = z.view(torch.int32).long()                                            # [c] float bits, sign-extended
    up = bits ^ ((bits >> 31) & 0x7FFFFFFF)                                      # [c] int order = float order
    order = ((rows << 32) | (0x7FFFFFFF - up)).argsort(stable=True)              # [c] row, z desc, id asc
    rows, ids, z, at = rows[order], ids[order], z[order], at[order]              # [c] the reference's order
    b = _flat(bucket).index_select(0, at)                                        # [c] descending in each row
    w = torch.ones_like(ids) if weight is None else _flat(weight).index_select(0, at)  # [c]
    ahead = w.cumsum(0) - w                                                      # [c] exact: integers
    first = torch.ones_like(rows, dtype=torch.bool)
    first[1:] = (rows[1:] != rows[:-1]) | (b[1:] != b[:-1])                      # [c] a bucket's first member
    ahead = ahead - ahead[first.nonzero()[:, 0]][first.cumsum(0) - 1]           # [c] ahead within its bucket
    above = _flat(cum).index_select(0, rows * cum.shape[1] + cum.shape[1] - 1) - _flat(cum).index_select(
        0, rows * cum.shape[1] + b)                                              # [c] weight of higher buckets
    return rows, ids, z, above + ahead, above + ahead + w


def crossing(members, quota):
    """(rows [m], ids, z, after): per row the member with before < quota <= after, if it was listed."""
    rows, ids, z, before, after = members
    q = quota[rows, 0]                                                           # [c]
    hit = ((before < q) & (q <= after)).nonzero()[:, 0]                          # [m] at most one per row
    return rows[hit], ids[hit, None], z[hit, None], after[hit, None]


def select_crossing(x, temp, bucket, weight, cum, quota):
    """Per row the token c with before_c < quota <= before_c + weight_c, in the reference's order.

    x [n, V], temp [n, 1], bucket [n, V], weight [n, V] int64 or None (counts), cum = bucket_cumsum(bucket,
    weight), quota [n, 1] int64 in [1, row total]. Returns (token [n, 1], its z [n, 1], after [n, 1]).
    """
    wanted = torch.zeros(cum.shape, dtype=torch.bool, device=cum.device)         # [n, NB]
    wanted.scatter_(1, bucket_of(cum, quota), True)                              # the crossing bucket only
    rows, ids, z, after = crossing(bucket_members(x, temp, bucket, weight, cum, wanted), quota)
    assert len(rows) == len(x), "every row has exactly one crossing token"
    return ids, z, after


def _flat(t):
    """t as one long row (a view when t is contiguous)."""
    return t.reshape(-1)
