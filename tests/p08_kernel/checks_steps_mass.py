"""Acceptance checks K3 of p08-kernel: the order-free mass (units, mass_at_least); K4 and K5 in checks_steps_cut.py.

Everything counted in units is judged against the file's own `units` (read column by column through a probe
kernel), added as Python integers: an exp that differs from torch's in the last bit changes no verdict, while a sum
that rounds, or moves with the block size, does."""
import math
from typing import NamedTuple

import torch

from course.grader.checks import Fail, check
from course import kernel_oracle as expect, kernel_probes as probes
from tests.p08_kernel.checks_steps import blocks, f32, reciprocal_line, reciprocal_z, row_text

INF = float("inf")


def own_units(ctx, x, t, top, scale, block):
    """The file's units of every column of row x: Python ints (float32 numpy's while its units are not written, so a
    later step is still judged on its own)."""
    called = f"called units(z, z_max={f32(top)}, scale=2**{int(math.log2(scale))}) on {row_text(x)}"
    try:
        return ctx.probe("units", called, probes.units, x[None], [t], [top], scale, block)[0].tolist()
    except NotImplementedError:
        return expect.numpy_units(expect.z_of(x, t), top, scale)


class RowPlan(NamedTuple):
    """A row's numbers as the file's own units make them, and p08's kept set in those units."""
    z: torch.Tensor          # [V] x / T, float32
    w: list                  # the file's units of every column
    top: float               # z_max
    scale: float
    quota: int | None        # ceil(top_p * the 100 %), None when top-p is off
    cut: tuple               # (cut, last, kept): z > cut, and z == cut up to column last; kept in units


def row_plan(ctx, x, t, top_k, top_p, block) -> RowPlan:
    scale, (top, _) = expect.scale_of(len(x)), expect.row_max(x, t)
    z, w = expect.z_of(x, t), own_units(ctx, x, t, top, scale, block)
    low = expect.kth(x, t, top_k) if top_k else -INF
    total = expect.mass_at_least(z, w, low)
    if top_p >= 1:
        return RowPlan(z, w, top, scale, None, (low, len(x) - 1, total))
    q = expect.quota(top_p, total)
    return RowPlan(z, w, top, scale, q, expect.top_p_cut(z, w, q))


# ---- K3 units ----------------------------------------------------------------------------------------
@check("K3.units", "units：权重变成 int64 的整数单位 floor(exp(z - z_max) · scale)", "units: a weight as whole int64 "
       "units, floor(exp(z - z_max) * scale)", hint=("p08-kernel", 1, "q4"))
def k3_units(ctx):
    g = torch.Generator().manual_seed(13)
    x = torch.cat([torch.tensor([0.0, -INF, -1e-30, -30.0, -60.0]), -torch.rand(251, generator=g) * 40])
    _units_of(ctx, x, 1.0)
    x = torch.cat([torch.tensor([12.0, 11.5, 11.0, 9.0, 0.0]), torch.rand(59, generator=g) * 12])   # z up to 120
    _units_of(ctx, x, 0.1, large=True)


