"""Acceptance checks T1-T6 of p08-fast: one per TODO step of mine/p08_sampler_fast.py, in TODO order.

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
import math

import torch

from course import oracle, problems
from course.grader.checks import Fail, _noting, check, describe, fmt_num, fmt_set, params_text
from course.loader import load_solution

FAST = ("p08-fast",)
INF = float("inf")


# ---- helpers -----------------------------------------------------------------------------------------
def step(*names):
    """The check grades these step functions; a file that has a FastSampler but not them (a fast path written
    in its own shape, which the contract allows) passes with a note: F1-F6 and the whole-sampler checks grade it."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(ctx):
            missing = [n for n in names if getattr(ctx.impl, n, None) is None]
            if missing and getattr(ctx.impl, ctx.sampler_name, None) is not None:
                ctx.notes.append(ctx.t(f"你的文件里没有 {', '.join(missing)}：这一步不单独评分，由 F1-F6 和整体检查评 FastSampler",
                                       f"no {', '.join(missing)} in your file: this step is not graded on its own; F1-F6 and "
                                       f"the whole-sampler checks grade your FastSampler"))
                return None
            return fn(ctx)
        return run
    return wrap


def rows_text(t, limit=6) -> str:
    """[[1, 0.5], [2, 1]] for a small 2-D tensor (at most `limit` entries per row, 3 rows)."""
    rows = t.detach().cpu().tolist() if isinstance(t, torch.Tensor) else t
    out = []
    for row in rows[:3]:
        shown = ", ".join(fmt_num(v) if isinstance(v, float) else str(v) for v in row[:limit])
        out.append(f"[{shown}{', ...' if len(row) > limit else ''}]")
    return "[" + ", ".join(out) + (", ..." if len(rows) > 3 else "") + "]"


def shape_text(t) -> str:
    return f"[{', '.join(map(str, t.shape))}]"


def bits(x: float) -> str:
    """A float32 shown with enough digits that two different floats never print the same."""
    return f"{x:.9g}"


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


# ---- T1 penalized_fp32 -------------------------------------------------------------------------------
@check("T1.penalized_fp32", "penalized_fp32（第 1 步）：fp32、每行去重历史上的 penalty、不改调用方",
       "penalized_fp32 (step 1): fp32, the penalty on each row's distinct history, the caller's tensor untouched",
       hint=("p08-fast", 2, "s1"), problems=FAST)
