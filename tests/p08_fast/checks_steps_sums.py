"""p08-fast step checks T3 and T4.filter_window: row_total (a row's total the same bits alone and in a batch), and
filter_window's kept prefix and mass; T4's cases, shared with T4.certain (tests/p08_fast/checks_steps_certain.py).
Helpers and the rules of the step checks: tests/p08_fast/checks_steps.py."""
import math
import torch

from course.grader.checks import Fail, check, describe, fmt_num
from tests.p08_fast.causes import overflow_line
from tests.p08_fast.order_probes import boundaries_in_wider_windows, orders_of_one_row
from tests.p08_fast.checks_steps import INF, bits, call, need_tensor, rows_text, stable_window, step
from tests.p08_fast.step_causes import (coarse_units_line, complete_line, expected_window, first_cause,
                                        float_test_line, inclusive_mass_line, kth_one_column_late_line, reaches_line,
                                        row_mass_line, tied_kth_cut_line, top_k_off_line, top_p_off_as_one_line,
                                        value_cut_line, weight_space_line, window_probe)


def agrees_on_one_thread(ctx, x, r) -> bool:
    """Do the file's row totals of x [6, V] agree, alone and in the batch, with one thread? (True: only threads move
    them; False: something else does, e.g. the number of rows.)"""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = call(ctx, "row_total", f"e[{r}:{r + 1}]", x[r:r + 1].contiguous()).cpu()
        return torch.equal(alone[0], call(ctx, "row_total", "e", x).cpu()[r])
    finally:
        torch.set_num_threads(threads)


# ---- T3 row_total ------------------------------------------------------------------------------------
@check("T3.row_total", "row_total（第 3 步）：一行的总和，单独算和放在 batch 里逐位相同",
       "row_total (step 3): a row's total, the same bits alone and in a batch",
       hint=("p08-fast", 2, "s3"))
