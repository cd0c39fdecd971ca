"""Acceptance checks K1-K2 of p08-kernel: steps 1 and 2 of mine/p08_sampler_kernel.py (K3 in checks_steps_mass.py, K4-K5 in checks_steps_cut.py).

Each check runs the learner's function of its own step alone, inside the grader's probe kernels (probes.py), one row
per launch (a load past that row is then past the tensor, where the interpreter sees it), at the file's own block
size and at a small one (so a short row still spans several blocks and a masked tail)."""
import struct

import torch

from course.grader.checks import Fail, _noting, check, describe
from course import kernel_oracle as expect, kernel_probes as probes

INF = float("inf")
SMALL_BLOCK = 128


def f32(x: float) -> str:
    """A float32 shown so that two different ones never print the same."""
    return f"{x:.9g}"


def learners_block(ctx, vocab) -> int | None:
    """The block size the file's launch_config gives a row of `vocab` (None when it gives none that can run)."""
    try:
        block = ctx.fn("launch_config")(1, vocab)[1]
    except Exception:  # noqa: BLE001 - K1.launch says what is wrong with it
        return None
    return block if isinstance(block, int) and block >= 16 and block & (block - 1) == 0 else None


def blocks(ctx, vocab) -> list:
    """The file's own block for this vocabulary, and a small one."""
    return list(dict.fromkeys(b for b in (learners_block(ctx, vocab), SMALL_BLOCK) if b))


def row_text(x) -> str:
    x = torch.as_tensor(x)
    return f"x [{len(x)}]"


# ---- K1 launch_config --------------------------------------------------------------------------------
@check("K1.launch", "启动配置：每行一个 program；块大小、warps 只由 V 和常数决定", "the launch: one program per row; "
       "its block and warps follow from V and constants, never from the batch", hint=("p08-kernel", 1, "q1"))
def k1_launch_config(ctx):
    fn = ctx.fn("launch_config")
    for vocab in (1000, 50257, 151936):
        shapes = {}
        for batch in (1, 2, 3, 8, 16, 64, 256):
            called = f"called launch_config({batch}, {vocab})"
            out = _noting(called, fn, batch, vocab)
            if not (isinstance(out, tuple) and len(out) == 3 and isinstance(out[0], tuple) and out[0]
                    and all(isinstance(v, int) for v in (*out[0], out[1], out[2]))):
                raise Fail(f"{called} -> {describe(out)}", ctx.t("期望：(grid, block, num_warps)，grid 是整数元组，比如 "
                                                                 "((B,), 1024, 4)", "expected (grid, block, num_warps), grid a "
                                                                 "tuple of ints, e.g. ((B,), 1024, 4)"), where="launch_config")
            grid, block, warps = out
            if grid[0] != batch:
                raise Fail(f"{called} -> grid {grid}", ctx.t(
                    f"grid 的第一维是行：B = {batch} 行就是 {batch} 个 program，第 i 行是 program_id(0) = i（给定的 kernel 这样读）",
                    f"the grid's first axis is the row: B = {batch} rows are {batch} programs, row i is program_id(0) "
                    f"= i (the given kernel reads it so)"), where="launch_config")
            if block & (block - 1) or block < 16:
                raise Fail(f"{called} -> block {block}", ctx.t("块大小要是 2 的幂，至少 16（tl.arange(0, BLOCK) 只接受 2 的幂）",
                                                               "the block must be a power of two, at least 16 (tl.arange(0, "
                                                               "BLOCK) takes powers of two only)"), where="launch_config")
            if warps not in (1, 2, 4, 8, 16, 32):
                raise Fail(f"{called} -> num_warps {warps}", ctx.t("num_warps 是 1、2、4、8、16 或 32",
                                                                   "num_warps is 1, 2, 4, 8, 16 or 32"), where="launch_config")
            shapes[batch] = (grid[1:], block, warps)
        moved = [b for b in shapes if shapes[b] != shapes[1]]
        if moved:
            b = moved[0]
            show = {n: f"grid {(n, *shapes[n][0])}, block {shapes[n][1]}, num_warps {shapes[n][2]}" for n in (1, b)}
            raise Fail(f"called launch_config(1, {vocab}) -> {show[1]}; launch_config({b}, {vocab}) -> {show[b]}",
                       ctx.t("一行的 program 随 batch 大小变了：同一行单独跑和在 batch 里跑，用的是不同的块、warps 或切分——"
                             "归约的顺序跟着变，结果的 bit 也可能变。块大小、warps、每行的切分只能由 V 和常数决定",
                             "a row's program changes with the batch size: the same row alone and in a batch runs with "
                             "another block, warps or split, so its reductions add in another order and its bits may move. "
                             "The block, warps and splits per row may follow from V and constants only"),
                       where="launch_config")


