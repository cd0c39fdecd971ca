"""Acceptance checks K4 and K5 of p08-kernel: top-p's cut (top_p_cut) and the draw (draw), both in the file's own
units (checks_steps_mass.py's row_plan): p08's kept set and inverse CDF, counted as Python integers."""
import numpy as np
import torch

from course.grader.checks import Fail, check
from course import kernel_oracle as expect, kernel_probes as probes
from tests.p08_kernel.checks_steps import blocks, f32, row_text
from tests.p08_kernel.checks_steps_mass import row_plan

INF = float("inf")


# ---- K4 top_p_cut ----------------------------------------------------------------------------------------
def cut_cases(block):
    g = torch.Generator().manual_seed(15)
    yield "a random row, top_p 0.9", "随机行，top_p 0.9", torch.randn(1000, generator=g) * 2, 1.0, 0.9, 0
    yield "top_k 40, then top_p 0.8", "先 top_k 40，再 top_p 0.8", torch.randn(1000, generator=g) * 2, 0.7, 0.8, 40
    yield "16 equal values, top_p 0.5", "16 个相等的值，top_p 0.5", torch.zeros(16), 1.0, 0.5, 0
    yield "equal values over three blocks, top_p 0.5", "三个块里都是相等的值，top_p 0.5", torch.zeros(2 * block + 16), 1.0, 0.5, 0
    x = torch.tensor([5.0, 3.0, 0.0, 3.0, 3.0, -2.0, 3.0, 1.0] * 8)
    yield "a tie run straddling the cut", "一串相等的值跨过截断点", x, 1.0, 0.6, 0
    x = torch.randn(300, generator=g)
    x[[9, 4]] = 7.0
    yield "tied maxima, a tiny top_p", "并列的最大值，极小的 top_p", x, 1.0, 1e-9, 0
    yield "8 equal values, top_p 0.25 (an exact boundary)", "8 个相等的值，top_p 0.25（正好在边界上）", torch.zeros(8), 1.0, 0.25, 0
    yield "top_p 0.999999", "top_p 0.999999", torch.randn(500, generator=g) * 3, 1.0, 0.999999, 0
    x = torch.cat([torch.zeros(1), torch.full((999,), -60.0)])                 # exp(-60) * scale < 1: no units
    yield ("top_p 1 - 2**-53: quota is the whole mass, columns without units after the max",
           "top_p 1 - 2**-53：quota 就是全部质量，最大值之后的列都没有单位", x, 1.0, 1.0 - 2.0 ** -53, 0)


@check("K4.top_p_cut", "top_p_cut：用单位的和找 top-p 的截断点；截断点上的并列按列保留", "top_p_cut: top-p's cut found "
       "by the units' mass; the ties at the cut kept by column", hint=("p08-kernel", 1, "q5"))
def k4_top_p_cut(ctx):
    for block in blocks(ctx, 1000):
        for label_en, label_zh, x, t, top_p, top_k in cut_cases(block):
            plan = row_plan(ctx, x, t, top_k, top_p, block)
            q, want = plan.quota, plan.cut
            called = (f"called top_p_cut({row_text(x)} [{ctx.t(label_zh, label_en)}], T={t}, quota={q}, BLOCK={block})")
            cut, last, kept = ctx.probe("top_p_cut", called, probes.cut, x[None], [t], [plan.top], [q], plan.scale,
                                        block)
            got = float(cut[0]), int(last[0]), int(kept[0])
            if got == want:
                continue

            def at(b, x=x, t=t, plan=plan, q=q):
                """The file's top_p_cut of the same row at block b: (cut, last, kept), or None where it raises."""
                try:
                    c, la, k = ctx.probe("top_p_cut", called, probes.cut, x[None], [t], [plan.top], [q], plan.scale, b)
                except Exception:  # noqa: BLE001 - it cannot say
                    return None
                return float(c[0]), int(la[0]), int(k[0])
            raise Fail(f"{called} -> (cut {f32(got[0])}, last {got[1]}, kept {got[2]})",
                       ctx.t(f"期望 (cut {f32(want[0])}, last {want[1]}, kept {want[2]})",
                             f"expected (cut {f32(want[0])}, last {want[1]}, kept {want[2]})"),
                       _cut_why(ctx, plan.z, plan.w, q, got, want, block, at), where="top_p_cut")


