"""The kernel level's oracle: what each step of a kernel must return, computed on the host (the grader's checks and
the notebook read it). torch for the values (z = x / T rounds as the kernel's tl.div_rn does), plain Python integers
for everything counted in units (given the units a file's own `units` gives, so that an exp that differs from
torch's in the last bit is not held against it)."""
import math

import numpy as np
import torch

from course.kernel_batch import units_scale as scale_of  # noqa: F401  (the oracle's name for the given fixed point)

INF = float("inf")


def z_of(x, t) -> torch.Tensor:
    """z = x / t in float32, as torch and tl.div_rn round it: [V]."""
    return torch.as_tensor(x, dtype=torch.float32) / torch.tensor(t, dtype=torch.float32)


def row_max(x, t) -> tuple:
    z = z_of(x, t)
    return float(z.max()), int(z.argmax())


def kth(x, t, k) -> float:
    return float(torch.topk(z_of(x, t), k).values[-1])


def numpy_units(z, top, scale) -> list:
    """floor(exp(z - top) * scale) with float32 arithmetic (the interpreter's tl.exp): Python ints."""
    e = np.exp((np.asarray(z, dtype=np.float32) - np.float32(top)).astype(np.float32))
    return [int(v) for v in np.floor(e.astype(np.float32) * np.float32(scale)).astype(np.float64)]


def ranked(z) -> list:
    """Columns by descending z, equal values by ascending column (the reference's stable sort)."""
    values = z.tolist()
    return sorted(range(len(values)), key=lambda c: (-values[c], c))


def mass_at_least(z, w, v) -> int:
    return sum(wc for zc, wc in zip(z.tolist(), w) if zc >= v)


def quota(top_p, total) -> int:
    """ceil(top_p * total) in float64, as the given kernel computes it."""
    return int(math.ceil(float(np.float64(top_p) * np.float64(float(total)))))


def top_p_cut(z, w, q) -> tuple:
    """(cut, last, kept) of p08's rule in units: a column stays while the units before it are below q."""
    values, before, last = z.tolist(), 0, None
    for c in ranked(z):
        if last is not None and before >= q:
            break
        last, before = c, before + w[c]
    return values[last], last, before


def kept_columns(z, cut, last) -> list:
    return [c for c, v in enumerate(z.tolist()) if v > cut or (v == cut and c <= last)]


def draw(z, w, cut, last, kept, u) -> int:
    """The first kept column (column order) whose running units exceed u * kept; else the last kept one with units."""
    target = min(int(np.float64(u) * np.float64(float(kept))) + 1, kept)
    running, with_mass = 0, None
    for c in kept_columns(z, cut, last):
        if w[c] > 0:
            running, with_mass = running + w[c], c
            if running >= target:
                return c
    return with_mass
