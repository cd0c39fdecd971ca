"""Acceptance checks F1-F5 of the follow-up p08-fast: the vectorized FastSampler against the reference,
the seed write-up's three bugs, and speed measured as a ratio in the same run."""
import math
import random

import torch

from course import oracle, problems
from course.grader.checks import Fail, _noting, check, fmt_set, fmt_vec
from tests.p08.context import params_text
from course.loader import load_solution
from course.sampling_params import GREEDY_TEMPERATURE
from tests.p08.rows import head_and_tail, top_p_keeping, zipf_logits
from tests.p08_fast.causes import (exact_gap_line, exact_owner, penalty_line, tie_order_line, uniform_line, watching,
                                   window_mass_line, window_stop_line)
from tests.p08_fast.batches import (edge_batches, heterogeneous_batch, order_batch, random_params, tie_batch,
                                    wide_top_p_batch)

PROBS = [0.5, 0.25, 0.15, 0.1]


def fast_probs(ctx, sampler, logits, params, prev):
    batch, vocab = logits.shape
    rows = " | ".join(params_text(p) for p in params[:3]) + (" | ..." if batch > 3 else "")
    out = _noting(f"called FastSampler.filtered_probs(logits [{batch}, {vocab}] {str(logits.dtype)[6:]}, params: {rows})",
                  sampler.filtered_probs, logits, params, prev)            # a crash says which batch raised it
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (batch, vocab) or not out.is_floating_point():
        raise Fail(f"called FastSampler.filtered_probs(logits [{batch}, {vocab}], ...) -> {type(out).__name__} "
                   f"{list(out.shape) if isinstance(out, torch.Tensor) else ''}",
                   ctx.t(f"期望：浮点张量 [{batch}, {vocab}]", f"expected a floating tensor [{batch}, {vocab}]"),
                   where="FastSampler.filtered_probs")
    return out.detach().float().cpu()


def _tokens(n):
    return f"{n} token{'s' if n != 1 else ''}"


def _differences(row, expected, exact):
    """(max |difference| to the fp32 or the fp64 reference, whichever is closer per token; tokens zero in one only)."""
    diff = torch.minimum((row - expected).abs(), (row.double() - exact).abs().float()).max().item()
    return diff, ((row == 0) != (expected == 0)).nonzero().flatten().tolist()


@check("F1", "过滤后的分布与参考解一致（随机异构 batch，每个 token 误差 ≤ 1e-6）",
       "filtered distribution equals the reference's (random mixed batches, <= 1e-6 per token)",
       hint=("p08-fast", 1, "q2"))
