"""P08 kernel: the reference sampler's rule as one Triton kernel, one program per row, batch invariant by construction.

Per row, exactly the reference's rule (solutions/p08_sampler.py):
penalty -> greedy? -> temperature -> top-k -> top-p -> draw from the request's own stream.
This file holds the kernel's ideas, in the stub's order (mine/p08_sampler_kernel.py, notebooks/p08_kernel.ipynb §1-§5):
  1  a row, block by block: one program per row; its blocks, warps and grid fixed by V and constants
  2  top-k without a sort: the k-th value by a search over values, counting columns (32 passes)
  3  order-free mass: integer units whose sum is the same in any order and any blocking
  4  top-p without a sort: the cut by the same search, weighing units; ties at the cut by column
  5  the draw: the inverse CDF of the kept units at the row's uniform, in column order
The penalty, the streams (p08-fast's, keyed by [seed, count]) and the launch are given: course/kernel_batch.py.

Batch invariance, bit for bit, by construction: a program reads only its own row, in an order fixed by V and
BLOCK; every float it makes is elementwise; every sum is of integers; nothing in a launch follows from the batch.
"""
import triton
import triton.language as tl

from course.kernel_batch import KEY_MAX, KEY_MIN, Streams, key_value, run_kernel
from course.sampling_params import SamplingParams, validate_sample_inputs

__all__ = ["SamplingParams", "KernelSampler", "launch_config", "row_max", "kth_largest", "units", "mass_at_least",
           "top_p_cut", "draw", "sample_kernel"]

BLOCK = 1024        # columns a program reads at once
NUM_WARPS = 4


# step 1: a row, block by block -------------------------------------------------------------------------
def launch_config(batch, vocab):
    """(grid, block, num_warps) for a batch: one program per row; a row's program is the same at any batch size."""
    return (batch,), BLOCK, NUM_WARPS


@triton.jit
def row_max(row, V, temperature, BLOCK: tl.constexpr):
    """(z_max, col): the largest z = x / temperature of the row and the first column holding it (torch.argmax's)."""
    z_max = tl.full((), float("-inf"), tl.float32)
    col = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):                                              # blocks in column order
        cols = start + tl.arange(0, BLOCK)                                        # [BLOCK]
        z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)  # [BLOCK] past V: -inf
        best = tl.max(z, 0)
        col = tl.where(best > z_max, start + tl.argmax(z, 0), col)                # an equal later max: not taken
        z_max = tl.maximum(z_max, best)
    return z_max, col


# step 2: top-k without a sort ----------------------------------------------------------------------------
@triton.jit
def count_at_least(row, V, temperature, v, BLOCK: tl.constexpr):
    """The number of columns with z >= v (int32)."""
    count = tl.full((), 0, tl.int32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)                                        # [BLOCK]
        z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
        count += tl.sum((z >= v) & (cols < V), 0).to(tl.int32)
    return count


@triton.jit
def kth_largest(row, V, temperature, k, BLOCK: tl.constexpr):
    """The k-th largest z (equal values counted per column): the largest value with at least k columns at or above it.

    Bisection over the float keys: count(>= value(lo)) >= k > count(>= value(hi)); 32 halvings leave hi = lo + 1."""
    lo = tl.full((), KEY_MIN, tl.int64)                                          # count(>= -inf) = V >= k
    hi = tl.full((), KEY_MAX + 1, tl.int64)                                      # count(>= NaN) = 0 < k
    for _ in range(32):                                                           # 2**32 > hi - lo
        mid = lo + (hi - lo) // 2
        enough = count_at_least(row, V, temperature, key_value(mid), BLOCK) >= k
        lo = tl.where(enough, mid, lo)
        hi = tl.where(enough, hi, mid)
    return key_value(lo)


# step 3: order-free mass ---------------------------------------------------------------------------------
@triton.jit
def units(z, z_max, scale):
    """A weight exp(z - z_max) in [0, 1] as whole units of 1 / scale, int64 (truncated)."""
    return (tl.exp(z - z_max) * scale).to(tl.int64)


@triton.jit
def mass_at_least(row, V, temperature, z_max, v, scale, BLOCK: tl.constexpr):
    """The units of the columns with z >= v, added as int64: the same sum in any order and any blocking."""
    mass = tl.full((), 0, tl.int64)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)                                        # [BLOCK]
        z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
        mass += tl.sum(tl.where(z >= v, units(z, z_max, scale), 0), 0)          # past V: exp(-inf) = 0 units
    return mass


