"""P08 fast path: the reference sampler's rule, vectorized over the batch, in sorted top-k space.

Per row, exactly the reference's rule (solutions/p08_sampler.py):
penalty -> greedy? -> temperature -> top-k -> top-p -> draw from the request's own stream.
This file holds the ideas, in the stub's order (mine/p08_sampler_fast.py, notebooks/p08_fast_path.ipynb §1-§5):
  1  route: each row's route from its own params         2  the window: top W values, equal values by id
  3  row_total: a sum whose rounding is the row's alone   4  filter_window: kept count and certainty in the window
  5  the streams and the draw: one uniform per row from its own [seed, count]
The plumbing (the penalty on (row, id) pairs, the one upload, the windows per route, the one host sync, the exact
route for rows a window cannot settle, the scatter to [B, V]) is given: course/fast_batch.py, which calls these
functions through `_steps()`.

Batch invariance, bit for bit: a row's route, its window's numbers (elementwise, or prefix sums whose entry j
is the same adds for any width), its certainty and its uniform depend on the row alone.
"""
import torch

from course.fast_batch import (CHUNK, INF, WINDOW, WINDOW_K, Routes, Steps, cumulative, filtered_batch,  # noqa: F401
                               first_true, penalized_fp32, prefix_sum, sample_batch)
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs
from course.streams import stream_uniform, stream_uniforms  # noqa: F401  (stream_uniform: the notebook reads it here)

__all__ = ["SamplingParams", "FastSampler", "Routes", "route", "window_topk", "canonical_window", "row_total",
           "filter_window", "inverse_cdf"]


# step 1: route ---------------------------------------------------------------------------------------
def route(params, vocab):
    """Each row's route from its own params alone (top_k on iff 0 < top_k < V, top_p on iff < 1)."""
    routes = Routes([], [], [], [], [])
    for i, p in enumerate(params):
        if p.temperature < GREEDY_TEMPERATURE:
            routes.greedy.append(i)
        elif 0 < p.top_k < vocab:
            (routes.top_k if p.top_k <= WINDOW_K else routes.exact).append(i)
        elif p.top_p < 1:
            routes.top_p.append(i)
        else:
            routes.plain.append(i)
    return routes