def f1_filtered_distribution_equals_reference(ctx):
    ref = load_solution(problems.get("p08"))
    batches = [heterogeneous_batch(ctx, seed, batch, vocab, dtype) for seed, batch, vocab, dtype in (
        (1, 24, 1000, torch.float32), (2, 8, 50257, torch.float32), (3, 16, 4096, torch.bfloat16),
        (4, 4, 151936, torch.float16))] + [wide_top_p_batch(ctx, 5, 8, 8192), tie_batch(ctx), *edge_batches(ctx), order_batch(ctx)]
    for logits, params, prev, *note in batches:                                 # note: (zh, en) the rule a batch is about
        batch, vocab, dtype = *logits.shape, logits.dtype
        given = logits.to(ctx.device).clone()                                   # the learner's copy: never the oracle's
        got = fast_probs(ctx, ctx.sampler(), given, params, prev)
        if not torch.equal(given.cpu(), logits):
            rows = sorted({int(r) for r in (given.cpu() != logits).nonzero()[:, 0]})
            call = f"called FastSampler.filtered_probs(logits [{batch}, {vocab}] {str(dtype)[6:]}, ...)"
            raise Fail(ctx.t(f"{call}：传给它的 logits 在第 {rows[:6]} 行被改了",
                             f"{call}: the logits it was given changed in rows {rows[:6]}"),
                       ctx.t("filtered_probs 原地改了调用方的 logits（fp32 输入时 .float() 返回的就是同一个张量）：先 clone 再加 penalty",
                             "filtered_probs changed the caller's logits in place (for fp32 input .float() returns the same "
                             "tensor): clone before the penalty"), where="FastSampler.filtered_probs")
        for i in range(batch):
            expected = oracle.reference_probs(ref, logits[i], params[i], prev[i])                 # [V] fp32
            exact = oracle.reference_probs(ref, logits[i], params[i], prev[i], torch.float64)     # [V] fp64
            diff, zeros_differ = _differences(got[i], expected, exact)
            if diff > 1e-6 or zeros_differ:
                worst = zeros_differ[:3] or [int((got[i] - expected).abs().argmax())]
                tokens = ctx.t("；", "; ").join(ctx.t(f"token {w}：你的 {got[i, w].item():.4g}，参考解 {expected[w].item():.4g}",
                                                      f"token {w}: yours {got[i, w].item():.4g}, reference {expected[w].item():.4g}")
                                                for w in worst)
                if params[i].temperature < GREEDY_TEMPERATURE:                    # a one-hot row: say its rule
                    mine = (got[i] > 0).nonzero().flatten().tolist()
                    yours = (ctx.t(f"你的在 token {mine[0]}", f"yours at token {mine[0]}") if len(mine) == 1 else
                             ctx.t(f"你的有 {len(mine)} 个非零 token {mine[:4]}", f"yours has {len(mine)} nonzero tokens {mine[:4]}"))
                    why = ctx.t(f"greedy 行是惩罚之后那一行 torch.argmax 处的 one-hot（相等的最大值取第一个）：参考解在 token "
                                f"{int(expected.argmax())}，{yours}",
                                f"a greedy row is one-hot at torch.argmax of the penalised row (the first of equal maxima): "
                                f"the reference's is at token {int(expected.argmax())}, {yours}")
                else:
                    why = ctx.t(f"参考解保留 {int((expected > 0).sum())} 个 token，你的保留 {int((got[i] > 0).sum())} 个",
                                f"the reference keeps {_tokens(int((expected > 0).sum()))}, yours {int((got[i] > 0).sum())}")
                    if batch > 1:                                                  # only a batch has peers to blame
                        alone = fast_probs(ctx, ctx.sampler(), logits[i:i + 1].to(ctx.device), params[i:i + 1], prev[i:i + 1])
                        alone_diff, alone_zeros = _differences(alone[0], expected, exact)
                    if batch > 1 and alone_diff <= 1e-6 and not alone_zeros:
                        why += ctx.t("。这一行单独算是对的，放在这个 batch 里就错了：它的 penalty 或过滤用到了别的行（历史混在一起、整批的 k、p 或 max）",
                                     ". This row alone is right, wrong in this batch: its penalty or filtering uses the other "
                                     "rows (histories mixed between rows, a batch-wide k, p or max)")
                if note:
                    why += ctx.t("。", ". ") + ctx.t(*note[0])
                causes = []
                if params[i].temperature >= GREEDY_TEMPERATURE:                    # re-run its own pieces: why
                    dev = logits.to(ctx.device)
                    causes = [tie_order_line(ctx, logits[i], params[i], prev[i], got[i].cpu(), expected),
                              window_mass_line(ctx, logits[i], params[i], prev[i], oracle.kept(got[i].tolist())),
                              exact_gap_line(ctx, dev, params, prev, i),
                              window_stop_line(ctx, dev, params, prev, i, int((got[i] > 0).sum()), int((expected > 0).sum()))]
                    if batch > 1 and alone_diff <= 1e-6 and not alone_zeros:
                        causes.append(penalty_line(ctx, dev, params, prev, i))
                call = f"called FastSampler.filtered_probs(logits [{batch}, {vocab}] {str(dtype)[6:]}, ...)"
                raise Fail(ctx.t(f"{call}，第 {i} 行（{params_text(params[i])}，{len(prev[i])} 个历史 token）：{tokens}"
                                 + ("" if zeros_differ else f"（最大 |差| {diff:.2e}，允许 1e-6）"),
                                 f"{call}, row {i} ({params_text(params[i])}, {len(prev[i])} history tokens): {tokens}"
                                 + ("" if zeros_differ else f" (max |difference| {diff:.2e}, allowed 1e-6)")),
                           why, *[c for c in causes if c], where="FastSampler.filtered_probs")


@check("F2", "被删掉的 token 概率恰好为 0（博客 bug 2：clamp_min）", "removed tokens have exactly zero probability (blog bug 2: clamp_min)",
       hint=("p08-fast", 1, "q4"))