@step("row_total")
def t3_row_total(ctx):
    dev = ctx.device
    # row_total: the full-row mass of top-p-only rows, over V
    tiny = ctx.tensor([[1.0, 0.5, 0.3, 0.1, 0.1]])
    got = need_tensor(ctx, "row_total", rows_text(tiny), call(ctx, "row_total", rows_text(tiny), tiny), (1, 1))
    if abs(got.item() - 2.0) > 1e-6:
        raise Fail(f"called row_total({rows_text(tiny)}) -> {rows_text(got)}" + ctx.t("，期望 [[2]]", ", expected [[2]]"),
                   where="row_total")
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 4))               # torch.sum splits a lone long row across threads
    try:
        g = torch.Generator().manual_seed(45)
        for vocab in (50257, 151936, 4099, 2 ** 18):          # 2**18: the stub's largest V, a row of V ones included
            x = torch.exp(torch.randn(6, vocab, generator=g) * 3.0)
            x = (x / x.amax(-1, keepdim=True)).to(dev)                                       # [6, V]
            x[5] = torch.rand(vocab, generator=g).to(dev) * 0.5 + 0.5                        # a flat row: sum ~ 0.75 V
            x[4] = 1.0                                                   # equal logits: sum V (4099 > 2**(13 - 1))
            total = need_tensor(ctx, "row_total", f"e [6, {vocab}]", call(ctx, "row_total", f"e [6, {vocab}]", x), (6, 1)).cpu()
            exact = x.double().cpu().sum(-1, keepdim=True)
            if not ((total.double() - exact).abs() / exact).max().item() <= 1e-6:
                r = int(((total.double() - exact).abs() / exact).argmax())
                overflow = (overflow_line(ctx, ctx.fn("row_total"), x[r:r + 1].contiguous(), float(exact[r, 0]))
                            or coarse_units_line(ctx))
                raise Fail(ctx.t(f"called row_total(e [6, {vocab}]) -> 第 {r} 行 = {bits(total[r, 0].item())}，期望 "
                                 f"{bits(exact[r, 0].item())}（float64 求和）" + {5: "（第 5 行：权重在 [0.5, 1] 里）",
                                                                              4: "（第 4 行：每个权重都是 1）"}.get(r, ""),
                                 f"called row_total(e [6, {vocab}]) -> row {r} = {bits(total[r, 0].item())}, expected "
                                 f"{bits(exact[r, 0].item())} (float64 sum)" + {5: " (row 5: weights in [0.5, 1])",
                                                                               4: " (row 4: every weight 1)"}.get(r, "")),
                           *[line for line in [overflow] if line],
                           ctx.t("row_total 要是这一行的精确和，精确到 float32 的精度：相对误差不超过 1e-6（怎么舍入成 float32 随你）",
                                 "row_total must be the row's exact sum to float32 precision: within 1e-6 of it, relative "
                                 "(how it rounds to float32 is yours to choose)"), where="row_total")
            if vocab == 151936:                          # 1 and many weights just under a unit at a coarser scale
                x[3] = 2.99 * 2.0 ** -41
                x[3, 0] = 1.0
                total = need_tensor(ctx, "row_total", f"e [6, {vocab}]", call(ctx, "row_total", f"e [6, {vocab}]", x),
                                    (6, 1)).cpu()
            for r in range(6):
                alone = call(ctx, "row_total", f"e[{r}:{r + 1}] [1, {vocab}]", x[r:r + 1].contiguous())
                alone = need_tensor(ctx, "row_total", f"e[{r}:{r + 1}]", alone, (1, 1)).cpu()
                if not torch.equal(alone[0], total[r]) and not agrees_on_one_thread(ctx, x, r):
                    raise Fail(ctx.t(f"called row_total(e[{r}:{r + 1}]) [1, {vocab}] -> {bits(alone.item())}，但 "
                                     f"row_total(e) [6, {vocab}] 的第 {r} 行 -> {bits(total[r, 0].item())}（1 个线程也这样）",
                                     f"called row_total(e[{r}:{r + 1}]) [1, {vocab}] -> {bits(alone.item())}, but row {r} of "
                                     f"row_total(e) [6, {vocab}] -> {bits(total[r, 0].item())} (with 1 thread too)"),
                               ctx.t("不是线程的事：一行的总和随 batch 的行数变了。定点数的 scale（以及别的一切）只能由这一行和 V 决定，不能由 "
                                     "e.shape[0]（行数）决定", "not the threads: a row's total changes with the number of rows in "
                                     "the batch. The fixed-point scale (and everything else) may follow from the row and V "
                                     "only, never from e.shape[0] (the number of rows)"), where="row_total")
                if not torch.equal(alone[0], total[r]):
                    raise Fail(ctx.t(f"called row_total(e[{r}:{r + 1}]) [1, {vocab}] -> {bits(alone.item())}，但 "
                                     f"row_total(e) [6, {vocab}] 的第 {r} 行 -> {bits(total[r, 0].item())}",
                                     f"called row_total(e[{r}:{r + 1}]) [1, {vocab}] -> {bits(alone.item())}, but row {r} of "
                                     f"row_total(e) [6, {vocab}] -> {bits(total[r, 0].item())}"),
                               ctx.t("一行的总和不能取决于 batch：torch.sum 会把单独一行拆给几个线程；换成 int64 定点数相加（整数加法与顺序无关）",
                                     "a row's total must not depend on the batch: torch.sum splits a lone row across threads; "
                                     "add int64 fixed-point units instead (integer adds do not depend on the order)"),
                               where="row_total")
    finally:
        torch.set_num_threads(threads)
    orders_of_one_row(ctx)


# ---- T4 filter_window --------------------------------------------------------------------------------
# Example 2's batch (hints L1/L3): rows a (top_k 3, top_p 0.6) and c (T = 2, top_p 0.75 only), V = 6.
ROW_A = [math.log(p) for p in (0.15, 0.5, 0.05, 0.25, 0.03, 0.02)]
ROW_C = [math.log(p) for p in (0.04, 0.12, 0.4, 0.05, 0.3, 0.09)]          # 2 log(p) / T = 2
BLOG = [math.log(p) for p in (0.5, 0.25, 0.15, 0.1)]
NEAR_MAX = torch.tensor([[0.0, -1e-8, -2e-8, -1.0, -2.0, -3.0]])   # distinct values whose weights exp(z - max) all round to 1
LIGHT_SECOND = torch.tensor([[0.0, -20.0, -30.0, -40.0, -50.0, -60.0, -70.0, -80.0]])  # exp(-20) leaves 1 + it at 1
TINY_TAIL = torch.tensor([[0.0, -0.5, -25.0, -30.0, -35.0, -40.0, -45.0, -50.0]])  # exp(-25) is below float32's step at 1.6


