"""P08 fast path: the reference sampler's semantics, vectorized over the batch, in sorted top-k space.

Per row, exactly the reference's rule (solutions/p08_sampler.py):
penalty -> greedy? -> temperature -> top-k -> top-p -> draw with the request's own generator.
What changes is where the work happens: one top-k pass to a [n, W] window instead of a full-vocab sort,
exp and prefix sums only over that window, one uniform per row for an inverse-CDF draw. The steps are
p08-fast's (notebooks/p08_fast_path.ipynb, hints/p08-fast): 1 prepare, 2 greedy + temperature, 3 the
window, 4 top-k + top-p in it, 5 exact zeros / filtered_probs, 6 one uniform -> token.

Batch invariance, bit for bit: a row's window may be wider in a bigger batch (W = the widest need of its
peers), so every float a row uses is elementwise, or a prefix sum whose entry j is one fixed tree of adds
over columns 0..j (prefix_sum), read at the row's own last column; the full-row mass of a top-p-only row
is a pairwise sum fixed by V; equal values sit in ascending token id, the order a stable full sort gives;
decisions are integer counts; and the one uniform a row consumes comes from its own generator.
"""
import math

import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs

__all__ = ["SamplingParams", "FastSampler", "penalized_fp32", "window_topk", "canonical_window", "prefix_sum",
           "row_total", "filter_window", "inverse_cdf"]

WINDOW = 64          # first top-K' window for rows with top-p but no top-k
GROW = 8             # each retry widens that window at least this much
SORT_FRACTION = 8    # a window wider than V / SORT_FRACTION costs about a full sort: sort instead
CHUNK = 64           # window_topk reads the row as chunks of this many logits
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
    [n, 1] (the kept mass) and certain [n] (the window holds the whole kept set; if not: widen, or sort).
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


# step 6: the draw -----------------------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 6: the first column whose prefix mass exceeds u * total and has mass; else the last with mass."""
    has_mass = e > 0                                                             # [n, W]
    first = _first_true((cs > u * total) & has_mass)                             # [n, 1] W if rounding misses
    cols = torch.arange(e.shape[1], dtype=torch.int32, device=e.device)
    return torch.minimum(first, torch.where(has_mass, cols, -1).amax(-1, keepdim=True).long())  # [n, 1]