@step("penalized_fp32")
def t1_penalized_fp32(ctx):
    P = ctx.params
    rows = [[3.0, -1.0, 0.5, -0.2, 1.0], [3.0, -1.0, 0.5, -0.2, 1.0], [0.5, -1.0, 0.0, 1.0, 2.0], [2.0, 1.0, 0.0, -1.0, -2.0]]
    params = [P(repetition_penalty=1.5), P(), P(repetition_penalty=2.0), P(repetition_penalty=1.3)]
    histories = [[1, 3, 3], [1, 3], [4, 4, 4, 2], []]
    cases = [("fp32, penalties 1.5 / 1 / 2 / 1.3", torch.float32, rows, params, histories),
             ("tensor histories", torch.float32, rows[:2], [P(repetition_penalty=1.5), P(repetition_penalty=0.5)],
              [torch.tensor([1, 3, 3]), torch.tensor([0, 4])]),
             ("bf16 input", torch.bfloat16, rows[:3], params[:3], histories[:3]),
             ("fp32, no penalty anywhere", torch.float32, rows[:2], [P(), P(repetition_penalty=1.7)], [[1, 2], []])]
    for label, dtype, values, ps, prev in cases:
        logits = ctx.tensor(values, dtype=dtype)
        before = logits.clone()
        pens = [p.repetition_penalty for p in ps]
        histories = [h.tolist() if isinstance(h, torch.Tensor) else h for h in prev]
        shown = f"logits {shape_text(logits)} {str(dtype)[6:]}, params, prev_tokens"
        if len(values) == 1:
            shown = f"logits {rows_text(logits.float())} {str(dtype)[6:]}, penalties {pens}, prev_tokens {histories}"
        out = need_tensor(ctx, "penalized_fp32", shown, call(ctx, "penalized_fp32", shown, logits, ps, prev),
                          logits.shape)
        if out.dtype != torch.float32:
            raise Fail(f"called penalized_fp32({shown}) -> dtype {str(out.dtype)[6:]}",
                       ctx.t("期望 float32：bf16/fp16 先 .float()，之后都在 fp32 上算",
                             "expected float32: .float() the bf16/fp16 input first, compute in fp32 from there"),
                       where="penalized_fp32")
        for i, (row, p, h) in enumerate(zip(before.float().tolist(), ps, prev)):
            h = h.tolist() if isinstance(h, torch.Tensor) else h
            expected = oracle.penalize(row, h, p.repetition_penalty)
            got = out[i].double().cpu()
            if not torch.allclose(got, torch.tensor(expected, dtype=torch.float64), atol=1e-5):
                why = ""
                twice = oracle.penalize(oracle.penalize(row, h, p.repetition_penalty), [t for t in set(h) if h.count(t) > 1],
                                        p.repetition_penalty)
                if len(set(h)) < len(h) and torch.allclose(got, torch.tensor(twice, dtype=torch.float64), atol=1e-5):
                    why = ctx.t("重复出现的 token 被罚了不止一次：用每行去重后的历史",
                                "a token listed twice was penalised more than once: use each row's distinct ids")
                elif any(v < 0 and abs(g - v / p.repetition_penalty) < 1e-5 and v != v / p.repetition_penalty
                         for v, g, t in zip(row, got.tolist(), range(len(row))) if t in set(h)):
                    why = ctx.t("负 logit 被除了：v > 0 除以 penalty，否则乘以 penalty",
                                "a negative logit was divided: v > 0 -> v / penalty, otherwise v * penalty")
                elif any(abs(g - e) > 1e-5 for g, e, t in zip(got.tolist(), expected, range(len(row))) if t not in set(h)):
                    why = ctx.t("改到了不在这一行历史里的 token：(行, id) 对只来自这一行自己的历史",
                                "a token outside this row's history changed: the (row, id) pairs come from the row's own history")
                raise Fail(f"called penalized_fp32({shown}) -> row {i} {rows_text(out[i:i + 1])}, expected {rows_text([expected])}",
                           f"row {i}: logits {rows_text([row])}, repetition_penalty={p.repetition_penalty}, "
                           f"prev_tokens={histories[i]} ({label})", *[w for w in [why] if w], where="penalized_fp32")
        if not torch.equal(logits, before):
            raise Fail(f"called penalized_fp32({shown}): logits is now {rows_text(logits.float())}, was {rows_text(before.float())}",
                       ctx.t("调用方的张量不能改：penalty 写在副本上（fp32 输入要先 clone）",
                             "the caller's tensor must stay as it was: write the penalty into a copy (clone fp32 input first)"),
                       where="penalized_fp32")


# ---- T3 window_topk ----------------------------------------------------------------------------------
def _window_inputs(device):
    g = torch.Generator().manual_seed(31)
    cases = [("x", torch.tensor([[0.1, 2.0, -INF, 1.5, -0.7, 0.9]]), (1, 2, 5, 6))]
    rand = torch.randn(3, 1000, generator=g)
    cases.append(("x", rand, (1, 4, 40, 1000)))
    tail = torch.randn(2, 64 * 40 + 17, generator=g)                  # 40 whole chunks of 64 and a tail of 17
    tail[0, -3], tail[0, -10], tail[1, 5] = 9.0, 8.0, 7.0             # row 0's two largest in the tail
    cases.append(("x", tail, (1, 5, 10)))
    ties = torch.randint(0, 5, (3, 8192), generator=g).float()       # few distinct values: ties everywhere
    ties[1, 4000:] = -INF
    cases.append(("x", ties, (3, 16, 64, 200)))
    return [(label, x.to(device), widths) for label, x, widths in cases]


@check("T3.window_topk", "window_topk（第 3 步）：与 torch.topk 相同的窗口值，id 指回这些值",
       "window_topk (step 3): the same values as torch.topk, ids that point at them",
       hint=("p08-fast", 2, "s3"), problems=FAST)
