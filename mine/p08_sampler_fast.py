"""P08-fast — your vectorized sampler: the whole batch at once, in sorted top-k space, batch invariant.

Same contract as P08's Sampler, plus `filtered_probs`. Fill in the steps (search for TODO(p08-fast.)).
Grade with `./check.sh p08-fast` (one step: `--step 4a`); stuck on a step? `./check.sh p08-fast --hint 2`, the
approach step by step (the hint a failing step check names; `--hint 1`: the examples and key questions).
The walkthrough is notebooks/p08_fast_path.ipynb (English: notebooks/en/p08_fast_path.ipynb; §N there is step N):
  1  prepare: fp32 logits, the penalty on a copy        2  route each row by its own params
  3  the window: the top W values, equal values by id   4a sums whose rounding depends on the row alone
  4b top-k, top-p, exact zeros, certain in the window   4c _parts: the routes put together, the one sync
  5  filtered_probs: each row's distribution in [B, V]  6  one uniform per row from its stream -> token
A window row whose kept set may reach past its window, and a row with a large top_k, take the exact route:
course/selection.py, given code (notebook §7, going further). So are `_upload` and `_exact` below.
`./check.sh p08-fast` grades each step on its own first (T1 penalized_fp32, T2 route, T3 window_topk and
canonical_window, T4a prefix_sum and row_total, T4b filter_window, T4c _parts, T5 filtered_probs, T6 inverse_cdf
and the streams), then the whole FastSampler (F1-F9 and the checks P08 shares). `--watch` re-grades on every save.
"""
from itertools import chain  # given: _upload reads the knobs' lists as one stream
from typing import NamedTuple

import numpy as np  # given: _upload builds the knobs as numpy columns
import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs  # given  # noqa: F401
from course.selection import exact_rows, row_weights  # given: the exact route; a row's weights over V  # noqa: F401
from course.streams import stream_uniform, stream_uniforms  # given: the n-th uniform of a stream (one, many)  # noqa: F401

__all__ = ["SamplingParams", "FastSampler", "penalized_fp32", "Routes", "route", "window_topk", "canonical_window",
           "prefix_sum", "row_total", "filter_window", "inverse_cdf"]

WINDOW = 64          # a top-p-only row's window: its WINDOW largest values
WINDOW_K = 256       # rows with 0 < top_k <= WINDOW_K share one window of the widest top_k + 1; above: exact route
CHUNK = 64           # window_topk reads the row as chunks of this many logits
INF = float("inf")


def _todo(step, name):
    return NotImplementedError(
        f"p08-fast step {step} {name}: see notebooks/p08_fast_path.ipynb §{step} · ./check.sh p08-fast --hint 2")


# step 1: prepare -------------------------------------------------------------------------------------
def penalized_fp32(logits, params, prev_tokens):
    """Step 1: fp32 logits [B, V]; the penalty goes onto a copy, at each row's distinct prev ids only.

    logits [B, V] (fp32, bf16 or fp16) · params: B SamplingParams · prev_tokens: B histories (lists or
    tensors, repeats allowed) -> [B, V] float32. Each distinct id of row i's history: v > 0 -> v / penalty,
    else v * penalty (row i's own penalty); every other value unchanged. The caller's tensor is never
    written. fp32 input and no penalty anywhere -> `logits` itself may be returned (no [B, V] copy).
    The penalty works on (row, id) pairs, not on a [B, V] mask: see hints L2 step 1.
    """
    # TODO(p08-fast.1): collect (row, id, penalty) for rows with penalty != 1 (distinct ids), upload them in one
    #                   torch.tensor, then one gather + torch.where + index assignment on the copy.
    raise _todo(1, "penalized_fp32")


# step 2: route ---------------------------------------------------------------------------------------
class Routes(NamedTuple):
    """Batch rows by route, each list ascending."""
    greedy: list     # temperature < GREEDY_TEMPERATURE: argmax, no draw
    top_k: list      # 0 < top_k <= WINDOW_K (top-p on or off): one window of the widest top_k + 1
    top_p: list      # top-p only: a window of WINDOW
    plain: list      # no filter: the whole row, in vocab order
    exact: list      # top_k > WINDOW_K: the exact route


def route(params, vocab):
    """Step 2: each row's route from its own params alone (top_k on iff 0 < top_k < V, top_p on iff < 1).

    params: B SamplingParams, vocab: V -> Routes of batch rows. Greedy first (temperature <
    GREEDY_TEMPERATURE, whatever its filters); then top-k on: top_k (<= WINDOW_K) or exact (above); then
    top-p only: top_p; nothing on: plain. Why must the route depend on the row alone?
    """
    # TODO(p08-fast.2): one pass over params, appending i to one list of Routes([], [], [], [], []).
    raise _todo(2, "route")


