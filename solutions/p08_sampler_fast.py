"""P08 fast path: the reference sampler's rule, vectorized over the batch, in sorted top-k space.

Per row, exactly the reference's rule (solutions/p08_sampler.py):
penalty -> greedy? -> temperature -> top-k -> top-p -> draw from the request's own stream.
The steps are the stub's (mine/p08_sampler_fast.py) and the notebook's (notebooks/p08_fast_path.ipynb §1-§6):
  1  prepare: fp32 logits, the penalty on a copy        2  route each row by its own params
  3  the window: the top W values, equal values by id   4a sums whose rounding depends on the row alone
  4b top-k, top-p, exact zeros, certain in the window   4c _parts: the routes put together, the one sync
  5  filtered_probs: each row's distribution in [B, V]  6  one uniform per row from its stream -> token
A window row whose kept set may reach past its window (a tie at its k-th value, a nucleus wider than WINDOW)
and a row with a large top_k take the exact route: course/selection.py, given code (notebook §7).

Batch invariance, bit for bit: a row's route, its window's numbers (elementwise, or prefix sums whose entry j
is the same adds for any width), its certainty and its uniform depend on the row alone.
Cost: one upload (every row's knobs and uniform; a penalty's pairs are step 1's own), one host sync (which window
rows are certain) and a fixed number of torch ops per route, whatever B is. A top-p-only row is weighed over V
once: for its 100 % and, when its window cannot settle it, for the exact route.
"""
from itertools import chain
from typing import NamedTuple

import numpy as np
import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs
from course.selection import exact_rows, row_weights
from course.streams import stream_uniform, stream_uniforms  # noqa: F401  (stream_uniform: the notebook reads it here)

__all__ = ["SamplingParams", "FastSampler", "penalized_fp32", "Routes", "route", "window_topk", "canonical_window",
           "prefix_sum", "row_total", "filter_window", "inverse_cdf"]

WINDOW = 64          # a top-p-only row's window: its WINDOW largest values
WINDOW_K = 256       # rows with 0 < top_k <= WINDOW_K share one window of the widest top_k + 1; above: exact route
CHUNK = 64           # window_topk reads the row as chunks of this many logits
INF = float("inf")


# step 1: prepare -------------------------------------------------------------------------------------
def penalized_fp32(logits, params, prev_tokens):
    """Step 1: fp32 logits [B, V]; the penalty goes onto a copy, at each row's distinct prev ids only."""
    x = logits if logits.dtype == torch.float32 else logits.float()              # [B, V], fp32 input: no copy
    rows, ids, pens = [], [], []                                                 # per penalised row: its index,
    for i, (p, prev) in enumerate(zip(params, prev_tokens)):                     # its distinct ids, its penalty
        if p.repetition_penalty != 1.0 and len(prev):
            distinct = set(prev.tolist() if isinstance(prev, torch.Tensor) else prev)
            rows.append(i)
            ids.append(distinct)
            pens.append(p.repetition_penalty)
    if not rows:
        return x
    x = x.clone() if x is logits else x                                          # never the caller's tensor
    sizes = [len(distinct) for distinct in ids]                                  # the pairs as numpy columns:
    pairs = np.stack([np.repeat(rows, sizes), np.array(list(chain.from_iterable(ids)), dtype=np.int64),
                      np.repeat(pens, sizes)]).astype(np.float64)                # [3, n] no Python object per pair
    rows, ids, pens = torch.tensor(pairs, device=x.device)                      # [n] each, one upload
    rows, ids = rows.long(), ids.long()
    values = x[rows, ids]                                                        # [n]
    x[rows, ids] = torch.where(values > 0, values / pens.float(), values * pens.float())
    return x


# step 2: route ---------------------------------------------------------------------------------------
class Routes(NamedTuple):
    """Batch rows by route, each list ascending."""
    greedy: list     # temperature < GREEDY_TEMPERATURE: argmax, no draw
    top_k: list      # 0 < top_k <= WINDOW_K (top-p on or off): one window of the widest top_k + 1
    top_p: list      # top-p only: a window of WINDOW
    plain: list      # no filter: the whole row, in vocab order
    exact: list      # top_k > WINDOW_K: the exact route


def route(params, vocab):
    """Step 2: each row's route from its own params alone (top_k on iff 0 < top_k < V, top_p on iff < 1)."""
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


# step 3: the window ----------------------------------------------------------------------------------
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