@step("window_topk")
def t3_window_topk(ctx):
    for _, x, widths in _window_inputs(ctx.device):
        n, vocab = x.shape
        for width in widths:
            shown = f"x {shape_text(x)}, width={width}" if vocab > 8 else f"{rows_text(x)}, {width}"
            got = call(ctx, "window_topk", shown, x, width)
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
                    if lost and lost[0] >= (vocab // 64) * 64 and vocab % 64:
                        why.append(ctx.t(f"漏掉的值在 id {lost[0]}：最后 {vocab % 64} 个 logit 凑不满一个 chunk，也要读",
                                         f"the missed value sits at id {lost[0]}, in the last {vocab % 64} logits that do "
                                         f"not fill a chunk: read them too"))
                    raise Fail(f"called window_topk({shown}) -> row {r} values {rows_text(vals[r:r + 1])}, expected "
                               f"{rows_text(expected[r:r + 1])} (torch.topk's), first difference at column {col}", *why,
                               where="window_topk")
            ids_cpu = ids.long().cpu()
            for r in range(n):
                row_ids = ids_cpu[r].tolist()
                bad = [i for i in row_ids if not 0 <= i < vocab]
                if bad or len(set(row_ids)) != width:
                    raise Fail(f"called window_topk({shown}) -> row {r} ids {rows_text([row_ids])}",
                               ctx.t(f"id 必须在 [0, {vocab}) 内且互不相同", f"ids must be distinct and inside [0, {vocab})"),
                               where="window_topk")
                pointed = x[r].cpu()[ids_cpu[r]]
                if not torch.equal(pointed, expected[r].cpu()):
                    col = int((pointed != expected[r].cpu()).nonzero()[0])
                    raise Fail(f"called window_topk({shown}) -> row {r} column {col}: value {fmt_num(vals[r, col])}, "
                               f"id {row_ids[col]}, but x[{r}, {row_ids[col]}] = {fmt_num(x[r, row_ids[col]])}",
                               ctx.t("每个 id 都要指回它那一列的值：x.gather(1, ids) == values",
                                     "each id must point at its column's value: x.gather(1, ids) == values"),
                               where="window_topk")


# ---- T3 canonical_window -----------------------------------------------------------------------------
def _tie_demo():
    """A row where torch.topk orders the same tied ids differently for two widths (None if this torch doesn't)."""
    x = torch.zeros(1, 100)
    x[0, 90:] = -1.0
    orders = {w: torch.topk(x, w).indices[0, :3].tolist() for w in (4, 8, 16, 33, 64)}
    widths = list(orders)
    for a in widths:
        for b in widths:
            if a < b and orders[a] != orders[b]:
                return a, orders[a], b, orders[b]
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


@check("T3.canonical_window", "canonical_window（第 3 步）：窗口按值降序，相等的值按 token id 升序",
       "canonical_window (step 3): descending values, equal values in ascending token id",
       hint=("p08-fast", 2, "s3"), problems=FAST)
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
        r, col = bad
        expected_z, order = torch.sort(z_in.cpu()[r][torch.argsort(ids_in.cpu()[r])], descending=True, stable=True)
        expected_ids = torch.sort(ids_in.cpu()[r]).values[order]
        head = (f"called canonical_window({shown}) -> row {r}: z {rows_text(z[r:r + 1], 8)}, ids {rows_text(ids[r:r + 1], 8)}, "
                f"expected ids {rows_text(expected_ids[None], 8)}")
        if col == "permutation":
            raise Fail(head, ctx.t("输出必须是输入 (值, id) 对的重新排列：值和它的 id 一起移动",
                                   "the output must be the input's (value, id) pairs reordered: a value moves with its id"),
                       where="canonical_window")
        lines = [head, ctx.t(f"第 {col} 列：相等的值要按 token id 升序（稳定的整行排序给出的顺序）",
                             f"column {col}: equal values must sit in ascending token id (the order a stable full sort gives)")]
        if demo:
            a, ids_a, b, ids_b = demo
            lines.append(ctx.t(f"为什么：torch.topk 对并列值的顺序随宽度变（全 0 的一行：W={a} 给 id {ids_a}，W={b} 给 {ids_b}），"
                               f"而 W 由同批的别人决定",
                               f"why: torch.topk's order among equal values changes with the width (a row of zeros: "
                               f"W={a} gives ids {ids_a}, W={b} gives {ids_b}), and W is set by the peers"))
        raise Fail(*lines, where="canonical_window")


# ---- T4 prefix_sum and row_total ---------------------------------------------------------------------
@check("T4.prefix_sum", "prefix_sum 与 row_total（第 4 步）：第 j 项不随宽度 W、不随 batch 变（逐位）",
       "prefix_sum and row_total (step 4): entry j is the same float for any width W and any batch",
       hint=("p08-fast", 2, "s4"), problems=FAST)
@step("prefix_sum", "row_total")
def t4_prefix_sum_and_row_total(ctx):
    dev = ctx.device
    small = ctx.tensor([[1.0, 0.5, 0.3, 0.1]])
    got = need_tensor(ctx, "prefix_sum", rows_text(small), call(ctx, "prefix_sum", rows_text(small), small), (1, 4))
    if not torch.allclose(got.double().cpu(), torch.tensor([[1.0, 1.5, 1.8, 1.9]], dtype=torch.float64), atol=1e-6):
        raise Fail(f"called prefix_sum({rows_text(small)}) -> {rows_text(got)}, expected [[1, 1.5, 1.8, 1.9]]",
                   ctx.t("包含式前缀和：第 j 项 = e[0] + ... + e[j]", "inclusive prefix sums: entry j = e[0] + ... + e[j]"),
                   where="prefix_sum")
    g = torch.Generator().manual_seed(44)
    e = torch.exp(torch.randn(6, 300, generator=g) * 2.0)                                      # [6, 300]
    e = (e / e.amax(-1, keepdim=True)).to(dev)
    full = need_tensor(ctx, "prefix_sum", "e [6, 300]", call(ctx, "prefix_sum", "e [6, 300]", e), (6, 300)).cpu()
    exact = torch.cumsum(e.double().cpu(), dim=-1)
    err = ((full.double() - exact).abs() / exact).max().item()
    if not err < 1e-4:
        r, j = divmod(int(((full.double() - exact).abs() / exact).argmax()), 300)
        raise Fail(f"called prefix_sum(e [6, 300]) -> row {r} entry {j} = {bits(full[r, j].item())}, expected "
                   f"{bits(exact[r, j].item())} (float64 cumsum; relative error {err:.1e})",
                   ctx.t("第 j 项是 e[0..j] 的和：检查每一轮的错位和边界列", "entry j is the sum of e[0..j]: check each round's shift and its first columns"),
                   where="prefix_sum")
    for width in (1, 2, 3, 7, 64, 65, 100, 257):
        part = need_tensor(ctx, "prefix_sum", f"e[:, :{width}]", call(ctx, "prefix_sum", f"e[:, :{width}]", e[:, :width].contiguous()),
                           (6, width)).cpu()
        if not torch.equal(part, full[:, :width]):
            r, j = (int(v) for v in (part != full[:, :width]).nonzero()[0])
            raise Fail(f"called prefix_sum(e[:, :{width}]) -> row {r} entry {j} = {bits(part[r, j].item())}, but "
                       f"prefix_sum(e) [6, 300] -> entry {j} = {bits(full[r, j].item())}",
                       ctx.t(f"第 j 项必须与宽度 W 无关、逐位相同：W 由同批的别人决定（top_k + 1、窗口扩大）",
                             f"entry j must be the same float for any width W: W is set by the peers (their top_k + 1, a widened window)"),
                       where="prefix_sum")
    for r, batch in ((0, [0]), (3, [3]), (2, [5, 2]), (4, [4, 1, 0, 3])):
        alone = need_tensor(ctx, "prefix_sum", f"e[{batch}]", call(ctx, "prefix_sum", f"e[{batch}]", e[batch].contiguous()),
                            (len(batch), 300)).cpu()
        if not torch.equal(alone[batch.index(r)], full[r]):
            j = int((alone[batch.index(r)] != full[r]).nonzero()[0])
            raise Fail(f"called prefix_sum(e rows {batch}) -> row {r} entry {j} = {bits(alone[batch.index(r), j].item())}, "
                       f"but inside the batch of 6 rows = {bits(full[r, j].item())}",
                       ctx.t("一行的前缀和不能取决于同批还有哪些行（逐位相同）",
                             "a row's prefix sums must not depend on the other rows of the batch (bit for bit)"),
                       where="prefix_sum")
    # row_total: the full-row mass of top-p-only rows, over V
    tiny = ctx.tensor([[1.0, 0.5, 0.3, 0.1, 0.1]])
    got = need_tensor(ctx, "row_total", rows_text(tiny), call(ctx, "row_total", rows_text(tiny), tiny), (1, 1))
    if abs(got.item() - 2.0) > 1e-6:
        raise Fail(f"called row_total({rows_text(tiny)}) -> {rows_text(got)}, expected [[2]]", where="row_total")
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 4))               # torch.sum splits a lone long row across threads
    try:
        g = torch.Generator().manual_seed(45)
        for vocab in (50257, 151936, 4099):
            x = torch.exp(torch.randn(6, vocab, generator=g) * 3.0)
            x = (x / x.amax(-1, keepdim=True)).to(dev)                                       # [6, V]
            total = need_tensor(ctx, "row_total", f"e [6, {vocab}]", call(ctx, "row_total", f"e [6, {vocab}]", x), (6, 1)).cpu()
            exact = x.double().cpu().sum(-1, keepdim=True)
            if not ((total.double() - exact).abs() / exact).max().item() < 1e-5:
                r = int(((total.double() - exact).abs() / exact).argmax())
                raise Fail(f"called row_total(e [6, {vocab}]) -> row {r} = {bits(total[r, 0].item())}, expected "
                           f"{bits(exact[r, 0].item())} (float64 sum)", where="row_total")
            for r in range(6):
                alone = call(ctx, "row_total", f"e[{r}:{r + 1}] [1, {vocab}]", x[r:r + 1].contiguous())
                alone = need_tensor(ctx, "row_total", f"e[{r}:{r + 1}]", alone, (1, 1)).cpu()
                if not torch.equal(alone[0], total[r]):
                    raise Fail(f"called row_total(e[{r}:{r + 1}]) [1, {vocab}] -> {bits(alone.item())}, but row {r} of "
                               f"row_total(e) [6, {vocab}] -> {bits(total[r, 0].item())}",
                               ctx.t("一行的总和不能取决于 batch：torch.sum 会把单独一行拆给几个线程，换一个只由 V 决定的加法树（两两对半相加）",
                                     "a row's total must not depend on the batch: torch.sum splits a lone row across threads; "
                                     "use an adding tree fixed by V alone (pairwise halving)"),
                               where="row_total")
    finally:
        torch.set_num_threads(threads)


