"""P08 fast path: the reference sampler's semantics, vectorized over the batch, without a full-vocab sort.

Per row, exactly the reference's rule (solutions/p08_sampler.py):
penalty -> greedy? -> temperature -> top-k -> top-p -> draw with the request's own generator.
A row's kept set is found in one of two exact ways:
- the window (rows with a small top_k): one top-k pass to [n, W], exp and prefix sums over W only, one
  uniform per row for an inverse-CDF draw: p08-fast's steps 1-6 (notebooks/p08_fast_path.ipynb). The top-k
  pass and the greedy rows' argmax read the logits once, as maxima of chunks of 64 (course/chunks.py).
- the selection (top-p-only rows, a large top_k, no filter): put every token in a bucket by the float bits
  of its weight exp(z - max) (a log-scale histogram of the probabilities), add the weights per bucket as
  integers, find the bucket where the mass crosses top_p and order only that bucket's tokens. The draw is
  a second selection, at u * the kept mass.

Batch invariance, bit for bit: a row's floats are elementwise, or window prefix sums whose entry j is the
same adds over columns 0..j for any W and batch (filter_window: torch.cumsum's one float64 pass per row on
the CPU, the fixed tree of prefix_sum elsewhere), or int64 sums of fixed-point weights (exact, so the same in
any order, batch and device); equal values sit in ascending token id (the reference's stable sort);
decisions are comparisons and integer counts; which way a row goes depends on the row alone (so rows with a
penalty may be sampled apart from the others); and the one uniform a row consumes comes from its own
generator.
"""
from functools import partial

import torch

from course.chunks import CHUNK, argmax_rows, chunk_maxima
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs
from course.selection import (bucket_cumsum, bucket_members, bucket_of, crossing, select_crossing,
                              weights_and_buckets)

__all__ = ["SamplingParams", "FastSampler", "penalized_fp32", "window_topk", "canonical_window", "prefix_sum",
           "row_total", "filter_window", "inverse_cdf", "weights_and_buckets", "bucket_cumsum", "bucket_of",
           "bucket_members", "crossing", "select_crossing"]

WINDOW_K = 256       # rows with 0 < top_k <= WINDOW_K use the window; a larger top_k uses the selection
SORT_MAX = 4096      # the selection sorts its rows when rows * V is at most this (the same integers: the same answer)
INF = float("inf")


# step 1: prepare -------------------------------------------------------------------------------------
def penalized_fp32(logits, params, prev_tokens, fresh=False):
    """Step 1: fp32 logits [B, V]; the penalty goes onto a copy (fresh: logits is one already), at each row's
    distinct prev ids only."""
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
    if x is logits and not fresh:
        x = x.clone()                                                           # never the caller's tensor
    rows = torch.tensor(rows, device=x.device)                                  # [n]
    ids = torch.tensor(ids, device=x.device)                                    # [n]
    pens = torch.tensor(pens, dtype=torch.float32, device=x.device)             # [n]
    values = x[rows, ids]                                                       # [n]
    x[rows, ids] = torch.where(values > 0, values / pens, values * pens)
    return x


def _sources(logits, params, prev_tokens):
    """[(x, at, ps)]: step 1 without copying a row that has no penalty. x [m, V] fp32, at[j] = the batch row
    of x's row j, ps[j] its params (None: another source samples it). A row's result depends on the row alone,
    so sampling the batch as two parts gives the same tokens."""
    batch = len(params)
    pen = [i for i, (p, prev) in enumerate(zip(params, prev_tokens)) if p.repetition_penalty != 1.0 and len(prev)]
    if logits.dtype != torch.float32 or not pen or len(pen) == batch or logits.numel() < 1 << 18:  # one copy
        return [(penalized_fp32(logits, params, prev_tokens), range(batch), params)]
    ps = [params[i] for i in pen]
    copy = penalized_fp32(logits.index_select(0, torch.tensor(pen, device=logits.device)), ps,
                          [prev_tokens[i] for i in pen], fresh=True)            # [m, V] the penalised rows only
    skip = set(pen)
    return [(logits, range(batch), [None if i in skip else p for i, p in enumerate(params)]), (copy, pen, ps)]