# step 4: sums whose rounding depends on the row alone, then top-k and top-p inside the window ----------
def prefix_sum(e):
    """Inclusive prefix sums [n, W] by log-step shifted adds: entry j is one fixed tree of adds over e[0..j]."""
    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1      # two buffers, no more allocs
    while shift < e.shape[-1]:
        out = buffers[0] if cs is not buffers[0] else buffers[1]                 # [n, W]
        out[:, :shift] = cs[:, :shift]
        torch.add(cs[:, shift:], cs[:, :-shift], out=out[:, shift:])
        cs, shift = out, shift * 2
    return cs


def _prefix(e):
    """prefix_sum, or on the CPU torch.cumsum: one sequential pass per row there, so the same floats per row for
    any W and batch (tests/self/test_fast_window.py), in one op instead of log2(W) rounds."""
    return e.cumsum(-1) if e.device.type == "cpu" else prefix_sum(e)


def row_total(e):
    """[n, V] weights in [0, 1] -> [n, 1] float32 sums, added in int64 fixed point: the same in any order and batch."""
    scale = 2.0 ** (62 - e.shape[-1].bit_length())                               # V * scale < 2**62: no overflow
    units = torch.mul(e, scale).long()                                           # [n, V] whole units (truncated)
    return (units.sum(-1, keepdim=True) / scale).float()                         # [n, 1] (torch.sum of floats
                                                                                 # splits a lone row: not this)


def _first_true(mask):
    """[n, W] bool -> [n, 1] long: the column of the first True (W where there is none); integer ops only."""
    if mask.shape[-1] == 0:
        return torch.zeros(mask.shape[0], 1, dtype=torch.long, device=mask.device)
    cols = torch.arange(mask.shape[-1], device=mask.device)
    return torch.where(mask, cols, mask.shape[-1]).amin(-1, keepdim=True)


def filter_window(z, top_k, top_p, row_mass, complete):
    """Step 4b on a descending window z [n, W]: keep values >= the k-th, then drop once mass_before >= p.

    top_k [n, 1] (0 = off), top_p [n, 1] (inf = off), row_mass [n, 1] (top-p's 100 % where top-k is off; None:
    top-k is on in every row). Returns e [n, W] (exactly 0 outside the kept set), cs [n, W] prefix sums of the
    window's exp, total [n, 1] the kept mass, certain [n]: the kept set lies inside the row's own window (a
    top-k row: its k-th value above column k; a top-p-only row: its last kept value above the window's last).
    """
    e = torch.exp(z - z[:, :1])                                                  # [n, W]; z[:, 0] is the max
    cs = _prefix(e)                                                              # [n, W] entry j: W-independent
    if row_mass is None:
        kth = z.gather(1, top_k - 1)                                             # [n, 1] the k-th largest
    else:
        kth = torch.where(top_k > 0, z.gather(1, (top_k - 1).clamp(min=0)), -INF)  # [n, 1] -inf: top-k off
    n_top_k = (z >= kth).sum(-1, keepdim=True)                                   # [n, 1] top-k keeps a prefix
    mass = cs.gather(1, n_top_k - 1)                                             # [n, 1] top-p's 100 %
    if row_mass is not None:
        mass = torch.where(top_k > 0, mass, row_mass)
    n_top_p = 1 + _first_true(cs[:, :-1] >= top_p * mass)                        # [n, 1] first column dropped
    n_kept = torch.minimum(n_top_k, n_top_p)                                     # [n, 1] >= 1: column 0 stays
    e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)  # [n, W] step 5: exact zeros
    total = cs.gather(1, n_kept - 1)                                             # [n, 1] at the row's own end
    if complete:
        return e, cs, total, torch.ones(len(z), dtype=torch.bool, device=z.device)
    certain = kth > z.gather(1, top_k)                                           # [n, 1] top-k: column k is below
    if row_mass is not None:                                                     # top-p only: the last kept value
        certain = torch.where(top_k > 0, certain, z.gather(1, n_kept - 1) > z[:, -1:])  # is above the window's last
    return e, cs, total, certain[:, 0]


# step 6: the draw -----------------------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 6: the first column whose prefix mass exceeds u * total and has mass; else the last with mass."""
    has_mass = e > 0                                                             # [n, W]
    first = _first_true((cs > u * total) & has_mass)                             # [n, 1] W if rounding misses
    last = torch.where(has_mass, torch.arange(e.shape[1], device=e.device), -1).amax(-1, keepdim=True)  # [n, 1]
    return torch.minimum(first, last)                                            # [n, 1]