# ---- T4 filter_window --------------------------------------------------------------------------------
# Example 2's batch (hints L1/L3): rows a (top_k 3, top_p 0.6) and c (T = 2, top_p 0.75 only), V = 6.
ROW_A = [math.log(p) for p in (0.15, 0.5, 0.05, 0.25, 0.03, 0.02)]
ROW_C = [math.log(p) for p in (0.04, 0.12, 0.4, 0.05, 0.3, 0.09)]          # 2 log(p) / T = 2
BLOG = [math.log(p) for p in (0.5, 0.25, 0.15, 0.1)]


def expected_window(z, top_k, top_p, row_mass):
    """float64 oracle of filter_window for one canonical window row: (n_kept, e kept, total)."""
    e = [math.exp(v - z[0]) for v in z]
    n = len(z)
    if top_k > 0:
        kth = z[top_k - 1]
        n = sum(1 for v in z if v >= kth)
    mass = sum(e[:n]) if top_k > 0 else row_mass
    if top_p != INF:
        before = 0.0
        for j in range(n):
            if j > 0 and before >= top_p * mass:
                n = j
                break
            before += e[j]
    return n, e[:n], sum(e[:n])


@check("T4.filter_window", "filter_window（第 4-5 步）：例 2 的 batch 上的保留前缀、精确的 0、总质量、certain",
       "filter_window (steps 4-5) on example 2's batch: kept prefix, exact zeros, kept mass, certain",
       hint=("p08-fast", 2, "s4"), problems=FAST)
