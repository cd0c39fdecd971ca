"""Probes of order and width for p08-fast's step checks: T3 adds one row's columns in 8 orders (a float sum, float64
too, rounds one way or the other there), T4 puts top-k + top-p rows on their own top_p boundaries and widens their
window with peers (a top-p 100 % summed over the window moves there)."""
import math
from fractions import Fraction

import numpy as np
import torch

from course.floats import step_between
from course.grader.checks import Fail
from tests.p08_fast.checks_steps import INF, bits, call, need_tensor, stable_window


def straddling_row(vocab=4096, seed=46):
    """A row of weights in [0, 1] whose exact sum lies within 2**-59 of a point half-way between two float32 values
    and half-way between two doubles: a float sum (float64 too) lands on either side of it by the order of its adds,
    and rounds to two float32 values; an exact sum lands on one. [V]"""
    g = torch.Generator().manual_seed(seed)
    values = (torch.exp(-torch.rand(vocab, generator=g) * 30.0)).tolist()      # 1 down to 1e-13: every magnitude
    values[0] = 1.0
    exact = lambda: sum(Fraction(v) for v in values)                            # noqa: E731
    below = np.float32(float(exact()))
    if Fraction(float(below)) > exact():
        below = np.nextafter(below, np.float32(-INF))
    middle = (Fraction(float(below)) + Fraction(float(np.nextafter(below, np.float32(INF))))) / 2
    target = middle + Fraction(math.ulp(float(middle))) / 2                     # half-way between two doubles too
    for low in (2.0 ** -12, 2.0 ** -36):                                        # a coarse, then a fine adjustment
        j = next(i for i, v in enumerate(values) if low <= v < 2 * low)
        values[j] = float(np.float32(float(Fraction(values[j]) + target - exact())))
    return torch.tensor(values, dtype=torch.float32)


def orders_of_one_row(ctx):
    """The same row with its columns in 16 orders: the same total, bit for bit (the row's exact sum sits half-way between
    two float32 values, where any float sum, float64 included, rounds one way or the other by the order of its adds;
    an exact sum, integer or math.fsum's, does not)."""
    row = straddling_row()
    g = torch.Generator().manual_seed(47)
    orders = [torch.arange(len(row)), torch.arange(len(row) - 1, -1, -1)] + [torch.randperm(len(row), generator=g)
                                                                          for _ in range(14)]
    e = torch.stack([row[order] for order in orders]).to(ctx.device)                     # [16, 4096]
    shown = "e [16, 4096]: " + ctx.t("同一行，列的 16 种顺序", "one row, its columns in 16 orders")
    total = need_tensor(ctx, "row_total", shown, call(ctx, "row_total", shown, e), (16, 1)).cpu()[:, 0].tolist()
    if len(set(total)) > 1:
        raise Fail(f"called row_total({shown}) -> " + ", ".join(bits(v) for v in dict.fromkeys(total)),
                   ctx.t("同一些数、不同的加法顺序，给出了不同的和：这是浮点数求和（float64 也一样：这一行的精确和正好落在两个 float32 中间，"
                         "每种顺序的舍入会把它推向一边）。把 int64 定点数相加，和与顺序无关",
                         "the same numbers added in other orders give other totals: a float sum (float64 too: this row's "
                         "exact sum lies half-way between two float32 values, and each order's rounding pushes it to one "
                         "side). Add int64 fixed-point units: their sum does not depend on the order"), where="row_total")


def _kept(ctx, z, top_k, top_p) -> tuple:
    """(kept count per row, cs per row) of the file's filter_window on windows z [n, W], top-k and top-p on."""
    dev, n = z.device, len(z)
    got = call(ctx, "filter_window", f"z [{n}, {z.shape[1]}], top_k={top_k[:4]}", z,
               torch.tensor(top_k, device=dev)[:, None], torch.tensor(top_p, device=dev)[:, None],
               torch.zeros(n, 1, device=dev), False)
    return (got[0] > 0).sum(-1).tolist(), got[1].cpu()


def boundaries_in_wider_windows(ctx, spread, ks):
    """Each of the 8 rows with top-k and top-p, its top_p at its own boundary (the double where the row alone, W =
    top_k + 1, keeps one more column, and the double below it): the 8 together at W = 41, 64, 300 keep the same."""
    dev = ctx.device
    cases = []
    for r, k in enumerate(ks):
        z, _ = stable_window(spread[r:r + 1].to(dev), k + 1)
        middle = max(1, k // 2)
        below, at = step_between(lambda p: _kept(ctx, z, [k], [p])[0][0] > middle, 1e-9, 1 - 1e-9)
        cases += [(r, k, below), (r, k, at)]
    for width in (41, 64, 300):
        for side in (0, 1):
            rows = [c for c in cases[side::2]]
            z, _ = stable_window(spread.to(dev), width)
            counts, cs = _kept(ctx, z, [k for _, k, _ in rows], [p for _, _, p in rows])
            for r, k, p in rows:
                alone_z, _ = stable_window(spread[r:r + 1].to(dev), k + 1)
                (alone,), alone_cs = _kept(ctx, alone_z, [k], [p])
                if counts[r] == alone:
                    continue
                same_cs = torch.equal(cs[r, :k], alone_cs[0, :k])
                raise Fail(ctx.t(f"called filter_window：随机行 {r}（top_k={k}，top_p={p!r}，正在它自己的边界上）单独（W={k + 1}）"
                                 f"保留 {alone} 列，和另外 7 行一起（W={width}）保留 {counts[r]} 列",
                                 f"called filter_window: random row {r} (top_k={k}, top_p={p!r}, on its own boundary) keeps "
                                 f"{alone} columns alone (W={k + 1}) and {counts[r]} beside the 7 others (W={width})"),
                           ctx.t("保留的个数随 W 变了，而你的前缀和 cs 在这两种宽度下逐位相同：top-p 的 100%（top-k 的质量）要读 cs 在这一行"
                                 "自己第 k 列的值，不能对窗口求和（窗口宽度由同批的别人决定，末尾补的 0 也会改变浮点和）",
                                 "the kept count moved with W while your prefix sums cs are the same bits at both widths: "
                                 "top-p's 100 % (the top-k mass) must be read from cs at the row's own k-th column, not "
                                 "summed over the window (the peers set its width, and trailing zeros change a float sum)")
                           if same_cs else
                           ctx.t("同一行、同样的参数，保留的个数随窗口宽度变了：这一行的数只能由它自己的列决定",
                                 "the same row with the same params keeps another count at another width: a row's numbers "
                                 "may come from its own columns only"), where="filter_window")
