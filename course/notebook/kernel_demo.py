"""The kernel notebook's own kernels (Triton needs a kernel's source in a file): a first kernel, and the naive
versions each section of notebooks/p08_kernel.ipynb runs on its probe before the learner's step.

Every kernel here reads rows of x [B, V] fp32, one program per row. None of them is an answer to a step: the first
kernel is a one-block max (step 1 reads a row in many blocks, with a temperature and torch.argmax's tie rule), and
the naive ones carry the mistake their section is about."""
import torch
import triton
import triton.language as tl


@triton.jit
def one_block_max(x_ptr, out_ptr, V, BLOCK: tl.constexpr):
    """out[i] = the max of row i, when V <= BLOCK."""
    i = tl.program_id(0)            # which program: which row
    cols = tl.arange(0, BLOCK)      # [BLOCK] 0, 1, ..., BLOCK - 1
    # [BLOCK]: the row's values; a lane past V loads -inf
    x = tl.load(x_ptr + i * V + cols, mask=cols < V,
                other=float("-inf"))
    tl.store(out_ptr + i, tl.max(x, 0))


@triton.jit
def one_block_max_unmasked(x_ptr, out_ptr, V, BLOCK: tl.constexpr):
    """The same without the mask: every lane loads, V or not."""
    i = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.max(tl.load(x_ptr + i * V + cols), 0))


@triton.jit
def _max_and_float_total(row, V, BLOCK: tl.constexpr):
    """(max, the float32 sum of exp(x - max)) of a row, block by block: the naive kernels' total."""
    top = tl.full((), float("-inf"), tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        top = tl.maximum(top, tl.max(tl.load(row + cols, mask=cols < V, other=float("-inf")), 0))
    total = tl.full((), 0.0, tl.float32)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.sum(tl.exp(tl.load(row + cols, mask=cols < V, other=float("-inf")) - top), 0)
    return top, total


@triton.jit
def float_softmax(x_ptr, out_ptr, V, BLOCK: tl.constexpr):
    """Softmax of each row, its total a float32 sum over blocks (the naive kernel of §1)."""
    i = tl.program_id(0)
    top, total = _max_and_float_total(x_ptr + i * V, V, BLOCK)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        e = tl.exp(tl.load(x_ptr + i * V + cols, mask=cols < V, other=float("-inf")) - top)
        tl.store(out_ptr + i * V + cols, tl.div_rn(e, total), mask=cols < V)


@triton.jit
def float_total(x_ptr, out_ptr, V, BLOCK: tl.constexpr):
    """out[i] = the float32 sum of exp(x - max) over row i, block by block (float_softmax's denominator, §3)."""
    i = tl.program_id(0)
    tl.store(out_ptr + i, _max_and_float_total(x_ptr + i * V, V, BLOCK)[1])


def naive_block(batch: int) -> int:
    """A tuner's rule of thumb: fewer rows, bigger blocks (more of the GPU per row). It reads the batch."""
    return max(128, triton.next_power_of_2(4096 // batch))


def totals(x, block):
    """float_total of x [B, V] at this block size: [B]."""
    out = torch.empty(x.shape[0], device=x.device)
    float_total[(x.shape[0],)](x, out, x.shape[1], BLOCK=block)
    return out


def softmax_rows(x, block=None):
    """float_softmax of x [B, V] at this block size (default: naive_block(B)): [B, V]."""
    out = torch.empty_like(x)
    float_softmax[(x.shape[0],)](x, out, x.shape[1], BLOCK=block or naive_block(x.shape[0]))
    return out
