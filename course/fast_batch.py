"""The fast path's given plumbing: the batch put together around the learner's step functions.

mine/p08_sampler_fast.py (and solutions/p08_sampler_fast.py) write the ideas: a route by the row alone, a
canonical tie order, a row total the same in any batch, the kept count and certainty inside a window, the streams
and the draw. This module does the rest: the penalty (p08's step 1, on (row, id) pairs), the one upload, the windows of
each route, the one host sync, the exact route's hand-off, the scatter to [B, V], and sample()'s glue. The
learner's functions arrive as `steps` (a Steps tuple, built by the sampler file's `_steps()`); nothing here
reads an attribute that the learner's code sets on the side.
"""
from itertools import chain
from typing import NamedTuple

import numpy as np
import torch

from course.sampling_params import GREEDY_TEMPERATURE
from course.selection import exact_rows, row_weights

WINDOW = 64          # a top-p-only row's window: its WINDOW largest values
WINDOW_K = 256       # the top-k rows' shared window is at most WINDOW_K + 1 columns wide
CHUNK = 64           # window_topk may read the row as chunks of this many logits
INF = float("inf")


class Routes(NamedTuple):
    """Batch rows by route, each list ascending."""
    greedy: list     # temperature < GREEDY_TEMPERATURE: argmax, no draw
    top_k: list      # top-k on (top-p on or off), in one window of the widest top_k + 1
    top_p: list      # top-p only: a window of WINDOW
    plain: list      # no filter: the whole row, in vocab order
    exact: list      # the top-k rows no such window holds: the exact route


class Steps(NamedTuple):
    """The learner's step functions, as the given code calls them."""
    route: object             # (params, vocab) -> Routes
    window_topk: object       # (x [n, V], width) -> (values [n, W] descending, ids [n, W])
    canonical_window: object  # (z [n, W], ids [n, W]) -> (z, ids), ties in an order no W changes
    row_total: object         # (e [n, V] in [0, 1]) -> [n, 1] float32, the same in any batch
    filter_window: object     # (z, top_k, top_p, row_mass, complete) -> (e, cs, total, certain)
    inverse_cdf: object       # (cs, total, u, e) -> columns [n, 1]


# p08's step 1, vectorized: the penalty on (row, id) pairs ------------------------------------------------
def penalized_fp32(logits, params, prev_tokens):
    """fp32 logits [B, V]; the penalty on a copy, at each row's distinct prev ids only (p08's rule)."""
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


# prefix sums whose entry j does not depend on the width -----------------------------------------------------
def prefix_sum(e):
    """Inclusive prefix sums [n, W] by log-step shifted adds: entry j is one fixed tree of adds over e[0..j]."""
    buffers, cs, shift = (torch.empty_like(e), torch.empty_like(e)), e, 1      # two buffers, no more allocs
    while shift < e.shape[-1]:
        out = buffers[0] if cs is not buffers[0] else buffers[1]                 # [n, W]
        out[:, :shift] = cs[:, :shift]
        torch.add(cs[:, shift:], cs[:, :-shift], out=out[:, shift:])
        cs, shift = out, shift * 2
    return cs


def cumulative(e):
    """Prefix sums [n, W] whose entry j is the same float for any W and batch: torch.cumsum on the CPU (one
    sequential pass per row), the fixed-tree scan elsewhere (a lone row and a batch take different CUDA cumsum
    kernels, with different orders of adds)."""
    return e.cumsum(-1) if e.device.type == "cpu" else prefix_sum(e)


def first_true(mask):
    """[n, W] bool -> [n, 1] long: the column of the first True (W where there is none); integer ops only."""
    if mask.shape[-1] == 0:
        return torch.zeros(mask.shape[0], 1, dtype=torch.long, device=mask.device)
    cols = torch.arange(mask.shape[-1], device=mask.device)
    return torch.where(mask, cols, mask.shape[-1]).amin(-1, keepdim=True)


# the batch --------------------------------------------------------------------------------------------
def upload(params, routes, u, vocab, device):
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