def _take(t, rows):
    """t's rows listed in `rows` (a copy), or t itself when `rows` is every row in order."""
    if rows == list(range(t.shape[0])):
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
        greedy, parts = self._parts(x, params)
        tokens = torch.empty(x.shape[0], dtype=torch.long, device=x.device)     # [B]
        if greedy:
            tokens[greedy] = torch.argmax(_take(x, greedy), dim=-1)              # step 2: torch's tie rule
        for rows, e, cs, total, ids in parts:
            u = self._uniforms([req_ids[i] for i in rows], [params[i] for i in rows], x.device)  # [n, 1]
            pos = inverse_cdf(cs, total, u, e)                                   # [n, 1] window positions
            tokens[rows] = (pos if ids is None else ids.gather(1, pos))[:, 0]    # [n] vocab ids
        return tokens

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        x = penalized_fp32(logits, params, prev_tokens)                          # [B, V]
        greedy, parts = self._parts(x, params)
        out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)        # [B, V]
        if greedy:
            out[greedy, torch.argmax(_take(x, greedy), dim=-1)] = 1.0
        for rows, e, cs, total, ids in parts:
            probs = e / total                                                    # [n, W] 0 outside the kept set
            if ids is not None:
                probs = torch.zeros(len(rows), x.shape[1], device=x.device).scatter_(1, ids, probs)  # [n, V]
            out[rows] = probs
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
        """Steps 2-5 for the batch: (greedy rows, [(rows, e, cs, total, ids or None), ...] for the others).

        Rows without a filter sample over V in vocab order; rows with top-k (and maybe top-p) share one
        window of the widest need; top-p-only rows start at WINDOW, widen while a window can pay off, and
        fall back to the full (stable) sort. Every path gives a row the same numbers.
        """
        batch, vocab = x.shape
        dev = x.device
        greedy, top_k_rows, top_p_rows, plain = [], [], [], []                   # step 2: who goes where
        for i, p in enumerate(params):
            if p.temperature < GREEDY_TEMPERATURE:
                greedy.append(i)
            elif 0 < p.top_k < vocab:
                top_k_rows.append(i)
            elif 0 < p.top_p < 1:
                top_p_rows.append(i)
            else:
                plain.append(i)
        ks = [p.top_k if 0 < p.top_k < vocab else 0 for p in params]
        temp = torch.tensor([[max(p.temperature, GREEDY_TEMPERATURE)] for p in params], device=dev)  # [B, 1]
        top_k = torch.tensor(ks, device=dev)[:, None]                                               # [B, 1]
        top_p = torch.tensor([[p.top_p if 0 < p.top_p < 1 else INF] for p in params], device=dev)   # [B, 1]
        row_mass = torch.zeros(batch, 1, device=dev)                                                # [B, 1]
        parts, to_sort, todo = [], [], list(top_k_rows)
        if plain:                                                                # no filter: vocab order
            e = _take(x, plain) / _take(temp, plain)                             # [n, V] new: in place below
            e = e.sub_(e.amax(-1, keepdim=True)).exp_()                          # [n, V] exp(z - max)
            cs = prefix_sum(e)                                                   # [n, V]
            parts.append((plain, e, cs, cs[:, -1:], None))
        if top_p_rows:                                                           # top-p's 100 %: the whole row
            z = _take(x, top_p_rows) / _take(temp, top_p_rows)                   # [n, V] new: in place below
            mass = row_total(z.sub_(z.amax(-1, keepdim=True)).exp_())            # [n, 1]
            row_mass[top_p_rows] = mass
            hopeless = (_take(top_p, top_p_rows) * mass > vocab // SORT_FRACTION)[:, 0].tolist()  # e <= 1 each
            to_sort += [i for i, h in zip(top_p_rows, hopeless) if h]
            todo += [i for i, h in zip(top_p_rows, hopeless) if not h]
        cap = max(vocab // SORT_FRACTION, 1)                                     # widest window worth a topk
        needs = [ks[i] + 1 for i in top_k_rows] + ([WINDOW] if len(todo) > len(top_k_rows) else [])
        width = min(vocab, max(needs, default=1))                                # top_k + 1: see a tie go on
        while todo:
            vals, ids = window_topk(_take(x, todo), width)                        # [n, W] the one pass over V
            z, ids = canonical_window(vals / _take(temp, todo), ids)             # [n, W] temperature on W only
            knobs = [_take(t, todo) for t in (top_k, top_p, row_mass)]           # [n, 1] each
            e, cs, total, certain = filter_window(z, *knobs, complete=width == vocab)
            if bool(certain.all()):
                parts.append((todo, e, cs, total, ids))
                break
            ok = certain.tolist()
            if any(ok):
                done = [i for i, c in zip(todo, ok) if c]
                parts.append((done, e[certain], cs[certain], total[certain], ids[certain]))
            # the rest: a top-k tie run past the window -> sort; top-p -> a wider window while one can pay off
            need = width + (knobs[1] * knobs[2] - cs[:, -1:]) / torch.exp(z[:, -1:] - z[:, :1])  # [n, 1] bound
            rest = [(i, n) for i, n, c in zip(todo, need[:, 0].nan_to_num(INF).tolist(), ok) if not c]
            to_sort += [i for i, n in rest if ks[i] > 0 or n > cap or width >= cap]
            rest = [(i, n) for i, n in rest if not (ks[i] > 0 or n > cap or width >= cap)]
            todo = [i for i, _ in rest]
            width = min(cap, max([width * GROW] + [math.ceil(n) for _, n in rest]))
        if to_sort:                                                              # the fallback: a full sort
            to_sort.sort()
            z, ids = torch.sort(_take(x, to_sort) / _take(temp, to_sort), dim=-1, descending=True, stable=True)
            knobs = [_take(t, to_sort) for t in (top_k, top_p, row_mass)]
            parts.append((to_sort, *filter_window(z, *knobs, complete=True)[:3], ids))
        return greedy, parts