def _upload(params, routes, u, vocab, device):
    """The call's one upload: knobs [B, 4] float64 in batch order (temperature, top_k (0: off), top_p (inf: off),
    u) and the batch rows in route order [B] (greedy, top_k, top_p, plain, exact). Built on the host as numpy
    columns (one list per knob, read by np.fromiter: no object per row), then one torch.tensor."""
    n = len(params)
    cols = np.fromiter(chain([p.temperature for p in params], [p.top_k if 0 < p.top_k < vocab else 0 for p in params],
                             [p.top_p for p in params], u, chain.from_iterable(routes)), np.float64, 5 * n)
    cols = cols.reshape(5, n)                                                    # [5, B]
    cols[0, cols[0] < GREEDY_TEMPERATURE] = 1.0                                  # greedy rows: never divided
    cols[2, cols[2] >= 1] = INF                                                  # top-p off
    flat = torch.tensor(cols.T, device=device)                                   # [B, 5] float64, the upload
    return flat[:, :4], flat[:, 4].long()                                        # [B, 4] (a view), [B]


# the sampler ----------------------------------------------------------------------------------------
class FastSampler:
    """Same contract as the reference Sampler; one vectorized pass per batch, bit-for-bit batch invariant."""

    def __init__(self):
        self._streams = {}       # req_id -> [seed, draws so far]: a seeded request's stream; free() drops it
        self._shared = None      # [key, draws so far]: the unseeded requests' one stream

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        with torch.inference_mode():                                             # ~10 % less per small op
            x = penalized_fp32(logits, params, prev_tokens)                      # [B, V] step 1
            routes = route(params, x.shape[1])                                   # step 2
            knobs, order = _upload(params, routes, self._uniforms(req_ids, params), x.shape[1], x.device)
            tokens = torch.empty(len(params), dtype=torch.long, device=x.device)  # [B]
            if routes.greedy:                                                    # step 2: torch's tie rule
                greedy = order[:len(routes.greedy)]                              # [g]
                tokens.index_copy_(0, greedy, x.index_select(0, greedy).argmax(-1))
            windows, exact = self._parts(x, params, routes, knobs, order)
            for rows, e, cs, total, ids in windows:                              # step 6
                u = knobs[:, 3:] if len(rows) == len(params) else knobs.index_select(0, rows)[:, 3:]  # [n, 1]
                col = inverse_cdf(cs, total, u, e)                               # [n, 1]
                tokens.index_copy_(0, rows, (col if ids is None else ids.gather(1, col))[:, 0])
            if len(exact):                                                       # after the windows: overrides
                tokens.index_copy_(0, exact, self._exact(x, params, routes, knobs, exact, draw=True)[:, 0])
        return tokens.clone()                                                    # an ordinary tensor again

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        with torch.inference_mode():
            x = penalized_fp32(logits, params, prev_tokens)                      # [B, V]
            routes = route(params, x.shape[1])
            knobs, order = _upload(params, routes, [0.0] * len(params), x.shape[1], x.device)
            out = torch.zeros(x.shape, device=x.device)                          # [B, V]
            if routes.greedy:
                greedy = order[:len(routes.greedy)]                              # [g]
                out.index_put_((greedy, x.index_select(0, greedy).argmax(-1)), torch.ones(()))
            windows, exact = self._parts(x, params, routes, knobs, order)
            for rows, e, cs, total, ids in windows:                              # step 5
                probs = e / total if ids is None else torch.zeros_like(x[:len(rows)]).scatter_(1, ids, e / total)
                out.index_copy_(0, rows, probs)                                  # [n, V] in vocab order
            if len(exact):
                out.index_copy_(0, exact, self._exact(x, params, routes, knobs, exact, draw=False))
        return out.clone()

    def free(self, req_id):
        """Forget req_id's stream; a later request with the same id starts a fresh one."""
        self._streams.pop(req_id, None)

    # -- internals ------------------------------------------------------------------------------------
    def _uniforms(self, req_ids, params):
        """[B] floats: a seeded row's next number of its own stream, an unseeded row's of the shared stream;
        greedy rows draw nothing (0.0). A stream is keyed by the seed its request first drew with.
        The loop only counts; stream_uniforms computes every row's number at once (numpy, on the host)."""
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

    def _parts(self, x, params, routes, knobs, order):
        """Step 4c, steps 3-4b for the batch: ([(rows, e, cs, total, ids or None), ...], the exact route's rows [m]).

        The top-k rows share a window of the widest top_k + 1, the top-p-only rows one of WINDOW, the plain rows
        take the whole row in vocab order (ids None). A top-p-only row is weighed over all of V once, for its 100 %
        (row_total's integers); when only such rows are not certain, the exact route gets those weights too
        (self._weighed). One host sync reads which window rows are certain: the others join the exact route
        (their window results are computed, then overridden).
        """
        vocab, windows, checks, weighed = x.shape[1], [], [], None
        self._weighed = None
        start = len(routes.greedy)
        for name, members in zip(("top_k", "top_p", "plain"), routes[1:4]):
            rows, start = order[start:start + len(members)], start + len(members)  # [n]
            if not members:
                continue
            every = len(members) == len(x)                                       # rows is all of x, in order
            xs, k = (x, knobs) if every else (x.index_select(0, rows), knobs.index_select(0, rows))  # [n, V], [n, 4]
            temp, top_k, top_p = k[:, :1].float(), k[:, 1:2].long(), k[:, 2:3].float()  # [n, 1] each
            if name == "plain":
                z = xs / temp                                                    # [n, V]
                e = torch.exp(z - z.amax(-1, keepdim=True))                      # [n, V] vocab order
                cs = _prefix(e)
                windows.append((rows, e, cs, cs[:, -1:], None))
                continue
            width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members) + 1)
            vals, ids = window_topk(xs, width)                                   # [n, W] step 3
            z, ids = canonical_window(vals / temp, ids)                          # [n, W] temperature on W only
            row_mass = None
            if name == "top_p":                                                  # [n, 1] top-p's 100 %: all of V
                z_all = xs if all(params[i].temperature == 1 for i in members) else xs / temp  # x / 1 is x
                weighed = row_weights(z_all, z[:, :1])                           # [n, V] e and its int64 units
                row_mass = (weighed[1].sum(-1, keepdim=True) / 2.0 ** (62 - vocab.bit_length())).float()  # row_total
            complete = name == "top_p" and width == vocab                        # top-k rows: each row's own rule
            e, cs, total, certain = filter_window(z, top_k, top_p, row_mass, complete)  # step 4
            windows.append((rows, e, cs, total, ids))
            checks.append((rows, certain))
        exact = order[start:]                                                    # [m] top_k > WINDOW_K
        if checks:
            flags = (torch.cat([c for _, c in checks]) if len(checks) > 1 else checks[0][1]).tolist()  # the one sync
            unsure, at = [], 0
            for rows, certain in checks:                                         # per window, its unsure rows:
                n_unsure = flags[at:at + len(rows)].count(False)                 # positions in rows, ascending
                at += len(rows)                                                  # (a stable argsort: False first)
                unsure.append(certain.argsort(stable=True)[:n_unsure] if n_unsure else None)
            parts = [exact] * bool(routes.exact) + [rows[pick] for (rows, _), pick in zip(checks, unsure)
                                                     if pick is not None]
            exact = torch.cat(parts) if len(parts) > 1 else parts[0] if parts else exact  # [m]
            pick = unsure[-1]
            if routes.top_p and not routes.exact and pick is not None and all(q is None for q in unsure[:-1]):
                every = len(pick) == len(routes.top_p)                           # only top-p-only rows are unsure:
                self._weighed = (exact, weighed if every else tuple(t[pick] for t in weighed))  # their weights
        return windows, exact

    def _exact(self, x, params, routes, knobs, rows, draw):
        """The exact route (course/selection.py) for rows [m]: tokens [m, 1] (draw) or probs [m, V]."""
        sources = [members for members in (routes.exact, routes.top_k, routes.top_p) if members]
        if len(rows) == len(x) and len(sources) == 1:                            # every row, in order
            k, xs = knobs, x
        else:
            k, xs = knobs.index_select(0, rows), x.index_select(0, rows)         # [m, 4], [m, V]
        weighed = getattr(self, "_weighed", None)                                # (rows, (e, units)): top-p-only
        weights = weighed[1] if weighed and weighed[0] is rows else None         # rows _parts weighed already
        return exact_rows(xs, k[:, :1].float(), k[:, 1:2].long(), k[:, 2:3],
                          k[:, 3:] if draw else None, has_top_k=weights is None and bool(routes.top_k or routes.exact),
                          weights=weights,
                          unit_temp=all(p.temperature == 1 for p in params if p.temperature >= GREEDY_TEMPERATURE))
