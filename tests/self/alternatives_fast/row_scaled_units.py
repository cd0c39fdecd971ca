"""A correct fast path written from the stub by a learner who never read solutions/: each row's total in int64
units at a scale of its own (a power of two from the row's max, via frexp, rounded rather than floored), the
kept mass read from a prefix sum of the zeroed weights, and its own reading of `certain`. Kept as it was written."""
import torch  # noqa: F401  (your steps use it)

from course.fast_batch import (CHUNK, INF, WINDOW, WINDOW_K, Routes, Steps, cumulative, filtered_batch,  # noqa: F401
                               first_true, penalized_fp32, prefix_sum, sample_batch)
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs  # noqa: F401
from course.streams import stream_uniform, stream_uniforms  # noqa: F401  (the n-th number of a stream; many at once)

__all__ = ["SamplingParams", "FastSampler", "Routes", "route", "window_topk", "canonical_window", "row_total",
           "filter_window", "inverse_cdf"]


def _todo(step, name):
    return NotImplementedError(
        f"p08-fast step {step} {name}: see notebooks/p08_fast_path.ipynb §{step} · ./check.sh p08-fast --hint 1")


# step 1: route ---------------------------------------------------------------------------------------
def route(params, vocab):
    """Step 1: Routes(greedy, top_k, top_p, plain, exact), each a list of batch rows, ascending.

    greedy: temperature < GREEDY_TEMPERATURE, whatever its filters. Else top-k on (0 < top_k < vocab): top_k when
    top_k <= WINDOW_K, exact above. Else top-p on (top_p < 1): top_p. Else plain (the whole row).
    """
    # TODO(p08-fast.1): notebook §1's probe: a peer moved a row's route. What may a route read, that no peer moves?
    # only the row's own params (and V, the same for every row): never another row's knobs
    greedy, top_k, top_p, plain, exact = [], [], [], [], []
    for i, p in enumerate(params):
        if p.temperature < GREEDY_TEMPERATURE:
            greedy.append(i)
        elif 0 < p.top_k < vocab:
            (top_k if p.top_k <= WINDOW_K else exact).append(i)
        elif p.top_p < 1:
            top_p.append(i)
        else:
            plain.append(i)
    return Routes(greedy, top_k, top_p, plain, exact)


# step 2: the window ----------------------------------------------------------------------------------
def window_topk(x, width):
    """Step 2: x [n, V] -> (values [n, W] descending, their token ids [n, W]): each row's `width` largest values.

    Any exact answer passes. Stretch (hint 3): read only the chunks of CHUNK logits that can hold the top W.
    """
    # TODO(p08-fast.2): the seed's idea: the top W of each row, without sorting all V of them.
    values, ids = torch.topk(x, width, dim=-1, largest=True, sorted=True)         # [n, W], [n, W]
    return values, ids


def canonical_window(z, ids):
    """Step 2: the same window, values still descending, equal values in the order p08 puts them in, at any W."""
    # TODO(p08-fast.2): notebook §2's probe: torch.topk orders equal values one way at W 8, another at W 16.
    #                   Which order would every width agree on?
    # p08's stable descending sort: equal values in ascending token id. Sort by id first, then a stable sort by
    # value (descending) keeps that id order inside each run of equal values.
    by_id = ids.argsort(dim=-1)                                                   # [n, W]
    z, ids = z.gather(-1, by_id), ids.gather(-1, by_id)
    by_value = torch.sort(z, dim=-1, descending=True, stable=True).indices        # [n, W]
    return z.gather(-1, by_value), ids.gather(-1, by_value)