# step 3: the window ----------------------------------------------------------------------------------
def window_topk(x, width):
    """Exact torch.topk(x, width) [n, W]: chunk maxima pick the W chunks holding the top W; topk reads those.

    x [n, V] -> (values [n, W] descending, vocab ids [n, W]). `torch.topk(x, width, dim=-1)` is a correct
    answer; the stretch: view the row as [n, V // CHUNK, CHUNK], take each chunk's max, topk the W best
    chunks, and topk only their W * CHUNK logits (plus the tail that does not fill a chunk). Why can no
    value outside those chunks be needed?
    """
    # TODO(p08-fast.3): the window (start with torch.topk; come back for the chunk trick).
    raise _todo(3, "window_topk")


def canonical_window(z, ids):
    """Reorder a descending window [n, W] so equal values sit in ascending token id (a stable sort's order).

    z [n, W] descending values, ids [n, W] their vocab ids -> (z, ids) reordered: descending values, equal
    values in ascending token id. Needed on the CPU too: torch.topk's order among equal values changes with
    W, and W is set by the peers (check T3 shows a row where it does).
    """
    # TODO(p08-fast.3): two sorts and two gathers (sort by id, then a stable sort by value).
    raise _todo(3, "canonical_window")


# step 4a: sums whose rounding depends on the row alone ----------------------------------------------
def prefix_sum(e):
    """Inclusive prefix sums [n, W] by log-step shifted adds: entry j is one fixed tree of adds over e[0..j].

    e [n, W] -> [n, W]; entry j = e[0] + ... + e[j], the same float for any W, any batch size, any device.
    Plainly: on the CPU torch.cumsum gives the very same floats (it adds sequentially) and passes every CPU
    check; the scan matters on CUDA, where a lone row and a batch take different cumsum kernels, with
    different orders of adds. Write the scan (hints L2 step 4a).
    """
    # TODO(p08-fast.4a): the log-step scan (the untouched first columns, then a shifted add; double the shift).
    raise _todo("4a", "prefix_sum")


def _prefix(e):
    """prefix_sum, or on the CPU torch.cumsum: one sequential pass per row there, so the same floats per row for
    any W and batch (tests/self/test_fast_window.py), in one op instead of log2(W) rounds."""
    return e.cumsum(-1) if e.device.type == "cpu" else prefix_sum(e)


def row_total(e):
    """[n, V] weights in [0, 1] -> [n, 1] float32 sums, added in int64 fixed point: exact, so the same in any order
    and batch.

    Not torch.sum of the floats: it splits a lone long row across threads, so a row alone and the same row in
    a batch round differently, on the CPU too (check T4a shows it). Integers add exactly in any order.
    """
    # TODO(p08-fast.4a): scale = 2 ** (62 - V.bit_length()); (e * scale) to int64, sum, back to float32 / scale.
    raise _todo("4a", "row_total")


def _first_true(mask):
    """[n, W] bool -> [n, 1] long: the column of the first True (W where there is none); integer ops only."""
    if mask.shape[-1] == 0:
        return torch.zeros(mask.shape[0], 1, dtype=torch.long, device=mask.device)
    cols = torch.arange(mask.shape[-1], device=mask.device)
    return torch.where(mask, cols, mask.shape[-1]).amin(-1, keepdim=True)


# step 4b: top-k and top-p inside the window -------------------------------------------------------------
def filter_window(z, top_k, top_p, row_mass, complete):
    """Step 4b on a descending window z [n, W]: keep values >= the k-th, then drop once mass_before >= p.

    top_k [n, 1] (0 = off), top_p [n, 1] (inf = off), row_mass [n, 1] (top-p's 100 % where top-k is off; None:
    top-k is on in every row). Returns e [n, W] (exactly 0 outside the kept set), cs [n, W] prefix sums of the
    window's exp, total [n, 1] the kept mass, certain [n]: the kept set lies inside the row's own window (a
    top-k row: its k-th value above column k; a top-p-only row: its last kept value above the window's last).
    complete: the window is the whole row (every row is certain).

    Only elementwise ops, gathers, integer counts and _prefix: a row's numbers must not depend on W.
    (A torch.sum over the window does: W columns with zeros at the end round differently for each W.)
    Mass before: `cs[:, :-1]`, the prefix sums one column to the left (column j's is cs[:, j - 1]; column 0 has
    none and always stays). Not `cs - e`, which can differ in the last bit.
    """
    # TODO(p08-fast.4b): e = exp(z - z[:, :1]); cs = _prefix(e); the k-th value by gather; how many columns
    #                    top-k keeps; top-p's 100 % (the top-k mass, or row_mass); the first column whose mass
    #                    before, cs[:, :-1], reaches top_p (_first_true); n_kept = the smaller of the two;
    #                    exact zeros from column n_kept on; total = cs at the row's own column n_kept - 1;
    #                    certain, judged by the row alone (the rule above), all True when complete.
    raise _todo("4b", "filter_window")


