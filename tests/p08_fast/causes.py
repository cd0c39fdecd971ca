"""Established causes for p08-fast's failures: each helper re-runs the learner's own code (its pieces, or its
sampler on the row alone) or an oracle of one known mistake, and returns a line only when that shows the cause.
Used by T3, T4, T5, F1, F5 and, through diagnose.pieces_checker, every whole-sampler check that calls
earlier_step_first (I6.large's "the nucleus is cut short" among them)."""
import contextlib

import torch

from course import fast_batch, oracle
from course.grader.checks import _noting
from tests.p08.checks_examples import _follows_global_rng
from tests.p08.context import STEP_OF_PROBLEM, fix_first_line
from tests.p08.diagnose import pieces_checker

GREEDY = 1e-5


def overflow_line(ctx, row_total, e, exact):
    """row_total(e) is wrong: a line when row_total(e / d) * d is right for d = 16, 256 or 4096 (the error grows with
    the sum: an int64 fixed-point sum that overflows), else None."""
    for d in (16.0, 256.0, 4096.0):
        try:
            small = float(row_total(e / d)[0, 0]) * d
        except Exception:  # noqa: BLE001 - it cannot say
            return None
        if abs(small - exact) <= 1e-5 * abs(exact):
            return ctx.t(f"同一行除以 {d:.0f} 之后 row_total 就对了（乘回去是 {small:.9g}）：整数和溢出了。定点数的 scale 要让 V * scale "
                         f"< 2**63，例如 2**(62 - V.bit_length())",
                         f"the same row divided by {d:.0f} gives the right total ({small:.9g} after * {d:.0f}): the int64 "
                         f"sum overflows. The fixed-point scale must keep V * scale below 2**63, e.g. 2**(62 - V.bit_length())")
    return None


STEP_OF_PROBLEM["p08-fast"] = {  # the fast path's steps, as a fix-first line names them (the penalty is given code)
    "T1.route": ("第 1 步 route", "step 1, route"),
    "T2.window_topk": ("第 2 步 window_topk", "step 2, window_topk"),
    "T2.canonical_window": ("第 2 步 canonical_window", "step 2, canonical_window"),
    "T3.row_total": ("第 3 步 row_total", "step 3, row_total"),
    "T4.filter_window": ("第 4 步 filter_window", "step 4, filter_window"),
    "T4.certain": ("第 4 步 filter_window 的 certain", "step 4, filter_window's certain"),
    "T5.inverse_cdf": ("第 5 步 inverse_cdf", "step 5, inverse_cdf"),
    "T5.streams": ("第 5 步：每个请求自己的流（_uniforms）", "step 5, each request's own stream (_uniforms)"),
    "I5": ("第 5 步：每个请求自己的流", "step 5, each request's own stream"),
    "E1.greedy": ("greedy 行取惩罚之后那一行的 argmax", "a greedy row's argmax of the penalised row"),
    "E1.history": ("sample() 里的 penalty（给定代码的规则）", "the penalty inside sample() (the given code's rule)"),
    "S6": ("sample() 的返回值", "what sample() returns"),
}


def streams_verdict(ctx):
    """A stub-shaped file's own _uniforms, fresh sampler, one seeded request drawn twice: (lines, hint, "T5.streams")
    when its numbers are not stream_uniform(seed, 0) and (seed, 1), else None."""
    uniforms = getattr(getattr(ctx.impl, ctx.sampler_name, None), "_uniforms", None)
    numbers = getattr(ctx.impl, "stream_uniform", None)            # the file's own (a check may hold it at a value)
    if not callable(uniforms) or not callable(numbers):
        return None
    try:
        sampler, q = ctx.sampler(), ctx.params(seed=7)
        got = [float(sampler._uniforms(["q"], [q])[0]) for _ in range(2)]
    except Exception:  # noqa: BLE001 - a crash is T5's to report
        return None
    want = [numbers(7, 0), numbers(7, 1)]
    if got == want:
        return None
    return ([ctx.t(f"在一个新 sampler 上调用两次 _uniforms(['q'], [seed=7]) -> {got}，期望 {want}"
                   f"（stream_uniform(7, 0)、stream_uniform(7, 1)）",
                   f"called _uniforms(['q'], [seed=7]) twice on a fresh sampler -> {got}, expected {want} "
                   f"(stream_uniform(7, 0), stream_uniform(7, 1))")], ("p08-fast", 2, "s5"), "T5.streams")