def f2_exact_zeros_outside_kept_set(ctx):
    vocab, g = 50257, torch.Generator().manual_seed(5)
    rows = torch.stack([head_and_tail(g, vocab, 30) for _ in range(3)])                      # [3, V]
    params = [ctx.params(top_k=40, top_p=top_p_keeping(rows[0], 20), seed=1), ctx.params(top_k=40),
              ctx.params(top_p=top_p_keeping(rows[2], 25))]
    got = fast_probs(ctx, ctx.sampler(), rows.to(ctx.device), params, [[]] * 3)
    ref = load_solution(problems.get("p08"))
    for i, p in enumerate(params):
        expected = oracle.reference_probs(ref, rows[i], p)
        leak = ((expected == 0) & (got[i] != 0)).nonzero().flatten().tolist()
        if leak:
            mass = got[i][expected == 0].sum().item()
            raise Fail(ctx.t(f"FastSampler.filtered_probs，V=50257，{params_text(p)}：token {leak[0]} 在保留集合之外，"
                             f"概率却是 {got[i, leak[0]].item():.2g}；这样的 token 有 {len(leak)} 个，合计 {mass:.2g}",
                             f"FastSampler.filtered_probs, V=50257, {params_text(p)}: token {leak[0]} is outside the kept set "
                             f"but has probability {got[i, leak[0]].item():.2g}; {len(leak)} such tokens, {mass:.2g} in all"),
                       ctx.t("被删掉的 token 必须恰好是 0：别用 clamp_min 之类的下限", "removed tokens must be exactly 0: no clamp_min floor"),
                       where="FastSampler.filtered_probs")


@check("F3", "越过 top_p 的 token 要留下（博客 bug 1：cumsum > top_p）", "the token that crosses top_p stays (blog bug 1: cumsum > top_p)",
       hint=("p08-fast", 1, "q3"))
def f3_crossing_token_stays(ctx):
    row = [math.log(p) for p in PROBS]
    cases = [(dict(top_p=0.7), [2 / 3, 1 / 3, 0, 0]), (dict(top_k=3, top_p=0.6), [2 / 3, 1 / 3, 0, 0]),
             (dict(top_p=0.8), [0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0]), (dict(top_p=1e-9), [1, 0, 0, 0]),
             (dict(top_p=0.7500005), [0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0])]                  # 0.75 before: just below
    params = [ctx.params(**kw) for kw, _ in cases]
    got = fast_probs(ctx, ctx.sampler(), ctx.tensor([row] * len(cases)), params, [[]] * len(cases))
    for i, (kw, expected) in enumerate(cases):
        if (got[i] - torch.tensor(expected)).abs().max() > 1e-5 or got[i].isnan().any():
            raise Fail(f"FastSampler.filtered_probs(log {PROBS}, {kw}) -> {fmt_vec(got[i])}"
                       + ctx.t(f"，期望 {fmt_vec(expected)}", f", expected {fmt_vec(expected)}"),
                       ctx.t(f"保留集合应为 {fmt_set(oracle.kept(expected))}：用“之前的累计质量” cumsum − p 判断",
                             f"the kept set is {fmt_set(oracle.kept(expected))}: decide on the mass before a token, cumsum - p"),
                       where="FastSampler.filtered_probs")