# step 3: the window ----------------------------------------------------------------------------------
def window_topk(x, width, rows=None, maxima=None):
    """Exact torch.topk(x[rows], width) [n, W]: chunk maxima pick the W chunks holding the top W; topk reads those.

    rows: LongTensor [n] of x's rows (None: all of them); maxima: chunk_maxima(x) [B, C] if the caller has it.
    Only the listed rows' picked chunks are copied, never whole rows (unless x is not contiguous: then x once).
    """
    chunks = x.shape[1] // CHUNK
    if chunks < 4 * width:
        return torch.topk(x if rows is None else x.index_select(0, rows), width, dim=-1)  # few chunks: no gain
    body = x[:, :chunks * CHUNK].view(len(x), chunks, CHUNK)                     # [B, C, L] a view, no copy
    rows = torch.arange(len(x), device=x.device) if rows is None else rows      # [n]
    maxima = body.amax(-1) if maxima is None else maxima                        # [B, C]
    best = torch.topk(maxima[rows], width, dim=-1, sorted=False).indices        # [n, W] chunks with top maxima
    starts = (rows[:, None] * x.shape[1] + best * CHUNK).view(-1)               # [n*W] picked chunks' offsets
    spans = x.reshape(-1).unfold(0, CHUNK, 1)                                   # [B*V - L + 1, L] a view
    cand = spans.index_select(0, starts).view(len(rows), width * CHUNK)         # [n, W*L] outside: <= W of these
    cand = torch.cat([cand, x[rows, chunks * CHUNK:]], 1)                       # [n, W*L + tail]
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
    cols = torch.arange(mask.shape[-1], device=mask.device)
    return torch.where(mask, cols, mask.shape[-1]).amin(-1, keepdim=True)


# step 4: top-k and top-p inside the window -----------------------------------------------------------
def filter_window(z, top_k, top_p, row_mass, complete):
    """Steps 4-5 on a descending window z [n, W]: keep values >= the k-th, then drop once mass_before >= p.

    top_k [n, 1] (0 = off), top_p [n, 1] (inf = off), row_mass [n, 1] = sum of exp(z - max) over the whole
    row (the 100 % of top-p when top-k is off). complete: the window is the whole row. The sampler's shortcuts:
    top_p None = off in every row, row_mass None = top-k on in every row. Returns e [n, W]
    (kept unnormalised probs, exactly 0 elsewhere), cs [n, W] (prefix sums of the window's exp), total
    [n, 1] (the kept mass) and certain [n] (the window holds the whole kept set; if not: widen, or select).
    """
    e = torch.exp(z - z[:, :1])                                                  # [n, W]; z[:, 0] is the max
    cs = e.cumsum(-1) if e.device.type == "cpu" else prefix_sum(e)              # [n, W] entry j: W-independent
    if row_mass is None:
        kth = z.gather(1, top_k - 1)                                             # [n, 1] the k-th largest
    else:
        kth = torch.where(top_k > 0, z.gather(1, (top_k - 1).clamp(min=0)), -INF)  # [n, 1] -inf: top-k off
    n_top_k = (z >= kth).sum(-1, keepdim=True)                                   # [n, 1] top-k keeps a prefix
    n_kept = n_top_k
    if top_p is not None:                                                        # None: top-p off in every row
        mass = cs.gather(1, n_top_k - 1)                                         # [n, 1] top-p's 100 %
        if row_mass is not None:
            mass = torch.where(top_k > 0, mass, row_mass)
        n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)                    # [n, 1] first column dropped
        n_kept = torch.minimum(n_top_k, n_top_p)                                 # [n, 1] >= 1: column 0 stays
    e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)  # [n, W] step 5: exact zeros
    total = cs.gather(1, n_kept - 1)                                             # [n, 1] at the row's own end
    if complete:
        return e, cs, total, torch.ones(len(z), dtype=torch.bool, device=z.device)
    last = z[:, -1:]                                                             # [n, 1] smallest in the window
    certain = (z.gather(1, n_kept - 1) > last) & (kth != last)   # no tie of the last kept / k-th value outside
    return e, cs, total, certain[:, 0]


