"""P08 fast path: the reference sampler's semantics, vectorized over the batch, without a full-vocab sort.

Per row, exactly the reference's rule (solutions/p08_sampler.py):
penalty -> greedy? -> temperature -> top-k -> top-p -> draw with the request's own generator.
A row's kept set is found in one of two exact ways:
- the window (rows with a small top_k): one top-k pass to [n, W], exp and prefix sums over W only, one
  uniform per row for an inverse-CDF draw: p08-fast's steps 1-6 (notebooks/p08_fast_path.ipynb).
- the selection (top-p-only rows, a large top_k, no filter): put every token in a bucket by the float bits
  of its weight exp(z - max) (a log-scale histogram of the probabilities), add the weights per bucket as
  integers, find the bucket where the mass crosses top_p and order only that bucket's tokens. The draw is
  a second selection, at u * the kept mass.

Batch invariance, bit for bit: a row's floats are elementwise, or window prefix sums whose entry j is one
fixed tree of adds over columns 0..j (prefix_sum), or int64 sums of fixed-point weights (exact, so the same
in any order, batch and device); equal values sit in ascending token id (the reference's stable sort);
decisions are comparisons and integer counts; which way a row goes depends on the row alone; and the one
uniform a row consumes comes from its own generator.
"""
import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs

__all__ = ["SamplingParams", "FastSampler", "penalized_fp32", "window_topk", "canonical_window", "prefix_sum",
           "row_total", "filter_window", "inverse_cdf", "weights_and_buckets", "bucket_cumsum", "select_crossing",
           "bucket_picture"]

CHUNK = 64           # window_topk reads the row as chunks of this many logits
WINDOW_K = 256       # rows with 0 < top_k <= WINDOW_K use the window; a larger top_k uses the selection
BUCKET_SHIFT = 16    # a bucket: the float bits of a weight without the low 16 (exponent and 7 mantissa bits)
N_BUCKETS = (0x3F800000 >> BUCKET_SHIFT) + 1    # weights lie in [0, 1]; 0x3F800000 is the bits of 1.0
INF = float("inf")


# step 1: prepare -------------------------------------------------------------------------------------
def penalized_fp32(logits, params, prev_tokens):
    """Step 1: fp32 logits [B, V]; the penalty goes onto a copy, at each row's distinct prev ids only."""
    x = logits if logits.dtype == torch.float32 else logits.float()              # [B, V], fp32 input: no copy
    rows, ids, pens = [], [], []
    for i, (p, prev) in enumerate(zip(params, prev_tokens)):
        if p.repetition_penalty != 1.0 and len(prev) > 0:
            seen = sorted(set(prev.tolist() if isinstance(prev, torch.Tensor) else prev))
            rows += [i] * len(seen)
            ids += seen
            pens += [p.repetition_penalty] * len(seen)
    if not rows:
        return x
    if x is logits:
        x = x.clone()                                                           # never the caller's tensor
    rows = torch.tensor(rows, device=x.device)                                  # [n]
    ids = torch.tensor(ids, device=x.device)                                    # [n]
    pens = torch.tensor(pens, dtype=torch.float32, device=x.device)             # [n]
    values = x[rows, ids]                                                       # [n]
    x[rows, ids] = torch.where(values > 0, values / pens, values * pens)
    return x