@step("filter_window")
def t4_filter_window(ctx):
    dev = ctx.device
    ctx.impl.prefix_sum = reference().prefix_sum          # a prefix_sum bug is T4.prefix_sum's to report, not this one's
    worked = torch.tensor([ROW_A, ROW_C])                                              # [2, 6] after the temperature
    row_c_mass = float(torch.exp(worked[1] - worked[1].max()).double().sum())          # 2.5: all of V
    blog = torch.tensor([BLOG])
    ties = torch.tensor([[3.0, 2.0, 2.0, 2.0, 1.0, 0.0, -1.0, -2.0]])
    cases = [  # (label, x [n, V], width, top_k, top_p, row_mass, certain expected)
        ("example 2, rows a and c, W=4", worked, 4, [3, 0], [0.6, 0.75], [0.0, row_c_mass], [True, True]),
        ("example 2, rows a and c, W=6 (the whole row)", worked, 6, [3, 0], [0.6, 0.75], [0.0, row_c_mass], [True, True]),
        ("row a alone, W=5", worked[:1], 5, [3], [0.6], [0.0], [True]),
        ("row c alone, W=4", worked[1:], 4, [0], [0.75], [row_c_mass], [True]),
        ("row c with top_p=0.9, W=4", worked[1:], 4, [0], [0.9], [row_c_mass], [False]),
        ("probs [0.5, 0.25, 0.15, 0.1], top_p=0.7 (blog bug 1)", blog, 4, [0], [0.7], [2.0], [True]),
        ("ties at the k-th value, top_k=2", ties, 6, [2], [INF], [0.0], [True]),
        ("a tie run up to the window's end, top_k=2", ties, 4, [2], [INF], [0.0], [False]),
    ]
    spread = torch.randn(8, 300, generator=torch.Generator().manual_seed(46)) * 2.0          # [8, 300] no ties
    ks = [7, 12, 17, 23, 29, 33, 37, 40]
    for r, k in enumerate(ks):                   # each row alone: its own window, top_k + 1 columns
        cases.append((f"random row {r} alone, top_k={k}, W={k + 1}", spread[r:r + 1], k + 1, [k], [INF], [0.0], [True]))
    for width in (41, 64, 300):                  # the same rows together: the widest need sets W (or a peer's)
        cases.append((f"8 random rows, top_k {ks[0]}..{ks[-1]}, W={width}", spread, width, ks, [INF] * 8, [0.0] * 8, [True] * 8))
    seen = {}
    for label, x, width, top_k, top_p, row_mass, certain in cases:
        z, _ = stable_window(x.to(dev), width)
        n = z.shape[0]
        k = torch.tensor(top_k, device=dev)[:, None]
        p = torch.tensor(top_p, device=dev)[:, None]
        m = torch.tensor(row_mass, device=dev)[:, None]
        complete = width == x.shape[1]
        if n <= 2 and width <= 6:
            shown = (f"z={rows_text(z, 8)}, top_k={top_k}, top_p=[{', '.join(fmt_num(v) for v in top_p)}], "
                     f"row_mass=[{', '.join(fmt_num(v) for v in row_mass)}], complete={complete}")
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
        for r in range(n):
            n_kept, e_kept, kept_mass = expected_window(z[r].cpu().tolist(), top_k[r], top_p[r], row_mass[r])
            got_kept = int((e[r] != 0).sum())
            zeros_ok = bool((e[r, n_kept:] == 0).all()) and bool((e[r, :n_kept] > 0).all())
            row = f"called filter_window({shown}) -> row {r}"
            if not zeros_ok:
                raise Fail(f"{row}: e {rows_text(e[r:r + 1], 8)}, expected {n_kept} kept columns "
                           f"{rows_text([e_kept], 8)} and exactly 0 after ({label})",
                           ctx.t("保留的是一个前缀：top-k（>= 第 k 大的值）与 top-p（之前的质量 >= top_p 就删）中较短的那个；其余恰好为 0",
                                 "the kept set is a prefix: the shorter of top-k's (values >= the k-th) and top-p's (drop once "
                                 "the mass before reaches top_p); exactly 0 after it"),
                           hint=("p08-fast", 1, "q3") if "blog" in label else None, where="filter_window")
            if max(abs(a - b) for a, b in zip(e[r, :n_kept].tolist(), e_kept)) > 1e-5 or abs(total[r, 0].item() - kept_mass) > 1e-5 * kept_mass:
                raise Fail(f"{row}: e {rows_text(e[r:r + 1], 8)}, total {fmt_num(total[r, 0])}, expected "
                           f"{rows_text([e_kept], 8)}, total {fmt_num(kept_mass)} ({label})",
                           ctx.t("e = exp(z - z[:, :1])（第 0 列是最大值），total = 保留列的质量", "e = exp(z - z[:, :1]) (column 0 is the max), "
                                 "total = the mass of the kept columns"), where="filter_window")
            if not torch.allclose(cs[r, :n_kept].double(), torch.tensor(e_kept, dtype=torch.float64).cumsum(0), rtol=1e-5):
                raise Fail(f"{row}: cs {rows_text(cs[r:r + 1], 8)}, expected prefix sums of e {rows_text([e_kept], 8)} ({label})",
                           where="filter_window")
            if sure[r] != certain[r]:
                raise Fail(f"{row}: certain = {sure[r]}, expected {certain[r]} ({label})",
                           ctx.t("只有保留集合在窗口里面严格结束时才算 certain：最后保留的值和第 k 大的值都 > 窗口最后一个值"
                                 "（否则一串相等的值可能延续到窗口外）",
                                 "certain only when the kept set ends strictly inside the window: the last kept value and the "
                                 "k-th value both > the window's last value (or a run of equal values may go on outside)"),
                           where="filter_window")
            key = (tuple(x[r if n > 1 else 0].tolist()), top_k[r], top_p[r])
            mine = (e[r, :n_kept].tolist(), total[r, 0].item(), cs[r, :min(width, 4)].tolist())
            if key in seen and seen[key][1] != mine:
                other_label, other = seen[key]
                raise Fail(f"{row} ({label}): total {bits(mine[1])}, kept e {rows_text([mine[0]])}",
                           f"the same row ({other_label}): total {bits(other[1])}, kept e {rows_text([other[0]])}",
                           ctx.t("同一行的数值必须与窗口宽度 W、与同批的其他行无关（逐位）：total 要读前缀和在这一行自己的最后保留列上的值，"
                                 "不要对窗口做 sum",
                                 "a row's numbers must not depend on the width W or on the other rows, bit for bit: read total "
                                 "from the prefix sums at the row's own last kept column, no sum over the window"),
                           where="filter_window")
            seen.setdefault(key, (label, mine))