@pieces_checker("p08-fast")
def fast_pieces_verdict(ctx, row, params, prev):
    """A stub-shaped fast path's own pieces on one row: its row_total on the row's weights (top-p-only rows, whose 100 %
    it is), and its streams (a drawn row). None when they agree, else (lines, hint, check)."""
    if params.temperature >= GREEDY and (streams := streams_verdict(ctx)):
        return streams
    row_total = getattr(ctx.impl, "row_total", None)
    if (not callable(row_total) or params.temperature < GREEDY or 0 < params.top_k < len(row)
            or not params.top_p < 1):
        return None
    z = torch.tensor(oracle.penalize([float(v) for v in row], prev, params.repetition_penalty)) / params.temperature
    e = torch.exp(z - z.max())[None].to(ctx.device)                                        # [1, V]
    exact = float(e.double().sum())
    try:
        got = float(_noting(f"called row_total(exp(z - max) [1, {len(row)}])", row_total, e)[0, 0])
    except Exception:  # noqa: BLE001 - a crash is T3's to report
        return None
    if abs(got - exact) <= 1e-5 * exact:
        return None
    lines = [ctx.t(f"called row_total(exp(z - max) [1, {len(row)}])（这一行）-> {got:.9g}，期望 {exact:.9g}（float64 求和）",
                   f"called row_total(exp(z - max) of this row [1, {len(row)}]) -> {got:.9g}, expected {exact:.9g} (float64 sum)")]
    lines += [line for line in [overflow_line(ctx, row_total, e, exact)] if line]
    return lines, ("p08-fast", 2, "s3"), "T3.row_total"


def window_mass_line(ctx, row, params, prev, kept):
    """A line when the learner's kept set is what top-p keeps if its 100 % were the mass of the W largest values only
    (W = the file's WINDOW, else 64), not of the whole row; else None. Top-p-only rows."""
    if params.temperature < GREEDY or 0 < params.top_k < len(row) or not params.top_p < 1:
        return None
    width = int(getattr(ctx.impl, "WINDOW", 64))
    z = torch.tensor(oracle.penalize([float(v) for v in row], prev, params.repetition_penalty), dtype=torch.float64)
    z, ids = torch.sort(z / params.temperature, descending=True, stable=True)
    e = torch.exp(z - z[0])
    before = torch.cumsum(e, 0) - e
    short = {int(i) for i, b in zip(ids.tolist(), before.tolist()) if b < params.top_p * float(e[:width].sum())}
    whole = {int(i) for i, b in zip(ids.tolist(), before.tolist()) if b < params.top_p * float(e.sum())}
    if set(kept) != short or short == whole:
        return None
    return ctx.t(f"你保留的正是把 top-p 的 100% 当成最大的 {width} 个值（一个窗口）的质量时的集合：top-p 的 100% 是整行（全部 V 个 token）的质量，"
                 "用 row_total 对整行求和，不是对窗口",
                 f"yours keeps exactly what top-p keeps when its 100 % is the mass of the {width} largest values (a window): "
                 f"top-p's 100 % is the mass of the whole row (all V tokens): row_total over the row, not the window")


def exact_owner(impl):
    """The module whose exact_rows the file's sampler calls: the given batch code (course/fast_batch.py) for a file
    that samples through it (the stub's shape), the file itself when it imports exact_rows, else None."""
    if getattr(impl, "sample_batch", None) is fast_batch.sample_batch:
        return fast_batch
    return impl if callable(getattr(impl, "exact_rows", None)) else None


def reaches_exact(ctx, call, x_row):
    """Did x_row (a row of the penalised logits) reach the exact route (exact_rows) while call() ran?"""
    seen = []
    with watching(exact_owner(ctx.impl), "exact_rows", lambda x, *args, **kwargs: seen.append(x.detach().clone())):
        call()
    return any(bool((x == x_row).all(-1).any()) for x in seen if x.shape[-1] == x_row.shape[0])