def _one_block(ctx, values, got, want, block, at) -> str | None:
    """Ties over several blocks kept wrong: a line when the file's top_p_cut is right on the same row read as one block
    (the ties' units of earlier blocks are not carried over). Else None."""
    whole = 1 << (len(values) - 1).bit_length()                   # one block holds the row
    if at is None or not block or len(values) <= block or got[0] != want[0] or at(whole) != want:
        return None
    return ctx.t(f"同一行在 BLOCK = {whole}（一块装下整行）时你的结果是对的，BLOCK = {block} 时不对：这一行的并列列跨了几块，"
                 f"你的并列那一遍从一块带到下一块的东西丢了或错了。一个并列列留不留，看的是它之前（按列号）全部并列列的单位，跨块累加",
                 f"the same row at BLOCK = {whole} (one block holds it) gives the right answer, at BLOCK = {block} not: "
                 f"this row's ties span blocks, and what your tie pass carries from one block to the next is lost or wrong. "
                 f"Whether a tied column stays depends on the units of every tie before it by column, added across blocks")


def _cut_why(ctx, z, w, q, got, want, block=None, at=None) -> str:  # noqa: C901 - one cause per branch
    values = z.tolist()
    ties = [c for c, v in enumerate(values) if v == want[0]]
    n = sum(1 for c in ties if c <= want[1])
    restarting = next((in_block[n - 1] for start in range(0, len(values), block or len(values))
                       for in_block in [[c for c in ties if start <= c < start + block]] if len(in_block) >= n), -1)
    if block and len(values) > block and got[0] == want[0] and got[1] != want[1] and got[1] == restarting:
        return ctx.t("并列的列数每一块都从 0 重新数了：要从一块带到下一块（前面各块的并列数加上这一块里的前缀计数）",
                     "the count of tied columns starts again at 0 in every block: carry it over from block to block (the "
                     "earlier blocks' count plus this block's running count)")
    carried = _one_block(ctx, values, got, want, block, at)
    if carried:
        return carried
    if got[0] == want[0] and sum(1 for c in ties if c <= got[1]) + 1 == sum(1 for c in ties if c <= want[1]):
        return ctx.t("少留了一个并列的列：留下的个数是 ceil((quota - 截断值之上的单位) / 一个并列列的单位)，向上取整",
                     "one tied column too few: the number that stays is ceil((quota - the units above the cut) / one tied "
                     "column's units), rounded up")
    unit = int(w[ties[0]]) if ties else 0
    above = sum(int(wc) for zc, wc in zip(values, w) if zc > want[0])
    if ties and got[0] == want[0] and got[1] == ties[-1] != want[1]:
        return ctx.t(f"等于截断值的 {len(ties)} 列全留下了（last 是最后一个，第 {ties[-1]} 列）：按列号，只有前面的单位还小于 quota 的"
                     f"并列列留下，这里是前 {n} 个", f"all {len(ties)} columns equal to the cut were kept (last is the last "
                     f"of them, {ties[-1]}): by column, a tied column stays only while the units before it are below quota; "
                     f"here the first {n}")
    if got[0] == want[0] and n > 1 and got[1] == ties[0] and got[2] == above + len(ties) * unit:
        return ctx.t(f"只留下了一个并列列，kept 却算上了全部 {len(ties)} 个的单位：除数是一个并列列的单位（{unit}），不是它们的和",
                     f"one tied column stays, yet kept holds the units of all {len(ties)}: divide by one tied column's "
                     f"units ({unit}), not by their sum")
    if ties and unit and got[0] == want[0] and sum(1 for c in ties if c <= got[1]) == n + 1 and (q - above) % unit == 0:
        return ctx.t(f"多留了一个并列列：截断值之上的单位加上 {n} 个并列列的单位正好等于 quota，第 {n + 1} 个之前的单位不小于 quota，"
                     f"它要去掉。留下的个数是 ceil((quota - 截断值之上的单位) / 一个并列列的单位)，不是整除再加一",
                     f"one tied column too many: the units above the cut plus {n} tied columns' units equal quota exactly, "
                     f"so the units before tie {n + 1} are not below quota and it goes. The number that stays is "
                     f"ceil((quota - the units above the cut) / one tied column's units), not the floor plus one")
    if got[0] == want[0] and got[1] != want[1]:
        shown = ", ".join(map(str, ties[:5])) + (", ..." if len(ties) > 5 else "")
        return ctx.t(f"截断点对了，并列的列没数对：等于截断值的列有 {len(ties)} 个（第 {shown} 列）；按列号从小到大，前 {n} 个留下"
                     f"（它们前面的单位还小于 quota），last 是最后留下的那一列：第 {want[1]} 列",
                     f"the cut is right, its ties are not: {len(ties)} column{'s' * (len(ties) != 1)} equal the cut "
                     f"(columns {shown}); by ascending column the first {n} of them stay (the units before each are "
                     f"below quota), and last is the column of the last that stays: {want[1]}")
    if got[0] == want[0] and got[1] == want[1] and len(ties) > n and got[2] == above + len(ties) * unit:
        return ctx.t(f"截断点和 last 都对，kept 却是截断值及以上每一列的单位：{len(ties)} 个并列列全算上了，而留下的只有前 {n} 个",
                     f"the cut and last are right, yet kept holds the units of every column at or above the cut: all "
                     f"{len(ties)} tied columns, where only the first {n} stay")
    if got[0] == want[0] and got[1] == want[1]:
        return ctx.t("截断点和 last 都对，kept 不对：kept 是保留下来的列的单位之和（截断值之上的单位 + n × 一个并列列的单位）",
                     "the cut and last are right, kept is not: kept is the units of the kept columns (the units above "
                     "the cut + n times one tied column's units)")
    if got[0] < want[0] and expect.mass_at_least(z, w, want[0]) == q:
        return ctx.t(f"在 v = {f32(want[0])} 处，z >= v 的单位之和正好等于 quota，已经够了：截断点是单位之和 >= quota（不是 > quota）"
                     "的最大的 v；你的搜索越过了它", f"at v = {f32(want[0])} the units at z >= v equal quota exactly, which is "
                     "enough: the cut is the largest v whose units reach quota (>=, not >); your search went past it")
    top = max(values)
    if want[0] == top and got[0] == float(torch.tensor(top).nextafter(torch.tensor(-INF))):
        return ctx.t(f"截断点比 z_max（{f32(top)}）正好小一个浮点数：只靠最大值就够 quota 时截断点就是 z_max，你的搜索从没试过 z_max 本身"
                     "（它的上端把 z_max 排除在外了）", f"the cut is one float below z_max ({f32(top)}): when the maxima alone "
                     "reach quota the cut is z_max itself, and your search never tests z_max (its upper end leaves it out)")
    if got[0] == got[0] and got[0] not in values:
        return ctx.t(f"{f32(got[0])} 不是这一行的值：按质量的搜索在 lo、hi 收拢到相邻的 key 之前就停了", f"{f32(got[0])} "
                     f"is no value of this row: the search by mass stopped before lo and hi were neighbouring keys")
    order = expect.ranked(z)
    before, stays = 0, []
    for c in order:
        if stays and before > q:
            break
        stays.append(c)
        before += w[c]
    if got[0] == values[stays[-1]] or got[0] < want[0]:
        return ctx.t("多留了一列：一列留下的条件是它前面的单位小于 quota（严格小于）；前面的单位等于 quota 的那一列要去掉",
                     "one column too many: a column stays while the units before it are below quota (strictly); the "
                     "column whose units before equal quota goes")
    return ctx.t("截断点是让“z >= v 的单位之和 >= quota”的最大的 v；越过阈值的那一列留下", "the cut is the largest v whose "
                 "units at z >= v reach quota; the column that crosses the threshold stays")