# step 2: the window ----------------------------------------------------------------------------------
def window_topk(x, width):
    """Exact torch.topk(x, width) [n, W]: chunk maxima pick the W chunks holding the top W; topk reads those."""
    n, vocab = x.shape
    chunks = vocab // CHUNK
    if chunks < 4 * width:
        return torch.topk(x, width, dim=-1)                                      # few chunks: no gain
    maxima = x[:, :chunks * CHUNK].view(n, chunks, CHUNK).amax(-1)               # [n, C] one read, no index
    best = torch.topk(maxima, width, dim=-1, sorted=False).indices              # [n, W] chunks with top maxima
    starts = (torch.arange(n, device=x.device)[:, None] * vocab + best * CHUNK).view(-1)  # [n*W] their offsets
    spans = x.reshape(-1).unfold(0, CHUNK, 1)                                    # [n*V - L + 1, L] a view
    cand = spans.index_select(0, starts).view(n, width * CHUNK)                 # [n, W*L] outside: <= W of these
    cand = torch.cat([cand, x[:, chunks * CHUNK:]], 1)                          # [n, W*L + tail]
    vals, pos = torch.topk(cand, width, dim=-1)                                  # [n, W]
    ids = best.gather(1, (pos // CHUNK).clamp(max=width - 1)) * CHUNK + pos % CHUNK  # [n, W] vocab ids
    return vals, torch.where(pos < width * CHUNK, ids, pos - width * CHUNK + chunks * CHUNK)


def canonical_window(z, ids):
    """Reorder a descending window [n, W] so equal values sit in ascending token id (a stable sort's order)."""
    ids, by_id = ids.sort(dim=-1)                                                # [n, W] ascending ids
    z, by_value = z.gather(-1, by_id).sort(dim=-1, descending=True, stable=True)  # [n, W] ties keep id order
    return z, ids.gather(-1, by_value)                                          # [n, W], [n, W]


# step 3: a row total whose rounding is the row's alone ------------------------------------------------
def row_total(e):
    """[n, V] weights in [0, 1] -> [n, 1] float32 sums, added in int64 fixed point: the same in any order and batch
    (the int64 sum rounded to float32; rounded through float64 it would pass as well)."""
    scale = 2.0 ** (62 - e.shape[-1].bit_length())                               # V * scale < 2**62: no overflow
    units = torch.mul(e, scale).long()                                           # [n, V] whole units (truncated)
    return (units.sum(-1, keepdim=True) / scale).float()                         # [n, 1] (torch.sum of floats
                                                                                 # splits a lone row: not this)


# step 4: top-k and top-p inside the window, and whether the window settles the row ---------------------
def filter_window(z, top_k, top_p, row_mass, complete):
    """On a descending window z [n, W]: keep values >= the k-th, drop from the first column whose mass before
    reaches top_p of the 100 %; e is 0 outside the kept set; certain: the kept set lies inside the row's window."""
    e = torch.exp(z - z[:, :1])                                                  # [n, W]; z[:, 0] is the max
    cs = cumulative(e)                                                           # [n, W] entry j: W-independent
    if row_mass is None:
        kth = z.gather(1, top_k - 1)                                             # [n, 1] the k-th largest
    else:
        kth = torch.where(top_k > 0, z.gather(1, (top_k - 1).clamp(min=0)), -INF)  # [n, 1] -inf: top-k off
    n_top_k = (z >= kth).sum(-1, keepdim=True)                                   # [n, 1] top-k keeps a prefix
    mass = cs.gather(1, n_top_k - 1)                                             # [n, 1] top-p's 100 %
    if row_mass is not None:
        mass = torch.where(top_k > 0, mass, row_mass)
    n_top_p = 1 + first_true(cs[:, :-1] >= top_p * mass)                         # [n, 1] first column dropped
    n_kept = torch.minimum(n_top_k, n_top_p)                                     # [n, 1] >= 1: column 0 stays
    e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)  # [n, W] exact zeros
    total = cs.gather(1, n_kept - 1)                                             # [n, 1] at the row's own end
    if complete:
        return e, cs, total, torch.ones(len(z), dtype=torch.bool, device=z.device)
    certain = kth > z.gather(1, top_k)                                           # [n, 1] top-k: column k is below
    if row_mass is not None:                                                     # top-p only: the last kept value
        certain = torch.where(top_k > 0, certain, z.gather(1, n_kept - 1) > z[:, -1:])  # is above the window's last
    return e, cs, total, certain[:, 0]


# step 5: the streams and the draw ---------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """The first column whose prefix mass exceeds u * total (float64: u is float64) and has mass; else the last
    with mass."""
    has_mass = e > 0                                                             # [n, W]
    first = first_true((cs > u * total) & has_mass)                              # [n, 1] W if rounding misses
    last = torch.where(has_mass, torch.arange(e.shape[1], device=e.device), -1).amax(-1, keepdim=True)  # [n, 1]
    return torch.minimum(first, last)                                            # [n, 1]


class FastSampler:
    """Same contract as the reference Sampler; one vectorized pass per batch, bit-for-bit batch invariant."""

    def __init__(self):
        self._streams = {}       # req_id -> [seed, draws so far]: a seeded request's stream; free() drops it
        self._shared = None      # [key, draws so far]: the unseeded requests' one stream, keyed at its first draw

    def _uniforms(self, req_ids, params):
        """[B] floats: a seeded row's next number of its own stream, an unseeded row's of the shared stream;
        greedy rows draw nothing (0.0). The loop only counts; stream_uniforms computes every number at once."""
        keys, counts, drawn = [], [], []                                         # per drawing row; its position
        for i, (req_id, p) in enumerate(zip(req_ids, params)):
            if p.temperature < GREEDY_TEMPERATURE:
                continue                                                         # draws nothing: u = 0.0
            if p.seed is None:
                self._shared = self._shared or [torch.initial_seed(), 0]         # like the reference's generator
                stream = self._shared
            else:
                stream = self._streams.get(req_id) or self._streams.setdefault(req_id, [p.seed, 0])  # no new list
            keys.append(stream[0])
            counts.append(stream[1])
            drawn.append(i)
            stream[1] += 1
        values = stream_uniforms(keys, counts)                                   # every drawing row's, at once
        if len(drawn) == len(params):
            return values
        u = [0.0] * len(params)
        for i, value in zip(drawn, values):
            u[i] = value
        return u

    def free(self, req_id):
        """Forget req_id's stream; a later request with the same id starts a fresh one."""
        self._streams.pop(req_id, None)

    # given: the batch put together around the steps (course/fast_batch.py) --------------------------------
    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        return sample_batch(_steps(), logits, params, prev_tokens, self._uniforms(req_ids, params))

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        return filtered_batch(_steps(), logits, params, prev_tokens)


def _steps():
    """This file's step functions, for the given batch code (read at each call: a patched step is seen)."""
    return Steps(route, window_topk, canonical_window, row_total, filter_window, inverse_cdf)