def exact_gap_line(ctx, logits, params, prev, i):
    """For a stub-shaped file: a line when sample() sends row i to the exact route and filtered_probs does not, else
    None."""
    if exact_owner(ctx.impl) is None or not callable(getattr(ctx.impl, "penalized_fp32", None)):
        return None
    try:
        x_row = ctx.impl.penalized_fp32(logits, params, prev)[i]
        ids = [f"r{j}" for j in range(len(params))]
        drawn = reaches_exact(ctx, lambda: ctx.sampler().sample(logits, ids, params, prev), x_row)
        reported = reaches_exact(ctx, lambda: ctx.sampler().filtered_probs(logits, params, prev), x_row)
    except Exception:  # noqa: BLE001 - its pieces cannot say
        return None
    if not drawn or reported:
        return None
    return ctx.t(f"sample() 把第 {i} 行送去 exact 路线（exact_rows），filtered_probs 却没有：这一行报告的是窗口里的结果（或者全是 0）。"
                 "filtered_probs 也要用 exact 路线的结果覆盖这些行",
                 f"sample() sends row {i} to the exact route (exact_rows), filtered_probs does not: it reports the window's "
                 f"answer for that row (or nothing). filtered_probs must overwrite those rows with the exact route's too")


def penalty_line(ctx, logits, params, prev, i):
    """For a stub-shaped file: a line when its penalized_fp32 gives row i other logits in this batch than alone (the
    cause, established), else None."""
    fn = getattr(ctx.impl, "penalized_fp32", None)
    if not callable(fn) or len(params) < 2:
        return None
    try:
        mine, theirs = fn(logits[i:i + 1], params[i:i + 1], prev[i:i + 1])[0], fn(logits, params, prev)[i]
        if torch.equal(mine, theirs):
            return None
        col = int((mine != theirs).nonzero()[0])
    except Exception:  # noqa: BLE001 - its pieces cannot say
        return None
    return ctx.t(f"penalized_fp32 在这个 batch 里给这一行的 logits 和单独时不同（token {col}：单独 {mine[col].item():.6g}，这里 "
                 f"{theirs[col].item():.6g}）：一行的 penalty 只看它自己的参数和历史，不看同伴有没有",
                 f"penalized_fp32 gives this row other logits in this batch than alone (token {col}: alone "
                 f"{mine[col].item():.6g}, here {theirs[col].item():.6g}): a row's penalty depends on its own params and "
                 f"history only, not on whether its peers have one")


def alone_line(ctx, logits, params, prev, i, expected):
    """When row i of a batch is wrong: a line if the learner's filtered_probs gets the row right alone (with the
    penalty's part, where penalty_line establishes it), else None."""
    if len(params) < 2:
        return None
    out = _noting("called FastSampler.filtered_probs(the row alone)", ctx.sampler().filtered_probs,
                  logits[i:i + 1], params[i:i + 1], prev[i:i + 1])
    got = out[0].detach().float().cpu().tolist()
    if oracle.kept(got) != oracle.kept(expected) or max(abs(a - b) for a, b in zip(got, expected)) > 1e-6:
        return None
    line = ctx.t("这一行单独算是对的，放在这个 batch 里就错了", "this row alone is right, wrong in this batch")
    penalty = penalty_line(ctx, logits, params, prev, i)
    return line + (ctx.t("。", ". ") + penalty if penalty else "")


