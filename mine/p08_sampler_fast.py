"""P08-fast — your vectorized sampler: the whole batch at once, in sorted top-k space, batch invariant.

Same contract as P08's Sampler, plus `filtered_probs`. Fill in the steps (search for TODO(p08-fast.)).
Grade with `./check.sh p08-fast`; stuck? `./check.sh p08-fast --hint 1`.
The walkthrough is notebooks/p08_fast_path.ipynb (English: notebooks/en/p08_fast_path.ipynb; §N there is step N):
  1 prepare (fp32, penalty)   2 greedy rows + temperature   3 the window (topk, ties in id order)
  4 top-k + top-p inside the window   5 exact zeros / filtered_probs   6 one uniform per row -> token
`./check.sh p08-fast` grades each step on its own first (T1 penalized_fp32, T3 window_topk and
canonical_window, T4 prefix_sum / row_total and filter_window, T5 filtered_probs, T6 inverse_cdf), then
the whole FastSampler (F1-F5 and P08's checks). `--watch` re-grades every time you save.
"""
import math  # noqa: F401  (math.ceil, when a window widens)

import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs  # given  # noqa: F401

__all__ = ["SamplingParams", "FastSampler", "penalized_fp32", "window_topk", "canonical_window", "prefix_sum",
           "row_total", "filter_window", "inverse_cdf"]

WINDOW = 64          # first top-K' window for rows with top-p but no top-k
GROW = 8             # each retry widens that window at least this much
SORT_FRACTION = 8    # a window wider than V / SORT_FRACTION costs about a full sort: sort instead
CHUNK = 64           # window_topk reads the row as chunks of this many logits
INF = float("inf")


def _todo(step, name):
    return NotImplementedError(
        f"p08-fast step {step} {name}: see notebooks/p08_fast_path.ipynb §{step} · ./check.sh p08-fast --hint 1")


# step 1: prepare -------------------------------------------------------------------------------------
def penalized_fp32(logits, params, prev_tokens):
    """Step 1: fp32 logits [B, V]; the penalty goes onto a copy, at each row's distinct prev ids only.

    logits [B, V] (fp32, bf16 or fp16) · params: B SamplingParams · prev_tokens: B histories (lists or
    tensors, repeats allowed) -> [B, V] float32. Each distinct id of row i's history: v > 0 -> v / penalty,
    else v * penalty (row i's own penalty); every other value unchanged. The caller's tensor is never
    written. fp32 input and no penalty anywhere -> `logits` itself may be returned (no [B, V] copy).
    The penalty works on (row, id) pairs, not on a [B, V] mask: see hints L2 step 1.
    """
    # TODO(p08-fast.1): collect (row, id, penalty) for rows with penalty != 1 and a history, then one
    #                   gather + torch.where + index assignment on the copy.
    raise _todo(1, "penalized_fp32")


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
    values in ascending token id. No ties in the window -> return it as it is.
    Needed on the CPU too: torch.topk's order among equal values changes with W, and W is set by the peers
    (check T3 shows a row where it does).
    """
    # TODO(p08-fast.3): two sorts and two gathers, only when some neighbours are equal.
    raise _todo(3, "canonical_window")


# sums whose rounding depends on the row alone -------------------------------------------------------
def prefix_sum(e):
    """Inclusive prefix sums [n, W] by log-step shifted adds: entry j is one fixed tree of adds over e[0..j].

    e [n, W] -> [n, W]; entry j = e[0] + ... + e[j], the same float for any W, any batch size, any device.
    Plainly: on the CPU torch.cumsum gives the very same floats (it adds sequentially) and passes every CPU
    check; the scan matters on CUDA, where a lone row and a batch take different cumsum kernels, with
    different orders of adds. Write the scan (hints L2 step 4).
    """
    # TODO(p08-fast.4): the log-step scan (torch.cat of the untouched first columns and a shifted add).
    raise _todo(4, "prefix_sum")


def row_total(e):
    """[n, V] -> [n, 1] row sums by an adding tree fixed by V alone (pairwise halving).

    Not torch.sum: it splits a lone long row across threads, so a row alone and the same row in a batch
    round differently, on the CPU too (check T4 shows it).
    """
    # TODO(p08-fast.4): add the two halves until one column is left (an odd last column waits a round).
    raise _todo(4, "row_total")


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

    Only elementwise ops, gathers, integer counts and prefix_sum: a row's numbers must not depend on W.
    (A torch.sum over the window does: W columns with zeros at the end round differently for each W.)
    """
    # TODO(p08-fast.4): e = exp(z - z[:, :1]); cs = prefix_sum(e); the k-th value by gather; how many
    #                   columns top-k keeps; top-p's 100 % (the top-k mass, or row_mass); the first column
    #                   whose mass before reaches top_p (_first_true); n_kept = the smaller of the two.
    # TODO(p08-fast.5): exact zeros from column n_kept on; total = cs at the row's own column n_kept - 1.
    # TODO(p08-fast.4): certain = the last kept value and the k-th value are both > the window's last value.
    raise _todo(4, "filter_window")