def _units_of(ctx, x, t, large=False):
    """The file's units of every column of x at temperature t against float32 numpy's (a Fail at the first that is
    off by more than units_allowance); large: z_max is past exp's float32 range (the first row already passed)."""
    vocab, scale = len(x), expect.scale_of(len(x))
    z, (top, _) = expect.z_of(x, t), expect.row_max(x, t)
    called = f"called units(z, z_max={f32(top)}, scale=2**{int(math.log2(scale))}) on {row_text(x)}"
    got = ctx.probe("units", called, probes.units, x[None], [t], [top], scale, blocks(ctx, vocab)[0])[0].tolist()
    want = expect.numpy_units(z, top, scale)
    for c, (a, b) in enumerate(zip(got, want)):
        if a == b or b != int(scale) and abs(a - b) <= units_allowance(b, float(z[c]) - top):
            continue
        called = f"called units(z={f32(float(z[c]))}, z_max={f32(top)}, scale=2**{int(math.log2(scale))})"
        if large:
            why = ctx.t(f"z_max = 0 的那一行你的单位是对的；这里 z_max = {f32(top)}：单独的 exp(z) 在 z 超过约 88.7 时就溢出 float32"
                        "（exp(z) / exp(z_max) 成了 inf / inf = NaN）。算 exp(z - z_max)：它在 [0, 1] 里",
                        f"your units were right on the row with z_max = 0; here z_max = {f32(top)}: exp(z) alone overflows "
                        "float32 past z of about 88.7 (exp(z) / exp(z_max) is inf / inf = NaN). Compute exp(z - z_max), "
                        "which lies in [0, 1]")
        elif b and a in (0, 1) or b == 0 and a == 0:
            why = ctx.t("这是权重本身（0 到 1），不是单位：乘上 scale 再取整，整数才有足够的位", "this is the weight itself "
                        "(0 to 1), not units: multiply by scale, then take the integer part, so the integers keep enough bits")
        elif a < 0:
            why = ctx.t("负的单位：整数溢出了（int32 只有 31 位，一列的单位可到 2**52）", "negative units: the integer "
                        "overflowed (int32 has 31 bits; one column's units reach 2**52)")
        elif b and abs(a - math.floor(2.0 ** float(x[c]) * scale)) <= units_allowance(b, float(x[c])):   # z_max 0
            why = ctx.t("这是 2**(z - z_max)：tl.exp2 的参数要先乘 log2(e)（exp(x) = exp2(x * log2(e))），或者直接用 tl.exp",
                        "this is 2**(z - z_max): tl.exp2's argument needs the factor log2(e) (exp(x) = exp2(x * log2(e))), "
                        "or use tl.exp")
        elif b == int(scale):
            why = ctx.t("z = z_max 的列正好是 scale 个单位（exp(0) = 1）", "the column at z_max has exactly scale units "
                        "(exp(0) = 1)")
        else:
            why = ctx.t(f"单位是 floor(exp(z - z_max) * scale)：你的和它差 {abs(a - b) / b:.1e}（相对），超过了 exp 在最后几位上的差别",
                        f"units are floor(exp(z - z_max) * scale): yours are {abs(a - b) / b:.1e} off (relative), more "
                        f"than an exp that differs in its last bits")
        raise Fail(f"{called} -> {a}", ctx.t(f"期望 {b}", f"expected {b}"), why, where="units")


def units_allowance(units, z) -> float:
    """How far a file's units may be from float32 numpy's floor(exp(z) * scale): a unit for the floor or a rounding,
    and what an exp may differ by in its last bits (a GPU's ex2.approx of z * log2(e), or exp2 written so, loses
    about |z| float32 steps of z): (|z| + 8) parts in 2**23."""
    return 2 + units * (abs(z) + 8) * 2.0 ** -23


# ---- K3 mass_at_least ----------------------------------------------------------------------------------
def mass_rows():
    g = torch.Generator().manual_seed(14)
    yield "a random row", "随机行", torch.randn(3000, generator=g) * 3, 0.9
    x = torch.randn(1200, generator=g)
    x[::7] = -INF
    yield "-inf entries", "含 -inf", x, 1.0
    yield "flat: 2000 nearly equal values", "平的：2000 个几乎相等的值", torch.randn(2000, generator=g) * 1e-3, 1.0
    x = torch.cat([torch.zeros(3), torch.full((61,), -30.0)])          # 3 * 2**55 units past 2**53, then odd small ones
    yield "three maxima and 61 tiny weights: a sum past 2**53", "三个最大值和 61 个极小的权重：和超过 2**53", x, 1.0


@check("K3.mass_at_least", "mass_at_least：z >= v 的列的单位之和，整数相加，块大小怎么变都是同一个数",
       "mass_at_least: the units of the columns with z >= v, added as integers: the same number at any block size",
       hint=("p08-kernel", 1, "q4"))