# step 6: the draw -----------------------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 6: the first column whose prefix mass exceeds u * total and has mass; else the last with mass."""
    has_mass = e > 0                                                             # [n, W]
    first = _first_true((cs > u * total) & has_mass)                             # [n, 1] W if rounding misses
    last = torch.where(has_mass, torch.arange(e.shape[1], device=e.device), -1).amax(-1, keepdim=True)  # [n, 1]
    return torch.minimum(first, last)                                            # [n, 1]


def _sorted_crossing(order, z, after, quota):
    """(ids, z, after) [n, 1] of the crossing token, in rows sorted the reference's way with running weights."""
    at = torch.searchsorted(after, quota)                                        # first position: after >= quota
    return order.gather(1, at), z.gather(1, at), after.gather(1, at)


def _listed_crossing(members, quota, total):
    """(ids, z, after) [n, 1] of the crossing token among bucket members; (0, 0, total) where none was listed."""
    hit, ids, z, after = crossing(members, quota)
    out = (torch.zeros_like(total), torch.zeros(total.shape, device=total.device), total.clone())
    for t, v in zip(out, (ids, z, after)):
        t[hit] = v
    return out


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
        self._buffers = {}  # (n, V, device) -> the selection's [n, V] work tensors, reused (no page faults)

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        with torch.inference_mode():                                             # ~10 % less per small op
            tokens = self._sample(logits, req_ids, params, prev_tokens)
        return tokens.clone()                                                    # an ordinary tensor again

    def _sample(self, logits, req_ids, params, prev_tokens):
        tokens = torch.empty(len(params), dtype=torch.long, device=logits.device)  # [B]
        for x, at, ps in _sources(logits, params, prev_tokens):                  # step 1: [m, V] each
            greedy, picks, window, select = self._parts(x, ps)
            if window and len(window[0]) == len(params):                         # every row in the window
                rows, e, cs, total, ids = window
                return ids.gather(1, inverse_cdf(cs, total, self._uniforms(req_ids, params, x.device), e))[:, 0]
            if greedy:
                tokens[[at[i] for i in greedy]] = picks                          # step 2: torch's tie rule
            if window:
                rows, e, cs, total, ids = window
                u = self._uniforms([req_ids[at[i]] for i in rows], [ps[i] for i in rows], x.device)  # [n, 1]
                tokens[[at[i] for i in rows]] = ids.gather(1, inverse_cdf(cs, total, u, e))[:, 0]  # [n] vocab ids
            if select:
                u = self._uniforms([req_ids[at[i]] for i in select], [ps[i] for i in select], x.device)  # [n, 1]
                tokens[[at[i] for i in select]] = self._select(x, select, ps, u)[:, 0]  # steps 3-6 by selection
        return tokens

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        with torch.inference_mode():
            probs = self._filtered_probs(logits, params, prev_tokens)
        return probs.clone()                                                     # an ordinary tensor again

    def _filtered_probs(self, logits, params, prev_tokens):
        out = torch.zeros(logits.shape, dtype=torch.float32, device=logits.device)  # [B, V]
        for x, at, ps in _sources(logits, params, prev_tokens):                  # step 1: [m, V] each
            greedy, picks, window, select = self._parts(x, ps)
            if greedy:
                out[[at[i] for i in greedy], picks] = 1.0
            if window:
                rows, e, cs, total, ids = window
                probs = torch.zeros(len(rows), x.shape[1], device=x.device).scatter_(1, ids, e / total)  # [n, V]
                out[[at[i] for i in rows]] = probs
            if select:
                out[[at[i] for i in select]] = self._select(x, select, ps)        # [n, V]
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
        draws = torch.empty(len(params), 1, dtype=torch.float64, device=device)  # [n, 1]
        for row, req_id, p in zip(draws, req_ids, params):                       # one draw per row, in place:
            if p.seed is not None and req_id not in self._seeded:                # torch.rand's numbers, no cat
                self._seeded[req_id] = torch.Generator(device=device).manual_seed(p.seed)
            row.uniform_(generator=self._shared_generator(device) if p.seed is None else self._seeded[req_id])
        return draws

    def _work(self, n, vocab, device):
        """Buffers (e, bucket, units, scratch) [n, V] for the selection, kept for the last few shapes up to 16M."""
        key = (n, vocab, str(device))
        if key not in self._buffers:
            if n * vocab > 1 << 24:
                return None                                                      # too big to keep around
            while len(self._buffers) >= 4:
                self._buffers.pop(next(iter(self._buffers)))
            self._buffers[key] = (torch.empty(n, vocab, device=device), *(torch.empty(n, vocab, dtype=torch.long,
                                  device=device) for _ in range(2)), torch.empty(n, vocab, device=device))
        return self._buffers[key]

    def _shared_generator(self, device):
        """The unseeded requests' generator on `device`, seeded from torch.initial_seed() like the reference."""
        if device not in self._shared:
            self._shared[device] = torch.Generator(device=device).manual_seed(torch.initial_seed())
        return self._shared[device]

    def _parts(self, x, params):
        """Step 2 and the window: (greedy rows, their argmax [g], the window's (rows, e, cs, total, ids) or None,
        selection rows).

        A row with 0 < top_k <= WINDOW_K goes to the window, unless its k-th value ties the next one (the run
        of ties may leave the window: it depends on the row alone); every other sampled row to the selection.
        Greedy and window rows read x once, as chunk maxima; neither copies whole rows.
        """
        vocab = x.shape[1]
        greedy, window, select = [], [], []
        for i, p in enumerate(params):                                           # step 2: who goes where
            if p is None:
                continue                                                         # another source's row
            if p.temperature < GREEDY_TEMPERATURE:
                greedy.append(i)
            elif 0 < p.top_k <= WINDOW_K and p.top_k < vocab:
                window.append(i)
            else:
                select.append(i)
        chunked = vocab // CHUNK >= 4 * (max([params[i].top_k for i in window], default=0) + 1)  # window_topk's test
        big = vocab >= 16 * CHUNK and x.numel() >= 1 << 18                      # argmax from chunks pays off
        maxima = chunk_maxima(x) if greedy and big or window and chunked else None  # [B, C]
        picks = None
        if greedy:
            rows = torch.tensor(greedy, device=x.device)                        # [g]
            picks = torch.argmax(x.index_select(0, rows), -1) if maxima is None else argmax_rows(x, rows, maxima)
        part, spilled = self._window(x, window, params, maxima) if window else (None, [])
        return greedy, picks, part, sorted(select + spilled)

    def _window(self, x, rows, params, maxima):
        """Steps 3-5 in a [n, W] window: ((rows, e, cs, total, ids) or None, rows whose k-th value ties the next)."""
        knobs = torch.tensor([[params[i].temperature, params[i].top_k, params[i].top_p if params[i].top_p < 1 else INF]
                              for i in rows], device=x.device)                   # [n, 3] fp32
        temp, top_k, top_p = knobs[:, :1], knobs[:, 1:2].long(), knobs[:, 2:]    # [n, 1] each
        width = max(params[i].top_k for i in rows) + 1                           # top_k + 1: see a tie go on
        every = len(rows) == len(x)                                              # rows is all of x, in order
        vals, ids = window_topk(x, width, None if every else torch.tensor(rows, device=x.device), maxima)  # [n, W]
        z, spilled = vals / temp, []                                             # [n, W] temperature on W only
        if bool((z[:, 1:] == z[:, :-1]).any()):                                  # ties somewhere:
            z, ids = canonical_window(z, ids)                                    # ascending ids among equals
            spill = (z.gather(1, top_k - 1) == z.gather(1, top_k))[:, 0]         # [n] k-th value ties the next:
            if bool(spill.any()):                                                # the run may leave the window
                flags = spill.tolist()
                spilled = [i for i, s in zip(rows, flags) if s]
                rows = [i for i, s in zip(rows, flags) if not s]
                if not rows:
                    return None, spilled
                z, ids, top_k, top_p = z[~spill], ids[~spill], top_k[~spill], top_p[~spill]
        if all(params[i].top_p >= 1 for i in rows):
            top_p = None                                                         # top-p off in every row
        e, cs, total, _ = filter_window(z, top_k, top_p, None, complete=True)   # no tie at k:
        return (rows, e, cs, total, ids), spilled                                # the kept set is in the window

    def _select(self, x, rows, params, u=None):
        """Steps 3-5 (and 6, given u [n, 1]) by selection: tokens [n, 1], or filtered probs [n, V] when u is None.

        Every decision is an integer crossing (before < quota <= after) in the reference's order: top-k
        (k > WINDOW_K) counts to the k-th value and weighs 0 below it; top-p cuts at the crossing token c of
        ceil(top_p * mass) and keeps the tokens at or ahead of c; the draw is the crossing token of u * kept.
        A few rows of a small vocabulary (n * V <= SORT_MAX) sort instead: the same integers, the same answer.
        """
        vocab, dev, n = x.shape[1], x.device, len(rows)
        knobs = torch.tensor([[params[i].temperature, params[i].top_p if params[i].top_p < 1 else 0.0,
                               params[i].top_k if 0 < params[i].top_k < vocab else 0] for i in rows],
                             dtype=torch.float64, device=dev)                    # [n, 3] T, top_p (0 off), k
        temp, xs = knobs[:, :1].float(), _take(x, rows)                          # [n, 1], [n, V]
        ones = all(params[i].temperature == 1.0 for i in rows)
        e, bucket, units = weights_and_buckets(xs if ones else xs / temp, self._work(n, vocab, dev))  # x / 1 == x
        small = n * vocab <= SORT_MAX
        if small:
            z_s, order = torch.sort(xs if ones else xs / temp, dim=-1, descending=True, stable=True)  # [n, V]
        k = knobs[:, 2:].long()                                                  # [n, 1] 0: off
        cut_z = torch.full((n, 1), -INF, device=dev)                             # [n, 1] no cut: keep all
        if bool((k > 0).any()):                                                  # top-k: the k-th value
            if small:
                z_k = z_s.gather(1, (k - 1).clamp(min=0))
            else:
                ones_ = k.clamp(min=1)                                           # rows without k: count to 1
                z_k = select_crossing(xs, temp, bucket, None, bucket_cumsum(bucket, None), ones_)[1]
            cut_z = torch.where(k > 0, z_k, cut_z)                               # [n, 1]
            units = units.masked_fill((xs if ones else xs / temp) < cut_z, 0)    # [n, V] weight 0 below it
        if small:
            after_s = units.gather(1, order).cumsum(-1)                          # [n, V] exact: integers
            total, cross = after_s[:, -1:], partial(_sorted_crossing, order, z_s, after_s)
        else:
            cum = bucket_cumsum(bucket, units)                                   # [n, NB]
            total = cum[:, -1:]                                                  # [n, 1] in units
        quota = (knobs[:, 1:2] * total).ceil().long()                            # [n, 1] 0: no top-p
        if not small:
            b_cut = bucket_of(cum, quota.clamp(min=1))                           # [n, 1]
            wanted = torch.zeros(cum.shape, dtype=torch.bool, device=dev).scatter_(1, b_cut, quota > 0)
            if u is not None:                                                    # the buckets the draw can reach:
                below = torch.cat([cum.gather(1, b_cut), cum.gather(1, (b_cut - 1).clamp(min=0)) * (b_cut > 0)], 1)
                kept = torch.where(quota > 0, total - below + torch.tensor([[1, 0]], device=dev), total)  # [n, 2]
                reach = bucket_of(cum, torch.minimum((u * kept.double()).long() + 1, kept))  # [n, 2] low, high
                cols = torch.arange(cum.shape[1], device=dev)                    # [NB]
                wanted |= (cols >= reach[:, 1:]) & (cols <= reach[:, :1])
            cross = partial(_listed_crossing, bucket_members(xs, temp, bucket, units, cum, wanted), total=total)
        cut_id, z, kept = cross(quota)                                           # the top-p cut, per row
        cut_z = torch.where(quota > 0, z, cut_z)                                 # [n, 1]
        cut_id = torch.where(quota > 0, cut_id, vocab)                           # [n, 1] top-k ties: all kept
        kept = torch.where(quota > 0, kept, total)                               # [n, 1] kept mass, in units
        if u is not None:
            return cross(torch.minimum((u * kept.double()).long() + 1, kept))[0]  # step 6: the draw
        z = xs if ones else xs / temp
        keep = (z > cut_z) | ((z == cut_z) & (torch.arange(vocab, device=dev) <= cut_id))   # [n, V]
        mass = (kept.double() / 2.0 ** (62 - vocab.bit_length())).float()       # [n, 1] units -> weight
        return torch.where(keep, e, 0.0) / mass                                  # [n, V] exact zeros outside