# ---- K5 draw ---------------------------------------------------------------------------------------------
def draw_cases(block):
    g = torch.Generator().manual_seed(16)
    grid = [(i + 0.5) / 64 for i in range(64)] + [0.0, 1.0 - 2.0 ** -53]
    x = torch.randn(40, generator=g) * 2
    yield "a row of 40, top_p 0.9", "40 列的一行，top_p 0.9", x, 1.0, 0.9, grid
    x = torch.zeros(8)
    yield ("8 equal values, u on the columns' edges and 2**-40 below one", "8 个相等的值，u 正好在列的边界上、或比边界小 2**-40",
           x, 1.0, 1.0, [0.25, 0.5, 0.125, 0.875, 0.25 - 2.0 ** -40])
    x = torch.randn(30, generator=g)
    x[:3] = torch.tensor([-INF, -200.0, -INF])
    yield "columns without units first (-inf, exp(-200))", "前几列没有单位（-inf、exp(-200)）", x, 1.0, 1.0, [0.0, 0.3]
    x = torch.randn(2 * block + 9, generator=g) - 20
    x[-5:] = torch.tensor([2.0, 1.0, 3.0, 0.5, 2.5])
    yield "the mass in the last block", "质量都在最后一块", x, 1.0, 1.0, [i / 16 for i in range(16)]
    yield "equal values over three blocks", "三个块里都是相等的值", torch.zeros(2 * block + 9), 1.0, 1.0, [i / 16 for i in range(16)]
    x = torch.tensor([1.0, 1.0, 2.0, -3.0, -3.0, -3.0, -3.0, -3.0])
    yield ("top_p 0.6 keeps one of two tied columns (column 1, a dropped tie, lies before the kept column 2)",
           "top_p 0.6 只留下两个并列列中的一个（删掉的第 1 列在保留的第 2 列之前）", x, 1.0, 0.6, [0.1, 0.3, 0.5, 0.7, 0.9])
    x = torch.full((1000,), -INF)
    x[[3, 700]] = torch.tensor([-0.5, 0.0])
    yield ("two columns, u * kept half a unit below the first one's units", "两列，u * kept 比第一列的单位少半个单位", x, 1.0, 1.0,
           lambda w, kept: [(w[3] - 0.5) / kept, (w[3] + 0.5) / kept])


