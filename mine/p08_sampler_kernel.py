"""P08-kernel — your sampler as one Triton kernel: one program per row, batch invariant by construction.

p08's rule, per row: penalty -> greedy? -> temperature -> top-k -> top-p -> draw. Here a GPU program does a row's
steps 2-6 by itself, reading the row in blocks, with no sort; the penalty, the streams (p08-fast's, keyed by
[seed, count]) and the launch are given (course/kernel_batch.py), and so is the kernel that puts your steps together
(`sample_kernel`, at the bottom). Search for TODO(p08-kernel.):
  1  a row, block by block     launch_config, row_max            notebook §1
  2  top-k without a sort      kth_largest                          §2
  3  order-free mass           units, mass_at_least                 §3
  4  top-p without a sort      top_p_cut                            §4
  5  the draw                  draw                                 §5
On a CPU the kernels run in Triton's interpreter (TRITON_INTERPRET=1, set by the grader and the notebook).
Grade: ./check.sh p08-kernel (one step: --step 1; --watch re-grades on save). Stuck: ./check.sh p08-kernel --hint 1.
"""
import triton
import triton.language as tl

from course.kernel_batch import KEY_MAX, KEY_MIN, Streams, key_value, run_kernel  # noqa: F401  (keys: step 2)
from course.sampling_params import SamplingParams, validate_sample_inputs

__all__ = ["SamplingParams", "KernelSampler", "launch_config", "row_max", "kth_largest", "units", "mass_at_least",
           "top_p_cut", "draw", "sample_kernel"]

BLOCK = 1024        # columns a program reads at once
NUM_WARPS = 4


def _todo(step, name):
    return NotImplementedError(
        f"p08-kernel step {step} {name}: see notebooks/p08_kernel.ipynb §{step} · ./check.sh p08-kernel --hint 1")


# step 1: a row, block by block -------------------------------------------------------------------------
def launch_config(batch, vocab):
    """Step 1: (grid, block, num_warps) for `batch` rows of `vocab` columns. Row i is the program with
    program_id(0) == i (sample_kernel reads it so)."""
    # TODO(p08-kernel.1): a row's program (its block, its warps, how its row is split) follows from V and constants
    #                     alone, never from the batch: a row alone and in a batch of 256 runs the same code.
    raise _todo(1, "launch_config")


@triton.jit
def row_max(row, V, temperature, BLOCK: tl.constexpr):
    """Step 1: (z_max, col): the row's largest z = x / temperature, and the first column holding it (torch.argmax's
    rule). `row` points at the row's V float32 values. z is tl.div_rn(x, temperature) wherever a step computes it: it
    rounds as torch's x / T does on any device (a compiled `/` is an approximate division; only C1 can see that)."""
    # TODO(p08-kernel.1): read the row in blocks of BLOCK columns, in column order; a column past V is no value.
    raise _todo(1, "row_max")


# step 2: top-k without a sort ----------------------------------------------------------------------------
@triton.jit
def kth_largest(row, V, temperature, k, BLOCK: tl.constexpr):
    """Step 2: the k-th largest z, equal values counted once per column: the largest value v with at least k
    columns z >= v (-inf is a value too). 1 <= k <= V."""
    # TODO(p08-kernel.2): no sort. Search over values, each pass counting the columns at or above a candidate; a
    #                     fixed number of passes that always ends on a value of the row. course/kernel_batch.py
    #                     gives every float32 an int key that sorts as the floats do (KEY_MIN, KEY_MAX, key_value).
    raise _todo(2, "kth_largest")


# step 3: order-free mass ---------------------------------------------------------------------------------
@triton.jit
def units(z, z_max, scale):
    """Step 3: a weight exp(z - z_max) in [0, 1] as whole units: floor(exp(z - z_max) * scale), int64. K3 allows a
    unit or two (a rounding) and what an exp may differ by in its last bits (tl.exp2 of z * log2(e), or a GPU's exp:
    about |z - z_max| float32 steps); the column at z_max has exactly scale units."""
    # TODO(p08-kernel.3): p08-fast's fixed point: a row's units add up below 2**62, so int64 holds any sum of them.
    raise _todo(3, "units")


@triton.jit
def mass_at_least(row, V, temperature, z_max, v, scale, BLOCK: tl.constexpr):
    """Step 3: the units of the columns with z >= v, an int64."""
    # TODO(p08-kernel.3): a sum whose result cannot depend on the order of its adds, nor on BLOCK (a GPU's tuning
    #                     changes it).
    raise _todo(3, "mass_at_least")


# step 4: top-p without a sort ----------------------------------------------------------------------------
@triton.jit
def top_p_cut(row, V, temperature, z_max, quota, scale, BLOCK: tl.constexpr):
    """Step 4: (cut, last, kept). The kept set is every column with z > cut, and the columns with z == cut up to
    column `last`; kept is their units. p08's rule in units: rank the columns by z, equal values by column; a column
    stays while the units of the columns ranked before it are below quota (= ceil(top_p * the 100 %), given). No top-k
    argument: quota is at most the mass at or above top-k's k-th value, so the cut never falls below it."""
    # TODO(p08-kernel.4): step 2's search, weighing units instead of counting columns. Among the columns tied at
    #                     the cut, the first by column stay.
    raise _todo(4, "top_p_cut")


# step 5: the draw ----------------------------------------------------------------------------------------
@triton.jit
def draw(row, V, temperature, z_max, cut, last, kept, u, scale, BLOCK: tl.constexpr):
    """Step 5: the drawn column: adding the kept columns' units in column order, the first column where the running
    sum exceeds u * kept (u in [0, 1), a float64, the product too); where rounding leaves no such column (a product
    that rounds up to kept), the last kept column with units."""
    # TODO(p08-kernel.5): never a column outside the kept set, nor one without units, whatever u is.
    raise _todo(5, "draw")


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
    """Same contract as p08's Sampler; one kernel launch per batch, bit-for-bit batch invariant."""

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

