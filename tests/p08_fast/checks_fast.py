"""Acceptance checks F1-F5 of the follow-up p08-fast: the vectorized FastSampler against the reference,
the seed write-up's three bugs, and speed measured as a ratio in the same run."""
import math
import random

import torch

from course import oracle, problems
from course.grader.checks import Fail, _noting, check, fmt_set, fmt_vec, params_text
from course.loader import load_solution
from course.sampling_params import GREEDY_TEMPERATURE
from tests.p08.rows import head_and_tail, top_p_keeping, zipf_logits

FAST = ("p08-fast",)
PROBS = [0.5, 0.25, 0.15, 0.1]


def random_params(ctx, rng, vocab):
    return ctx.params(temperature=rng.choice([0.0, 0.6, 1.0, 1.4]), top_k=rng.choice([-1, -1, 1, 5, 40, 200, vocab + 3]),
                      top_p=rng.choice([1.0, 0.9, 0.5, 0.97]), repetition_penalty=rng.choice([1.0, 1.0, 1.3]),
                      seed=rng.choice([None, rng.randrange(10_000)]))


def heterogeneous_batch(ctx, seed, batch, vocab, dtype=torch.float32):
    """Random logits (peaked and flat rows), params and histories, kept away from top-p ties."""
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    peaked = zipf_logits(g, batch, vocab)
    flat = torch.randn(batch, vocab, generator=g) * 0.3
    logits = torch.where(torch.rand(batch, 1, generator=g) < 0.5, peaked, flat).to(dtype)     # [B, V]
    params, prev, i = [], [], 0
    while len(params) < batch:
        p = random_params(ctx, rng, vocab)
        history = [rng.randrange(vocab) for _ in range(rng.choice([0, 3, 20]))]
        values = oracle.penalize(logits[i].float().tolist(), history, p.repetition_penalty)
        if p.temperature > 0 and not oracle.cut_is_clear([v / p.temperature for v in values], p.top_k, p.top_p):
            continue                                           # a tie or a near-tie at the cut: either answer is right
        params.append(p)
        prev.append(history)
        i += 1
    return logits, params, prev


def wide_top_p_batch(ctx, seed, batch, vocab):
    """Top-p-only rows whose kept sets are wider than a first window of 64 tokens (clear cuts)."""
    g, rng = torch.Generator().manual_seed(seed), random.Random(seed)
    rows = torch.stack([head_and_tail(g, vocab, 300) for _ in range(batch)])                   # [B, V]
    params = [ctx.params(top_p=top_p_keeping(rows[i], rng.randrange(70, 280)), seed=i) for i in range(batch)]
    return rows, params, [[] for _ in range(batch)]


