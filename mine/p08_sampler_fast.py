"""P08-fast — your vectorized sampler: every row of the batch at once, in sorted top-k space, batch invariant.

p08's loop did, row by row: penalty -> greedy? -> temperature -> top-k -> top-p -> draw. Here one pass does the
whole batch, and a row's numbers must come out the same, bit for bit, alone or beside any peers. You write the
five ideas that make that true (search for TODO(p08-fast.)); the plumbing around them is given
(course/fast_batch.py: the penalty, the one upload, a window per route, the one host sync, the exact route for
rows a window cannot settle, the scatter to [B, V]; it calls your functions through `_steps()` at the bottom). The
docstrings below are the whole contract: the given code need not be read to write the steps.
  1  route            each row's route: greedy, top_k, top_p, plain or exact  notebook §1
  2  the window       the top W values; equal values in one order at any W    §2
  3  row_total        a row total that rounds the same in any batch           §3
  4  filter_window    the kept count, and whether the window settles it       §4
  5  streams, draw    one uniform per row from its own stream                 §5
Speed (F5): the whole sampler beats p08's loop and a full-vocabulary sort; your steps sort no whole row and read
no value back from the device (the given code waits once per call).
Grade: ./check.sh p08-fast (one step: --step 1; --watch re-grades on save). Stuck: ./check.sh p08-fast --hint
(each call one level more: 1 questions, 2 step by step, 3 code).
"""
import torch  # noqa: F401  (your steps use it)

# given helpers: cumulative(e) [n, W] -> prefix sums, column j the same float at any W; first_true(mask) [n, W] bool
# -> [n, 1] long, the column of each row's first True (W where there is none)
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

    greedy: temperature < GREEDY_TEMPERATURE, whatever its filters. Else, top-k on (0 < top_k < vocab): the top_k
    rows share one window of the widest top_k + 1 columns, at most WINDOW_K + 1; exact: a top-k row that needs
    more columns (its own top_k + 1) than that window can have. Else top-p on (top_p < 1): top_p. Else plain (the
    whole row).
    """
    # TODO(p08-fast.1): notebook §1's probe: a peer moved a row's route, and the row's kept set with it. Which rows
    #                   go exact, so that no peer can move one?
    raise _todo(1, "route")


# step 2: the window ----------------------------------------------------------------------------------
def window_topk(x, width):
    """Step 2: x [n, V] -> (values [n, W] descending, their token ids [n, W]): each row's `width` largest values.

    Any exact answer passes T2 (torch.topk is one; a sort of the whole row is too slow for F5). Stretch (hints 2 and
    3): read only the chunks of CHUNK logits that can hold the top W.
    """
    # TODO(p08-fast.2): the seed's idea: the top W of each row, without sorting all V of them.
    raise _todo(2, "window_topk")


def canonical_window(z, ids):
    """Step 2: the same window, values still descending, equal values in an order that no width W changes."""
    # TODO(p08-fast.2): notebook §2's probe: torch.topk orders equal values one way at W 8, another at W 16.
    #                   Which order would every width agree on?
    raise _todo(2, "canonical_window")


# step 3: a row total whose rounding is the row's alone ------------------------------------------------
def row_total(e):
    """Step 3: e [n, V], weights in [0, 1], a row's largest 1 or near it (the given code passes exp(z - max)), V up to
    2**18 -> [n, 1] float32, each row's sum: the same bits alone or in any batch, on any number of threads.

    Precision: the exact sum to float32 precision (within 1e-6 of it, relative); how it rounds to float32 is free.
    """
    # TODO(p08-fast.3): notebook §3's probe: torch.sum gives a lone row and the same row in a batch different bits.
    raise _todo(3, "row_total")


# step 4: top-k and top-p inside the window, and whether the window settles the row ---------------------
def filter_window(z, top_k, top_p, row_mass, complete):
    """Step 4: p08's top-k and top-p on a canonical window, and whether the window settles the row.

    In:  z         [n, W] descending, temperature applied
         top_k     [n, 1] long, 0: off (W > top_k where on)
         top_p     [n, 1] float, inf: off
         row_mass  [n, 1] the row's mass over all V relative to its max: a top-p-only row's 100 % (unused where
                   top-k is on); None when every row has top-k on
         complete  the window is the whole row (the given code says so only of a top-p window over a vocabulary
                   of at most WINDOW: V decides it, never the peers)
    Out: e         [n, W] = exp(z - max), exactly 0 outside the kept set
         cs        [n, W] = cumulative(e), of e before or after the zeroing (the kept columns agree)
         total     [n, 1] the kept mass
         certain   [n] bool, True exactly where the row's own columns (those every window of the row holds,
                   whatever width the peers choose: a top-k row's first top_k + 1) prove that its kept set ends
                   inside its window; all True if complete. The given exact route settles the other rows.
         e, cs and total follow p08's rules on the window as it stands, in every row, certain or not.
    p08's rules:
      - top-k keeps the values >= the k-th; top-p's 100 % is the top-k mass, or row_mass;
      - a column's mass before is the sum of e over the columns left of it;
      - drop every column from the first whose mass before reaches top_p of the 100 % (column 0 always stays;
        compare in float32 or float64, as long as the row alone decides).
    """
    # TODO(p08-fast.4): notebook §4's two probes. A row's certain, and a certain row's e, cs and total, are the same
    #                   bits at every width W the peers choose. How can a row tell, from its own columns, that its
    #                   kept set ends inside its window? (T4.filter_window grades e, cs and total; T4.certain, certain.)
    raise _todo(4, "filter_window")


# step 5: the streams and the draw ---------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 5: the drawn column [n, 1]: the first column with mass whose prefix sum exceeds u * total, u [n, 1]
    float64 in [0, 1) and u * total computed in float64 (u's 53 bits); where none does, the last column with mass."""
    # TODO(p08-fast.5): never a column without mass, whatever u is and however the sums round.
    raise _todo(5, "inverse_cdf")


class FastSampler:
    """Same contract as p08's Sampler; one vectorized pass per batch, bit-for-bit batch invariant."""

    def __init__(self):
        # TODO(p08-fast.5): notebook §5's probe: one torch.rand(B) per call hands a request a number that depends on
        #                   B and on its place in the batch. What must this sampler remember between calls instead?
        pass

    def _uniforms(self, req_ids, params):
        """Step 5: a list of B floats in [0, 1), row i's next number of its request's stream. The streams are p08's
        generators: a seeded request has its own, keyed by its seed, from its first draw until free() (a req_id
        that comes back with another seed before free() keeps its stream and its count); the unseeded requests
        share one, keyed by torch.initial_seed() as it is at this sampler's first unseeded draw (a
        torch.manual_seed after __init__ counts); an unseeded row draws from it whatever seed its req_id had before.
        The stream keyed by s gives stream_uniform(s, 0), stream_uniform(s, 1), ... Greedy rows draw nothing (0.0)
        and start no stream."""
        # TODO(p08-fast.5): what a row draws depends on its stream alone: not on the batch's size, the window's
        #                   width or the row's place in the batch.
        raise _todo(5, "FastSampler._uniforms")

    def free(self, req_id):
        """Step 5: forget req_id's stream; a later request with the same id starts a fresh one."""
        # TODO(p08-fast.5): an unknown req_id is not an error.
        raise _todo(5, "FastSampler.free")

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