# step 3: the window ----------------------------------------------------------------------------------
def window_topk(x, width):
    """Exact torch.topk(x, width) [n, W]: chunk maxima pick the W chunks holding the top W; topk reads those."""
    n, vocab = x.shape
    chunks = vocab // CHUNK
    if chunks < 4 * width:
        return torch.topk(x, width, dim=-1)                                      # [n, W] few chunks: no gain
    body = x[:, :chunks * CHUNK].view(n, chunks, CHUNK)                          # [n, C, L] a view, no copy
    best = torch.topk(body.amax(-1), width, dim=-1).indices                      # [n, W] chunks with top maxima
    cand = body.gather(1, best[:, :, None].expand(n, width, CHUNK))              # [n, W, L] outside: <= W of these
    cand = torch.cat([cand.view(n, width * CHUNK), x[:, chunks * CHUNK:]], 1)    # [n, W*L + tail]
    vals, pos = torch.topk(cand, width, dim=-1)                                  # [n, W]
    in_body = pos < width * CHUNK
    ids = best.gather(1, (pos // CHUNK).clamp(max=width - 1)) * CHUNK + pos % CHUNK  # [n, W] vocab ids
    return vals, torch.where(in_body, ids, pos - width * CHUNK + chunks * CHUNK)


def canonical_window(z, ids):
    """Reorder a descending window [n, W] so equal values sit in ascending token id (a stable sort's order)."""
    if not bool((z[:, 1:] == z[:, :-1]).any()):
        return z, ids                                                            # no ties: already canonical
    ids, by_id = ids.sort(dim=-1)                                                # [n, W] ascending ids
    z, by_value = z.gather(-1, by_id).sort(dim=-1, descending=True, stable=True)  # [n, W] ties keep id order
    return z, ids.gather(-1, by_value)                                          # [n, W], [n, W]


# sums whose rounding depends on the row alone -------------------------------------------------------
def prefix_sum(e):
    """Inclusive prefix sums [n, W] by log-step shifted adds: entry j is one fixed tree of adds over e[0..j].

    So entry j is the same float for any W, any batch size and any device. (torch.cumsum is sequential on
    the CPU, but on CUDA a lone row takes another kernel than a batch, with another order of adds.)
    """
    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1      # two buffers, no more allocs
    while shift < e.shape[-1]:
        out = buffers[0] if cs is not buffers[0] else buffers[1]                 # [n, W]
        out[:, :shift] = cs[:, :shift]
        torch.add(cs[:, shift:], cs[:, :-shift], out=out[:, shift:])
        cs, shift = out, shift * 2
    return cs


def row_total(e):
    """[n, V] -> [n, 1] sums by pairwise halving: a tree fixed by V alone (torch.sum splits a lone row)."""
    while e.shape[-1] > 1:
        half = e.shape[-1] // 2
        e = torch.cat([e[:, :half] + e[:, half:2 * half], e[:, 2 * half:]], dim=-1)  # [n, ceil(V / 2)]
    return e


def _first_true(mask):
    """[n, W] bool -> [n, 1] long: the column of the first True (W where there is none); integer ops only."""
    if mask.shape[-1] == 0:
        return torch.zeros(mask.shape[0], 1, dtype=torch.long, device=mask.device)
    cols = torch.arange(mask.shape[-1], dtype=torch.int32, device=mask.device)
    return torch.where(mask, cols, mask.shape[-1]).amin(-1, keepdim=True).long()


# step 4: top-k and top-p inside the window -----------------------------------------------------------
def filter_window(z, top_k, top_p, row_mass, complete):
    """Steps 4-5 on a descending window z [n, W]: keep values >= the k-th, then drop once mass_before >= p.

    top_k [n, 1] (0 = off), top_p [n, 1] (inf = off), row_mass [n, 1] = sum of exp(z - max) over the whole
    row (the 100 % of top-p when top-k is off). complete: the window is the whole row. Returns e [n, W]
    (kept unnormalised probs, exactly 0 elsewhere), cs [n, W] (prefix sums of the window's exp), total
    [n, 1] (the kept mass) and certain [n] (the window holds the whole kept set; if not: widen, or select).
    """
    e = torch.exp(z - z[:, :1])                                                  # [n, W]; z[:, 0] is the max
    cs = prefix_sum(e)                                                           # [n, W] entry j: W-independent
    kth = torch.where(top_k > 0, z.gather(1, (top_k - 1).clamp(min=0)), -INF)   # [n, 1] the k-th largest
    n_top_k = (z >= kth).sum(-1, keepdim=True)                                   # [n, 1] top-k keeps a prefix
    mass = torch.where(top_k > 0, cs.gather(1, n_top_k - 1), row_mass)          # [n, 1] top-p's 100 %
    n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)                        # [n, 1] first column dropped
    n_kept = torch.minimum(n_top_k, n_top_p)                                     # [n, 1] >= 1: column 0 stays
    e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)  # [n, W] step 5: exact zeros
    total = cs.gather(1, n_kept - 1)                                             # [n, 1] at the row's own end
    if complete:
        return e, cs, total, torch.ones(len(z), dtype=torch.bool, device=z.device)
    last = z[:, -1:]                                                             # [n, 1] smallest in the window
    certain = (z.gather(1, n_kept - 1) > last) & (kth != last)   # no tie of the last kept / k-th value outside
    return e, cs, total, certain[:, 0]