def tie_batch(ctx, vocab=50257):
    """Rows built to trip a window: ties at the top-k cut and at the top-p cut (lower ids stay), the top
    tokens in the last, partial chunk (V = 50257 is no multiple of any power of two), and a penalty that
    pushes the top token out of the top-k window or pulls a negative one into it."""
    g = torch.Generator().manual_seed(17)
    tail = lambda: torch.randn(vocab, generator=g) * 0.5 - 8.0                                  # noqa: E731  [V]
    spots = lambda n: torch.randperm(vocab - 64, generator=g)[:n]                               # noqa: E731  [n]
    rows, params, prev = [], [], []

    def add(row, history=(), **kwargs):
        rows.append(row)
        params.append(ctx.params(seed=len(rows), **kwargs))
        prev.append(list(history))

    row, at = tail(), spots(40)                                                                  # 10 distinct, 30 tied
    row[at[:10]], row[at[10:]] = torch.linspace(5.0, 4.1, 10), 3.0
    add(row, top_k=20)                                                                           # keeps all 40
    add(row.clone(), top_k=12, top_p=0.999, temperature=0.7)
    row, at = tail(), spots(204)                                                                 # 4 high, 200 tied
    row[at[:4]], row[at[4:]] = torch.tensor([4.0, 3.5, 3.2, 3.0]), 1.0
    add(row, top_p=top_p_keeping(row, 90))                                                       # cut inside the tie run
    add(row.clone(), top_p=top_p_keeping(row, 150), temperature=1.3)
    row = tail()
    row[vocab - 8:] = torch.linspace(6.0, 3.0, 8)                                                # top 8 in the last chunk
    add(row, top_k=5)
    add(row.clone(), top_p=top_p_keeping(row, 6))
    row, at = tail(), spots(40)                                                                  # a top-k row, top-p cut
    row[at[:4]], row[at[4:34]], row[at[34:]] = torch.tensor([4.0, 3.5, 3.2, 3.0]), 1.0, torch.linspace(0.5, 0.0, 6)
    add(row, top_k=40, top_p=top_p_keeping(row, 20))                                            # inside 30 tied values
    row = torch.full((vocab,), -30.0)                                                           # fp32 mass hits 1.0 at once
    row[spots(3)] = torch.tensor([0.0, 5.0, 5.0])                                                # tied maxima
    add(row, temperature=0.0)                                                                    # greedy: the first maximum
    add(row.clone())                                                                             # top_p = 1 is off: no zeros
    row, at = tail(), spots(41)
    row[at[:40]], row[at[40]] = torch.linspace(1.0, 0.6, 40), 5.0                                # token at[40]: 5.0 / 10 = 0.5
    add(row, history=[int(at[40])], top_k=40, repetition_penalty=10.0)                           # out of the top 40
    row, at = tail(), spots(61)
    row[at[:40]], row[at[40:60]], row[at[60]] = torch.linspace(-0.2, -1.5, 40), torch.linspace(-2, -4, 20), -5.0
    add(row, history=[int(at[60])], top_k=40, repetition_penalty=0.1)                            # -5.0 * 0.1 = -0.5: from
                                                                                                 # rank 60 into the top 40
    return torch.stack(rows), params, prev


def edge_batches(ctx):
    """Small batches that take a fast path's rarer turns (each once let a wrong fast path through)."""
    ladder = torch.cat([torch.tensor([5.0, 4.0, 3.0, 3.0, 3.0]), torch.linspace(-1.0, -6.0, 59)])    # [64]
    spread = torch.randn(64, generator=torch.Generator().manual_seed(23))                         # [64]
    tied = torch.full((50257,), -4.0)
    tied[[9000, 31]] = 6.0                                                                        # maxima at 31 and 9000
    edge = torch.randn(50257, generator=torch.Generator().manual_seed(29)) - 4.0                  # [V]
    edge[50240] = 3.0                                                                             # 50240 = 785 * 64
    g = torch.Generator().manual_seed(31)
    wide_k = [torch.randn(1, vocab, generator=g) * 2.0 for vocab in (1000, 50257)]                 # [1, V] each
    twin = torch.cat([torch.tensor([[5.0, 5.0]]), spread[None, 2:] - 8.0], 1)                      # [1, 64]
    h = torch.Generator().manual_seed(37)                             # its own stream: g's batches stay as they were
    greedy = torch.randn(8, 50257, generator=h) - 4.0                 # [8, V]: 8 * V >= 2 ** 18, a big batch
    for row, ids in enumerate([[50256], [50240], [100, 50250], [63, 64], [0], [50239], [50241, 50255], [5]]):
        greedy[row, ids] = 5.0                                        # maxima in the tail, across chunks, tied
    greedy[7, 50250] = 4.0                                            # row 7: its penalty moves the max to 50250
    short = torch.randn(3, 575, generator=h)                          # [3, 575]: 8 chunks of 64 and a tail of 63
    short[0, 574], short[1, 520] = 9.0, 9.0                           # maxima far into a tail longer than 8 chunks
    return [
        # the k-th value ties the next in a small vocabulary (the tie run decides); top_k = 0 is off, like -1
        (torch.stack([ladder, spread]), [ctx.params(top_k=3, seed=1), ctx.params(top_k=0, top_p=0.9, seed=2)], [[], []]),
        (torch.zeros(1, 64), [ctx.params(top_k=3, seed=3)], [[]]),              # a lone row, all values equal
        (tied[None], [ctx.params(top_p=1e-30, seed=4)], [[]]),                   # tied maxima: only the lower id stays
        (edge[None], [ctx.params(top_k=5, seed=5)], [[]]),                       # the max opens the last partial chunk
        *[(row, [ctx.params(top_k=300, seed=6)], [[]]) for row in wide_k],        # top_k above 256
        (torch.stack([spread, ladder]), [ctx.params(top_k=64, seed=7), ctx.params(top_k=4, seed=8)], [[], []]),  # k = V: off
        (twin, [ctx.params(top_k=2, top_p=0.5, seed=9)], [[]]),                  # mass before the 2nd is exactly 0.5: it goes
        (torch.randn(300, 512, generator=g), [ctx.params(top_k=300, seed=i) for i in range(300)], [[]] * 300),  # many rows
        (greedy, [ctx.params(temperature=0.0)] * 7 + [ctx.params(temperature=0.0, repetition_penalty=2.0)],
         [[]] * 7 + [[5]]),                                                     # greedy rows: the first maximum
        (short, [ctx.params(temperature=0.0)] * 2 + [ctx.params(top_k=1, seed=11)], [[]] * 3),  # beside a window row
    ]


