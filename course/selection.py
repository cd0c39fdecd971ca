"""The exact route, given code (going further): top-k and top-p by selection, no sort, for the rows a window
cannot settle (a tie at the k-th value, a nucleus wider than the window, a top_k above WINDOW_K). The given
batch code of p08-fast (course/fast_batch.py) calls `exact_rows`; course.notebook.radix_demo.top_p_buckets shows
one row's numbers.

The fast path puts every token of a row in a bucket by the float bits of its weight exp(z - max): a
histogram of the probabilities on a log scale (one bucket = an exponent and 7 mantissa bits, so its upper
edge is 2**(1/128) times its lower edge). Adding the weights bucket by bucket from the top, the mass
crosses top_p inside one bucket; only that bucket's tokens are ordered, the rest is decided whole.
"""
import numpy as np
import torch

INF = float("inf")
SORT_MAX_V = 1024   # a vocabulary this small: sort the rows instead (the same integers, the same answer, and ops
                    # that do not depend on how many rows take the route)

BUCKET_SHIFT = 16    # a bucket: the float bits of a weight without the low 16 (exponent and 7 mantissa bits)
N_BUCKETS = (0x3F800000 >> BUCKET_SHIFT) + 1    # weights lie in [0, 1]; 0x3F800000 is the bits of 1.0


def row_weights(z, top=None, out=None, with_units=True):
    """z [n, V] -> e = exp(z - max) [n, V] in [0, 1] and units [n, V] int64, e in fixed point (fixed_point): the
    exact route's weights.

    top [n, 1]: the rows' max when the caller knows it (a window's first column); out: buffers (e, units, scratch
    fp32), by default the ones kept for this shape (_work: fresh 10-100 MB tensors cost page faults that can exceed
    the arithmetic on a CPU), which the next call of this shape overwrites.
    """
    if out is None:
        work = _work(*z.shape, z.device)                                         # (e, bucket, units, scratch)
        out = (work[0], work[2], work[3]) if work else (torch.empty_like(z), torch.empty(
            z.shape, dtype=torch.long, device=z.device), torch.empty_like(z))
    e, units, scratch = out
    torch.sub(z, z.amax(-1, keepdim=True) if top is None else top, out=e).exp_()  # [n, V] in [0, 1], max -> 1
    if not with_units:                                                           # e alone (for a caller
        return e, None                                                           # that sums e its own way)
    return e, fixed_point(e, out[1:])


def fixed_point(e, out=None):
    """e [n, V] in [0, 1] -> units [n, V] int64, e in fixed point (V of them sum below 2**62), into out (units,
    scratch)."""
    units, scratch = out if out is not None else (torch.empty(e.shape, dtype=torch.long, device=e.device), None)
    return units.copy_(torch.mul(e, 2.0 ** (62 - e.shape[-1].bit_length()), out=scratch))  # [n, V] floor


def weights_and_buckets(z, out=None):
    """z [n, V] -> e = exp(z - max) [n, V], bucket [n, V] int64 (grows with e), units [n, V] int64.

    bucket = e's float bits >> 16: a log-scale histogram bin (exponent and 7 mantissa bits); units: e in fixed point
    (fixed_point).
    out: optional buffers (e, bucket, units, scratch fp32), reused across calls.
    """
    e, bucket, units, scratch = out or (torch.empty_like(z), *(torch.empty(z.shape, dtype=torch.long,
                                        device=z.device) for _ in range(2)), torch.empty_like(z))
    row_weights(z, None, (e, units, scratch))                                    # [n, V] each
    torch.bitwise_right_shift(e.view(torch.int32), BUCKET_SHIFT, out=bucket)     # [n, V]
    return e, bucket, units


def bucket_cumsum(bucket, weight):
    """[n, N_BUCKETS] int64: the weight of each bucket and all below it."""
    ones = torch.ones(1, 1, dtype=torch.long, device=bucket.device).expand(bucket.shape)
    hist = torch.zeros(bucket.shape[0], N_BUCKETS, dtype=torch.long, device=bucket.device)  # [n, NB]
    return hist.scatter_add_(1, bucket, ones if weight is None else weight).cumsum_(-1)


def bucket_of(cum, quota):
    """[n, 1]: the bucket holding the token where the weight from the top first reaches quota (1 <= quota)."""
    return torch.searchsorted(cum, cum[:, -1:] - quota, right=True)