# step 3: a row total whose rounding is the row's alone ------------------------------------------------
def row_total(e):
    """Step 3: e [n, V], weights in [0, 1] -> [n, 1] float32, each row's sum: the same bits alone or in any batch,
    on any number of threads.

    Precision: the exact sum to float32 precision (within 1e-6 of it, relative); how it rounds to float32 is free.
    """
    # TODO(p08-fast.3): notebook §3's probe: torch.sum gives a lone row and the same row in a batch different bits.
    # Integer addition is associative: turn each weight into a fixed-point int64 (a scale set by the row's own max,
    # a power of two so the scaling is exact), add the integers in any order, turn the exact sum back into a float.
    bits = 40                                                                     # the row max maps below 2**40
    top = e.amax(-1, keepdim=True).double()                                       # [n, 1]
    exponent = torch.frexp(top).exponent                                          # [n, 1] top = m * 2**exponent
    scale = torch.ldexp(torch.ones_like(top), bits - exponent)                    # [n, 1] float64, power of two
    units = torch.round(e.double() * scale).long()                                # [n, V] int64
    total = units.sum(-1, keepdim=True)                                           # [n, 1] exact
    return (total.double() / scale).float()                                       # [n, 1] float32


# step 4: top-k and top-p inside the window, and whether the window settles the row ---------------------
def filter_window(z, top_k, top_p, row_mass, complete):
    """Step 4: p08's top-k and top-p on a canonical window z [n, W] (descending, temperature applied).

    In:  top_k [n, 1] long (0: off; W > top_k) · top_p [n, 1] float (inf: off) · row_mass [n, 1], the row's mass
         over all V relative to its max (a top-p-only row's 100 %; None when every row has top-k on) · complete:
         the window is the whole row.
    Out: e [n, W] = exp(z - max), exactly 0 outside the kept set · cs = cumulative(e) [n, W] · total [n, 1], the
         kept mass · certain [n] bool: the row's own columns prove that its kept set ends inside its window (all
         True if complete); the given exact route settles the rows that are not certain.
    p08's rules:
      - top-k keeps the values >= the k-th; top-p's 100 % is the top-k mass, or row_mass;
      - a column's mass before is the sum of e over the columns left of it;
      - drop every column from the first whose mass before reaches top_p of the 100 % (column 0 always stays).
    """
    # TODO(p08-fast.4): notebook §4's two probes. A row's certain, and a certain row's e, cs and total, are the same
    #                   bits at every width W the peers choose. How can a row tell, from its own columns, that its
    #                   kept set ends inside its window?
    n, width = z.shape
    cols = torch.arange(width, device=z.device)                                   # [W]
    e_all = torch.exp(z - z[:, :1])                                               # [n, W] descending: max = col 0
    cs_all = cumulative(e_all)                                                    # [n, W] entry j: any W, same bits
    # top-k: keep the values >= the k-th (a prefix of the window). The row's own column k (W > top_k always)
    # says whether the run of the k-th value ends inside: z[k] < z[k-1]. Never look at column W - 1 here: W is
    # the peers' choice.
    k_on = top_k > 0                                                              # [n, 1]
    k = top_k.clamp(min=1, max=max(width - 1, 1))                                 # [n, 1]
    kth = z.gather(1, k - 1)                                                      # [n, 1]
    keep = torch.where(k_on, z >= kth, True)                                      # [n, W]
    k_certain = k_on & (z.gather(1, k.clamp(max=width - 1)) < kth) & (top_k < width)  # [n, 1]
    # top-p's 100 %: the top-k mass, read at the row's own last top-k column (not a sum over the padded window)
    n_k = keep.sum(-1, keepdim=True)                                              # [n, 1]
    hundred = cs_all.gather(1, n_k - 1)                                           # [n, 1]
    if row_mass is not None:
        hundred = torch.where(k_on, hundred, row_mass.to(hundred.dtype))
    # top-p: drop from the first column whose mass before reaches top_p of the 100 % (column 0 always stays)
    before = torch.cat([torch.zeros_like(cs_all[:, :1]), cs_all[:, :-1]], 1)     # [n, W] exclusive prefix
    drop = before >= top_p.to(hundred.dtype) * hundred                            # [n, W] inf * mass: never
    drop[:, 0] = False
    cut = first_true(drop)                                                        # [n, 1] W: no cut inside
    keep = keep & (cols < cut)                                                    # [n, W] a prefix
    e = torch.where(keep, e_all, 0.0)                                             # [n, W] exact 0 outside
    cs = cumulative(e)                                                            # [n, W]
    last = keep.sum(-1, keepdim=True) - 1                                         # [n, 1] the last kept column
    total = cs.gather(1, last)                                                    # [n, 1] not the padded sum
    # certain: a top-k row when its k-th value's run ends at its own column k-1; a top-p-only row (its window
    # is WINDOW wide whatever the peers) when the cut is inside and the last kept value is above the edge's
    # (a run of equal values touching the edge may hold other ids than p08's lowest ones).
    p_certain = ~k_on & (cut < width) & (z.gather(1, last.clamp(min=0)) > z[:, -1:])
    certain = (k_certain | p_certain)[:, 0]
    if complete:
        certain = torch.ones_like(certain)
    return e, cs, total, certain