# step 4, the other way: selection over the whole row, no sort ---------------------------------------
def weights_and_buckets(z):
    """z [n, V] (overwritten) -> e = exp(z - max) [n, V], bucket [n, V] int64 (grows with e), units [n, V] int64.

    bucket = e's float bits >> 16: a log-scale histogram bin (exponent and 7 mantissa bits); units = floor(e *
    2**(62 - V.bit_length())): fixed-point weights whose int64 sums are exact (< 2**62), in any order.
    """
    e = z.sub_(z.amax(-1, keepdim=True)).exp_()                                  # [n, V] in [0, 1], max -> 1
    bucket = torch.bitwise_right_shift(e.view(torch.int32), BUCKET_SHIFT,
                                       out=torch.empty(e.shape, dtype=torch.long, device=e.device))  # [n, V]
    units = (e * 2.0 ** (62 - e.shape[-1].bit_length())).long()                 # [n, V] fixed point
    return e, bucket, units


def bucket_cumsum(bucket, weight):
    """[n, N_BUCKETS] int64: the weight of each bucket and all below it (integer adds: exact in any order)."""
    ones = torch.ones(1, 1, dtype=torch.long, device=bucket.device).expand(bucket.shape)
    hist = torch.zeros(bucket.shape[0], N_BUCKETS, dtype=torch.long, device=bucket.device)  # [n, NB]
    return hist.scatter_add_(1, bucket, ones if weight is None else weight).cumsum_(-1)


def select_crossing(x, temp, bucket, weight, cum, quota):
    """Per row the token c with before_c < quota <= before_c + weight_c, in the reference's order.

    The order: descending z = x / temp, equal z by ascending id; before_c: the weight of the tokens ahead
    of c. x [n, V], temp [n, 1], bucket [n, V] (ascending in z), weight [n, V] int64 or None (1 each:
    counts), cum = bucket_cumsum(bucket, weight), quota [n, 1] int64 in [1, row total]. One pass finds the
    members of the bucket where the weight crosses quota; only they are sorted.
    Returns (token [n, 1], its z [n, 1], before_c + weight_c [n, 1]).
    """
    n, vocab = bucket.shape
    id_bits = vocab.bit_length()
    block = 1 << (30 - id_bits)                                                  # rows that fit in one sort key
    if n > block:
        parts = [select_crossing(x[s:s + block], temp[s:s + block], bucket[s:s + block],
                                 None if weight is None else weight[s:s + block], cum[s:s + block],
                                 quota[s:s + block]) for s in range(0, n, block)]
        return tuple(torch.cat(part) for part in zip(*parts))
    total = cum[:, -1:]                                                          # [n, 1]
    b = torch.searchsorted(cum, total - quota, right=True)                      # [n, 1] the crossing bucket
    above = total - cum.gather(1, b)                                             # [n, 1] weight of higher buckets
    rows, ids = (bucket == b).nonzero(as_tuple=True)                             # [c] its members, row by row
    z = x[rows, ids] / temp[rows, 0] + 0.0                                       # [c] z as in x / temp; -0 -> 0
    bits = z.view(torch.int32).long()                                            # [c] float bits, sign-extended
    up = bits ^ ((bits >> 31) & 0x7FFFFFFF)                                      # [c] int order = float order
    key = (rows << (32 + id_bits)) | ((0x7FFFFFFF - up) << id_bits) | ids        # [c] row, z desc, id asc
    order = key.argsort()
    rows, ids, z = rows[order], ids[order], z[order]                             # [c] the reference's order
    w = torch.ones_like(ids) if weight is None else weight[rows, ids]            # [c]
    ahead = w.cumsum(0) - w                                                      # [c] exact: integers
    start = torch.searchsorted(rows, torch.arange(n, device=rows.device))        # [n] first member of each row
    before = above[rows, 0] + ahead - ahead[start][rows]                         # [c]
    q = quota[rows, 0]
    hit = ((before < q) & (q <= before + w)).nonzero()[:, 0]                     # [n] one per row, in row order
    assert hit.numel() == n, "every row has exactly one crossing token"
    return ids[hit, None], z[hit, None], (before + w)[hit, None]


