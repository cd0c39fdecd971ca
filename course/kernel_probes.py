"""Probe kernels: each runs one step function of a kernel file (mine/ or solutions/p08_sampler_kernel.py) on rows
the caller chose, so a step is seen alone (the step arrives as a constexpr argument, FN). The grader's checks judge
the steps with them, the notebook shows them. Host wrappers launch one row per program, with the block size asked
for, and return plain CPU tensors."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_max(x_ptr, V, t_ptr, z_ptr, col_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    z_max, col = FN(x_ptr + i.to(tl.int64) * V, V, tl.load(t_ptr + i), BLOCK)
    tl.store(z_ptr + i, z_max)
    tl.store(col_ptr + i, col.to(tl.int64))


@triton.jit
def _kth(x_ptr, V, t_ptr, k_ptr, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    tl.store(out_ptr + i, FN(x_ptr + i.to(tl.int64) * V, V, tl.load(t_ptr + i), tl.load(k_ptr + i), BLOCK))


@triton.jit
def _units(x_ptr, V, t_ptr, top_ptr, scale, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    t = tl.load(t_ptr + i)
    top = tl.load(top_ptr + i)
    for start in range(0, V, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        z = tl.div_rn(tl.load(x_ptr + i.to(tl.int64) * V + cols, mask=cols < V, other=float("-inf")), t)
        w = FN(z, top, scale)
        tl.static_assert(w.dtype == tl.int64, "units() must return int64")
        tl.store(out_ptr + i.to(tl.int64) * V + cols, w, mask=cols < V)


@triton.jit
def _mass(x_ptr, V, t_ptr, top_ptr, v_ptr, scale, out_ptr, FN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0)
    mass = FN(x_ptr + i.to(tl.int64) * V, V, tl.load(t_ptr + i), tl.load(top_ptr + i), tl.load(v_ptr + i), scale,
              BLOCK)
    tl.static_assert(mass.dtype == tl.int64, "mass_at_least() must return int64")
    tl.store(out_ptr + i, mass)


@triton.jit
def _cut(x_ptr, V, t_ptr, top_ptr, quota_ptr, scale, cut_ptr, last_ptr, kept_ptr, FN: tl.constexpr,
         BLOCK: tl.constexpr):
    i = tl.program_id(0)
    cut, last, kept = FN(x_ptr + i.to(tl.int64) * V, V, tl.load(t_ptr + i), tl.load(top_ptr + i),
                         tl.load(quota_ptr + i), scale, BLOCK)
    tl.store(cut_ptr + i, cut)
    tl.store(last_ptr + i, last.to(tl.int64))
    tl.store(kept_ptr + i, kept.to(tl.int64))


@triton.jit
def _draw(x_ptr, V, t_ptr, top_ptr, cut_ptr, last_ptr, kept_ptr, u_ptr, scale, out_ptr, FN: tl.constexpr,
          BLOCK: tl.constexpr):
    i = tl.program_id(0)
    token = FN(x_ptr + i.to(tl.int64) * V, V, tl.load(t_ptr + i), tl.load(top_ptr + i), tl.load(cut_ptr + i),
               tl.load(last_ptr + i), tl.load(kept_ptr + i), tl.load(u_ptr + i), scale, BLOCK)
    tl.store(out_ptr + i, token.to(tl.int64))


def _dev(values, dtype, device):
    return torch.as_tensor(values, dtype=dtype).to(device).contiguous()


def row_max(fn, x, t, block, device):
    """(z_max [B] float32, col [B] int64) of rows x [B, V] at temperatures t [B]."""
    x = _dev(x, torch.float32, device)
    z, col = torch.empty(len(x), device=device), torch.empty(len(x), dtype=torch.long, device=device)
    _row_max[(len(x),)](x, x.shape[1], _dev(t, torch.float32, device), z, col, FN=fn, BLOCK=block)
    return z.cpu(), col.cpu()


def kth(fn, x, t, k, block, device):
    """kth_largest of rows x [B, V]: [B] float32."""
    x = _dev(x, torch.float32, device)
    out = torch.empty(len(x), device=device)
    _kth[(len(x),)](x, x.shape[1], _dev(t, torch.float32, device), _dev(k, torch.int32, device), out, FN=fn,
                    BLOCK=block)
    return out.cpu()


def units(fn, x, t, top, scale, block, device):
    """units of every column of rows x [B, V]: [B, V] int64."""
    x = _dev(x, torch.float32, device)
    out = torch.zeros(x.shape, dtype=torch.long, device=device)
    _units[(len(x),)](x, x.shape[1], _dev(t, torch.float32, device), _dev(top, torch.float32, device), scale, out,
                      FN=fn, BLOCK=block)
    return out.cpu()


def mass(fn, x, t, top, v, scale, block, device):
    """mass_at_least of rows x [B, V] at values v [B]: [B] int64."""
    x = _dev(x, torch.float32, device)
    out = torch.empty(len(x), dtype=torch.long, device=device)
    _mass[(len(x),)](x, x.shape[1], _dev(t, torch.float32, device), _dev(top, torch.float32, device),
                     _dev(v, torch.float32, device), scale, out, FN=fn, BLOCK=block)
    return out.cpu()


def cut(fn, x, t, top, quota, scale, block, device):
    """top_p_cut of rows x [B, V] for quotas [B]: (cut [B] float32, last [B] int64, kept [B] int64)."""
    x = _dev(x, torch.float32, device)
    n = len(x)
    cuts, last, kept = (torch.empty(n, device=device), torch.empty(n, dtype=torch.long, device=device),
                        torch.empty(n, dtype=torch.long, device=device))
    _cut[(n,)](x, x.shape[1], _dev(t, torch.float32, device), _dev(top, torch.float32, device),
               _dev(quota, torch.long, device), scale, cuts, last, kept, FN=fn, BLOCK=block)
    return cuts.cpu(), last.cpu(), kept.cpu()


def draw(fn, x, t, top, cuts, last, kept, u, scale, block, device):
    """draw of rows x [B, V] at uniforms u [B]: [B] int64 columns."""
    x = _dev(x, torch.float32, device)
    out = torch.empty(len(x), dtype=torch.long, device=device)
    _draw[(len(x),)](x, x.shape[1], _dev(t, torch.float32, device), _dev(top, torch.float32, device),
                     _dev(cuts, torch.float32, device), _dev(last, torch.long, device), _dev(kept, torch.long, device),
                     _dev(u, torch.float64, device), scale, out, FN=fn, BLOCK=block)
    return out.cpu()