def windows(steps, x, params, routes, knobs, order):
    """Each route's window, filtered: ([(rows, e, cs, total, ids or None), ...], exact rows [m], weights).

    The top-k rows share a window of the widest top_k + 1, the top-p-only rows one of WINDOW, the plain rows take
    the whole row in vocab order (ids None). A top-p-only row is weighed over all of V once, for its 100 %
    (steps.row_total); when only such rows cannot be settled in their window, `weights` hands those weights on to
    the exact route (else None). One host sync reads which window rows are certain: the others join the exact
    route (their window results are computed, then overridden).
    """
    vocab, parts, checks, weighed = x.shape[1], [], [], None
    start = len(routes.greedy)
    for name, members in zip(("top_k", "top_p", "plain"), routes[1:4]):
        rows, start = order[start:start + len(members)], start + len(members)  # [n]
        if not members:
            continue
        every = len(members) == len(x)                                           # rows is all of x, in order
        xs, k = (x, knobs) if every else (x.index_select(0, rows), knobs.index_select(0, rows))  # [n, V], [n, 4]
        temp, top_k, top_p = k[:, :1].float(), k[:, 1:2].long(), k[:, 2:3].float()  # [n, 1] each
        if name == "plain":
            z = xs / temp                                                        # [n, V]
            e = torch.exp(z - z.amax(-1, keepdim=True))                          # [n, V] vocab order
            cs = cumulative(e)
            parts.append((rows, e, cs, cs[:, -1:], None))
            continue
        width = min(vocab, WINDOW if name == "top_p" else max(params[i].top_k for i in members) + 1)
        vals, ids = steps.window_topk(xs, width)                                 # [n, W]
        z, ids = steps.canonical_window(vals / temp, ids)                        # [n, W] temperature on W only
        row_mass = None
        if name == "top_p":                                                      # [n, 1] top-p's 100 %: all of V
            z_all = xs if all(params[i].temperature == 1 for i in members) else xs / temp  # x / 1 is x
            weighed = row_weights(z_all, z[:, :1], with_units=False)             # ([n, V] e, None): the exact
            row_mass = steps.row_total(weighed[0])                               # route weighs e its own way
        complete = name == "top_p" and width == vocab                            # top-k rows: each row's own rule
        e, cs, total, certain = steps.filter_window(z, top_k, top_p, row_mass, complete)
        parts.append((rows, e, cs, total, ids))
        checks.append((rows, certain))
    exact, weights = order[start:], None                                         # [m] the exact route's rows
    if checks:
        flags = (torch.cat([c for _, c in checks]) if len(checks) > 1 else checks[0][1]).tolist()  # the one sync
        unsure, at = [], 0
        for rows, certain in checks:                                             # per window, its unsure rows:
            n_unsure = flags[at:at + len(rows)].count(False)                     # positions in rows, ascending
            at += len(rows)                                                      # (a stable argsort: False first)
            unsure.append(certain.argsort(stable=True)[:n_unsure] if n_unsure else None)
        more = [rows[pick] for (rows, _), pick in zip(checks, unsure) if pick is not None]
        listed = [exact] * bool(routes.exact) + more
        exact = torch.cat(listed) if len(listed) > 1 else listed[0] if listed else exact  # [m]
        pick = unsure[-1]
        if routes.top_p and not routes.exact and pick is not None and all(q is None for q in unsure[:-1]):
            weights = weighed if len(pick) == len(routes.top_p) else (weighed[0][pick], None)
    return parts, exact, weights


def exact(x, params, routes, knobs, rows, draw, weights=None):
    """The exact route (course/selection.py) for rows [m]: tokens [m, 1] (draw) or probs [m, V].
    weights: the rows' (e, units) when windows() weighed them already (every row a top-p-only row)."""
    sources = [members for members in (routes.exact, routes.top_k, routes.top_p) if members]
    if len(rows) == len(x) and len(sources) == 1:                                # every row, in order
        k, xs = knobs, x
    else:
        k, xs = knobs.index_select(0, rows), x.index_select(0, rows)             # [m, 4], [m, V]
    return exact_rows(xs, k[:, :1].float(), k[:, 1:2].long(), k[:, 2:3],
                      k[:, 3:] if draw else None, has_top_k=weights is None and bool(routes.top_k or routes.exact),
                      weights=weights,
                      unit_temp=all(p.temperature == 1 for p in params if p.temperature >= GREEDY_TEMPERATURE))


def sample_batch(steps, logits, params, prev_tokens, u):
    """Tokens [B] long: greedy rows by argmax, window rows by steps.inverse_cdf with their u, exact rows last."""
    with torch.inference_mode():                                                 # ~10 % less per small op
        x = penalized_fp32(logits, params, prev_tokens)                          # [B, V]
        routes = steps.route(params, x.shape[1])
        knobs, order = upload(params, routes, u, x.shape[1], x.device)
        tokens = torch.empty(len(params), dtype=torch.long, device=x.device)     # [B]
        if routes.greedy:                                                        # torch's tie rule
            greedy = order[:len(routes.greedy)]                                  # [g]
            tokens.index_copy_(0, greedy, x.index_select(0, greedy).argmax(-1))
        parts, rows_exact, weights = windows(steps, x, params, routes, knobs, order)
        for rows, e, cs, total, ids in parts:
            u_rows = knobs[:, 3:] if len(rows) == len(params) else knobs.index_select(0, rows)[:, 3:]  # [n, 1]
            col = steps.inverse_cdf(cs, total, u_rows, e)                        # [n, 1]
            tokens.index_copy_(0, rows, (col if ids is None else ids.gather(1, col))[:, 0])
        if len(rows_exact):                                                      # after the windows: overrides
            tokens.index_copy_(0, rows_exact, exact(x, params, routes, knobs, rows_exact, True, weights)[:, 0])
    return tokens.clone()                                                        # an ordinary tensor again


def filtered_batch(steps, logits, params, prev_tokens):
    """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax). Draws nothing."""
    with torch.inference_mode():
        x = penalized_fp32(logits, params, prev_tokens)                          # [B, V]
        routes = steps.route(params, x.shape[1])
        knobs, order = upload(params, routes, [0.0] * len(params), x.shape[1], x.device)
        out = torch.zeros(x.shape, device=x.device)                              # [B, V]
        if routes.greedy:
            greedy = order[:len(routes.greedy)]                                  # [g]
            out.index_put_((greedy, x.index_select(0, greedy).argmax(-1)), torch.ones(()))
        parts, rows_exact, weights = windows(steps, x, params, routes, knobs, order)
        for rows, e, cs, total, ids in parts:
            probs = e / total if ids is None else torch.zeros_like(x[:len(rows)]).scatter_(1, ids, e / total)
            out.index_copy_(0, rows, probs)                                      # [n, V] in vocab order
        if len(rows_exact):
            out.index_copy_(0, rows_exact, exact(x, params, routes, knobs, rows_exact, False, weights))
    return out.clone()