def _many_rows_beside_a_wide_peer(ctx):
    """48 random rows of V = 1000 (top_k 60, half of them with top_p 0.9), each alone and all in one batch beside a
    peer with top_k 250: filtered_probs bit for bit. Rounding that depends on the window's width (a sum over all W
    columns, a softmax over the window) shows in about a quarter of such rows, rarely in a few."""
    P, g = ctx.params, torch.Generator().manual_seed(61)
    rows = torch.randn(49, 1000, generator=g) * 2.0                                          # [49, V]; row 48: the peer
    params = [P(top_k=60, top_p=0.9 if r % 2 else 1.0, seed=r) for r in range(48)] + [P(top_k=250, seed=99)]
    together = fast_probs(ctx, ctx.sampler(), rows.to(ctx.device), params, [[]] * 49)
    for r in range(48):
        alone = fast_probs(ctx, ctx.sampler(), rows[r:r + 1].to(ctx.device), params[r:r + 1], [[]])[0]
        if not torch.equal(alone, together[r]):
            diff = (alone - together[r]).abs().max().item()
            raise Fail(ctx.t(f"FastSampler.filtered_probs：V=1000 的第 {r} 行（{params_text(params[r])}）单独 vs 和另外 47 行、"
                             f"一个 top_k=250 的同伴一起：最大 |差| {diff:.2e}（{int((alone != together[r]).sum())} 个 token 不同）",
                             f"FastSampler.filtered_probs: row {r} of V=1000 ({params_text(params[r])}) alone vs beside 47 other "
                             f"rows and a peer with top_k=250: max |difference| {diff:.2e} ({int((alone != together[r]).sum())} "
                             f"tokens differ)"),
                       ctx.t("同伴的 top_k 让共用的窗口变宽（251 列），这一行的数就变了：它的和或归约用到了窗口的全部 W 列。total 读这一行自己最后"
                             "保留列上的前缀和，不要对整个窗口求和",
                             "the peer's top_k makes the shared window wider (251 columns) and the row's numbers move: a sum "
                             "or reduction of it runs over all W columns of the window. Read total from the prefix sums at "
                             "the row's own last kept column; no sum over the whole window"),
                       where="FastSampler.filtered_probs")


@check("F4", "逐位批不变：别人的 K、B 不影响你的概率和 token（博客 bug 3）", "bit-for-bit batch invariance: peers' K and B change nothing (blog bug 3)",
       hint=("p08-fast", 1, "q5"))