# step 6: the draw -----------------------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 6: the first column whose prefix mass exceeds u * total and has mass; else the last with mass.

    cs [n, W], total [n, 1], u [n, 1] in [0, 1), e [n, W] (exactly 0 outside the kept set) -> columns [n, 1].
    """
    # TODO(p08-fast.6): _first_true of (cs > u * total) & (e > 0); if rounding leaves no hit, the last
    #                   column with e > 0.
    raise _todo(6, "inverse_cdf")


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
        # TODO(p08-fast.6): the streams: req_id -> [seed, draws so far] for seeded requests; one shared
        #                   [key, draws so far] for the unseeded ones (None until the first unseeded draw).
        pass

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token.

        validate -> penalized_fp32 -> route -> _upload(params, routes, self._uniforms(...), V, device): knobs
        [B, 4] (temperature, top_k, top_p, u) and the rows in route order -> greedy rows: argmax of the penalised
        row (torch's tie rule) -> self._parts: per window part (rows, e, cs, total, ids), inverse_cdf with the
        rows' u, then ids.gather back to vocab ids (ids None: the columns already are vocab ids) -> the exact rows
        last (self._exact), overriding what their windows drew. Work under torch.inference_mode(); return a clone.
        """
        # TODO(p08-fast.6): greedy rows (order[:len(routes.greedy)], step 2's route) take the argmax of their
        #                   penalised row; the others: u from knobs[:, 3:], position from inverse_cdf, vocab id via ids.
        raise _todo(6, "FastSampler.sample")

    def filtered_probs(self, logits, params, prev_tokens):
        """Step 5: [B, V] float32, the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        # TODO(p08-fast.5): zeros [B, V]; greedy rows 1.0 at their penalised row's argmax; each part of self._parts:
        #                   e / total scattered to its ids (or as is, in vocab order); the exact rows from
        #                   self._exact(..., draw=False).
        raise _todo(5, "FastSampler.filtered_probs")

    def free(self, req_id):
        """Forget req_id's stream; a later request with the same id starts a fresh one."""
        # TODO(p08-fast.6): drop the stream (an unknown req_id is not an error).
        raise _todo(6, "FastSampler.free")

    # -- internals ------------------------------------------------------------------------------------
    def _uniforms(self, req_ids, params):
        """[B] floats: a seeded row's next number of its own stream, an unseeded row's of the shared stream;
        greedy rows draw nothing (0.0). A stream is keyed by the seed its request first drew with.

        stream_uniform(seed, n) is the n-th number of the stream keyed by seed: keep a count per request
        (and one for the shared stream, keyed by torch.initial_seed() like the reference's generator).
        """
        # TODO(p08-fast.6): one number per row, then count it.
        raise _todo(6, "FastSampler._uniforms")

    def _parts(self, x, params, routes, knobs, order):
        """Step 4c, steps 3-4b for the batch: ([(rows, e, cs, total, ids or None), ...], the exact route's rows [m]).

        The top-k rows share a window of the widest top_k + 1, the top-p-only rows one of WINDOW, the plain rows
        take the whole row in vocab order (ids None). One host sync finds the window rows that are not certain:
        they join the exact route (their window results are computed, then overridden).
        """
        # TODO(p08-fast.4c): per route (top_k, top_p, plain): its rows = the next slice of order; x's rows, the
        #                    knobs' rows; width; window_topk, the temperature on [n, W] only, canonical_window;
        #                    top-p-only rows: row_mass = row_total(e) with e from row_weights(x / T, max) over all
        #                    of V (given: weighed once, so the exact route can reuse them); filter_window
        #                    (complete only for a top-p window of all V: a top-k row's certainty stays its own even
        #                    when the peers' widest top_k makes the window the whole row);
        #                    exact rows = order's tail + the window rows that are not certain (one sync).
        raise _todo("4c", "FastSampler._parts")

    def _exact(self, x, params, routes, knobs, rows, draw):
        """Given: the exact route (course/selection.py) for rows [m]: tokens [m, 1] (draw) or probs [m, V]."""
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