def _window_mass_why(ctx, z, top_k, top_p, row_mass, e, n_kept):
    """A row with top-k and top-p on that kept a prefix as long as top-p measured against the whole window's mass
    would keep (not its top-k set's): a line saying so, else None."""
    kept = int((e > 0).sum())
    if top_k <= 0 or top_p == INF or not bool((e[:kept] > 0).all()) or kept == n_kept:
        return None
    window_mass = sum(math.exp(v - z[0]) for v in z)
    if expected_window(z, top_k, top_p, row_mass, mass=window_mass)[0] != kept or not _keeps_by_window_mass(ctx):
        return None
    top_k_mass = sum(expected_window(z, top_k, INF, row_mass)[1])
    return ctx.t(f"你保留的列数正好是 top-p 拿整个窗口的质量（{window_mass:.4g}）当 100 % 时的结果；top-k 开着时，top-p 的 100 % 是 "
                 f"top-k 保留集合的质量（{top_k_mass:.4g}：cs 在 top-k 最后一个保留列的值）",
                 f"you keep as many columns as top-p keeps when it takes the whole window's mass ({window_mass:.4g}) as its "
                 f"100 %; with top-k on, top-p's 100 % is the mass of the top-k set ({top_k_mass:.4g}: cs at top-k's last "
                 f"kept column)")


def _tied_kth_mass_why(ctx, z, top_k, top_p, row_mass, e, n_kept):
    """A row whose values tied with the k-th run past column k - 1, top-p on, that kept the prefix top-p gives against
    the mass of its first top_k columns alone (not the whole top-k set): a line saying so when the file's filter_window
    does the same on a second such row, else None."""
    kept = int((e > 0).sum())
    if top_k <= 0 or top_p == INF or kept == n_kept or not bool((e[:kept] > 0).all()):
        return None
    n_top_k, e_top_k, full = expected_window(z, top_k, INF, row_mass)
    first_k = sum(e_top_k[:top_k])
    if n_top_k <= top_k or expected_window(z, top_k, top_p, row_mass, mass=first_k)[0] != kept:
        return None
    if window_probe(ctx, [2.0, 1.0, 1.0, 1.0, 1.0, 0.0], 2, 0.6)[0] != 1:           # first 2: keeps 1, all 5: keeps 3
        return None
    return ctx.t(f"你保留的列数正好是 top-p 拿前 {top_k} 列的质量（{first_k:.4g}）当 100 % 时的结果。top-k 留下 >= 第 k 大的值的每一列，"
                 f"与它相等的第 {top_k}..{n_top_k - 1} 列也在 top-k 集合里：top-p 的 100 % 是这 {n_top_k} 列的质量（{full:.4g}，"
                 f"cs 在第 {n_top_k - 1} 列，即 z >= 第 k 大的值的个数减 1，不是 top_k - 1）",
                 f"your kept count is what top-p gives against the mass of the first {top_k} columns ({first_k:.4g}). Top-k "
                 f"keeps every value >= the k-th, so columns {top_k}..{n_top_k - 1}, tied with it, are in the top-k set too: "
                 f"top-p's 100 % is the mass of all {n_top_k} ({full:.4g}, cs at column {n_top_k - 1}: the count of z >= the "
                 f"k-th value, less 1, not top_k - 1)")


def _keeps_by_window_mass(ctx) -> bool:
    """On z = [2, 1.5, 1, 0.5, 0], top_k = 4, top_p = 0.71 the rule keeps 2 columns, top-p against the whole window's
    mass keeps 3 and top-k alone 4: does the file's filter_window keep 3?"""
    z = [2.0, 1.5, 1.0, 0.5, 0.0]
    mass = float(torch.exp(torch.tensor(z, device=ctx.device) - 2.0).sum())
    return window_probe(ctx, z, 4, 0.71, mass, complete=True)[0] == 3


def spread_rows():
    """T4's 8 random rows [8, 300] (no ties) and their top_k (the notebook's §4 probe makes the same)."""
    return torch.randn(8, 300, generator=torch.Generator().manual_seed(46)) * 2.0, [7, 12, 17, 23, 29, 33, 37, 40]