def order_batch(ctx, vocab=4096):
    """Top-p-only rows whose cut falls inside a run of nearly equal values: +0.0 beside -0.0 (equal: lower ids
    first), +1e-4 beside -1e-4 (signs mixed in one probability bucket) and floats one ulp apart (2.5 and -2.5)."""
    up = torch.tensor(2.5).nextafter(torch.tensor(3.0)).item()                                  # 2.5 + 1 ulp
    down = torch.tensor(-2.5).nextafter(torch.tensor(-3.0)).item()                              # -2.5 - 1 ulp
    runs = [(1.0, [-0.0] * 20 + [0.0] * 20), (1.0, [-1e-4, 1e-4] * 20), (3.0, [2.5, up] * 20), (-1.0, [down, -2.5] * 20)]
    rows = []
    for top, run in runs:
        row = torch.full((vocab,), -10.0)
        row[7], row[100:140] = top, torch.tensor(run)
        rows.append(row)
    return (torch.stack(rows), [ctx.params(top_p=top_p_keeping(row, 11), seed=10 + i) for i, row in enumerate(rows)],
            [[]] * len(rows))


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


@check("F1", "过滤后的分布与参考解一致（随机异构 batch，每个 token 误差 ≤ 1e-6）",
       "filtered distribution equals the reference's (random mixed batches, <= 1e-6 per token)",
       hint=("p08-fast", 1, "q2"), problems=FAST)
def f1_filtered_distribution_equals_reference(ctx):
    ref = load_solution(problems.get("p08"))
    batches = [heterogeneous_batch(ctx, seed, batch, vocab, dtype) for seed, batch, vocab, dtype in (
        (1, 24, 1000, torch.float32), (2, 8, 50257, torch.float32), (3, 16, 4096, torch.bfloat16),
        (4, 4, 151936, torch.float16))] + [wide_top_p_batch(ctx, 5, 8, 8192), tie_batch(ctx), *edge_batches(ctx), order_batch(ctx)]
    for logits, params, prev in batches:
        batch, vocab, dtype = *logits.shape, logits.dtype
        got = fast_probs(ctx, ctx.sampler(), logits.to(ctx.device), params, prev)
        for i in range(batch):
            expected = oracle.reference_probs(ref, logits[i], params[i], prev[i])                 # [V] fp32
            exact = oracle.reference_probs(ref, logits[i], params[i], prev[i], torch.float64)     # [V] fp64
            diff = torch.minimum((got[i] - expected).abs(), (got[i].double() - exact).abs().float()).max().item()
            zeros_differ = ((got[i] == 0) != (expected == 0)).nonzero().flatten().tolist()
            if diff > 1e-6 or zeros_differ:
                worst = zeros_differ[:3] or [int((got[i] - expected).abs().argmax())]
                tokens = "; ".join(f"token {w}: yours {got[i, w].item():.4g}, reference {expected[w].item():.4g}" for w in worst)
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
                                f"the reference keeps {int((expected > 0).sum())} tokens, yours {int((got[i] > 0).sum())}")
                raise Fail(f"called FastSampler.filtered_probs(logits [{batch}, {vocab}] {str(dtype)[6:]}, ...), row {i} "
                           f"({params_text(params[i])}, {len(prev[i])} history tokens): {tokens}"
                           + ("" if zeros_differ else f" (max |difference| {diff:.2e}, allowed 1e-6)"),
                           why, where="FastSampler.filtered_probs")