def f4_bitwise_batch_invariance(ctx):
    vocab, g, rng = 8237, torch.Generator().manual_seed(6), random.Random(6)          # no multiple of any chunk
    P = ctx.params
    targets = [P(top_k=40, top_p=0.9, seed=1), P(top_p=0.9, seed=2), P(top_k=7, temperature=0.7, seed=3),
               P(top_p=0.95, repetition_penalty=1.3, seed=4), P(seed=5), P(temperature=0.0, seed=6)]
    rows = torch.cat([zipf_logits(g, 3, vocab), torch.randn(3, vocab, generator=g) * 0.2])                  # [6, V]
    histories = [[1, 2, 3]] * len(targets)
    tie_rows, tie_params, tie_prev = tie_batch(ctx, vocab)
    rows = torch.cat([rows, tie_rows])                                                                      # [14, V]
    targets, histories = targets + tie_params, histories + tie_prev
    _many_rows_beside_a_wide_peer(ctx)
    peer_sets = {ctx.t("top_k 更大的同伴", "peers with a larger top_k"): [P(top_k=500, seed=9)] * 5,
                 ctx.t("平坦行上只有 top-p 的同伴", "top-p-only peers on flat rows"): [P(top_p=0.99, seed=10 + i) for i in range(5)],
                 ctx.t("64 个随机同伴", "64 random peers"): [random_params(ctx, rng, vocab) for _ in range(64)]}
    for name, peers in peer_sets.items():
        among = f" {name}" if name[0].isascii() else name                   # zh: a space before a leading digit only
        peer_rows = torch.randn(len(peers), vocab, generator=g) * rng.choice([0.1, 3.0])
        for t, (target, row) in enumerate(zip(targets, rows)):
            alone_sampler, batch_sampler = ctx.sampler(), ctx.sampler()
            alone = fast_probs(ctx, alone_sampler, row[None].to(ctx.device), [target], [histories[t]])[0]
            pos = t % (len(peers) + 1)
            batch_rows = torch.cat([peer_rows[:pos], row[None], peer_rows[pos:]]).to(ctx.device)
            batch_params = peers[:pos] + [target] + peers[pos:]
            batch_prev = [[]] * pos + [histories[t]] + [[]] * (len(peers) - pos)
            mixed = fast_probs(ctx, batch_sampler, batch_rows, batch_params, batch_prev)[pos]
            if not torch.equal(alone, mixed):
                diff = (alone - mixed).abs().max().item()
                raise Fail(ctx.t(f"FastSampler.filtered_probs：这一行（{params_text(target)}）单独 vs 在{among}中的位置 {pos}："
                                 f"最大 |差| {diff:.2e}，保留 {int((alone > 0).sum())} vs {int((mixed > 0).sum())} 个 token",
                                 f"FastSampler.filtered_probs: row ({params_text(target)}) alone vs at position {pos} among {name}: "
                                 f"max |difference| {diff:.2e}, kept {int((alone > 0).sum())} vs {int((mixed > 0).sum())} tokens"),
                           ctx.t("逐位相同才算批不变：归约的长度、窗口大小都不能取决于同伴", "bit-for-bit or not invariant: no reduction length "
                                 "or window size may depend on the peers"), where="FastSampler.filtered_probs")
            ids = [f"p{j}" for j in range(pos)] + ["t"] + [f"p{j}" for j in range(pos, len(peers))]
            tokens_alone = [ctx.sample(alone_sampler, row[None].to(ctx.device), ["t"], [target], [histories[t]])[0] for _ in range(4)]
            tokens_mixed = [ctx.sample(batch_sampler, batch_rows, ids, batch_params, batch_prev)[pos] for _ in range(4)]
            if tokens_alone != tokens_mixed:
                request = ctx.t(f"请求（{params_text(target)}），V={vocab}：单独 -> {tokens_alone}，在{among}中的位置 {pos} -> "
                                f"{tokens_mixed}", f"request ({params_text(target)}), V={vocab}: alone -> {tokens_alone}, at "
                                f"position {pos} among {name} -> {tokens_mixed}")
                if why := uniform_line(ctx, target, ids, batch_params, pos, row[None].to(ctx.device), histories[t]):
                    raise Fail(request, why, where="FastSampler.sample")
                raise Fail(request,
                           ctx.t("filtered_probs 单独和在 batch 里逐位相同，token 却不同：抽样取决于同伴。要么每步消费的随机数取决于 K 或 B，"
                                 "要么 sample() 没有按 filtered_probs 报告的分布抽（见 F6）",
                                 "filtered_probs is bit-identical alone and in the batch, yet the tokens differ: the draw depends "
                                 "on the peers. Either the randomness a seeded row consumes per step depends on K or B, or "
                                 "sample() does not draw from what filtered_probs reports (see F6)"),
                           where="FastSampler.sample")
    # a small vocabulary: a peer with top_k = V - 1 makes a shared top-k window the whole row, and a row whose k-th
    # value ties the next must still go the way it goes alone (its certainty is its own, not the window's)
    ladder = torch.cat([torch.tensor([5.0, 4.0, 3.0, 3.0, 3.0]), torch.linspace(-1.0, -6.0, 59)])       # [64]
    peer = torch.randn(1, 64, generator=g)
    for target in (P(top_k=3, seed=21), P(top_k=4, top_p=0.9, seed=22)):
        alone = fast_probs(ctx, ctx.sampler(), ladder[None].to(ctx.device), [target], [[]])[0]
        mixed = fast_probs(ctx, ctx.sampler(), torch.cat([peer, ladder[None]]).to(ctx.device),
                           [P(top_k=63, seed=23), target], [[], []])[1]
        if not torch.equal(alone, mixed):
            diff = (alone - mixed).abs().max().item()
            raise Fail(ctx.t(f"FastSampler.filtered_probs：这一行 [5, 4, 3, 3, 3, -1, ...]（V=64，{params_text(target)}）单独 vs "
                             f"在一个 top_k=63 的同伴旁：最大 |差| {diff:.2e}",
                             f"FastSampler.filtered_probs: row [5, 4, 3, 3, 3, -1, ...] (V=64, {params_text(target)}) alone vs "
                             f"beside a peer with top_k=63: max |difference| {diff:.2e}"),
                       ctx.t("同伴的 top_k = V - 1 让共享窗口成了整行；这一行第 k 大的值和下一个相等，它单独时走另一条路线。"
                             "一行走哪条路线（certain 与否）只能由它自己决定，不能因为窗口恰好是整行就算 certain",
                             "the peer's top_k = V - 1 makes the shared window the whole row; this row's k-th value ties the next, "
                             "and alone it takes another route. Whether a row is certain must be decided by the row alone, not "
                             "by a window that happens to be the whole row"), where="FastSampler.filtered_probs")


@check("F5", "速度：同一次运行里比参考解的逐行循环和全词表排序都快（seed 004 的场景）",
       "speed: faster than the reference loop and the full-vocab sort, measured in the same run (seed 004's case)",
       hint=("p08-fast", 1, "q1"))
