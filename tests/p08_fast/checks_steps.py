"""Acceptance checks T1-T5 of p08-fast: one per TODO step of mine/p08_sampler_fast.py, in TODO order (T1 in
checks_steps_route.py, T2 here, T3 and T4 in checks_steps_sums.py, T5 in checks_steps_draw.py).

Each check calls the learner's function(s) of its own step only, on inputs built here (a canonical window is
the head of a stable descending torch.sort; prefix sums inside filter_window are the reference's), so an
earlier step's bug does not show up again under a later step. The whole-sampler checks (F1-F5, I*, E*, S*)
come after these.

What must hold bit for bit (batch invariance) is checked on the CPU with cases where the CPU shows the
difference: torch.topk orders tied values differently for different widths W, a torch.sum over a window
with trailing zeros rounds differently for different W, and torch.sum splits a lone long row across
threads. torch.cumsum is sequential on the CPU, so a cumsum in place of prefix_sum passes here; only CUDA
(where a lone row and a batch take different cumsum kernels) shows why the fixed-tree scan is needed.
"""
import functools
import inspect

import torch

from course import problems
from course.grader.checks import Fail, _noting, check, describe, fmt_num
from course.loader import load_solution
from tests.p08_fast.step_causes import bits, few_chunks_line, flat_stride_line, id_key_line  # noqa: F401 (bits: T3's, T4's)

INF = float("inf")