@check("K5.draw", "draw：按列的顺序累加保留列的单位，第一次超过 u · kept 的那一列", "draw: the kept units added in column "
       "order; the first column past u * kept", hint=("p08-kernel", 1, "q6"))
def k5_draw(ctx):
    for block in blocks(ctx, 1000):
        for label_en, label_zh, x, t, top_p, us in draw_cases(block):
            plan = row_plan(ctx, x, t, 0, top_p, block)
            z, w, top, scale, (cut, last, kept) = plan.z, plan.w, plan.top, plan.scale, plan.cut
            us = us(w, kept) if callable(us) else us                              # u placed by the file's own units
            n = len(us)
            called = f"called draw({row_text(x)} [{ctx.t(label_zh, label_en)}], cut={f32(cut)}, last={last}, kept={kept}, u=..., BLOCK={block})"
            got = ctx.probe("draw", called, probes.draw, x[None].expand(n, -1), [t] * n, [top] * n, [cut] * n,
                            [last] * n, [kept] * n, us, scale, block).tolist()
            wrong = [(u, token, want) for u, token in zip(us, got) if token != (want := expect.draw(z, w, cut, last, kept, u))]
            if wrong:
                u, token, want = wrong[0]
                at_zero = [u for u, *_ in wrong] == [0.0]                       # every u right but u = 0
                raise Fail(f"{called.replace('u=...', f'u={u!r}')} -> {token}", ctx.t(f"期望第 {want} 列", f"expected column {want}"),
                           _draw_why(ctx, z, w, cut, last, kept, u, token, block, at_zero), where="draw")


def _restarting(z, w, cut, last, kept, u, block) -> int:
    """What a draw returns when its running sum starts again at 0 in every block (V when no block reaches)."""
    target = min(int(np.float64(u) * np.float64(float(kept))) + 1, kept)
    keep = set(expect.kept_columns(z, cut, last))
    for start in range(0, len(w), block):
        running = 0
        for c in range(start, min(start + block, len(w))):
            running += w[c] if c in keep else 0
            if c in keep and w[c] and running >= target:
                return c
    return len(w)