@check("F2", "被删掉的 token 概率恰好为 0（博客 bug 2：clamp_min）", "removed tokens have exactly zero probability (blog bug 2: clamp_min)",
       hint=("p08-fast", 1, "q4"), problems=FAST)
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
            raise Fail(f"FastSampler.filtered_probs, V=50257, {params_text(p)}: token {leak[0]} is outside the kept set "
                       f"but has probability {got[i, leak[0]].item():.2g}; {len(leak)} such tokens, {mass:.2g} in all",
                       ctx.t("被删掉的 token 必须恰好是 0：别用 clamp_min 之类的下限", "removed tokens must be exactly 0: no clamp_min floor"),
                       where="FastSampler.filtered_probs")


@check("F3", "越过 top_p 的 token 要留下（博客 bug 1：cumsum > top_p）", "the token that crosses top_p stays (blog bug 1: cumsum > top_p)",
       hint=("p08-fast", 1, "q3"), problems=FAST)
def f3_crossing_token_stays(ctx):
    row = [math.log(p) for p in PROBS]
    cases = [(dict(top_p=0.7), [2 / 3, 1 / 3, 0, 0]), (dict(top_k=3, top_p=0.6), [2 / 3, 1 / 3, 0, 0]),
             (dict(top_p=0.8), [0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0]), (dict(top_p=1e-9), [1, 0, 0, 0]),
             (dict(top_p=0.7500005), [0.5 / 0.9, 0.25 / 0.9, 0.15 / 0.9, 0])]                  # 0.75 before: just below
    params = [ctx.params(**kw) for kw, _ in cases]
    got = fast_probs(ctx, ctx.sampler(), ctx.tensor([row] * len(cases)), params, [[]] * len(cases))
    for i, (kw, expected) in enumerate(cases):
        if (got[i] - torch.tensor(expected)).abs().max() > 1e-5 or got[i].isnan().any():
            raise Fail(f"FastSampler.filtered_probs(log {PROBS}, {kw}) -> {fmt_vec(got[i])}, expected {fmt_vec(expected)}",
                       ctx.t(f"保留集合应为 {fmt_set(oracle.kept(expected))}：用“之前的累计质量” cumsum − p 判断",
                             f"the kept set is {fmt_set(oracle.kept(expected))}: decide on the mass before a token, cumsum - p"),
                       where="FastSampler.filtered_probs")