# step 5: the streams and the draw ---------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 5: the drawn column [n, 1]: the first column with mass whose prefix sum exceeds u * total, u [n, 1]
    float64 in [0, 1) and u * total computed in float64 (u's 53 bits)."""
    # TODO(p08-fast.5): never a column without mass, whatever u is and however the sums round.
    target = u.double() * total.double()                                          # [n, 1] float64
    has_mass = e > 0                                                              # [n, W]
    hit = (cs.double() > target) & has_mass                                       # [n, W]
    col = first_true(hit)                                                         # [n, 1] W when none
    cols = torch.arange(e.shape[-1], device=e.device)                            # [W]
    last = torch.where(has_mass, cols, 0).amax(-1, keepdim=True)                  # [n, 1] last column with mass
    return torch.where(col < e.shape[-1], col, last)                              # u * total rounded past cs


class FastSampler:
    """Same contract as p08's Sampler; one vectorized pass per batch, bit-for-bit batch invariant."""

    def __init__(self):
        # TODO(p08-fast.5): the streams, as p08 has generators: one per seeded request, whose key is its seed,
        #                   kept until free() (a request that comes back with another seed keeps it); one shared by
        #                   every unseeded request, keyed by torch.initial_seed() as it is at this sampler's first
        #                   unseeded draw (a torch.manual_seed after __init__ counts).
        self._seeded = {}        # req_id -> [key, draws made]: a counter, not a generator
        self._shared = None      # [key, draws made] of the unseeded requests' shared stream, made at first use

    def _uniforms(self, req_ids, params):
        """Step 5: [B] floats in [0, 1): row i's next number of its request's stream (course/streams.py). Greedy
        rows draw nothing (0.0)."""
        # TODO(p08-fast.5): what a row draws depends on its stream alone: not on the batch's size, the window's
        #                   width or the row's place in the batch.
        keys, counts, rows = [], [], []
        for i, (req_id, p) in enumerate(zip(req_ids, params)):
            if p.temperature < GREEDY_TEMPERATURE:                                # greedy: draws nothing
                continue
            if p.seed is None:
                if self._shared is None:
                    self._shared = [torch.initial_seed(), 0]
                stream = self._shared
            else:
                stream = self._seeded.get(req_id)
                if stream is None:
                    stream = self._seeded[req_id] = [p.seed, 0]
            keys.append(stream[0])
            counts.append(stream[1])
            stream[1] += 1
            rows.append(i)
        out = [0.0] * len(req_ids)
        for i, value in zip(rows, stream_uniforms(keys, counts)):
            out[i] = value
        return out

    def free(self, req_id):
        """Step 5: forget req_id's stream; a later request with the same id starts a fresh one."""
        # TODO(p08-fast.5): an unknown req_id is not an error.
        self._seeded.pop(req_id, None)

    # given: the batch put together around your steps (course/fast_batch.py) --------------------------------
    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        return sample_batch(_steps(), logits, params, prev_tokens, self._uniforms(req_ids, params))

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        return filtered_batch(_steps(), logits, params, prev_tokens)


def _steps():
    """Given: this file's step functions, for the batch code (read at each call)."""
    return Steps(route, window_topk, canonical_window, row_total, filter_window, inverse_cdf)