def bucket_members(x, temp, bucket, weight, cum, wanted):
    """The tokens of the wanted buckets [n, N_BUCKETS] bool, in the reference's order, with the weight up to them.

    Order: row, then descending z = x / temp, equal z in the reference's order. One pass
    over [n, V] finds them; only they are sorted. weight: units [n, V] or None (1 per token: counts).
    Returns (rows, ids, z, after) [c] each: after = the weight of the token and of every token ahead of it in its
    row (its `before` is after minus its own weight).
    """
    n, vocab = bucket.shape
    at = flat_nonzero(wanted.gather(1, bucket))                                  # [c] flat positions in [n, V]
    rows = at // vocab                                                           # [c] row by row, ids ascending
    z = _flat(x).index_select(0, at) / temp[:, 0].index_select(0, rows) + 0.0    # [c] as x / temp; -0 -> 0
    bits = z.view(torch.int32).long()                                            # [c] float bits, sign-extended
    up = bits ^ ((bits >> 31) & 0x7FFFFFFF)                                      # [c] int order = float order
    order = ((rows << 32) | (0x7FFFFFFF - up)).argsort(stable=True)              # [c] row, z desc, id asc
    rows, z, at = (t.index_select(0, order) for t in (rows, z, at))             # [c] the reference's order
    ids = at % vocab                                                             # [c]
    b = _flat(bucket).index_select(0, at)                                        # [c] descending in each row
    w = torch.ones_like(ids) if weight is None else _flat(weight).index_select(0, at)  # [c]
    ahead = w.cumsum(0) - w                                                      # [c] exact: integers
    first = torch.ones_like(rows, dtype=torch.bool)
    first[1:] = (rows[1:] != rows[:-1]) | (b[1:] != b[:-1])                      # [c] a bucket's first member
    start = torch.where(first, torch.arange(len(first), device=first.device), 0).cummax(0).values  # [c] its
    ahead = ahead - ahead.index_select(0, start)                                # bucket's first member: no sync
    above = _flat(cum).index_select(0, rows * cum.shape[1] + cum.shape[1] - 1) - _flat(cum).index_select(
        0, rows * cum.shape[1] + b)                                              # [c] weight of higher buckets
    return rows, ids, z, above + ahead + w


def crossing(members, quota, n, with_z=True):
    """Per row (ids, z, after) [n, 1] of the member with before < quota <= after (z None unless with_z).

    A row's members are contiguous and its `after` never decreases, so that member is the row's first with
    after >= quota: counting the members with after < quota finds it (index_add_, not a boolean index: no host
    sync). Only a row whose crossing bucket was listed gets its crossing; the callers read no other row."""
    rows, ids, z, after = members
    if not len(rows):                                                            # nothing listed, nothing read
        zeros = torch.zeros(n, 1, dtype=torch.long, device=rows.device)
        return zeros, torch.zeros(n, 1, dtype=z.dtype, device=z.device) if with_z else None, zeros
    start = torch.searchsorted(rows, torch.arange(n, device=rows.device))        # [n] each row's first member
    passed = (after < quota[:, 0].index_select(0, rows)).long()                 # [c] wholly before the quota
    at = start + torch.zeros(n, dtype=torch.long, device=rows.device).index_add_(0, rows, passed)  # [n]
    at = at.clamp(max=len(rows) - 1)                                             # [n] (a row with none: any)
    return ids[at, None], z[at, None] if with_z else None, after[at, None]     # [n, 1] each


def select_crossing(x, temp, bucket, weight, cum, quota):
    """Per row the token c with before_c < quota <= before_c + weight_c, in the reference's order.

    x [n, V], temp [n, 1], bucket [n, V], weight [n, V] int64 or None (counts), cum = bucket_cumsum(bucket,
    weight), quota [n, 1] int64 in [1, row total]. Returns (token [n, 1], its z [n, 1], after [n, 1]).
    """
    wanted = torch.zeros(cum.shape, dtype=torch.bool, device=cum.device)         # [n, NB]
    wanted.scatter_(1, bucket_of(cum, quota), True)                              # the crossing bucket only
    return crossing(bucket_members(x, temp, bucket, weight, cum, wanted), quota, len(x))


def flat_nonzero(mask):
    """The flat positions [c] of mask's True entries, ascending; a host sync either way (c is data). On a CPU,
    numpy's scan (several times faster than torch's nonzero there), elsewhere torch's nonzero."""
    if mask.device.type == "cpu":
        found = np.flatnonzero(mask.numpy()).astype(np.int64, copy=False)       # [c]
        return torch.frombuffer(found, dtype=torch.long) if len(found) else torch.zeros(0, dtype=torch.long)
    return _flat(mask).nonzero()[:, 0]


def _flat(t):
    """t as one long row (a view when t is contiguous)."""
    return t.reshape(-1)


_BUFFERS = {}        # (n, V, device) -> the work tensors of weights_and_buckets, for the last few shapes


def _work(n, vocab, device):
    """Buffers (e, bucket, units, scratch) [n, V], kept for 4 shapes up to 16M elements (fresh 10-100 MB tensors
    cost page faults that can exceed the arithmetic on a CPU)."""
    key = (n, vocab, str(device))
    if key not in _BUFFERS:
        if n * vocab > 1 << 24:
            return None                                                          # too big to keep around
        while len(_BUFFERS) >= 4:
            _BUFFERS.pop(next(iter(_BUFFERS)))
        with torch.inference_mode(False):                                        # ordinary tensors: usable in
            _BUFFERS[key] = (torch.empty(n, vocab, device=device), *(torch.empty(   # and out of inference mode
                n, vocab, dtype=torch.long, device=device) for _ in range(2)), torch.empty(n, vocab, device=device))
    return _BUFFERS[key]