# ---- K1 row_max --------------------------------------------------------------------------------------
def _double_rounding_max(t=0.7):
    """A row whose max m has float32(m / t) != float32(m * float32(1 / t)): x / t rounds once, x * (1 / t) twice."""
    inv = torch.tensor(1.0, dtype=torch.float32) / t
    m = torch.linspace(3.0, 4.0, 4001)
    hit = m[(m / t) != (m * inv)][0]
    return float(hit)


def row_max_cases(block):
    g = torch.Generator().manual_seed(11)
    out = []
    x = torch.randn(block + 37, generator=g)
    x[block + 20] = 4.5
    out.append(("the max in the last, partial block", "最大值在最后一个不满的块里", x, 1.0))
    x = -torch.rand(block + 37, generator=g) - 0.5
    out.append(("every value below 0, V not a multiple of BLOCK", "所有值都小于 0，V 不是 BLOCK 的倍数", x, 1.0))
    x = torch.randn(2 * block + 5, generator=g)
    x[[7, block + 3, 2 * block + 1]] = 5.0
    out.append(("equal maxima in three blocks (columns 7, BLOCK + 3, 2 BLOCK + 1)", "三个块里有相等的最大值（第 7、BLOCK + 3、"
                "2 BLOCK + 1 列）", x, 1.0))
    x = torch.randn(300, generator=g)
    x[[20, 10]] = 6.0
    out.append(("equal maxima at columns 10 and 20", "第 10 和第 20 列是相等的最大值", x, 1.0))
    x = torch.randn(block + 9, generator=g)
    x[::3] = -INF
    out.append(("-inf entries", "含 -inf", x, 0.8))
    x = torch.randn(257, generator=g)
    x[100] = _double_rounding_max()
    out.append(("temperature 0.7, where x / T and x * (1 / T) round apart", "温度 0.7：x / T 与 x * (1 / T) 舍入不同", x, 0.7))
    x = torch.tensor([3e38, 2.9e38, -3e38, 0.0] * 40)
    out.append(("huge values", "极大的值", x, 2.0))
    return out


@check("K1.row_max", "row_max：一行分块读完，最大的 z = x / T 和它第一次出现的列", "row_max: a row read block by block, "
       "its largest z = x / T and the first column holding it", hint=("p08-kernel", 1, "q2"))
def k1_row_max(ctx):
    for block in blocks(ctx, 1000):
        for label_en, label_zh, x, t in row_max_cases(block):
            called = f"called row_max({row_text(x)}, T={t}, BLOCK={block})"
            z, col = ctx.probe("row_max", called, probes.row_max, x[None], [t], block)
            want_z, want_col = expect.row_max(x, t)
            got_z, got_col = float(z[0]), int(col[0])
            if struct.pack("f", got_z) == struct.pack("f", want_z) and got_col == want_col:
                continue
            raise Fail(f"{called} [{ctx.t(label_zh, label_en)}] -> ({f32(got_z)}, {got_col})",
                       ctx.t(f"期望 ({f32(want_z)}, {want_col})", f"expected ({f32(want_z)}, {want_col})"),
                       _row_max_why(ctx, x, t, got_z, got_col, want_z, block), where="row_max")