# step 4: top-p without a sort ----------------------------------------------------------------------------
@triton.jit
def top_p_cut(row, V, temperature, z_max, quota, scale, BLOCK: tl.constexpr):
    """(cut, last, kept): the kept set is z > cut, and z == cut up to column `last`; kept is its mass in units.

    p08's rule in units: a column stays while the mass before it is below quota = ceil(top_p * the 100 %)."""
    lo = tl.full((), KEY_MIN, tl.int64)                                          # the mass at or above: the 100 %
    hi = tl.full((), KEY_MAX + 1, tl.int64)
    for _ in range(32):                                                           # the largest value whose mass at
        mid = lo + (hi - lo) // 2                                                 # or above reaches quota: the cut
        enough = mass_at_least(row, V, temperature, z_max, key_value(mid), scale, BLOCK) >= quota
        lo = tl.where(enough, mid, lo)
        hi = tl.where(enough, hi, mid)
    cut = key_value(lo)
    above = tl.full((), 0, tl.int64)                                              # the mass before the first tie
    tied = tl.full((), 0, tl.int64)
    weight = tl.full((), 0, tl.int64)                                            # the units of one tied column
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
        w = units(z, z_max, scale)                                                # [BLOCK]
        above += tl.sum(tl.where(z > cut, w, 0), 0)
        tied += tl.sum(((z == cut) & (cols < V)).to(tl.int64), 0)
        weight = tl.maximum(weight, tl.max(tl.where(z == cut, w, 0), 0))
    n_keep = tl.minimum(tied, (quota - above + weight - 1) // tl.maximum(weight, 1))  # ties kept by column
    last = tl.full((), -1, tl.int64)                                              # the column of the n_keep-th tie
    seen = tl.full((), 0, tl.int64)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
        tie = ((z == cut) & (cols < V)).to(tl.int64)                              # [BLOCK]
        at = (seen + tl.cumsum(tie, 0) == n_keep) & (tie > 0)
        last = tl.maximum(last, tl.max(tl.where(at, cols.to(tl.int64), -1), 0))
        seen += tl.sum(tie, 0)
    return cut, last, above + n_keep * weight


# step 5: the draw ----------------------------------------------------------------------------------------
@triton.jit
def draw(row, V, temperature, z_max, cut, last, kept, u, scale, BLOCK: tl.constexpr):
    """The drawn column: where the kept units, added in column order, first reach the target, u's share of kept."""
    target = tl.minimum((u * kept.to(tl.float64)).to(tl.int64) + 1, kept)        # in [1, kept], whatever u is
    seen = tl.full((), 0, tl.int64)
    token = tl.full((), 0, tl.int64) + V
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
        keep = (z > cut) | ((z == cut) & (cols <= last))                         # [BLOCK]
        w = tl.where(keep & (cols < V), units(z, z_max, scale), 0)               # [BLOCK]
        reached = (seen + tl.cumsum(w, 0) >= target) & (w > 0)                   # only a column with mass
        token = tl.minimum(token, tl.min(tl.where(reached, cols.to(tl.int64), V), 0))
        seen += tl.sum(w, 0)
    return token


# given: the kernel, one program per row, the steps in the seed's order --------------------------------------
@triton.jit
def sample_kernel(x_ptr, knobs_ptr, V, scale, tokens_ptr, probs_ptr, PROBS: tl.constexpr, BLOCK: tl.constexpr):
    """Row i of x [B, V] (penalised, fp32): its token into tokens[i], or (PROBS) its distribution into probs[i]."""
    i = tl.program_id(0)
    row = x_ptr + i.to(tl.int64) * V
    temperature = tl.load(knobs_ptr + 4 * i).to(tl.float32)                       # 0: greedy
    top_k = tl.load(knobs_ptr + 4 * i + 1).to(tl.int32)                           # 0: off
    top_p = tl.load(knobs_ptr + 4 * i + 2)                                        # 1: off (float64)
    u = tl.load(knobs_ptr + 4 * i + 3)                                            # float64 in [0, 1)
    greedy = temperature == 0
    temperature = tl.where(greedy, 1.0, temperature)
    z_max, col = row_max(row, V, temperature, BLOCK)                              # step 1 (greedy: the argmax)
    cut = tl.full((), float("-inf"), tl.float32)
    last = tl.full((), 0, tl.int64) + V - 1
    if top_k > 0:
        cut = kth_largest(row, V, temperature, top_k, BLOCK)                      # step 2
    kept = mass_at_least(row, V, temperature, z_max, cut, scale, BLOCK)          # step 3: top-p's 100 %
    if top_p < 1:
        quota = tl.ceil(top_p * kept.to(tl.float64)).to(tl.int64)
        cut, last, kept = top_p_cut(row, V, temperature, z_max, quota, scale, BLOCK)  # step 4
    if PROBS:
        mass = (kept.to(tl.float64) / scale).to(tl.float32)                      # the kept weight
        out = probs_ptr + i.to(tl.int64) * V
        for start in range(0, V, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
            keep = (z > cut) | ((z == cut) & (cols <= last))
            p = tl.div_rn(tl.where(keep, tl.exp(z - z_max), 0.0), mass)          # exact zeros outside
            p = tl.where(greedy, tl.where(cols == col, 1.0, 0.0), p)
            tl.store(out + cols, p, mask=cols < V)
    else:
        token = draw(row, V, temperature, z_max, cut, last, kept, u, scale, BLOCK)  # step 5
        tl.store(tokens_ptr + i, tl.where(greedy, col.to(tl.int64), token))


# given: the sampler around the kernel -----------------------------------------------------------------------
class KernelSampler:
    """Same contract as the reference Sampler; one kernel launch per batch, bit-for-bit batch invariant."""

    def __init__(self):
        self.streams = Streams()        # p08-fast's streams: per request [seed, count], one shared

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        u = self.streams.uniforms(req_ids, params)
        return run_kernel(sample_kernel, launch_config, logits, params, prev_tokens, u)

    def filtered_probs(self, logits, params, prev_tokens):
        """[B, V] float32: the distribution each row is drawn from (greedy rows: one-hot at the argmax)."""
        validate_sample_inputs(logits, list(range(logits.shape[0])), params, prev_tokens)
        return run_kernel(sample_kernel, launch_config, logits, params, prev_tokens)

    def free(self, req_id):
        """Forget req_id's stream; a later request with the same id starts a fresh one."""
        self.streams.free(req_id)