# ---- T5 filtered_probs -------------------------------------------------------------------------------
def _tie_rows(vocab=200):
    """Rows with a run of 12 equal values whose top-p cut falls inside the run (ids scattered over the vocab)."""
    g = torch.Generator().manual_seed(55)
    rows = []
    for _ in range(2):
        row = torch.full((vocab,), -4.0)
        perm = torch.randperm(vocab, generator=g)
        row[perm[0]] = 2.0
        row[perm[1:13]] = 0.5
        rows.append(row)
    return torch.stack(rows)                                                               # [2, V]


def _mid_top_p(row, keep, top_k=-1):
    """A top_p half-way between the 'mass before' of the keep-th and (keep+1)-th ranked tokens (after top-k)."""
    row = oracle.top_k_filter(row, top_k)
    probs = oracle.softmax(row)
    order = oracle.descending_order(row)
    before = sum(probs[i] for i in order[:keep - 1])
    return before + probs[order[keep - 1]] / 2


@check("T5.filtered_probs", "filtered_probs（第 5 步）：例 2 的 batch；并列的 top-p 截断按 token id，与同批无关",
       "filtered_probs (step 5): example 2's batch; a top-p cut inside a run of ties goes by token id, whatever the peers",
       hint=("p08-fast", 2, "s5"), problems=FAST)