@check("F4", "逐位批不变：别人的 K、B 不影响你的概率和 token（博客 bug 3）", "bit-for-bit batch invariance: peers' K and B change nothing (blog bug 3)",
       hint=("p08-fast", 1, "q5"), problems=FAST)
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
    peer_sets = {"peers with a larger top_k": [P(top_k=500, seed=9)] * 5,
                 "top-p-only peers on flat rows": [P(top_p=0.99, seed=10 + i) for i in range(5)],
                 "64 random peers": [random_params(ctx, rng, vocab) for _ in range(64)]}
    for name, peers in peer_sets.items():
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
                raise Fail(f"FastSampler.filtered_probs: row ({params_text(target)}) alone vs at position {pos} among {name}: "
                           f"max |difference| {diff:.2e}, kept {int((alone > 0).sum())} vs {int((mixed > 0).sum())} tokens",
                           ctx.t("逐位相同才算批不变：归约的长度、窗口大小都不能取决于同伴", "bit-for-bit or not invariant: no reduction length "
                                 "or window size may depend on the peers"), where="FastSampler.filtered_probs")
            ids = [f"p{j}" for j in range(pos)] + ["t"] + [f"p{j}" for j in range(pos, len(peers))]
            tokens_alone = [ctx.sample(alone_sampler, row[None].to(ctx.device), ["t"], [target], [histories[t]])[0] for _ in range(4)]
            tokens_mixed = [ctx.sample(batch_sampler, batch_rows, ids, batch_params, batch_prev)[pos] for _ in range(4)]
            if tokens_alone != tokens_mixed:
                raise Fail(f"request ({params_text(target)}), V={vocab}: alone -> {tokens_alone}, at position {pos} among {name} -> {tokens_mixed}",
                           ctx.t("filtered_probs 单独和在 batch 里逐位相同，token 却不同：抽样取决于同伴。要么每步消费的随机数取决于 K 或 B，"
                                 "要么 sample() 没有按 filtered_probs 报告的分布抽（见 F6）",
                                 "filtered_probs is bit-identical alone and in the batch, yet the tokens differ: the draw depends "
                                 "on the peers. Either the randomness a seeded row consumes per step depends on K or B, or "
                                 "sample() does not draw from what filtered_probs reports (see F6)"),
                           where="FastSampler.sample")


@check("F5", "速度：同一次运行里比参考解的逐行循环和全词表排序都快（seed 004 的场景）",
       "speed: faster than the reference loop and the full-vocab sort, measured in the same run (seed 004's case)",
       hint=("p08-fast", 1, "q1"), problems=FAST)
def f5_speed_against_reference_loop(ctx):
    from course.bench.baselines import FullSortSampler
    from course.bench import time_many

    ref = load_solution(problems.get("p08"))
    batch, vocab, over_loop, over_sort = 64, 50257, 3.0, 2.0
    logits = zipf_logits(torch.Generator().manual_seed(7), batch, vocab).to(ctx.device)
    params = [ctx.params(top_k=40, top_p=0.9, seed=i) for i in range(batch)]
    ref_params = [ref.SamplingParams(top_k=40, top_p=0.9, seed=i) for i in range(batch)]
    ids, prev = list(range(batch)), [[] for _ in range(batch)]
    fast, slow, full_sort = ctx.sampler(), ref.Sampler(), FullSortSampler()
    ctx.sample(fast, logits, ids, params, prev)
    ms = time_many({"fast": lambda: fast.sample(logits, ids, params, prev),            # round robin: a busy machine
                    "loop": lambda: slow.sample(logits, ids, ref_params, prev),        # slows all three alike
                    "sort": lambda: full_sort.sample(logits, ids, ref_params, prev)}, repeat=5, device=ctx.device)
    measured = (f"B=64, V=50257, top_k=40, top_p=0.9: FastSampler.sample {ms['fast']:.2f} ms, reference loop {ms['loop']:.2f} ms "
                f"({ms['loop'] / ms['fast']:.1f}x), full-vocab sort {ms['sort']:.2f} ms ({ms['sort'] / ms['fast']:.1f}x)")
    ctx.notes.append(measured)
    if ms["loop"] / ms["fast"] < over_loop or ms["sort"] / ms["fast"] < over_sort:
        raise Fail(f"{measured}; expected at least {over_loop:.0f}x the loop and {over_sort:.0f}x the full sort",
                   ctx.t("还有按行的 Python 循环，或者对整个词表排序？在 [B, K] 的窗口里做",
                         "still a per-row Python loop, or a sort of the whole vocabulary? work in the [B, K] window"),
                   where="FastSampler.sample")
