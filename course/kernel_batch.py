"""The kernel level's given code: what is not the kernel's idea.

mine/p08_sampler_kernel.py (and solutions/p08_sampler_kernel.py) write the kernel: one program per row, the
thresholds found by a search over values, order-free integer masses, the draw. This module does the rest, on the
host: the penalty (p08's step 1, course/fast_batch.penalized_fp32), the requests' random streams (p08-fast's counted
streams, course/streams.py), the knobs of the batch in one upload, and the launch through the file's own
launch_config. It also holds the float keys the threshold search walks over (`key_value`).
"""
import numpy as np
import torch
import triton
import triton.language as tl

from course.fast_batch import penalized_fp32
from course.sampling_params import GREEDY_TEMPERATURE
from course.streams import stream_uniforms

# A float32's key: its bits as an int32, negatives flipped so that keys sort as the floats do. Every float32 from -inf
# to +inf has a key in [KEY_MIN, KEY_MAX]; KEY_MAX + 1 is a NaN, which no value is >= (a count of 0 above it).
KEY_MIN = tl.constexpr(-0x7F800001)        # the key of -inf (constexpr: a kernel may read only constexpr globals)
KEY_MAX = tl.constexpr(0x7F800000)         # the key of +inf


@triton.jit
def key_value(key):
    """The float32 whose key is `key` (an int64 scalar or block in [KEY_MIN, KEY_MAX + 1])."""
    key = key.to(tl.int32)
    bits = tl.where(key >= 0, key, key ^ 0x7FFFFFFF)
    return bits.to(tl.float32, bitcast=True)


def host_key_value(key: int) -> float:
    """key_value on the host (the notebook's search panel re-enacts the kernel's search with it)."""
    bits = key if key >= 0 else key ^ 0x7FFFFFFF
    return float(np.array(bits, dtype=np.int64).astype(np.int32).view(np.float32))


def units_scale(vocab: int) -> float:
    """The fixed point of a weight in [0, 1]: units = floor(weight * 2**(62 - V.bit_length())), so that a row's V units
    add up below 2**62 in int64, exactly and in any order (p08-fast's step 3, the same integers)."""
    return 2.0 ** (62 - vocab.bit_length())


class Streams:
    """The requests' random streams, as p08-fast counts them: a seeded request's n-th uniform is stream_uniform(seed,
    n); every unseeded request draws from one shared stream keyed by torch.initial_seed() at its first draw."""

    def __init__(self):
        self.seeded = {}         # req_id -> [seed, draws so far]; free() drops it
        self.shared = None       # [key, draws so far]

    def uniforms(self, req_ids, params) -> list:
        """[B] floats in [0, 1): each row's next number of its request's stream; greedy rows draw nothing (0.0)."""
        keys, counts, drawn = [], [], []
        for i, (req_id, p) in enumerate(zip(req_ids, params)):
            if p.temperature < GREEDY_TEMPERATURE:
                continue
            if p.seed is None:
                self.shared = self.shared or [torch.initial_seed(), 0]
                stream = self.shared
            else:
                stream = self.seeded.setdefault(req_id, [p.seed, 0])
            keys.append(stream[0])
            counts.append(stream[1])
            drawn.append(i)
            stream[1] += 1
        u = [0.0] * len(params)
        for i, value in zip(drawn, stream_uniforms(keys, counts)):
            u[i] = value
        return u

    def free(self, req_id) -> None:
        self.seeded.pop(req_id, None)


def knobs(params, vocab, u, device):
    """[B, 4] float64, one upload: temperature (0: greedy), top_k (0: off), top_p (1: off), u (0 where unused)."""
    rows = [(0.0, 0, 1.0, 0.0) if p.temperature < GREEDY_TEMPERATURE else        # greedy: the argmax, no filter
            (p.temperature, p.top_k if 0 < p.top_k < vocab else 0, min(p.top_p, 1.0), ui) for p, ui in zip(params, u)]
    return torch.tensor(np.array(rows, dtype=np.float64).reshape(len(params), 4), device=device)


def run_kernel(kernel, launch_config, logits, params, prev_tokens, u=None):
    """Launch `kernel` over the batch: tokens [B] (u given) or the filtered probabilities [B, V] (u None)."""
    x = penalized_fp32(logits, params, prev_tokens).contiguous()                # [B, V] fp32, never the caller's
    batch, vocab = x.shape
    probs = u is None
    knob = knobs(params, vocab, [0.0] * batch if probs else u, x.device)         # [B, 4]
    tokens = torch.empty(batch, dtype=torch.long, device=x.device)              # [B]
    out = torch.empty_like(x) if probs else tokens                              # [B, V] or a stand-in
    grid, block, warps = launch_config(batch, vocab)
    kernel[grid](x, knob, vocab, units_scale(vocab), tokens, out, PROBS=probs, BLOCK=block, num_warps=warps)
    return out if probs else tokens