def window_stop_line(ctx, logits, params, prev, i, kept, wanted):
    """For a stub-shaped file: a line when row i keeps exactly its top-p window (WINDOW tokens) where the reference
    keeps more, and the row never reached exact_rows (a kept set that reaches the window's last column is not
    certain); else None."""
    width = getattr(ctx.impl, "WINDOW", None)
    p = params[i]
    if (not isinstance(width, int) or kept != width or wanted <= width or 0 < p.top_k < logits.shape[1]
            or exact_owner(ctx.impl) is None or not callable(getattr(ctx.impl, "penalized_fp32", None))):
        return None
    try:
        x_row = ctx.impl.penalized_fp32(logits, params, prev)[i]
        if reaches_exact(ctx, lambda: ctx.sampler().filtered_probs(logits, params, prev), x_row):
            return None
    except Exception:  # noqa: BLE001 - its pieces cannot say
        return None
    return ctx.t(f"这一行正好保留了它整个 top-p 窗口（WINDOW = {width} 个 token），参考解保留 {wanted} 个，而它从没进 exact_rows："
                 "保留集合到了窗口最后一列的行不 certain（集合可能延续到窗口外），要走 exact 路线",
                 f"this row keeps exactly its whole top-p window (WINDOW = {width} tokens) where the reference keeps "
                 f"{wanted}, and it never reached exact_rows: a row whose kept set reaches its window's last column is "
                 f"not certain (the set may go on outside) and takes the exact route")


def uniform_line(ctx, target, ids, params, pos, row, prev):
    """F4 and F7, when a row's filtered_probs match alone and in a batch but its token does not: for a stub-shaped file,
    the number its own _uniforms gives the row alone and at batch position pos (fresh samplers, first draw), and what
    that rules out; when the number is the same, whether the row's draw alone (row [1, V], prev its history) follows
    torch's global random state. None for a greedy row (it draws nothing), an unseeded one (its number is the shared
    stream's next: the peers ahead of it move it, rightly) or when _uniforms is missing or fails."""
    if target.temperature < GREEDY or target.seed is None:
        return None
    try:
        alone = float(ctx.sampler()._uniforms(["t"], [target])[0])
        batched = float(ctx.sampler()._uniforms(ids, params)[pos])
    except Exception:  # noqa: BLE001 - not the stub's design, or broken: it cannot say
        return None
    numbers = getattr(ctx.impl, "stream_uniform", None)            # the file's own (a check may hold it at a value)
    own = numbers(target.seed, 0) if callable(numbers) else None
    if callable(numbers) and alone != own:
        shared = alone == numbers(torch.initial_seed(), 0)
        try:
            torch_rng = not shared and _follows_global_rng(lambda: float(ctx.sampler()._uniforms(["t"], [target])[0]))
        except Exception:  # noqa: BLE001 - it cannot say
            torch_rng = False
        if torch_rng:
            return ctx.t(f"你的 _uniforms 跟着 torch 的全局随机状态走（torch.manual_seed(1) 两次给同一个数，manual_seed(2) 给别的）："
                         f"有 seed 的行的数必须来自它自己的流，stream_uniform({target.seed}, 它抽过的次数)",
                         f"your _uniforms follows torch's global random state (the same number twice after torch.manual_seed(1), "
                         f"another after manual_seed(2)): a seeded row's number must come from its own stream, "
                         f"stream_uniform({target.seed}, the number of its draws so far)") + "; " + fix_first_line(ctx, "T5.streams")
        return ctx.t(f"一个新 sampler 里，你的 _uniforms 给 seed={target.seed} 的这一行 {alone!r}，它自己的流的第一个数是 "
                     f"stream_uniform({target.seed}, 0) = {own!r}" + ("：这是无 seed 的行共用的那条流（key 是 torch.initial_seed()）的数，"
                     "有 seed 的行要用它自己的流，它的 seed 和它抽过几次" if shared else "：有 seed 的行的数必须来自它自己的流"),
                     f"in a fresh sampler your _uniforms gives this row (seed={target.seed}) {alone!r}; its own stream's first "
                     f"number is stream_uniform({target.seed}, 0) = {own!r}" + (": yours is the unseeded rows' shared stream's "
                     "(keyed by torch.initial_seed()); a seeded row draws from its own stream, its seed and how many times it "
                     "has drawn" if shared else ": a seeded row's number must come from its own stream")) + "; " + fix_first_line(ctx, "T5.streams")
    if alone != batched:
        return ctx.t(f"你的 _uniforms 给这一行的数单独时是 {alone!r}，在 batch 第 {pos} 行是 {batched!r}：这一行的数只能来自它自己的"
                     f"流（它的 seed 和它抽过几次），不能取决于 batch 的大小或顺序",
                     f"your _uniforms gives this row {alone!r} alone and {batched!r} at batch position {pos}: a row's number "
                     f"must come from its own stream (its seed and how many times it has drawn), whatever the batch")
    try:
        global_rng = _follows_global_rng(lambda: ctx.sample(ctx.sampler(), row, ["t"], [target], [prev])[0])
    except Exception:  # noqa: BLE001 - the draw alone fails: the general line below
        global_rng = False
    if global_rng:
        return ctx.t(f"你的 _uniforms 单独和在 batch 里给这一行同一个数（{alone!r}），可 sample() 的抽取跟着 torch 的全局随机状态走："
                     f"单独一行，torch.manual_seed(1) 两次抽到同一个 token，manual_seed(2) 抽到别的。抽取只能用这一行的 u",
                     f"your _uniforms gives this row the same number alone and in the batch ({alone!r}), yet sample()'s draw "
                     f"follows torch's global random state: the row alone draws the same token twice after "
                     f"torch.manual_seed(1) and another after manual_seed(2). Draw with the row's own u")
    return ctx.t(f"你的 _uniforms 单独和在 batch 里给这一行同一个数（{alone!r}），filtered_probs 也逐位相同：变的是 sample() 里的抽取："
                 f"它读了别的行的 u、另一个随机源，或者它自己做的某个求和取决于 batch",
                 f"your _uniforms gives this row the same number alone and in the batch ({alone!r}) and filtered_probs is "
                 f"bit-identical: the draw inside sample() changes it: it reads another row's u, another source of "
                 f"randomness, or a sum of its own that depends on the batch")