# ---- helpers -----------------------------------------------------------------------------------------
def step(*names):
    """The check grades these step functions (a dotted name is a method: "FastSampler._uniforms"); a file that has
    a FastSampler but not them (a fast path written in its own shape, which the contract allows) passes with a
    note: F1-F9 and the whole-sampler checks grade it."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(ctx):
            missing = [n for n in names if _lookup(ctx.impl, n) is None]
            if missing and getattr(ctx.impl, ctx.sampler_name, None) is not None:
                ctx.notes.append(ctx.t(f"你的文件里没有 {', '.join(missing)}：这一步不单独评分，由 F1-F9 和整体检查评 FastSampler",
                                       f"no {', '.join(missing)} in your file: this step is not graded on its own; F1-F9 and "
                                       f"the whole-sampler checks grade your FastSampler"))
                return None
            other = [n for n in names if not _takes_the_steps_arguments(_lookup(ctx.impl, n), n)]
            if other and getattr(ctx.impl, ctx.sampler_name, None) is not None:   # a helper of the same name, own design
                shown = ", ".join(f"{n}{inspect.signature(_lookup(ctx.impl, n))}" for n in other)
                ctx.notes.append(ctx.t(f"你的 {shown} 的参数和这一步的不一样：按你自己的设计处理，这一步不单独评分，由 F1-F9 和整体检查评 FastSampler",
                                       f"your {shown} takes other arguments than this step's: treated as your own design, this "
                                       f"step is not graded on its own; F1-F9 and the whole-sampler checks grade your FastSampler"))
                return None
            return fn(ctx)
        return run
    return wrap


def _lookup(obj, dotted):
    """obj.a.b for "a.b", or None where a part is missing."""
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
    return obj


def _takes_the_steps_arguments(fn, name) -> bool:
    """Can fn be called the way the step is (the reference's required positional arguments)?"""
    needed = [p for p in inspect.signature(_lookup(reference(), name)).parameters.values() if p.default is p.empty]
    try:
        inspect.signature(fn).bind(*range(len(needed)))
    except TypeError:
        return False
    except ValueError:                                    # no signature to read (a builtin): let the check call it
        return True
    return True


def rows_text(t, limit=6) -> str:
    """[[1, 0.5], [2, 1]] for a small 2-D tensor (at most `limit` entries per row, 3 rows); a row whose different values
    would print alike at 4 digits is printed with 9."""
    rows = t.detach().cpu().tolist() if isinstance(t, torch.Tensor) else t
    out = []
    for row in rows[:3]:
        floats = [v for v in row[:limit] if isinstance(v, float)]
        fmt = fmt_num if len({fmt_num(v) for v in floats}) == len(set(floats)) else bits   # two values, two prints
        shown = ", ".join(fmt(v) if isinstance(v, float) else str(v) for v in row[:limit])
        out.append(f"[{shown}{', ...' if len(row) > limit else ''}]")
    return "[" + ", ".join(out) + (", ..." if len(rows) > 3 else "") + "]"


def shape_text(t) -> str:
    return f"[{', '.join(map(str, t.shape))}]"


def call(ctx, name, shown, *args):
    """The learner's function `name` called with args; an exception it raises names the call."""
    return _noting(f"called {name}({shown})", ctx.fn(name), *args)


def need_tensor(ctx, name, shown, out, shape, floating=True, where=None):
    ok = (isinstance(out, torch.Tensor) and tuple(out.shape) == tuple(shape)
          and (out.is_floating_point() if floating else not out.is_floating_point() and out.dtype != torch.bool))
    if not ok:
        kind = ctx.t("浮点", "floating") if floating else ctx.t("整数（long）", "integer (long)")
        raise Fail(f"called {name}({shown}) -> {describe(out)}",
                   ctx.t(f"期望：形状为 {list(shape)} 的{kind}张量", f"expected a {kind} tensor of shape {list(shape)}"),
                   where=where or name)
    return out


def stable_window(x, width):
    """The canonical window: the first `width` columns of a stable descending sort (ties in ascending id)."""
    z, ids = torch.sort(x, dim=-1, descending=True, stable=True)
    return z[:, :width].contiguous(), ids[:, :width].contiguous()


def reference():
    return load_solution(problems.get("p08-fast"))


# ---- T2 window_topk ----------------------------------------------------------------------------------
def _window_inputs(device):
    g = torch.Generator().manual_seed(31)
    cases = [("x", torch.tensor([[0.1, 2.0, -INF, 1.5, -0.7, 0.9]]), (1, 2, 5, 6))]
    rand = torch.randn(3, 1000, generator=g)
    cases.append(("x", rand, (1, 4, 40, 1000)))
    tail = torch.randn(2, 64 * 40 + 17, generator=g)                  # 40 whole chunks of 64 and a tail of 17
    tail[0, -3], tail[0, -10], tail[1, 5] = 9.0, 8.0, 7.0             # row 0's two largest in the tail
    tail[0, -1], tail[1, 64 * 40] = 9.5, 7.5                          # the tail's last logit, the tail's first
    cases.append(("x", tail, (1, 5, 10)))
    ties = torch.randint(0, 5, (3, 8192), generator=g).float()       # few distinct values: ties everywhere
    ties[1, 4000:] = -INF
    cases.append(("x", ties, (3, 16, 64, 200)))
    return [(label, x.to(device), widths) for label, x, widths in cases]


@check("T2.window_topk", "window_topk（第 2 步）：与 torch.topk 相同的窗口值，id 指回这些值",
       "window_topk (step 2): the same values as torch.topk, ids that point at them",
       hint=("p08-fast", 2, "s2"))
@step("window_topk")
def t3_window_topk(ctx):
    for _, x, widths in _window_inputs(ctx.device):
        n, vocab = x.shape
        for width in widths:
            shown = f"x {shape_text(x)}, width={width}" if vocab > 8 else f"{rows_text(x)}, {width}"
            try:
                got = call(ctx, "window_topk", shown, x, width)
            except Exception as exc:
                if (why := few_chunks_line(ctx, vocab, width)) is None:
                    raise
                raise Fail(f"called window_topk({shown}) " + ctx.t("抛出", "raised") + f" {type(exc).__name__}: "
                           f"{str(exc).strip()[:120]}", why, where="window_topk") from exc
            if not (isinstance(got, tuple) and len(got) == 2):
                raise Fail(f"called window_topk({shown}) -> {describe(got)}",
                           ctx.t("期望：(values [n, W], ids [n, W]) 两个张量", "expected a pair (values [n, W], ids [n, W])"),
                           where="window_topk")
            vals = need_tensor(ctx, "window_topk", shown + " values", got[0], (n, width))
            ids = need_tensor(ctx, "window_topk", shown + " ids", got[1], (n, width), floating=False)
            expected = torch.topk(x, width, dim=-1).values
            for r in range(n):
                if not torch.equal(vals[r].float(), expected[r]):
                    col = int((vals[r].float() != expected[r]).nonzero()[0])
                    lost = [int(i) for i in torch.topk(x[r], width).indices.tolist() if float(x[r, i]) not in vals[r].tolist()]
                    why = []
                    if torch.equal(vals[r].float().sort(descending=True).values, expected[r]):   # the set, unsorted
                        why.append(ctx.t("值的集合是对的，只是没有按降序排（比如 torch.topk(..., sorted=False)）：窗口要降序，"
                                         "第 0 列是最大值",
                                         "the right values, not in descending order (torch.topk(..., sorted=False), say): "
                                         "the window is sorted, descending, its column 0 the maximum"))
                    elif lost and lost[0] >= (vocab // 64) * 64 and vocab % 64:
                        why.append(ctx.t(f"漏掉的值在 id {lost[0]}：最后 {vocab % 64} 个 logit 凑不满一个 chunk，也要读"
                                         + ("（这是最后一个 logit：尾部少读了一个）" if lost[0] == vocab - 1 else ""),
                                         f"the missed value sits at id {lost[0]}, in the last {vocab % 64} logits that do "
                                         f"not fill a chunk: read them too" + (" (it is the very last logit: the tail is "
                                                                               "read one short)" if lost[0] == vocab - 1 else "")))
                    elif (stride := flat_stride_line(ctx, x, width, r)) is not None:
                        why.append(stride)
                    elif lost and (rank := chunk_rank(x[r], lost[0])) is not None and rank < width:
                        why.append(ctx.t(f"漏掉的值（id {lost[0]}）所在的 chunk，按 chunk 最大值排第 {rank + 1}：W 个最大的值可能分在 W 个 chunk "
                                         f"里，要读最大值最大的 W 个 chunk（不是 W / CHUNK 个）",
                                         f"the missed value (id {lost[0]}) sits in the chunk ranked {rank + 1} by its maximum: the "
                                         f"W largest values may lie in W different chunks, so read the W chunks with the largest "
                                         f"maxima (not W / CHUNK of them)"))
                    raise Fail(ctx.t(f"called window_topk({shown}) -> 第 {r} 行的值 {rows_text(vals[r:r + 1])}，期望 "
                                     f"{rows_text(expected[r:r + 1])}（torch.topk 的），第一个不同在第 {col} 列",
                                     f"called window_topk({shown}) -> row {r} values {rows_text(vals[r:r + 1])}, expected "
                                     f"{rows_text(expected[r:r + 1])} (torch.topk's), first difference at column {col}"), *why,
                               where="window_topk")
            ids_cpu = ids.long().cpu()
            for r in range(n):
                row_ids = ids_cpu[r].tolist()
                bad = [i for i in row_ids if not 0 <= i < vocab]
                if bad or len(set(row_ids)) != width:
                    raise Fail(f"called window_topk({shown}) -> " + ctx.t(f"第 {r} 行的 ids", f"row {r} ids")
                               + f" {rows_text([row_ids])}",
                               ctx.t(f"id 必须在 [0, {vocab}) 内且互不相同", f"ids must be distinct and inside [0, {vocab})"),
                               where="window_topk")
                pointed = x[r].cpu()[ids_cpu[r]]
                if not torch.equal(pointed, expected[r].cpu()):
                    col = int((pointed != expected[r].cpu()).nonzero()[0])
                    near = [i for i in (row_ids[col] - 1, row_ids[col] + 1) if 0 <= i < vocab and x[r, i] == vals[r, col]]
                    raise Fail(ctx.t(f"called window_topk({shown}) -> 第 {r} 行第 {col} 列：值 {fmt_num(vals[r, col])}，"
                                     f"id {row_ids[col]}，但 x[{r}, {row_ids[col]}] = {fmt_num(x[r, row_ids[col]])}",
                                     f"called window_topk({shown}) -> row {r} column {col}: value {fmt_num(vals[r, col])}, "
                                     f"id {row_ids[col]}, but x[{r}, {row_ids[col]}] = {fmt_num(x[r, row_ids[col]])}"),
                               *[ctx.t(f"这个值在 id {near[0]}：id 差了 1（{'尾部' if near[0] >= vocab // 64 * 64 else ''}位置换回 token id 时）",
                                       f"the value sits at id {near[0]}: the id is off by one (mapping "
                                       f"{'a tail ' if near[0] >= vocab // 64 * 64 else 'a '}position back to its token id)")
                                 for _ in near[:1]],
                               ctx.t("每个 id 都要指回它那一列的值：x.gather(1, ids) == values",
                                     "each id must point at its column's value: x.gather(1, ids) == values"),
                               where="window_topk")


def chunk_rank(row, column, chunk=64):
    """The rank (0: the largest) of the chunk holding `column` among the row's whole chunks by their maxima; None when
    the column lies in the tail that fills no chunk."""
    whole = len(row) // chunk
    if column >= whole * chunk:
        return None
    maxima = row[:whole * chunk].view(whole, chunk).amax(-1)
    return int((maxima > maxima[column // chunk]).sum())


# ---- T2 canonical_window -----------------------------------------------------------------------------
def _tie_demo():
    """A row where torch.topk orders the same tied ids differently for two widths a < b: (a, its whole window's ids,
    b, the first a ids of its window), or None if this torch doesn't."""
    x = torch.zeros(1, 100)
    x[0, 90:] = -1.0
    orders = {w: torch.topk(x, w).indices[0].tolist() for w in (4, 8, 16, 33, 64)}
    widths = list(orders)
    for a in widths:
        for b in widths:
            if a < b and orders[a] != orders[b][:a]:
                return a, orders[a], b, orders[b][:a]
    return None


def _canonical_violation(z_in, ids_in, z, ids):
    """What is wrong with (z, ids) as the canonical order of the window (z_in, ids_in), or None."""
    for r in range(z_in.shape[0]):
        pairs_in = sorted(zip(z_in[r].tolist(), ids_in[r].tolist()))
        pairs = list(zip(z[r].tolist(), ids[r].tolist()))
        if sorted(pairs) != pairs_in:
            return r, "permutation"
        for j in range(1, len(pairs)):
            (v0, i0), (v1, i1) = pairs[j - 1], pairs[j]
            if v1 > v0 or (v1 == v0 and i1 < i0):
                return r, j
    return None


@check("T2.canonical_window", "canonical_window（第 2 步）：窗口按值降序，相等的值在任何宽度下同一个顺序",
       "canonical_window (step 2): descending values, equal values in one order at every width",
       hint=("p08-fast", 2, "s2"))
@step("canonical_window")
def t3_canonical_window(ctx):
    dev = ctx.device
    g = torch.Generator().manual_seed(33)
    cases = [(torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.5]]), torch.tensor([[4, 9, 2, 7, 0]])),
             (torch.tensor([[3.0, 2.0, 1.0], [5.0, 5.0, 5.0]]), torch.tensor([[6, 1, 3], [8, 0, 5]]))]
    ties = torch.randint(0, 4, (3, 64), generator=g).float()          # windows straight from torch.topk, forced ties
    ties[2, :10] = -INF
    for width in (3, 8, 16, 40, 64):
        cases.append(torch.topk(ties, width, dim=-1))
    none = torch.randn(2, 50, generator=g)
    cases.append(torch.topk(none, 7, dim=-1))                        # no ties: returned as it is
    hair = torch.tensor([[1.0, torch.nextafter(torch.tensor(1.0), torch.tensor(0.0)).item(), 1e-30, 0.0]])
    cases.append((hair, torch.tensor([[9, 2, 7, 3]])))                # different values a hair apart: no tie at all
    demo = _tie_demo()
    for z_in, ids_in in cases:
        z_in, ids_in = z_in.to(dev), ids_in.to(dev)
        n, width = z_in.shape
        shown = f"z={rows_text(z_in, 8)}, ids={rows_text(ids_in, 8)}" + (f" [{n}, {width}]" if width > 8 else "")
        got = call(ctx, "canonical_window", shown, z_in.clone(), ids_in.clone())
        if not (isinstance(got, tuple) and len(got) == 2):
            raise Fail(f"called canonical_window({shown}) -> {describe(got)}",
                       ctx.t("期望：(z [n, W], ids [n, W])", "expected a pair (z [n, W], ids [n, W])"), where="canonical_window")
        z = need_tensor(ctx, "canonical_window", shown, got[0], (n, width)).cpu()
        ids = need_tensor(ctx, "canonical_window", shown, got[1], (n, width), floating=False).long().cpu()
        bad = _canonical_violation(z_in.cpu(), ids_in.cpu(), z, ids)
        if bad is None:
            continue
        r, j = bad
        if j != "permutation" and z[r, j] > z[r, j - 1]:                 # two different values out of order
            raise Fail(ctx.t(f"called canonical_window({shown}) -> 第 {r} 行第 {j - 1}、{j} 列：值 {z[r, j - 1].item()!r}（id "
                             f"{int(ids[r, j - 1])}）在 {z[r, j].item()!r}（id {int(ids[r, j])}）之前",
                             f"called canonical_window({shown}) -> row {r} columns {j - 1}, {j}: value {z[r, j - 1].item()!r} "
                             f"(id {int(ids[r, j - 1])}) before {z[r, j].item()!r} (id {int(ids[r, j])})"),
                       *[w for w in [id_key_line(ctx, z[r, j].item(), z[r, j - 1].item())] if w],
                       ctx.t("这两个值不相等：值要严格降序，只有相等的值才按 token id 升序",
                             "these values are not equal: values go in descending order, and only equal values in ascending "
                             "token id"), where="canonical_window")
        expected_z, order = torch.sort(z_in.cpu()[r][torch.argsort(ids_in.cpu()[r])], descending=True, stable=True)
        expected_ids = torch.sort(ids_in.cpu()[r]).values[order]
        col = int((ids[r] != expected_ids).nonzero()[0]) if bad[1] != "permutation" else "permutation"
        at = 0 if col == "permutation" or col < 6 else col - 2                # show the columns where they differ
        part = ctx.t(f"（第 {at} 列起）", f" (from column {at})") if at else ""
        head = ctx.t(f"called canonical_window({shown}) -> 第 {r} 行{part}：z {rows_text(z[r:r + 1, at:], 8)}，ids "
                     f"{rows_text(ids[r:r + 1, at:], 8)}，期望 ids {rows_text(expected_ids[None, at:], 8)}",
                     f"called canonical_window({shown}) -> row {r}{part}: z {rows_text(z[r:r + 1, at:], 8)}, ids "
                     f"{rows_text(ids[r:r + 1, at:], 8)}, expected ids {rows_text(expected_ids[None, at:], 8)}")
        if col == "permutation":
            raise Fail(head, ctx.t("输出必须是输入 (值, id) 对的重新排列：值和它的 id 一起移动",
                                   "the output must be the input's (value, id) pairs reordered: a value moves with its id"),
                       where="canonical_window")
        lines = [head, ctx.t(f"第一个不同在第 {col} 列（从 0 数）：相等的值要按 token id 升序（稳定的整行排序给出的顺序）",
                             f"first difference at column {col}: equal values must sit in ascending token id (the order a "
                             f"stable full sort gives)")]
        runs = [[int(i) for v, i in zip(z[r].tolist(), ids[r].tolist()) if v == value] for value in dict.fromkeys(z[r].tolist())]
        runs = [run for run in runs if len(run) > 1]
        if z[r, col].item() == -INF and any(run != sorted(run) for run in runs[-1:]):   # the -inf run is out of order
            lines[1] = ctx.t(f"乱序的是一串 -inf（被屏蔽的 logit，第 {col} 列起）：像 z * 2**32 - id 这样的合成 key 对每个 -inf 都是 -inf，"
                             "id 就排不了它们。先按 id 排，再按值降序做稳定排序（两次排序），不要合成一个 key",
                             f"the run out of order is -inf (masked logits, from column {col}): a combined key such as "
                             f"z * 2**32 - id is -inf for every one of them, so the id orders none. Sort by id first, then by "
                             f"value, descending, with a stable sort (two sorts), not one combined key")
        elif runs and all(run == sorted(run, reverse=True) for run in runs):
            lines[1] = ctx.t(f"你的相等的值按 token id 降序排（例如 {runs[0][:6]}）：要的是升序", f"your equal values come out in "
                             f"descending token id (e.g. {runs[0][:6]}): the order is ascending")
        elif runs and any(run != sorted(run) for run in runs) and all(
                zi == sorted(zi, reverse=True) for zi in [z[r].tolist()]):
            lines[1] = ctx.t(f"值的顺序对了，相等的值之间的顺序不是 id 升序（例如 {next(run for run in runs if run != sorted(run))[:6]}）："
                             "先按 id 排好，再按值排序时用稳定排序（stable=True），相等的值就保持 id 的顺序",
                             f"the values are in order, yet equal values are not in ascending token id (e.g. "
                             f"{next(run for run in runs if run != sorted(run))[:6]}): sort by id first, then by value with a "
                             f"stable sort (stable=True), so equal values keep their id order")
        if demo:
            a, ids_a, b, ids_b = demo
            lines.append(ctx.t(f"为什么：torch.topk 对并列值的顺序随宽度变（全 0 的一行：W={a} 给 id {ids_a}，W={b} 的前 {a} 列是 "
                               f"{ids_b}），而 W 由同批的别人决定",
                               f"why: torch.topk's order among equal values changes with the width (a row of zeros: "
                               f"W={a} gives ids {ids_a}, W={b} starts {ids_b}), and W is set by the peers"))
        raise Fail(*lines, where="canonical_window")