def bucket_picture(row, top_p, temperature=1.0):
    """One row's top-p by selection, for a plot: its non-empty buckets, most likely first, and the crossing.

    row [V] logits. Returns a dict of lists (one entry per non-empty bucket): 'low', 'high' (the bucket's
    edges as probabilities), 'mass' (its share of the row's probability), 'before' (the share of the buckets
    above it); 'crossing': the index of the bucket where the mass reaches top_p; 'kept': tokens kept.
    """
    x = row.float().reshape(1, -1)                                               # [1, V]
    temp = torch.tensor([[temperature]], dtype=torch.float32, device=x.device)   # [1, 1]
    e, bucket, units = weights_and_buckets(x / temp)
    cum = bucket_cumsum(bucket, units)                                           # [1, NB]
    total = cum[:, -1:]
    quota = (torch.tensor(top_p, dtype=torch.float32).double() * total).ceil().long().clamp(1, None)
    token, z_cut, kept_mass = select_crossing(x, temp, bucket, units, cum, quota)
    kept = int(((x / temp > z_cut) | ((x / temp == z_cut) & (torch.arange(x.shape[1]) <= token))).sum())
    hist = torch.diff(cum[0], prepend=cum[0, :1] * 0)                            # [NB] weight per bucket
    full = torch.bincount(bucket[0], minlength=N_BUCKETS) > 0                    # [NB] non-empty buckets
    ids = full.nonzero()[:, 0].flip(0)                                           # [m] top bucket first
    scale = 2.0 ** (62 - x.shape[1].bit_length())
    low = torch.tensor((ids << BUCKET_SHIFT).tolist(), dtype=torch.int32).view(torch.float32).double() * scale
    high = torch.tensor(((ids + 1) << BUCKET_SHIFT).tolist(), dtype=torch.int32).view(torch.float32).double() * scale
    share = hist[ids].double() / total.double()[0]
    crossing = int((ids == bucket[0, token[0, 0]]).nonzero()[0, 0])
    return {"low": (low / total[0].double()).tolist(), "high": (high / total[0].double()).tolist(),
            "mass": share.tolist(), "before": (share.cumsum(0) - share).tolist(), "crossing": crossing,
            "kept": kept, "kept_mass": kept_mass.item() / total.item()}


# step 6: the draw -----------------------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 6: the first column whose prefix mass exceeds u * total and has mass; else the last with mass."""
    has_mass = e > 0                                                             # [n, W]
    first = _first_true((cs > u * total) & has_mass)                             # [n, 1] W if rounding misses
    cols = torch.arange(e.shape[1], dtype=torch.int32, device=e.device)
    return torch.minimum(first, torch.where(has_mass, cols, -1).amax(-1, keepdim=True).long())  # [n, 1]


def _take(t, rows):
    """t's rows listed in `rows` (a copy), or t itself when `rows` is every row in order."""
    if len(rows) == t.shape[0] and rows == list(range(t.shape[0])):
        return t
    return t.index_select(0, torch.tensor(rows, device=t.device))