@contextlib.contextmanager
def watching(impl, name, note):
    """While open, impl.<name> calls note(*args, **kwargs) first, then the file's own function; restored on exit. No-op when the
    file has no such function."""
    own = getattr(impl, name, None) if impl is not None else None
    if not callable(own):
        yield
        return

    def watched(*args, **kwargs):
        note(*args, **kwargs)
        return own(*args, **kwargs)
    setattr(impl, name, watched)
    try:
        yield
    finally:
        setattr(impl, name, own)


def tie_order_line(ctx, row, params, prev, got, expected):
    """A line when the file keeps as many tokens as the reference but other ones, and every token it swapped ties in
    value with one it should have kept (a run of equal values at the cut, taken in another order than ascending
    token id); it names the file's canonical_window when that leaves equal values out of id order. Else None."""
    mine, want = set(oracle.kept(got.tolist())), set(oracle.kept(expected.tolist()))
    extra, missing = sorted(mine - want), sorted(want - mine)
    if not extra or len(mine) != len(want):
        return None
    z = oracle.penalize([float(v) for v in row], prev, params.repetition_penalty)
    if any(z[a] != z[b] for a in extra for b in missing):
        return None
    line = ctx.t(f"保留的个数对，但在相等的值里挑了别的 token：你的保留了 {extra[:4]}，参考解保留 {missing[:4]}（它们的 logit 相同）。"
                 f"相等的值按 token id 升序排（canonical_window），截断处才与窗口宽度无关",
                 f"the right count, but other tokens among equal values: yours keeps {extra[:4]}, the reference {missing[:4]} "
                 f"(their logits are equal). Equal values go in ascending token id (canonical_window), so the cut does "
                 f"not depend on the window's width")
    canonical = getattr(ctx.impl, "canonical_window", None)
    if callable(canonical):
        try:
            ids = canonical(torch.ones(1, 3, device=ctx.device), torch.tensor([[5, 2, 9]], device=ctx.device))[1]
            if ids.flatten().tolist() != [2, 5, 9]:
                line += ctx.t(f"；你的 canonical_window 把 id [5, 2, 9]（值都相等）排成 {ids.flatten().tolist()}：先修 T2.canonical_window",
                              f"; your canonical_window orders ids [5, 2, 9] of equal values as {ids.flatten().tolist()}: "
                              f"fix T2.canonical_window first")
        except Exception:  # noqa: BLE001 - it cannot say more
            pass
    return line