def f5_speed_against_reference_loop(ctx):
    from course.bench.baselines import FullSortSampler
    from course.bench import machine, time_many

    ref = load_solution(problems.get("p08"))
    batch, vocab, over_loop, over_sort = 64, 50257, 3.0, 2.0
    logits = zipf_logits(torch.Generator().manual_seed(7), batch, vocab).to(ctx.device)
    params = [ctx.params(top_k=40, top_p=0.9, seed=i) for i in range(batch)]
    ref_params = [ref.SamplingParams(top_k=40, top_p=0.9, seed=i) for i in range(batch)]
    ids, prev = list(range(batch)), [[] for _ in range(batch)]
    fast, slow, full_sort = ctx.sampler(), ref.Sampler(), FullSortSampler()
    ctx.sample(fast, logits, ids, params, prev)
    facts, slow_by_design, sorts = what_it_runs(ctx, fast, logits, ids, params, prev)
    if slow_by_design:                                                 # counted, not timed: the same on any machine
        raise Fail(ctx.t(f"B=8 和 B=64，V=50257，top_k=40，top_p=0.9：{facts[0]}", f"B=8 and B=64, V=50257, top_k=40, top_p=0.9: {facts[0]}"),
                   *facts[1:],
                   where="FastSampler.sample")
    def timed():                                                       # they take turns: a busy machine slows all
        with machine.Watch() as watch:                                 # three, though not always alike
            ms = time_many({"fast": lambda: fast.sample(logits, ids, params, prev),
                            "loop": lambda: slow.sample(logits, ids, ref_params, prev),
                            "sort": lambda: full_sort.sample(logits, ids, ref_params, prev)},
                           repeat=3, warmup=1, device=ctx.device)      # each called 4 times: a median of 3
        return ms, watch.load

    def too_slow(ms):
        return ms["loop"] / ms["fast"] < over_loop or ms["sort"] / ms["fast"] < over_sort

    ms, load = timed()
    if too_slow(ms) and load.busy:                                     # other programs took the CPU: once more
        ms, load = timed()
    measured = ctx.t(f"B=64, V=50257, top_k=40, top_p=0.9：FastSampler.sample {ms['fast']:.2f} ms，参考解的逐行循环 "
                     f"{ms['loop']:.2f} ms（{ms['loop'] / ms['fast']:.1f}x），全词表排序 {ms['sort']:.2f} ms"
                     f"（{ms['sort'] / ms['fast']:.1f}x）",
                     f"B=64, V=50257, top_k=40, top_p=0.9: FastSampler.sample {ms['fast']:.2f} ms, reference loop "
                     f"{ms['loop']:.2f} ms ({ms['loop'] / ms['fast']:.1f}x), full-vocab sort {ms['sort']:.2f} ms "
                     f"({ms['sort'] / ms['fast']:.1f}x)")
    ctx.notes.append(measured)
    if too_slow(ms) and load.busy and not sorts:                      # a full-row sort is slow on any machine
        ctx.notes.append(ctx.t(f"计时时{load.describe('zh')}：这些数是噪声，速度不作判断；下面是数出来的，与机器无关",
                               f"while timing, {load.describe('en')}: these figures are noise, so speed is not judged; "
                               f"what it runs, counted below, does not depend on the machine"))
        ctx.notes.extend(facts)
        return
    if too_slow(ms):
        raise Fail(ctx.t(f"{measured}；期望至少是循环的 {over_loop:.0f}x、全排序的 {over_sort:.0f}x",
                         f"{measured}; expected at least {over_loop:.0f}x the loop and {over_sort:.0f}x the full sort"),
                   *facts, where="FastSampler.sample")