def _row_max_why(ctx, x, t, got_z, got_col, want_z, block) -> str:
    z = expect.z_of(x, t)
    inv = torch.tensor(1.0, dtype=torch.float32) / t
    want_col = int(z.argmax())
    if got_z == want_z and got_col == want_col % block and want_col >= block:
        return ctx.t(f"列号是从它所在块的开头数的（{want_col} - {want_col - got_col} = {got_col}）：加上这一块的起点 start",
                     f"the column is counted from the start of its block ({want_col} - {want_col - got_col} = {got_col}): "
                     f"add the block's start")
    if got_z == want_z and 0 <= got_col < len(x) and float(z[got_col]) == want_z:
        return ctx.t("最大值对了，列不对：相等的最大值取第一列（torch.argmax 的规则）。后面的块只有更大时才替换，用 >，不是 >=",
                     "the max is right, its column is not: equal maxima give the first column (torch.argmax's rule). A "
                     "later block replaces the running one only when it is larger: >, not >=")
    if got_z == 0.0 and float(z.max()) < 0:
        return ctx.t("0.0 不是这一行的值（每个值都小于 0）：最后一块 mask 掉的列读成了 0。用 other=-inf，它们就进不了最大值",
                     "0.0 is no value of this row (every value is below 0): the masked columns of the last block read "
                     "as 0. other=-inf keeps them out of the max")
    if t != 1.0 and got_z == float(torch.as_tensor(x, dtype=torch.float32).max()):
        return ctx.t("这是 x 的最大值，没有除以温度：z = x / temperature", "this is the max of x, not divided by the "
                     "temperature: z = x / temperature")
    if t != 1.0 and got_z == float((torch.as_tensor(x, dtype=torch.float32) * inv).max()):
        return reciprocal_line(ctx)
    if len(x) > block and want_z in z[(len(x) // block) * block:].tolist():
        return ctx.t(f"最大值在最后一个块（第 {(len(x) // block) * block} 列起）：range(0, V, BLOCK) 的每一块都要读到",
                     f"the max is in the last block (from column {(len(x) // block) * block}): every block of range(0, V, "
                     f"BLOCK) must be read")
    return ctx.t("z_max 是这一行最大的 x / temperature（-inf 也算值），col 是它第一次出现的列",
                 "z_max is the row's largest x / temperature (-inf counts as a value), col the first column holding it")


# ---- K2 kth_largest ----------------------------------------------------------------------------------
def kth_cases():
    g = torch.Generator().manual_seed(12)
    out = []
    x = torch.randn(1000, generator=g) * 2
    out += [("random row", "随机行", x, 0.8, k) for k in (1, 40, 999, 1000)]
    x = (torch.randn(700, generator=g) * 4).round() / 4                        # many equal values
    out += [("equal values around the k-th", "第 k 个附近有相等的值", x, 1.0, k) for k in (3, 50, 351)]
    ulps = [torch.tensor(1.0)]
    for _ in range(63):
        ulps.append(torch.nextafter(ulps[-1], torch.tensor(2.0)))
    ulps = torch.stack(ulps)
    x = torch.cat([ulps[torch.randperm(64, generator=g)], torch.randn(236, generator=g) - 3])
    out += [("64 floats one ulp apart above 1.0", "1.0 之上 64 个相邻（只差一个 ulp）的浮点数", x, 1.0, k)
            for k in (5, 17, 40, 63)]
    x = -torch.rand(333, generator=g) * 10
    out += [("negative values", "全是负值", x, 1.3, k) for k in (1, 332, 333)]
    x = torch.full((300,), -INF)
    x[torch.randperm(300, generator=g)[:10]] = torch.randn(10, generator=g)
    out += [("10 finite values, the rest -inf", "10 个有限值，其余是 -inf", x, 1.0, k) for k in (10, 11)]
    x = torch.tensor([3e38, -3e38, 2e38, 0.0] * 50)
    out += [("huge values", "极大的值", x, 1.0, 60)]
    return out


@check("K2.kth_largest", "kth_largest：第 k 大的 z，不排序，固定次数的遍历", "kth_largest: the k-th largest z, no sort, a "
       "fixed number of passes", hint=("p08-kernel", 1, "q3"))
def k2_kth_largest(ctx):
    cases = kth_cases()
    for block in blocks(ctx, 1000):
        answers = []
        for label_en, label_zh, x, t, k in cases:
            called = f"called kth_largest({row_text(x)}, T={t}, k={k}, BLOCK={block})"
            answers.append((called, label_en, label_zh, x, t, k, expect.kth(x, t, k),
                            float(ctx.probe("kth_largest", called, probes.kth, x[None], [t], [k], block)[0])))
        wrong = [a for a in answers if a[-1] != a[-2]]                      # -0.0 == 0.0: the same kept set
        if not wrong:
            continue
        def one_below(want, got):
            return want > -INF and got == torch.tensor(want).nextafter(torch.tensor(-INF)).item()
        below = all(one_below(want, got) for *_, want, got in answers if want > -INF)   # every answer one float below
        exactly_k = [(got, expect.z_of(x, t), k) for _, _, _, x, t, k, want, got in answers
                     if k < len(x) and int((expect.z_of(x, t) >= want).sum()) == k]
        one_more = bool(exactly_k) and all(got == float(torch.sort(z, descending=True).values[k])
                                            for got, z, k in exactly_k)     # every such answer the (k+1)-th
        stuck = not below and all(one_below(want, got) for *_, want, got in wrong)   # only the wrong ones, one below
        called, label_en, label_zh, x, t, k, want, got = wrong[0]
        raise Fail(f"{called} [{ctx.t(label_zh, label_en)}] -> {got:#.9g}",          # both to the same digits
                   ctx.t(f"期望 {want:#.9g}（torch.topk(z, {k}).values[-1]）", f"expected {want:#.9g} "
                         f"(torch.topk(z, {k}).values[-1])"), _kth_why(ctx, x, t, k, got, want, below, one_more, stuck),
                   where="kth_largest")


def reciprocal_z(x, t) -> torch.Tensor:
    """z as x * (1 / T) gives it: the reciprocal rounded to float32, then the product (two roundings)."""
    return torch.as_tensor(x, dtype=torch.float32) * (torch.tensor(1.0, dtype=torch.float32) / t)


def reciprocal_line(ctx) -> str:
    return ctx.t("这是 x * (1 / T) 的结果：乘倒数舍入两次，和 torch 的 x / T 差一位。z 在每一步都要是 tl.div_rn(x, temperature)，"
                 "和 torch 一样只舍入一次", "this is what x * (1 / T) gives: a reciprocal rounds twice and misses torch's "
                 "x / T by a bit. z must be tl.div_rn(x, temperature) in every step, rounded once as torch's x / T is")


def _kth_why(ctx, x, t, k, got, want, below=False, one_more=False, stuck=False) -> str:  # noqa: C901 - a cause a branch
    if stuck:
        return ctx.t("答错的每一个都正好比第 k 大的值小一个 key（别的答对了）：搜索结束时 lo 停在下面那个 key 上，上面那个 key 没试过。"
                     "要么少了一次对半（在 2**32 个 key 里收拢到一个要 32 次），要么从不试 hi：成功时令 lo = mid、mid 向下取整，"
                     "hi = lo + 1 之后 mid 永远是 lo（mid 要向上取整：(lo + hi + 1) >> 1）",
                     "each wrong answer is exactly one key below the k-th value (the others are right): the search ended "
                     "with lo on the key below, the key above never tested. Either it stops a halving early (closing on "
                     "one of 2**32 keys takes 32), or it never tests hi: with lo = mid on success and a floor mid, once "
                     "hi = lo + 1 mid is lo forever (round mid up: (lo + hi + 1) >> 1)")
    if t != 1.0 and got == float(torch.topk(reciprocal_z(x, t), k).values[-1]):
        return reciprocal_line(ctx)
    z = expect.z_of(x, t)
    if got == 0.0 and want < 0 and 0.0 not in z.tolist():
        return ctx.t("0.0 不是这一行的值，要找的值是负的：搜索的下端要从 KEY_MIN（-inf 的 key）开始，不是从 0 的 key",
                     "0.0 is no value of this row, and the value sought is negative: the search's low end starts at KEY_MIN "
                     "(the key of -inf), not at the key of 0")
    padded = [torch.cat([z, torch.zeros((-len(z)) % b)]) for b in (SMALL_BLOCK, 1024) if len(z) % b]
    if any(got == float(torch.topk(p, k).values[-1]) != want for p in padded):
        return ctx.t("最后一块里超出 V 的列被算了进去（当成 0.0）：计数只算 cols < V 的列",
                     "the columns past V in the last block were counted (as 0.0): count only the columns cols < V")
    if below:
        return ctx.t("每个答案都正好比第 k 大的值小一个浮点数：数的是 z > v 的列。规则是 z >= v 的列至少 k 个（等于候选值的列也算）",
                     "every answer is exactly one float below the k-th value: it counts the columns with z > v. The "
                     "rule counts z >= v, at least k of them (the columns equal to the candidate count too)")
    values = sorted(set(z.tolist()), reverse=True)
    at_least = int((z >= got).sum()) if got == got else -1
    if got == got and got not in values and at_least == int((z >= want).sum()):
        below = max((v for v in values if v < got), default=-INF)
        above = min((v for v in values if v > got), default=INF)
        return ctx.t(f"{f32(got)} 不是这一行的值（在 {f32(below)} 和 {f32(above)} 之间）：搜索在 lo、hi 还没收拢到相邻的两个"
                     "key 时就停了。32 次对半（或每次更多的枢轴）才能在 2**32 个 key 里停在一个值上",
                     f"{f32(got)} is no value of this row (it lies between {f32(below)} and {f32(above)}): the search "
                     f"stopped before lo and hi were neighbouring keys. It takes 32 halvings (or more pivots per pass) to "
                     f"close on one of 2**32 keys")
    distinct = values[k - 1] if k <= len(values) else None
    if got == distinct and distinct != want:
        return ctx.t("这是第 k 大的“不同的值”：相等的值要按列各算一次（count(z >= v) 数的是列）",
                     "this is the k-th largest distinct value: equal values count once per column (count(z >= v) counts "
                     "columns)")
    if one_more and int((z >= want).sum()) == k < len(z) and got == float(torch.sort(z, descending=True).values[k]):
        return ctx.t(f"这是第 k+1 大的值：z >= {f32(want)} 的列正好 k = {k} 个，已经够了。候选值上面（含）有至少 k 列就留下它：>= k，不是 > k",
                     f"this is the (k+1)-th largest value: exactly k = {k} columns have z >= {f32(want)}, which is "
                     f"enough. A candidate with at least k columns at or above it is kept: >= k, not > k")
    if got != got:
        return ctx.t("NaN 不是这一行的值（这一行没有 NaN）：你的搜索试了一个不是浮点数的候选：[KEY_MIN, KEY_MAX] 之外的 key"
                     "（比如比 -inf 的 key 还低的下端 KEY_MIN - 1），或者 (-inf + inf) / 2 这样的浮点中点。每个候选都要是 [-inf, +inf] 里的浮点数",
                     "NaN is no value of this row (it holds none): your search tested a candidate that is no float: a key "
                     "outside [KEY_MIN, KEY_MAX] (a low end of KEY_MIN - 1, below -inf's key, say) or a float midpoint such "
                     "as (-inf + inf) / 2. Every candidate must be a float in [-inf, +inf]")
    finite = int((z > -INF).sum())
    if got == -INF and finite >= k:
        return ctx.t(f"-inf 只在有限值不到 k 个时才是答案，这里有 {finite} 个：搜索从没把下端往上移。每一次都要保留 z >= mid 的列"
                     "至少 k 个的那一半；lo、hi、mid 是 int64 的 key（它们的差一开始接近 2**32，int32 装不下）",
                     f"-inf is the answer only when fewer than k columns are finite; here {finite} are: the search never "
                     f"raised its low end. Each pass keeps the half where at least k columns have z >= mid; lo, hi and "
                     f"mid are int64 keys (their gap starts near 2**32, past int32)")
    if at_least == k - 1 or (got in values and int((z > got).sum()) >= k):
        return ctx.t(f"z >= {f32(got)} 的列有 {at_least} 个：要找的是 z >= v 的列至少 k 个的最大的 v",
                     f"{at_least} columns have z >= {f32(got)}: the answer is the largest v with at least k columns z >= v")
    if got == float(torch.topk(torch.as_tensor(x, dtype=torch.float32), k).values[-1]) and t != 1.0:
        return ctx.t("这是 x 的第 k 大，没有除以温度", "this is the k-th largest x, not divided by the temperature")
    return ctx.t("第 k 大的 z：z >= v 的列至少有 k 个的最大的 v（相等的值按列计数，-inf 也算值）",
                 "the k-th largest z: the largest v with at least k columns z >= v (equal values counted per column, -inf "
                 "a value too)")