# step 6: the draw ------------------------------------------------------------------------------------
def inverse_cdf(cs, total, u, e):
    """Step 6: the first column whose prefix mass exceeds u * total and has mass; else the last with mass.

    cs [n, W], total [n, 1], u [n, 1] in [0, 1), e [n, W] (exactly 0 outside the kept set) -> columns [n, 1].
    """
    # TODO(p08-fast.6): _first_true of (cs > u * total) & (e > 0); if rounding leaves no hit, the last
    #                   column with e > 0.
    raise _todo(6, "inverse_cdf")


def _take(t, rows):
    """t's rows listed in `rows` (a copy), or t itself when `rows` is every row in order."""
    if rows == list(range(t.shape[0])):
        return t
    return t.index_select(0, torch.tensor(rows, device=t.device))


# the sampler ----------------------------------------------------------------------------------------
class FastSampler:
    """Same contract as the reference Sampler; one vectorized pass per batch, bit-for-bit batch invariant."""

    def __init__(self):
        # TODO(p08-fast.6): where do the generators live? (as in P08: one per seeded req_id, one shared)
        pass

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token.

        validate -> penalized_fp32 -> _parts -> greedy rows: argmax of the penalised row (torch's tie rule)
        -> per part (rows, e, cs, total, ids): one uniform per row (_uniforms), inverse_cdf, then
        ids.gather back to vocab ids (ids None: the columns already are vocab ids).
        """
        # TODO(p08-fast.2): greedy rows take the argmax of their penalised row; they draw nothing.
        # TODO(p08-fast.6): the others: u from _uniforms, position from inverse_cdf, vocab id via ids.
        raise _todo(6, "FastSampler.sample")

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        # TODO(p08-fast.5): zeros [B, V]; each part's e / total scattered to its ids (or as is, in vocab order).
        raise _todo(5, "FastSampler.filtered_probs")

    def free(self, req_id):
        """Forget req_id's generator; a later request with the same id starts a fresh stream."""
        # TODO(p08-fast.6): drop the generator (an unknown req_id is not an error).
        raise _todo(6, "FastSampler.free")

    # -- internals ------------------------------------------------------------------------------------
    def _uniforms(self, req_ids, params, device):
        """[n, 1] float64: one uniform per row, a seeded row's from its own generator, the others' shared.

        A seeded request: torch.Generator(device=device).manual_seed(seed), created on its first draw.
        Exactly one torch.rand(1, generator=g, ...) per row per step: never more, whatever K or B.
        """
        # TODO(p08-fast.6): one scalar draw per row.
        raise _todo(6, "FastSampler._uniforms")

    def _shared_generator(self, device):
        """The unseeded requests' generator on `device`, seeded from torch.initial_seed() like the reference."""
        # TODO(p08-fast.6): create once per device.
        raise _todo(6, "FastSampler._shared_generator")

    def _parts(self, x, params):
        """Steps 2-5 for the batch: (greedy rows, [(rows, e, cs, total, ids or None), ...] for the others).

        Rows without a filter sample over V in vocab order; rows with top-k (and maybe top-p) share one
        window of the widest need; top-p-only rows start at WINDOW, widen while a window can pay off, and
        fall back to the full (stable) sort. Every path gives a row the same numbers.
        """
        # TODO(p08-fast.2): sort rows into greedy / top-k / top-p only / no filter; per-row tensors
        #                   temperature [B, 1] (no 0 for greedy rows), top_k [B, 1], top_p [B, 1].
        # TODO(p08-fast.4): top-p-only rows: row_mass = row_total(exp(z - max)) over all of V.
        # TODO(p08-fast.3): width = the widest need (top_k + 1, or WINDOW); window_topk, then temperature
        #                   on [n, W] only, then canonical_window.
        # TODO(p08-fast.4): filter_window; uncertain rows: widen (top-p only) or the full stable sort.
        raise _todo(2, "FastSampler._parts")