def _draw_why(ctx, z, w, cut, last, kept, u, token, block, at_zero=False) -> str:  # noqa: C901 - a cause per branch
    columns = expect.kept_columns(z, cut, last)
    floor = int(np.float64(u) * np.float64(float(kept)))
    keep, running, total = set(columns), [], 0
    for c, units in enumerate(w):                                                # the running kept units per column
        total += units if c in keep else 0
        running.append(total)
    if at_zero and token < len(w) and running[token] == 0:
        return ctx.t(f"只有 u = 0 抽错了：在第 {token} 列，累计的保留单位（0）“达到”了 u · kept = 0。抽样要第一个有单位、累计和“超过” u · kept "
                     "的列（目标是 floor(u · kept) + 1）", f"only u = 0 went wrong: at column {token} the running kept units "
                     f"(0) reach u * kept = 0. The draw is the first column with units whose running sum exceeds u * kept "
                     f"(a target of floor(u * kept) + 1)")
    if token in columns and 0 <= token < len(w) and w[token] == 0 and running[token] >= floor:
        return ctx.t(f"第 {token} 列没有单位，它的累计和只是“达到”了 u · kept（{floor}）：抽样要第一个有单位、累计和“超过” u · kept 的列",
                     f"column {token} has no units; its running sum only reaches u * kept ({floor}): the draw is the first "
                     f"column with units whose running sum exceeds u * kept")
    late = next((c for c in columns if w[c] and running[c] > floor + 1), None)
    if late == token:
        return ctx.t(f"晚了一列：累计和超过 u · kept = {floor}（也就是 >= {floor + 1}）的第一列；你的要它超过 {floor + 1}",
                     f"one column late: the draw is the first column whose running sum exceeds u * kept = {floor} (that is, "
                     f">= {floor + 1}); yours waits until it exceeds {floor + 1}")
    if len(w) > block and token == _restarting(z, w, cut, last, kept, u, block):
        return ctx.t("累计的单位每一块都从 0 重新开始了：它要从一块带到下一块（前面各块的单位加上这一块的前缀和）",
                     "the running units start again at 0 in every block: they must carry over from block to block (the "
                     "earlier blocks' units plus this block's prefix)")
    hits = [c for c in columns if w[c] and running[c] > floor]                   # columns past the target
    by_block = {}
    for c in hits:
        by_block.setdefault(c // block, c)                                       # each block's first such column
    if len(by_block) > 1 and token == by_block[max(by_block)] and hits[0] // block < token // block:
        return ctx.t(f"第 {token} 列是最后一块里第一个累计和超过 u · kept 的列；要的是整行第一个（第 {hits[0]} 列，在前面的块里）："
                     "后面的块也有超过目标的列，它们把前面块里找到的列覆盖了。找到之后就留住它（比如取最小的列号）",
                     f"column {token} is the last block's first column past u * kept; the draw is the row's first (column "
                     f"{hits[0]}, in an earlier block): every later block has columns past the target too, and each "
                     f"replaced the column an earlier block found. Once found, keep it (the smallest column, say)")
    if token in range(len(w)) and token not in columns and cut > -INF and z[token].item() == cut and token > last:
        return ctx.t(f"第 {token} 列的值等于截断值（{f32(cut)}），但在 last（第 {last} 列）之后：这是 top-p 删掉的并列列。值等于 cut 的列"
                     "只有列号 <= last 的才留下；抽样只能落在保留列上",
                     f"column {token} equals the cut ({f32(cut)}) but lies after last (column {last}): a tie that top-p "
                     f"dropped. A column equal to the cut stays only up to column last; a draw lands only on kept columns")
    if token not in columns or w[token] == 0:
        what = ctx.t("不在保留集合里", "is not in the kept set") if token not in columns else ctx.t("没有单位", "has no units")
        return ctx.t(f"第 {token} 列{what}：抽样只能落在有单位的保留列上（z > cut，或 z == cut 且列号 <= last），u 是什么都一样；"
                     "舍入让 u · kept 之后没有列时，取最后一个有单位的保留列", f"column {token} {what}: a draw lands only on a "
                     f"kept column with units (z > cut, or z == cut up to column last), whatever u is; where rounding leaves "
                     f"no column past u * kept, take the last kept column with units")
    target = float(np.float64(u) * np.float64(float(kept)))
    running, reached = 0, None
    for c in columns:
        running += w[c]
        if running >= target:
            reached = c
            break
    if reached == token:
        return ctx.t("这是累计单位“达到” u · kept 的列：要的是第一次“超过”它的列（u · kept 正好落在边界上时取下一列）",
                     "this is the column where the running units reach u * kept: the rule takes the first that exceeds it "
                     "(when u * kept falls exactly on an edge, the next column)")
    by_value = [c for c in expect.ranked(z) if c in columns]
    running = 0
    for c in by_value:
        running += w[c]
        if running > target:
            if c == token:
                return ctx.t("这是按值从大到小累加的结果：规则按列的顺序累加（kernel 里不用排序）", "this adds the columns by "
                             "descending value: the rule adds them in column order (no sort in the kernel)")
            break
    if float(np.float32(u)) != u and token == expect.draw(z, w, cut, last, kept, float(np.float32(u))):
        return ctx.t("u 被转成了 float32：u · kept 要在 float64 里算（u 有 53 位）", "u was rounded to float32: compute u * "
                     "kept in float64 (u has 53 bits)")
    return ctx.t("按列的顺序累加保留列的单位，第一次超过 u · kept 的那一列", "add the kept units in column order; the draw "
                 "is the first column where they exceed u * kept")