def t4_cases(ctx):
    """T4's cases, shared by T4.filter_window and T4.certain: [(label, x [n, V], width, top_k, top_p, row_mass or None
    (top-k on in every row), certain expected), ...]."""
    worked = torch.tensor([ROW_A, ROW_C])                                              # [2, 6] after the temperature
    row_c_mass = float(torch.exp(worked[1] - worked[1].max()).double().sum())          # 2.5: all of V
    blog = torch.tensor([BLOG])
    ties = torch.tensor([[3.0, 2.0, 2.0, 2.0, 1.0, 0.0, -1.0, -2.0]])
    twin = torch.tensor([[2.0, 2.0, 1.0, 0.0]])                                        # tied maxima
    twin_mass = float(torch.exp(twin[0] - 2.0).double().sum())                         # 2.50: all of V
    ties_mass = float(torch.exp(ties[0] - 3.0).double().sum())                         # 2.31: all of V
    t = ctx.t
    cases = [  # (label, x [n, V], width, top_k, top_p, row_mass, certain expected)
        (t("a 行（top_k 3）和 c 行（只开 top-p），W=4", "rows a (top_k 3) and c (top-p only), W=4"), worked, 4, [3, 0], [0.6, 0.75], [0.0, row_c_mass],
         [True, True]),
        (t("a 行和 c 行，W=6（整行）", "rows a and c, W=6 (the whole row)"), worked, 6, [3, 0], [0.6, 0.75],
         [0.0, row_c_mass], [True, True]),
        (t("a 行单独，W=5", "row a alone, W=5"), worked[:1], 5, [3], [0.6], [0.0], [True]),
        (t("c 行单独，W=4", "row c alone, W=4"), worked[1:], 4, [0], [0.75], [row_c_mass], [True]),
        (t("a 行，top_k=1 只保留它的最大值，W=4", "row a, top_k=1 keeps its maximum alone, W=4"), worked[:1], 4, [1], [INF],
         [0.0], [True]),
        (t("c 行配 top_p=0.9，W=4", "row c with top_p=0.9, W=4"), worked[1:], 4, [0], [0.9], [row_c_mass], [False]),
        (t("probs [0.5, 0.25, 0.15, 0.1]，top_p=0.7（博客 bug 1）", "probs [0.5, 0.25, 0.15, 0.1], top_p=0.7 (blog bug 1)"),
         blog, 4, [0], [0.7], [2.0], [True]),
        (t("第 k 大的值处并列，top_k=2：这串相等的值越过第 k 列", "ties at the k-th value, top_k=2: the run goes on past column k"),
         ties, 6, [2], [INF], [0.0], [False]),
        (t("同一行，每行都开 top-k（row_mass=None）", "the same row, every row with top-k on (row_mass=None)"), ties, 6, [2],
         [INF], None, [False]),
        (t("同一行配 top_k=4：第 k 大的值高于第 k 列", "the same row with top_k=4: the k-th value is above column k"), ties, 6,
         [4], [INF], [0.0], [True]),
        (t("一串相等的值直到窗口末尾，top_k=2", "a tie run up to the window's end, top_k=2"), ties, 4, [2], [INF], [0.0], [False]),
        (t("一串相等的值直到窗口末尾，top_k=2，top_p=0.3 保留 1 个", "a tie run up to the window's end, top_k=2, top_p=0.3 keeps 1"),
         ties, 4, [2], [0.3], [0.0], [False]),
        (t("top_k=2，与第 k 大的值相等的值一直到第 3 列，top_p=0.7：top-p 的 100 % 是这 4 列的质量",
           "top_k=2 with values tied with the k-th up to column 3, top_p=0.7: top-p's 100 % is the mass of all 4"), ties, 6,
         [2], [0.7], [0.0], [False]),
        (t("只开 top-p：切口落在一串相等的值（2.0）中间，这串值在窗口里就结束了（窗口最后一个值更低）：certain",
           "top-p only: the cut falls inside a run of equal values (2.0) that ends inside the window (its last value is "
           "lower): certain"), ties, 6, [0], [0.6], [ties_mass], [True]),
        (t("8 个相等的值，只有 top-p：保留的那串（3 个）与窗口最后一个值相等，W=4",
           "8 equal values, top-p only: the kept run (3 of them) ties the window's last value, W=4"), torch.zeros(1, 8), 4,
         [0], [0.3], [8.0], [False]),
        (t("并列的最大值，top_k=1 两个都保留，再取它们质量的 top_p=0.45",
           "tied maxima, top_k=1 keeps both, then top_p=0.45 of their mass"), twin, 4, [1], [0.45], [twin_mass], [True]),
        (t("并列的最大值，top_k=2，top_p=0.5：第二个之前的质量恰好是 0.5，所以它被删",
           "tied maxima, top_k=2, top_p=0.5: the mass before the second is exactly 0.5, so it goes"), twin, 4, [2], [0.5],
         [0.0], [True]),
        (t("top_k=2，其后的权重（1e-11 及更小）加进 float32 的前缀和也不改变它", "top_k=2, and the weights after it (1e-11 and "
           "less) leave the float32 prefix sum unchanged"), TINY_TAIL, 6, [2], [INF], [0.0], [True]),
        (t("top_k=2，top_p 关（inf）：第 1 列的权重（2e-9）加进 float32 的前缀和也不改变它，照样保留",
           "top_k=2, top_p off (inf): column 1's weight (2e-9) leaves the float32 prefix sum unchanged, and stays"),
         LIGHT_SECOND, 6, [2], [INF], [0.0], [True]),
        (t("top_k=2：第 1、2 列的值不同（-1e-08 > -2e-08），权重 e 却都舍入成 1", "top_k=2: columns 1 and 2 hold distinct values "
           "(-1e-08 > -2e-08) whose weights e both round to 1"), NEAR_MAX, 5, [2], [INF], [0.0], [True]),
    ]
    spread, ks = spread_rows()
    for r, k in enumerate(ks):                   # each row alone: its own window, top_k + 1 columns
        cases.append((t(f"随机行 {r} 单独，top_k={k}，W={k + 1}", f"random row {r} alone, top_k={k}, W={k + 1}"), spread[r:r + 1],
                      k + 1, [k], [INF], [0.0], [True]))
    for width in (41, 64, 300):                  # the same rows together: the widest need sets W (or a peer's)
        cases.append((t(f"8 个随机行，top_k {ks[0]}..{ks[-1]}，W={width}", f"8 random rows, top_k {ks[0]}..{ks[-1]}, W={width}"),
                      spread, width, ks, [INF] * 8, [0.0] * 8, [True] * 8))
    return cases