def t5_filtered_probs(ctx):
    P = ctx.params
    example = torch.stack([torch.tensor([0.15, 0.5, 0.05, 0.25, 0.03, 0.02]).log(), torch.tensor([3.0, -1.0, 2.5, -0.2, 0.0, 1.0]),
                           2 * torch.tensor([0.04, 0.12, 0.4, 0.05, 0.3, 0.09]).log()])
    ex_params = [P(top_k=3, top_p=0.6, seed=7), P(temperature=0.0, repetition_penalty=1.5), P(temperature=2.0, top_p=0.75)]
    ex_prev = [[], [0], []]
    ties = _tie_rows()
    tie_params = [P(top_p=_mid_top_p(ties[0].tolist(), 5), seed=1), P(top_k=4, top_p=_mid_top_p(ties[1].tolist(), 7, top_k=4), seed=2)]
    wide_peer = [P(top_k=150, seed=3)]
    g = torch.Generator().manual_seed(56)
    batches = [("example 2's batch (V=6)", example, ex_params, ex_prev),
               ("tied rows alone", ties, tie_params, [[], []]),
               ("tied rows, a peer with top_k=150 (W=151)", torch.cat([torch.randn(1, 200, generator=g), ties]),
                wide_peer + tie_params, [[], [], []]),
               ("tied row 1 alone", ties[1:], tie_params[1:], [[]]),
               ("tied row 0 after a top_k=40 peer", torch.cat([torch.randn(1, 200, generator=g), ties[:1]]),
                [P(top_k=40), tie_params[0]], [[], []])]
    for label, logits, params, prev in batches:
        batch, vocab = logits.shape
        sampler = ctx.fn("FastSampler")()
        shown = f"logits [{batch}, {vocab}], params ({label})"
        out = need_tensor(ctx, "FastSampler.filtered_probs", shown,
                          _noting(f"called FastSampler.filtered_probs({shown})", sampler.filtered_probs,
                                  logits.to(ctx.device), params, prev), (batch, vocab)).float().cpu()
        for i, (p, h) in enumerate(zip(params, prev)):
            expected = oracle.probs_for(logits[i].tolist(), p, h)
            diff = max(abs(a - b) for a, b in zip(out[i].tolist(), expected))
            kept, want = oracle.kept(out[i].tolist()), oracle.kept(expected)
            if diff > 1e-6 or kept != want:
                lines = [f"called FastSampler.filtered_probs({shown}) -> row {i} ({params_text(p)}): "
                         f"kept {fmt_set(kept)}, expected {fmt_set(want)}" + (f"; max |difference| {diff:.2e}" if kept == want else "")]
                if vocab <= 8:
                    lines.append(f"got {rows_text(out[i:i + 1], 8)}, expected {rows_text([expected], 8)}")
                if kept != want and len(kept) == len(want) and label.startswith("tied"):
                    lines.append(ctx.t("截断落在一串相等的值中间：留下 token id 最小的那些（canonical_window 的顺序）。"
                                       "torch.topk 对并列值的顺序随窗口宽度 W 变，而 W 由同批的别人决定",
                                       "the cut falls inside a run of equal values: keep the lowest token ids (canonical_window's "
                                       "order). torch.topk orders ties differently for each window width W, and the peers set W"))
                raise Fail(*lines, where="FastSampler.filtered_probs")