def _sorted_crossing(order, z, after, quota):
    """(ids, z, after) [n, 1] of the crossing token, in rows sorted the reference's way with running weights."""
    at = torch.searchsorted(after, quota)                                        # first position: after >= quota
    return order.gather(1, at), z.gather(1, at), after.gather(1, at)


def exact_rows(x, temp, top_k, top_p, u=None, has_top_k=True, unit_temp=False, weights=None):
    """Steps 4-6 of the rows of x [n, V] by selection: tokens [n, 1] given u [n, 1], else probs [n, V].

    temp [n, 1] fp32, top_k [n, 1] long (0: off), top_p [n, 1] (inf: off), u [n, 1] float64 in [0, 1);
    has_top_k=False: no row has top-k on; unit_temp: every temperature is 1 (the host knows; each saves a pass);
    weights: (e, units) = row_weights(x / temp) of these rows when the caller has them already (a top-p window
    weighed its rows for their 100 %): the pass over [n, V] is not paid twice.
    Every decision is an integer crossing (before < quota <= after) in the reference's order: top-k counts to the
    k-th value and weighs 0 below it; top-p cuts at the crossing token c of ceil(top_p * mass) and keeps the tokens
    at or ahead of c; the draw is the crossing token of u * kept. Rows of a small vocabulary sort instead.
    """
    n, vocab, dev = x.shape[0], x.shape[1], x.device
    small = vocab <= SORT_MAX_V
    if weights is None or has_top_k or small or u is None:                       # else only the weights need z
        z = x if unit_temp else x / temp                                         # [n, V]; x / 1 is x
    if weights is None:
        e, bucket, units = weights_and_buckets(z, _work(n, vocab, dev))          # [n, V] each
    else:
        (e, units), work = weights, _work(n, vocab, dev)
        if units is None:                                                        # the caller weighed e only
            units = fixed_point(e, (work[2], work[3]) if work else None)
        bucket = torch.bitwise_right_shift(e.view(torch.int32), BUCKET_SHIFT, out=work[1] if work else None)
    if small:
        z_s, order = torch.sort(z, dim=-1, descending=True, stable=True)         # [n, V]
    cut_z = torch.full((n, 1), -INF, device=dev)                                 # [n, 1] no cut: keep all
    if has_top_k:                                                                # top-k: the k-th value
        if small:
            z_k = z_s.gather(1, (top_k - 1).clamp(min=0))
        else:
            z_k = select_crossing(x, temp, bucket, None, bucket_cumsum(bucket, None), top_k.clamp(min=1))[1]
        cut_z = torch.where(top_k > 0, z_k, cut_z)                               # [n, 1]
        units = units.masked_fill(z < cut_z, 0)                                  # [n, V] weight 0 below it
    if small:
        after_s = units.gather(1, order).cumsum(-1)                              # [n, V] exact: integers
        total = after_s[:, -1:]
        def cross(quota, with_z=True):
            return _sorted_crossing(order, z_s, after_s, quota)
    else:
        cum = bucket_cumsum(bucket, units)                                       # [n, NB]
        total = cum[:, -1:]                                                      # [n, 1] in units
    p = torch.where(top_p < 1, top_p.double(), 0.0)                              # [n, 1] 0: no top-p
    quota = (p * total).ceil().long()                                            # [n, 1] 0: no top-p
    if not small:
        b_cut = bucket_of(cum, quota.clamp(min=1))                               # [n, 1]
        wanted = torch.zeros(cum.shape, dtype=torch.bool, device=dev).scatter_(1, b_cut, quota > 0)
        if u is not None:                                                        # the buckets the draw can reach:
            below = torch.cat([cum.gather(1, b_cut), cum.gather(1, (b_cut - 1).clamp(min=0)) * (b_cut > 0)], 1)
            kept = torch.where(quota > 0, total - below, total)                  # [n, 2] the kept mass from
            kept[:, :1] += (quota > 0).long()                                    # the cut's bucket (+1) and above
            reach = bucket_of(cum, torch.minimum((u * kept.double()).long() + 1, kept))  # [n, 2] low, high
            cols = torch.arange(cum.shape[1], device=dev)                        # [NB]
            wanted |= (cols >= reach[:, 1:]) & (cols <= reach[:, :1])
        members = bucket_members(x, temp, bucket, units, cum, wanted)
        def cross(quota, with_z=True):
            return crossing(members, quota, n, with_z)
    cut_id, cut, kept = cross(quota, with_z=u is None)                           # the top-p cut, per row
    kept = torch.where(quota > 0, kept, total)                                   # [n, 1] kept mass, in units
    if u is not None:
        return cross(torch.minimum((u * kept.double()).long() + 1, kept), with_z=False)[0]  # step 6: the draw
    cut_z = torch.where(quota > 0, cut, cut_z)                                   # [n, 1]
    cut_id = torch.where(quota > 0, cut_id, vocab)                               # [n, 1] top-k ties: all kept
    keep = (z > cut_z) | ((z == cut_z) & (torch.arange(vocab, device=dev) <= cut_id))   # [n, V]
    mass = (kept.double() / 2.0 ** (62 - vocab.bit_length())).float()           # [n, 1] units -> weight
    return torch.where(keep, e, 0.0) / mass                                      # [n, V] exact zeros outside