def t4_calls(ctx):
    """Each T4 case called on the file's filter_window, its answer's shapes checked (a Fail where one is wrong):
    yields (label, x, width, top_k, top_p, row_mass list, certain expected, z, k, p, m, complete, shown,
    (e, cs, total) on the CPU, the file's certain as a list of bools)."""
    dev = ctx.device
    for label, x, width, top_k, top_p, row_mass, certain in t4_cases(ctx):
        z, _ = stable_window(x.to(dev), width)
        n = z.shape[0]
        k = torch.tensor(top_k, device=dev)[:, None]
        p = torch.tensor(top_p, device=dev)[:, None]
        m = None if row_mass is None else torch.tensor(row_mass, device=dev)[:, None]
        row_mass = row_mass or [0.0] * n                                  # None: top-k on in every row, mass unused
        complete = width == x.shape[1]
        if n <= 2 and width <= 6:
            shown = (f"z={rows_text(z, 8)}, top_k={top_k}, top_p=[{', '.join(fmt_num(v) for v in top_p)}], "
                     f"row_mass={'None' if m is None else '[' + ', '.join(fmt_num(v) for v in row_mass) + ']'}, "
                     f"complete={complete}")
        else:
            shown = f"z [{n}, {width}], top_k={top_k[:4]}{'...' if n > 4 else ''}, complete={complete}"
        got = call(ctx, "filter_window", shown, z, k, p, m, complete)
        if not (isinstance(got, tuple) and len(got) == 4):
            raise Fail(f"called filter_window({shown}) -> {describe(got)}",
                       ctx.t("期望：(e [n, W], cs [n, W], total [n, 1], certain [n])",
                             "expected a tuple (e [n, W], cs [n, W], total [n, 1], certain [n])"), where="filter_window")
        e = need_tensor(ctx, "filter_window", shown + " e", got[0], (n, width)).cpu()
        cs = need_tensor(ctx, "filter_window", shown + " cs", got[1], (n, width)).cpu()
        total = need_tensor(ctx, "filter_window", shown + " total", got[2], (n, 1)).cpu()
        sure = got[3]
        if not isinstance(sure, torch.Tensor) or sure.numel() != n:
            raise Fail(f"called filter_window({shown}) -> certain {describe(sure)}",
                       ctx.t(f"期望：certain 是 [{n}] 的布尔张量", f"expected certain as a bool tensor [{n}]"), where="filter_window")
        sure = sure.flatten().cpu().bool().tolist()
        yield (label, x, width, top_k, top_p, row_mass, certain, z, k, p, m, complete, shown, (e, cs, total), sure)