# ---- T6 inverse_cdf ----------------------------------------------------------------------------------
def expected_column(cs, total, u, e):
    hits = [j for j, (c, w) in enumerate(zip(cs, e)) if c > u * total and w > 0]
    if hits:
        return hits[0]
    return max(j for j, w in enumerate(e) if w > 0)


@check("T6.inverse_cdf", "inverse_cdf（第 6 步）：第一个前缀质量 > u * total 且有质量的列",
       "inverse_cdf (step 6): the first column whose prefix mass exceeds u * total and has mass",
       hint=("p08-fast", 2, "s6"), problems=FAST)
@step("inverse_cdf")
def t6_inverse_cdf(ctx):
    dev = ctx.device
    f32 = lambda rows: torch.tensor(rows, dtype=torch.float32, device=dev)       # noqa: E731
    # example 2's rows a and c (hints L3's trace): cs, total, e
    cs = f32([[1.0, 1.5, 1.8, 1.9], [1.0, 1.75, 2.05, 2.275]])
    e = f32([[1.0, 0.5, 0.0, 0.0], [1.0, 0.75, 0.3, 0.0]])
    total = f32([[1.5], [2.05]])
    cases = [("u from hints L3's trace", [0.8, 0.9]), ("u = 0", [0.0, 0.0]), ("u just below 1", [1 - 2 ** -40, 1 - 2 ** -40]),
             ("u inside the first column", [0.3, 0.2])]
    for label, us in cases:
        u = torch.tensor(us, dtype=torch.float64, device=dev)[:, None]
        _check_columns(ctx, cs, total, u, e, label)
    exact = (f32([[1.0, 1.5, 2.0, 2.5]] * 2), f32([[2.0]] * 2), f32([[1.0, 0.5, 0.5, 0.0]] * 2))
    _check_columns(ctx, exact[0], exact[1], torch.tensor([[0.5], [0.75]], dtype=torch.float64, device=dev), exact[2],
                   "u * total exactly equal to a prefix: that column is not above it")
    # a sweep over u, and a row whose total sits a hair above its last kept prefix (rounding): no column exceeds
    grid = torch.linspace(0, 0.999, 37, dtype=torch.float64)
    cs2 = f32([[1.0, 1.5, 1.8, 1.9]] * 37)
    e2 = f32([[1.0, 0.5, 0.3, 0.0]] * 37)
    _check_columns(ctx, cs2, f32([[1.8]] * 37), grid.to(dev)[:, None], e2, "37 values of u in [0, 0.999]")
    hair = torch.nextafter(torch.tensor(1.5), torch.tensor(2.0)).item()
    _check_columns(ctx, f32([[1.0, 1.5, 1.8]]), f32([[hair]]), torch.tensor([[0.9999999999]], dtype=torch.float64, device=dev),
                   f32([[1.0, 0.5, 0.0]]), "rounding leaves no column above u * total: the last with mass")


def _check_columns(ctx, cs, total, u, e, label):
    n, width = cs.shape
    shown = (f"cs={rows_text(cs)}, total={rows_text(total)}, u={[float(f'{v:.6g}') for v in u[:3, 0].tolist()]}"
             f"{'...' if n > 3 else ''}, e={rows_text(e)}")
    got = call(ctx, "inverse_cdf", shown, cs, total, u, e)
    got = need_tensor(ctx, "inverse_cdf", shown, got, (n, 1), floating=False)
    if got.dtype != torch.long:
        raise Fail(f"called inverse_cdf({shown}) -> dtype {str(got.dtype)[6:]}",
                   ctx.t("期望 long（ids.gather 需要 int64 下标）", "expected long (ids.gather takes int64 columns)"), where="inverse_cdf")
    columns = got[:, 0].cpu().tolist()
    for r in range(n):
        want = expected_column(cs[r].cpu().tolist(), total[r, 0].item(), u[r, 0].item(), e[r].cpu().tolist())
        if columns[r] != want:
            why = ctx.t("阈值 = u * total；选第一个 cs > 阈值（严格大于）且 e > 0 的列；一个都没有就取最后一个有质量的列",
                        "threshold = u * total; the first column with cs > threshold (strictly) and e > 0; none: the last column with mass")
            raise Fail(f"called inverse_cdf({shown}) -> row {r}: column {columns[r]}, expected {want} "
                       f"(u = {u[r, 0].item():.10g}, threshold {u[r, 0].item() * total[r, 0].item():.10g}; {label})", why,
                       where="inverse_cdf")