def k3_mass_at_least(ctx):
    for label_en, label_zh, x, t in mass_rows():
        vocab = len(x)
        scale, (top, _) = expect.scale_of(vocab), expect.row_max(x, t)
        z = expect.z_of(x, t)
        finite = z[z > -INF].sort().values
        values = [-INF, float(finite[len(finite) // 3]), float(finite[-10]), top, top + 1.0]
        w = own_units(ctx, x, t, top, scale, blocks(ctx, vocab)[0])
        seen = {}
        for block in blocks(ctx, vocab):
            called = f"called mass_at_least({row_text(x)} [{ctx.t(label_zh, label_en)}], T={t}, v=..., BLOCK={block})"
            got = ctx.probe("mass_at_least", called, probes.mass, x[None].expand(len(values), -1), [t] * len(values),
                            [top] * len(values), values, scale, block).tolist()
            for v, mass in zip(values, got):
                want = expect.mass_at_least(z, w, v)
                if mass != want:
                    zr = reciprocal_z(x, t)
                    if t != 1.0 and mass == expect.mass_at_least(zr, own_units(ctx, zr, 1.0, top, scale, block), v):
                        why = reciprocal_line(ctx)
                    elif t != 1.0 and mass == expect.mass_at_least(expect.z_of(x, 1.0), own_units(ctx, x, 1.0, top, scale, block), v):
                        why = ctx.t("这是温度 1 的质量：z = x / temperature 在这里也要除", "this is the mass at temperature 1: "
                                    "z = x / temperature here too")
                    else:
                        why = _mass_why(ctx, z, w, v, mass, want)
                    raise Fail(f"{called.replace('v=...', f'v={f32(v)}')} -> {mass}",
                               ctx.t(f"期望 {want}：你的 units 在 z >= v 的 {int((z >= v).sum())} 列上加起来就是这个数",
                                     f"expected {want}: your units of the {int((z >= v).sum())} columns with z >= v add "
                                     f"up to that"), why, where="mass_at_least")
            seen[block] = got
        if len(set(map(tuple, seen.values()))) > 1:
            a, b = list(seen)[:2]
            raise Fail(f"called mass_at_least({row_text(x)}, ...) at BLOCK={a} -> {seen[a]}, at BLOCK={b} -> {seen[b]}",
                       ctx.t("同一行换个块大小，和就变了：整数相加与顺序无关，这里却有", "the same row at another block "
                             "size gives another sum: integer adds do not depend on their order, yet this one does"),
                       where="mass_at_least")


def _mass_why(ctx, z, w, v, mass, want) -> str:
    if mass == expect.mass_at_least(z, w, math.nextafter(v, INF)) and mass != want:
        return ctx.t("这是 z > v 的和：规则是 z >= v（等于 v 的列也算）", "this is the sum over z > v: the rule is z >= v "
                     "(the columns equal to v count too)")
    if want > 2 ** 53 and mass != want and abs(mass - want) <= want * 2 ** -50:
        return ctx.t(f"差了 {abs(mass - want)} 个单位，而和超过了 2**53：这是 float64 的和（53 位，过了 2**53 每次相加都舍入）。"
                     "把 int64 的单位用 int64 相加，和就是精确的", f"off by {abs(mass - want)} units of a sum past 2**53: this is a "
                     "float64 sum (53 bits: past 2**53 every add rounds). Add the int64 units as int64: the sum is exact")
    if want and abs(mass - want) <= want * 2 ** -20:
        return ctx.t("差了一点点：这是浮点数的和（float32 只留 24 位，每次相加都舍入，顺序一变结果就变）。把 int64 的单位相加，"
                     "和就是精确的", "off by a little: this is a float sum (float32 keeps 24 bits and every add rounds, so "
                     "another order gives another sum). Add the int64 units: the sum is exact")
    if mass < 0 or mass > 2 ** 63 - 2 ** 40:
        return ctx.t("溢出了：用 int64 相加（一行 V 个单位的和小于 2**62）", "it overflowed: add in int64 (a row's V units "
                     "add up below 2**62)")
    return ctx.t("mass_at_least(v) 是 z >= v 的列的 units 之和（最后一块 mask 掉的列不算）", "mass_at_least(v) is the sum "
                 "of the units of the columns with z >= v (the masked columns of the last block add nothing)")