# the sampler ----------------------------------------------------------------------------------------
class FastSampler:
    """Same contract as the reference Sampler; one vectorized pass per batch, bit-for-bit batch invariant."""

    def __init__(self):
        self._seeded = {}   # req_id -> torch.Generator, created on first draw, dropped by free()
        self._shared = {}   # device -> torch.Generator shared by the unseeded requests

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        x = penalized_fp32(logits, params, prev_tokens)                          # [B, V]
        greedy, window, chosen = self._parts(x, params)
        tokens = torch.empty(x.shape[0], dtype=torch.long, device=x.device)     # [B]
        if greedy:
            tokens[greedy] = torch.argmax(_take(x, greedy), dim=-1)              # step 2: torch's tie rule
        if window:
            rows, e, cs, total, ids = window
            u = self._uniforms([req_ids[i] for i in rows], [params[i] for i in rows], x.device)  # [n, 1]
            tokens[rows] = ids.gather(1, inverse_cdf(cs, total, u, e))[:, 0]     # [n] vocab ids
        if chosen:
            rows, xs, temp, e, bucket, units, cum, kept, _, _ = chosen
            u = self._uniforms([req_ids[i] for i in rows], [params[i] for i in rows], x.device)  # [n, 1]
            quota = torch.minimum((u * kept.double()).long() + 1, kept)          # [n, 1] in [1, kept]
            tokens[rows] = select_crossing(xs, temp, bucket, units, cum, quota)[0][:, 0]  # step 6 by selection
        return tokens

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        x = penalized_fp32(logits, params, prev_tokens)                          # [B, V]
        greedy, window, chosen = self._parts(x, params)
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)        # [B, V]
        if greedy:
            out[greedy, torch.argmax(_take(x, greedy), dim=-1)] = 1.0
        if window:
            rows, e, cs, total, ids = window
            out[rows] = torch.zeros(len(rows), x.shape[1], device=x.device).scatter_(1, ids, e / total)  # [n, V]
        if chosen:
            rows, xs, temp, e, bucket, units, cum, kept, cut_z, cut_id = chosen
            z = xs / temp                                                        # [n, V] as in the selection
            keep = (z > cut_z) | ((z == cut_z) & (torch.arange(x.shape[1], device=x.device) <= cut_id))
            mass = (kept.double() / 2.0 ** (62 - x.shape[1].bit_length())).float()  # [n, 1] units -> weight
            out[rows] = torch.where(keep, e, 0.0) / mass                         # [n, V] exact zeros outside
        return out

    def free(self, req_id):
        """Forget req_id's generator; a later request with the same id starts a fresh stream."""
        self._seeded.pop(req_id, None)

    # -- internals ------------------------------------------------------------------------------------
    def _uniforms(self, req_ids, params, device):
        """[n, 1] float64: one uniform per row, a seeded row's from its own generator, the others' shared."""
        shared = [i for i, p in enumerate(params) if p.seed is None]
        if len(shared) == len(params):
            return torch.rand(len(params), 1, generator=self._shared_generator(device), dtype=torch.float64,
                              device=device)
        draws = []
        for req_id, p in zip(req_ids, params):                                   # one scalar draw per row
            if p.seed is not None and req_id not in self._seeded:
                self._seeded[req_id] = torch.Generator(device=device).manual_seed(p.seed)
            generator = self._shared_generator(device) if p.seed is None else self._seeded[req_id]
            draws.append(torch.rand(1, generator=generator, dtype=torch.float64, device=device))
        return torch.cat(draws)[:, None]

    def _shared_generator(self, device):
        """The unseeded requests' generator on `device`, seeded from torch.initial_seed() like the reference."""
        if device not in self._shared:
            self._shared[device] = torch.Generator(device=device).manual_seed(torch.initial_seed())
        return self._shared[device]

    def _parts(self, x, params):
        """Steps 2-5: (greedy rows, the window's (rows, e, cs, total, ids), the selection's state), None if no rows.

        A row with 0 < top_k <= WINDOW_K goes to the window, unless its k-th value ties the next one (the run
        of ties may leave the window: it depends on the row alone); every other sampled row to the selection.
        """
        vocab = x.shape[1]
        greedy, window, select = [], [], []
        for i, p in enumerate(params):                                           # step 2: who goes where
            if p.temperature < GREEDY_TEMPERATURE:
                greedy.append(i)
            elif 0 < p.top_k <= WINDOW_K and p.top_k < vocab:
                window.append(i)
            else:
                select.append(i)
        parts = self._window(x, window, params) if window else (None, [])
        select = sorted(select + parts[1])
        return greedy, parts[0], self._select(x, select, params) if select else None

    def _window(self, x, rows, params):
        """Steps 3-5 in a [n, W] window: ((rows, e, cs, total, ids) or None, rows whose k-th value ties the next)."""
        knobs = torch.tensor([[params[i].temperature, params[i].top_k, params[i].top_p if params[i].top_p < 1 else INF]
                              for i in rows], device=x.device)                   # [n, 3] fp32
        temp, top_k, top_p = knobs[:, :1], knobs[:, 1:2].long(), knobs[:, 2:]    # [n, 1] each
        width = max(params[i].top_k for i in rows) + 1                           # top_k + 1: see a tie go on
        vals, ids = window_topk(_take(x, rows), width)                           # [n, W] the one pass over V
        z, ids = canonical_window(vals / temp, ids)                              # [n, W] temperature on W only
        spill = z.gather(1, top_k - 1) == z.gather(1, top_k)                     # [n, 1] k-th value ties the next
        spilled = []
        if bool(spill.any()):
            flags = spill[:, 0].tolist()
            spilled = [i for i, s in zip(rows, flags) if s]
            rows = [i for i, s in zip(rows, flags) if not s]
            if not rows:
                return None, spilled
            keep = ~spill[:, 0]
            z, ids, top_k, top_p = z[keep], ids[keep], top_k[keep], top_p[keep]
        e, cs, total, _ = filter_window(z, top_k, top_p, torch.zeros_like(top_p), complete=True)  # no tie at k:
        return (rows, e, cs, total, ids), spilled                                # the kept set is in the window

    def _select(self, x, rows, params):
        """Steps 3-5 by selection: (rows, xs, temp, e, bucket, units, cum, kept units, cut z, cut id), each [n, ...].

        A row keeps the tokens at or ahead of its cut token (z > cut z, or equal z and id <= cut id).
        """
        vocab, dev = x.shape[1], x.device
        knobs = torch.tensor([[params[i].temperature, params[i].top_p] for i in rows], device=dev)  # [n, 2] fp32
        temp = knobs[:, :1]                                                      # [n, 1]
        xs = _take(x, rows)                                                      # [n, V]
        e, bucket, units = weights_and_buckets(xs / temp)                        # [n, V] each
        cut_z = torch.full((len(rows), 1), -INF, device=dev)                     # [n, 1] no cut: keep all
        cut_id = torch.full((len(rows), 1), vocab, device=dev)                   # [n, 1]
        big_k = [j for j, i in enumerate(rows) if 0 < params[i].top_k < vocab]
        if big_k:                                                                # top-k by counting
            sub = torch.tensor(big_k, device=dev)
            k = torch.tensor([[params[rows[j]].top_k] for j in big_k], device=dev)  # [m, 1]
            _, z_k, _ = select_crossing(xs[sub], temp[sub], bucket[sub], None, bucket_cumsum(bucket[sub], None), k)
            units[sub] = units[sub].masked_fill(xs[sub] / temp[sub] < z_k, 0)   # [m, V] weight 0 below the k-th
            cut_z[sub] = z_k
        cum = bucket_cumsum(bucket, units)                                       # [n, NB]
        kept = cum[:, -1:].clone()                                               # [n, 1] kept mass, in units
        cut = [j for j, i in enumerate(rows) if params[i].top_p < 1]
        if cut:                                                                  # top-p: the crossing token
            sub = list(range(len(rows))) if len(cut) == len(rows) else cut
            quota = (_take(knobs, sub)[:, 1:].double() * _take(kept, sub).double()).ceil().long()  # [m, 1]
            ids, z_cut, mass = select_crossing(_take(xs, sub), _take(temp, sub), _take(bucket, sub),
                                               _take(units, sub), _take(cum, sub), quota)
            sub = torch.tensor(sub, device=dev)
            cut_z[sub], cut_id[sub], kept[sub] = z_cut, ids, mass
        return rows, xs, temp, e, bucket, units, cum, kept, cut_z, cut_id