@check("T4.filter_window", "filter_window（第 4 步）：V = 6 的小行、并列、长行上的保留前缀、精确的 0、总质量",
       "filter_window (step 4) on small rows (V = 6), ties and long rows: kept prefix, exact zeros, kept mass",
       hint=("p08-fast", 2, "s4"))
@step("filter_window")
def t4_filter_window(ctx):
    t = ctx.t
    seen = {}
    for label, x, width, top_k, top_p, row_mass, certain, z, k, p, m, complete, shown, (e, cs, total), _ in t4_calls(ctx):
        n = z.shape[0]
        for r in range(n):
            n_kept, e_kept, kept_mass = expected_window(z[r].cpu().tolist(), top_k[r], top_p[r], row_mass[r])
            zeros_ok = bool((e[r, n_kept:] == 0).all()) and bool((e[r, :n_kept] > 0).all())
            row = f"called filter_window({shown}) -> " + t(f"第 {r} 行", f"row {r}")
            if e[r, 0].item() != 1.0:
                raise Fail(t(f"{row}：e {rows_text(e[r:r + 1], 8)}（{label}）", f"{row}: e {rows_text(e[r:r + 1], 8)} ({label})"),
                           t(f"e 的第 0 列要正好是 1：e = exp(z - z[:, :1])，减的是这一行自己的最大值（窗口的第 0 列），不是整批的；你的是 "
                             f"{e[r, 0].item():.9g}", f"e's column 0 must be exactly 1: e = exp(z - z[:, :1]), minus the row's "
                             f"own max (the window's column 0), not the batch's; yours is {e[r, 0].item():.9g}"),
                           where="filter_window")
            dropped = e[r, n_kept:].tolist()
            if dropped and min(dropped) > 0 and max(dropped) <= 1e-6 and len(set(dropped)) == 1:   # one floor value
                raise Fail(t(f"{row}：e {rows_text(e[r:r + 1], 8)}（{label}）", f"{row}: e {rows_text(e[r:r + 1], 8)} ({label})"),
                           t(f"删掉的列是 {max(dropped):.1e}，不是 0：像 clamp_min 那样的下限（博客 bug 2）会让被删的 token 还有机会被抽到；"
                             "用 where / masked_fill 把它们设成正好 0.0", f"the dropped columns hold {max(dropped):.1e}, not 0: a floor "
                             f"such as clamp_min (the blog's bug 2) leaves removed tokens a chance; set them to exactly 0.0 "
                             f"with where / masked_fill"), hint=("p08-fast", 1, "q4"), where="filter_window")
            if not zeros_ok:
                zr = z[r].cpu().tolist()
                kept = int((e[r] > 0).sum())
                why = first_cause(
                    lambda: weight_space_line(ctx, zr, top_k[r], kept, n_kept),
                    lambda: reaches_line(ctx, zr, top_k[r], top_p[r], row_mass[r], kept, n_kept, complete),
                    lambda: value_cut_line(ctx, zr, kept, n_kept),
                    lambda: top_p_off_as_one_line(ctx, zr, top_k[r], top_p[r], kept, n_kept),
                    lambda: top_k[r] > 0 and kept == n_kept + 1 and kth_one_column_late_line(ctx),
                    lambda: tied_kth_cut_line(ctx, zr, top_k[r], kept, n_kept, certain[r], m),
                    lambda: _window_mass_why(ctx, zr, top_k[r], top_p[r], row_mass[r], e[r], n_kept),
                    lambda: _tied_kth_mass_why(ctx, zr, top_k[r], top_p[r], row_mass[r], e[r], n_kept),
                    lambda: float_test_line(ctx, e[r].tolist(), cs[r].tolist(), total[r, 0].item(), n_kept),
                    lambda: top_k_off_line(ctx, zr, top_k[r], top_p[r], row_mass[r], kept, n_kept),
                    lambda: row_mass_line(ctx, z[r:r + 1], top_k[r], top_p[r], row_mass[r], e[r], expected_window(
                        zr, 0, top_p[r], row_mass[r], mass=sum(math.exp(v - zr[0]) for v in zr))[0]),
                    lambda: inclusive_mass_line(ctx, zr, top_k[r], top_p[r], row_mass[r], kept, n_kept),
                    lambda: complete and complete_line(ctx, z[r:r + 1], k[r:r + 1], p[r:r + 1], m[r:r + 1], e[r], n_kept))
                raise Fail(t(f"{row}：e {rows_text(e[r:r + 1], 8)}，期望保留 {n_kept} 列 {rows_text([e_kept], 8)}，"
                             f"其后恰好为 0（{label}）",
                             f"{row}: e {rows_text(e[r:r + 1], 8)}, expected {n_kept} kept columns "
                             f"{rows_text([e_kept], 8)} and exactly 0 after ({label})"), *why,
                           ctx.t("保留的是一个前缀：top-k（>= 第 k 大的值）与 top-p（之前的质量 >= top_p 就删）中较短的那个；其余恰好为 0",
                                 "the kept set is a prefix: the shorter of top-k's (values >= the k-th) and top-p's (drop once "
                                 "the mass before reaches top_p); exactly 0 after it"),
                           hint=("p08-fast", 1, "q3") if "bug 1" in label else None, where="filter_window")
            if max(abs(a - b) for a, b in zip(e[r, :n_kept].tolist(), e_kept)) > 1e-5 or abs(total[r, 0].item() - kept_mass) > 1e-5 * kept_mass:
                raise Fail(t(f"{row}：e {rows_text(e[r:r + 1], 8)}，total {fmt_num(total[r, 0])}，期望 "
                             f"{rows_text([e_kept], 8)}，total {fmt_num(kept_mass)}（{label}）",
                             f"{row}: e {rows_text(e[r:r + 1], 8)}, total {fmt_num(total[r, 0])}, expected "
                             f"{rows_text([e_kept], 8)}, total {fmt_num(kept_mass)} ({label})"),
                           ctx.t("e = exp(z - z[:, :1])（第 0 列是最大值），total = 保留列的质量", "e = exp(z - z[:, :1]) (column 0 is the max), "
                                 "total = the mass of the kept columns"), where="filter_window")
            if not torch.allclose(cs[r, :n_kept].double(), torch.tensor(e_kept, dtype=torch.float64).cumsum(0), rtol=1e-5):
                raise Fail(t(f"{row}：cs {rows_text(cs[r:r + 1], 8)}，期望 e {rows_text([e_kept], 8)} 的前缀和（{label}）",
                             f"{row}: cs {rows_text(cs[r:r + 1], 8)}, expected prefix sums of e {rows_text([e_kept], 8)} ({label})"),
                           where="filter_window")
            key = (tuple(x[r if n > 1 else 0].tolist()), top_k[r], top_p[r])
            mine = (e[r, :n_kept].tolist(), total[r, 0].item(), cs[r, :n_kept].tolist())
            if key in seen and seen[key][1] != mine:
                other_label, other = seen[key]
                read_from_cs = all(m[1] == m[2][-1] for m in (mine, other))          # total is cs at its last kept column
                why = (ctx.t("total 读的是前缀和，但前缀和本身随 W 变了：cs 的第 j 列对任何宽度都要是同一个浮点数——filter_window 的前缀和"
                             "要用给定的 cumulative(e)，不能按 W 或 batch 选不同的算法",
                             "total is read from the prefix sums, but the prefix sums themselves changed with W: column j of cs "
                             "must be the same float for any width: take them from the given cumulative(e), never a method "
                             "chosen by W or by the batch")
                       if read_from_cs and mine[2] != other[2] else
                       ctx.t("同一行的数值必须与窗口宽度 W、与同批的其他行无关（逐位）：total 要读前缀和在这一行自己的最后保留列上的值，"
                             "不要对窗口做 sum",
                             "a row's numbers must not depend on the width W or on the other rows, bit for bit: read total "
                             "from the prefix sums at the row's own last kept column, no sum over the window"))
                raise Fail(t(f"{row}（{label}）：total {bits(mine[1])}，保留的 e {rows_text([mine[0]])}",
                             f"{row} ({label}): total {bits(mine[1])}, kept e {rows_text([mine[0]])}"),
                           t(f"同一行（{other_label}）：total {bits(other[1])}，保留的 e {rows_text([other[0]])}",
                             f"the same row ({other_label}): total {bits(other[1])}, kept e {rows_text([other[0]])}"),
                           why, where="filter_window")
            seen.setdefault(key, (label, mine))
    boundaries_in_wider_windows(ctx, *spread_rows())