def what_it_runs(ctx, fast, logits, ids, params, prev) -> tuple:
    """What the fast path does per call, counted (course/bench/opcount.py): its torch ops at B = 8 and 64, its
    sorts over full rows and, in the stub's design, how many rows took the exact route. Returns (lines saying only
    what was counted, whether it is slow by design: an op count that grows like a loop, or most rows sent to the
    exact route although every kept set fits its window, the number of sorts over full rows)."""
    from course.bench import opcount

    vocab, small = logits.shape[1], 8
    whole = opcount.profile(lambda: fast.sample(logits, ids, params, prev), shapes=True)     # one profiled call
    ops = {small: opcount.count(lambda: fast.sample(logits[:small], ids[:small], params[:small], prev[:small])),
           len(ids): opcount.counts_of(whole)}
    sorts = opcount.full_row_sorts(whole, vocab)
    zh = {b: f"{c.ops} 个 op、{c.syncs} 次 sync、{c.uploads} 次上传" for b, c in ops.items()}   # Counts' str, in Chinese
    lines = [ctx.t(f"每次调用计数：B={small} 时 {zh[small]}，B={len(ids)} 时 {zh[len(ids)]}；对 V={vocab} 的整行排序 {sorts} 次",
                   f"counted per call: {ops[small]} at B={small}, {ops[len(ids)]} at B={len(ids)}; "
                   f"{sorts} sort{'s' if sorts != 1 else ''} over full rows of V={vocab}")]
    if sorts:
        lines.append(ctx.t(f"它对整行（V={vocab}）排序：在 [B, K] 的窗口里做（torch.topk），不要排整个词表",
                           f"it sorts full rows (V={vocab}): work in the [B, K] window (torch.topk), not on the whole vocabulary"))
    owner, detour = exact_owner(ctx.impl), False                      # the given exact route: count its rows
    if owner is not None:
        taken, widths = [], []
        with watching(owner, "exact_rows", lambda x, *rest, **kw: taken.append(x.shape[0])), \
                watching(ctx.impl, "window_topk", lambda x, width, *rest, **kw: widths.append(int(width))):
            fast.sample(logits, ids, params, prev)
        lines[0] += ctx.t(f"；{len(ids)} 行中有 {sum(taken)} 行走了 exact 路线", f"; {sum(taken)} of {len(ids)} rows took the exact route")
        detour = sum(taken) > len(ids) // 2
        top_k = params[0].top_k
        if detour and widths and max(widths) <= top_k:                  # established: the window it asked for
            lines.append(ctx.t(f"每行都是 top_k={top_k}，却只向 window_topk 要了 {max(widths)} 列：top-k 的行要 top_k + 1 列"
                               f"（第 k 列说明第 k 大的值是否与下一个并列；没有它，没有一行能 certain），于是 {sum(taken)} 行走了 exact 路线",
                               f"every row has top_k={top_k}, yet window_topk was asked for {max(widths)} columns: a top-k "
                               f"row needs top_k + 1 (column k tells whether the k-th value ties the next; without it no row "
                               f"is certain), so {sum(taken)} rows took the exact route"))
        elif detour:
            lines.append(ctx.t(f"每行都是 top_k=40：41 列的窗口装得下保留集合，它们本该 certain，却有 {sum(taken)} 行走了 exact 路线："
                               f"检查 filter_window 的 certain（T4）",
                               f"every row has top_k=40: a window of 41 columns holds its kept set, so it should be certain, "
                               f"yet {sum(taken)} rows took the exact route: check filter_window's certain (T4)"))
    syncs = ops[len(ids)].syncs
    waits = syncs > 1 and callable(getattr(ctx.impl, "_steps", None))  # the stub's shape (a design of its own may
                                                                      # widen a window in rounds, each a sync)
    if waits:                                                         # the given code waits once; a step's .item(),
        lines.append(ctx.t(f"每次调用要等设备 {syncs} 次（B=8 时 {ops[small].syncs} 次；host sync：.item()、.tolist()、nonzero、"
                           f"取决于数据的形状）：给定代码只等一次，你的步骤函数里不要再读设备上的值",     # .tolist() add more
                           f"it waits for the device {syncs} times per call ({ops[small].syncs} at B=8; host syncs: .item(), "
                           f".tolist(), nonzero, data-dependent shapes): the given code waits once; your step functions "
                           f"must read no device value back"))
    grows = ops[len(ids)].ops > 3 * ops[small].ops                    # 8x the rows: a loop over rows
    if grows and not sorts:
        lines.append(ctx.t(f"op 数随 batch 增长（B=8 时 {ops[small].ops}，B=64 时 {ops[len(ids)].ops}）：还有按行的循环，把它们变成整批的张量运算",
                           f"its op count grows with the batch ({ops[small].ops} at B=8, {ops[len(ids)].ops} at B=64): "
                           f"a per-row loop is left; make it whole-batch tensor ops"))
    return lines, grows or detour or waits, sorts
