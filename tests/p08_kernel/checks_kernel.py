"""Acceptance checks G1-G5 of p08-kernel: the whole kernel, through KernelSampler, on small shapes (the interpreter
runs a row in tens of milliseconds). G1 the reference's distribution, G2 bit-for-bit batch invariance, G3 the
launches, G4 the block size, G5 the draw at the stream's own uniform. A failure first re-runs the learner's steps on
the failing row (causes.py) and names the first wrong one."""
import random

import torch

from course import oracle, problems
from course.grader.checks import Fail, _noting, check
from course.kernel_interp import recording
from course.kernel_batch import run_kernel
from course.loader import load_solution
from course.streams import stream_uniform
from tests.p08.context import params_text
from tests.p08_fast.batches import heterogeneous_batch, order_batch
from course import kernel_oracle as expect
from tests.p08_kernel.causes import row_cause
from tests.p08_kernel.checks_steps import learners_block
from tests.p08_kernel.checks_steps_mass import row_plan

INF = float("inf")


def kernel_call(ctx, sampler, what, logits, params, prev, req_ids=None):
    """sampler.filtered_probs(...) [B, V] on the CPU, or sample(...) tokens (a list), with errors saying which call."""
    batch, vocab = logits.shape
    called = f"called KernelSampler.{what}(logits [{batch}, {vocab}] {str(logits.dtype)[6:]}, params[0]: {params_text(params[0])})"
    try:
        if what == "sample":
            return ctx.sample(sampler, logits.to(ctx.device), req_ids or [f"r{i}" for i in range(batch)], params, prev)
        out = sampler.filtered_probs(logits.to(ctx.device), params, prev)
    except Fail:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ctx.kernel_error(exc, called, f"KernelSampler.{what}") from None
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != (batch, vocab):
        raise Fail(f"{called} -> {type(out).__name__}", ctx.t(f"期望：浮点张量 [{batch}, {vocab}]",
                                                             f"expected a floating tensor [{batch}, {vocab}]"))
    return out.detach().float().cpu()


def tie_rows(ctx):
    """Rows whose kept set is decided by equal values or exact boundaries (the fp32 sums are exact there)."""
    g = torch.Generator().manual_seed(41)
    rows, params = [], []
    ladder = torch.cat([torch.tensor([5.0, 4.0, 3.0, 3.0, 3.0]), torch.linspace(-1.0, -6.0, 59)])
    rows.append(ladder), params.append(ctx.params(top_k=3, seed=1))                      # k-th tied with the next two
    rows.append(torch.zeros(64)), params.append(ctx.params(top_p=0.5, seed=2))           # 32 of 64 equal values stay
    rows.append(torch.zeros(64)), params.append(ctx.params(top_k=3, top_p=0.25, seed=3))
    twin = torch.cat([torch.tensor([5.0, 5.0]), torch.randn(62, generator=g) - 8.0])
    rows.append(twin), params.append(ctx.params(top_k=2, top_p=0.5, seed=4))              # mass before = top_p: goes
    tied = torch.full((64,), -4.0)
    tied[[40, 31]] = 6.0
    rows.append(tied), params.append(ctx.params(top_p=1e-30, seed=5))                     # the lower id of the maxima
    finite = torch.full((64,), -INF)
    finite[[3, 17, 50]] = torch.tensor([1.0, 2.0, 0.5])
    rows.append(finite), params.append(ctx.params(top_k=10, seed=6))                      # k past the finite values
    return torch.stack(rows), params, [[] for _ in rows]


def batches(ctx):
    ob = order_batch(ctx, vocab=1000)
    return [heterogeneous_batch(ctx, 51, 12, 1000), heterogeneous_batch(ctx, 52, 4, 3000, torch.bfloat16),
            heterogeneous_batch(ctx, 53, 4, 2000, torch.float16), tie_rows(ctx), (ob[0][:3], ob[1][:3], ob[2][:3])]


@check("G1", "过滤后的分布与参考解一致（异构 batch、并列、精确边界；每个 token 误差 ≤ 1e-6，0 的位置相同）",
       "the filtered distribution equals the reference's (mixed batches, ties, exact boundaries; <= 1e-6 per token, "
       "the same zeros)", hint=("p08-kernel", 1, "q2"))
def g1_filtered_distribution_equals_reference(ctx):
    ref = load_solution(problems.get("p08"))
    for logits, params, prev in batches(ctx):
        got = kernel_call(ctx, ctx.sampler(), "filtered_probs", logits, params, prev)
        for i, p in enumerate(params):
            want = oracle.reference_probs(ref, logits[i], p, prev[i])
            exact = oracle.reference_probs(ref, logits[i], p, prev[i], torch.float64)
            diff = torch.minimum((got[i] - want).abs(), (got[i].double() - exact).abs().float()).max().item()
            zeros = ((got[i] == 0) != (want == 0)).nonzero().flatten().tolist()
            if diff <= 1e-6 and not zeros and not torch.isnan(got[i]).any():
                continue
            worst = zeros[:3] or [int((got[i] - want).abs().argmax())]
            tokens = ctx.t("；", "; ").join(ctx.t(f"token {c}：你的 {got[i, c].item():.4g}，参考解 {want[c].item():.4g}",
                                                  f"token {c}: yours {got[i, c].item():.4g}, reference {want[c].item():.4g}")
                                            for c in worst)
            batch, vocab = logits.shape
            raise Fail(f"called KernelSampler.filtered_probs(logits [{batch}, {vocab}] {str(logits.dtype)[6:]}, ...), "
                       + ctx.t(f"第 {i} 行（{params_text(p)}）：{tokens}", f"row {i} ({params_text(p)}): {tokens}"),
                       ctx.t(f"参考解保留 {int((want > 0).sum())} 个 token，你的保留 {int((got[i] > 0).sum())} 个",
                             f"the reference keeps {int((want > 0).sum())} tokens, yours {int((got[i] > 0).sum())}"),
                       *(row_cause(ctx, logits[i], p, prev[i]) or [alone_line(ctx, logits, params, prev, i, got[i])]),
                       where="KernelSampler.filtered_probs")


def alone_line(ctx, logits, params, prev, i, in_batch) -> str:
    """Every step is right on the row alone: is the row right alone, and wrong only in its batch?"""
    alone = kernel_call(ctx, ctx.sampler(), "filtered_probs", logits[i:i + 1], params[i:i + 1], prev[i:i + 1])[0]
    if len(logits) > 1 and not torch.equal(alone, in_batch):
        return ctx.t("这一行单独算是对的，在这个 batch 里就错了：kernel 读到了别的行，或者一行的启动参数跟着 batch 变（看 G2、G3）",
                     "this row is right alone and wrong in this batch: the kernel reads other rows, or a row's launch "
                     "follows the batch (see G2, G3)")
    return ctx.t("你的每一步单独在这一行上都是对的：看看 sample_kernel（给定的代码）是否被改过", "each of your steps is "
                 "right on this row alone: check whether sample_kernel (given code) was changed")


# ---- G2 batch invariance --------------------------------------------------------------------------------
def invariance_case(ctx):
    """Targets (seeded rows of V = 1500: a long row spans several blocks at any block size) and their peers."""
    g = torch.Generator().manual_seed(43)
    vocab = 1500
    targets = torch.randn(4, vocab, generator=g) * 2
    targets[1] *= 0.15                                                        # flat: a long nucleus
    t_params = [ctx.params(top_k=40, top_p=0.9, temperature=0.8, seed=1), ctx.params(top_p=0.7, seed=2),
                ctx.params(top_k=7, seed=3), ctx.params(repetition_penalty=1.4, seed=4)]
    t_prev = [[], [], [], [1, 2, 3]]
    peers = torch.randn(12, vocab, generator=g)
    peers[0] *= 1e-3                                                         # flat
    peers[1, ::5] = -INF
    peers[2] = peers[2] * 1e30
    p_params = [ctx.params(top_p=0.999), ctx.params(top_k=vocab - 1), ctx.params(top_p=0.5, temperature=2.0),
                ctx.params(temperature=0.0), ctx.params(), ctx.params(top_k=1), ctx.params(top_k=499, top_p=0.95),
                ctx.params(temperature=1e-4), ctx.params(repetition_penalty=2.0), ctx.params(top_p=1e-9),
                ctx.params(top_k=250), ctx.params(temperature=5.0)]
    p_prev = [[]] * 8 + [[5, 6, 7]] + [[]] * 3
    return targets, t_params, t_prev, peers, p_params, p_prev


@check("G2", "批不变，逐位相同：同一行单独、在 2 到 16 行的 batch 里、换同伴、打乱顺序，概率和 token 都一样",
       "batch invariance, bit for bit: a row alone, in batches of 2 to 16, beside other peers, shuffled: the same "
       "probabilities and tokens", hint=("p08-kernel", 1, "q1"))
def g2_batch_invariance(ctx):
    targets, t_params, t_prev, peers, p_params, p_prev = invariance_case(ctx)
    alone = [kernel_call(ctx, ctx.sampler(), "filtered_probs", targets[i:i + 1], t_params[i:i + 1], t_prev[i:i + 1])[0]
             for i in range(len(targets))]
    tokens = [kernel_call(ctx, ctx.sampler(), "sample", targets[i:i + 1], t_params[i:i + 1], t_prev[i:i + 1],
                          [f"t{i}"])[0] for i in range(len(targets))]
    rng = random.Random(7)
    for size in (3, 16):
        mine = list(range(min(len(targets), size - 1)))                    # at least one peer beside the targets
        rows = mine + [len(targets) + j for j in rng.sample(range(len(peers)), size - len(mine))]
        rng.shuffle(rows)
        logits = torch.cat([targets, peers])[rows]
        params = [(t_params + p_params)[r] for r in rows]
        prev = [(t_prev + p_prev)[r] for r in rows]
        ids = [f"t{r}" if r < len(targets) else f"p{r}" for r in rows]
        probs = kernel_call(ctx, ctx.sampler(), "filtered_probs", logits, params, prev)
        drawn = kernel_call(ctx, ctx.sampler(), "sample", logits, params, prev, ids)
        for at, r in enumerate(rows):
            if r >= len(targets):
                continue
            moved = (probs[at] != alone[r]).nonzero().flatten().tolist()
            if moved or drawn[at] != tokens[r]:
                what = (ctx.t(f"概率在 {len(moved)} 列上变了（第 {moved[:4]} 列…）", f"its probabilities moved in {len(moved)} "
                              f"columns ({moved[:4]}...)") if moved else
                        ctx.t(f"token 从 {tokens[r]} 变成 {drawn[at]}", f"its token went from {tokens[r]} to {drawn[at]}"))
                raise Fail(ctx.t(f"第 {r} 个目标行（{params_text(t_params[r])}）单独一行时和放在 {size} 行的 batch 的第 {at} 行时：{what}",
                                 f"target row {r} ({params_text(t_params[r])}) alone, then as row {at} of a batch of {size}: "
                                 f"{what}"),
                           ctx.t("同一行的结果不能依赖同伴：每个 program 只读自己那一行，块大小、warps、切分只由 V 和常数决定，"
                                 "决定保留集合的和用整数", "a row's result may not depend on its peers: each program reads "
                                 "its own row only, its block, warps and splits follow from V and constants, and the sums "
                                 "that decide its kept set are integers"), *launch_lines(ctx, size),
                           where="KernelSampler.sample")


def launch_lines(ctx, size) -> list:
    """'fix K1.launch first' when the file's launch_config gives a row another program at this batch size."""
    try:
        one, many = ctx.fn("launch_config")(1, 1500), ctx.fn("launch_config")(size, 1500)
    except Exception:  # noqa: BLE001
        return []
    if (one[0][1:], one[1], one[2]) == (many[0][1:], many[1], many[2]):
        return []
    return [f"launch_config(1, 1500) -> {one}; launch_config({size}, 1500) -> {many}",
            ctx.t("原因在第 1 步 launch_config：先修好 K1.launch", "the cause is step 1, launch_config: fix K1.launch first")]


# ---- G3 launches ----------------------------------------------------------------------------------------
@check("G3", "启动记录：一个 batch 一次启动；每行的 program（块、warps、切分）在任何 B 下都一样",
       "the launches: one per batch; a row's program (block, warps, splits) is the same at every B",
       hint=("p08-kernel", 1, "q1"))
def g3_launches(ctx):
    g = torch.Generator().manual_seed(47)
    seen = {}
    for batch in (1, 2, 5, 16):
        logits = torch.randn(batch, 200, generator=g)
        params = [ctx.params(top_k=20, top_p=0.9, seed=i) for i in range(batch)]
        with recording() as launches:
            kernel_call(ctx, ctx.sampler(), "sample", logits, params, [[]] * batch)
        if len(launches) != 1:
            raise Fail(ctx.t(f"调用 KernelSampler.sample(logits [{batch}, 200], ...)：启动了 {len(launches)} 次 kernel",
                             f"called KernelSampler.sample(logits [{batch}, 200], ...): {len(launches)} kernel launches"),
                       ctx.t("一个 batch 启动一次：每行一个 program", "one launch per batch: a program per row"),
                       *[launch.text() for launch in launches[:3]], where="launch_config")
        launch = launches[0]
        if launch.grid[0] != batch:
            raise Fail(ctx.t(f"B = {batch} 的启动：{launch.text()}", f"the launch at B = {batch}: {launch.text()}"),
                       ctx.t(f"grid 的第一维要等于行数 {batch}", f"the grid's first axis must be the row count, {batch}"),
                       where="launch_config")
        seen[batch] = launch
        if launch.per_row() != seen[1].per_row():
            raise Fail(ctx.t(f"B = 1 的启动：{seen[1].text()}；B = {batch} 的启动：{launch.text()}",
                             f"the launch at B = 1: {seen[1].text()}; at B = {batch}: {launch.text()}"),
                       ctx.t("一行的 program 跟着 batch 大小变了：块、warps 和每行的切分只能由 V 和常数决定",
                             "a row's program follows the batch size: the block, warps and splits per row may follow "
                             "from V and constants only"), *launch_lines(ctx, batch)[1:], where="launch_config")


# ---- G4 block size --------------------------------------------------------------------------------------
@check("G4", "块大小换成 256 或 2048，每一位都不变（GPU 调参会改块大小；浮点数的和会跟着变）",
       "another block size (256, 2048) moves no bit (a GPU's tuning changes it; a float sum would move)",
       hint=("p08-kernel", 1, "q4"))
def g4_block_size(ctx):
    g = torch.Generator().manual_seed(53)
    logits = torch.cat([torch.randn(3, 1500, generator=g) * 2, torch.randn(2, 1500, generator=g) * 1e-3])
    params = [ctx.params(top_p=0.9, seed=1), ctx.params(top_k=300, top_p=0.95, seed=2), ctx.params(seed=3),
              ctx.params(top_p=0.5, seed=4), ctx.params(top_p=0.99, temperature=0.7, seed=5)]
    prev = [[]] * len(params)
    config = _noting("called launch_config(5, 1500)", ctx.fn("launch_config"), 5, 1500)
    kernel = ctx.fn("sample_kernel")
    results = {}
    for block in dict.fromkeys((config[1], 256, 2048)):
        def cfg(batch, vocab, block=block):
            return (batch,), block, config[2]
        try:
            u = [stream_uniform(p.seed, 0) for p in params]
            results[block] = (run_kernel(kernel, cfg, logits.to(ctx.device), params, prev).cpu(),
                              run_kernel(kernel, cfg, logits.to(ctx.device), params, prev, u).cpu())
        except Exception as exc:  # noqa: BLE001
            raise ctx.kernel_error(exc, f"called sample_kernel on logits [5, 1500] at BLOCK={block}", "sample_kernel") from None
    base, first = config[1], results[config[1]]
    for block, (probs, tokens) in results.items():
        rows = [i for i in range(len(params)) if not torch.equal(probs[i], first[0][i]) or tokens[i] != first[1][i]]
        if rows:
            i = rows[0]
            raise Fail(ctx.t(f"同一个 batch 在 BLOCK={base} 和 BLOCK={block} 时：第 {i} 行（{params_text(params[i])}）的结果不同",
                             f"the same batch at BLOCK={base} and at BLOCK={block}: row {i} ({params_text(params[i])}) "
                             f"differs"),
                       ctx.t("保留集合、概率和 token 不能跟着块大小变：按块累加的浮点和会变（每块的和、加的顺序都变了），整数单位的和不会",
                             "the kept set, the probabilities and the token may not move with the block size: a float sum "
                             "over blocks does (each block's sum and the order of the adds change), a sum of integer units "
                             "does not"), *block_cause(ctx, logits[i], params[i], base, block), where="sample_kernel")


def block_cause(ctx, row, params, a, b) -> list:
    """Which of the file's steps gives another answer on this row at block a and at block b."""
    from course import kernel_probes as probes
    x = row.float()
    t, top_k, top_p = params.temperature, params.top_k if 0 < params.top_k < len(x) else 0, params.top_p
    scale, (top, _) = expect.scale_of(len(x)), expect.row_max(x, t)
    low = expect.kth(x, t, top_k) if top_k else -INF
    asks = [("K3.mass_at_least", lambda blk: probes.mass(ctx.step_fn("mass_at_least"), x[None], [t], [top], [low], scale,
                                                         blk, ctx.device).tolist())]
    if top_p < 1:
        q = expect.quota(top_p, expect.mass_at_least(expect.z_of(x, t), expect.numpy_units(expect.z_of(x, t), top, scale), low))
        asks.append(("K4.top_p_cut", lambda blk: [v.tolist() for v in probes.cut(
            ctx.step_fn("top_p_cut"), x[None], [t], [top], [q], scale, blk, ctx.device)]))
    for check_id, ask in asks:
        try:
            if ask(a) != ask(b):
                return [ctx.t(f"你的 {check_id.split('.')[1]} 在 BLOCK={a} 和 BLOCK={b} 时对这一行给出不同的结果：先修好 {check_id}",
                              f"your {check_id.split('.')[1]} gives this row another answer at BLOCK={a} and at "
                              f"BLOCK={b}: fix {check_id} first")]
        except Exception:  # noqa: BLE001
            return []
    return []


# ---- G5 the draw at the stream's uniform ------------------------------------------------------------------
@check("G5", "sample()：每行抽到的是它自己保留单位在流的 u 处的逆 CDF（连续几步）", "sample(): each row's token is the inverse "
       "CDF of its own kept units at its stream's u (over several steps)", hint=("p08-kernel", 1, "q6"))
def g5_draws_follow_the_stream(ctx):
    g = torch.Generator().manual_seed(59)
    logits = torch.randn(6, 300, generator=g) * 2
    params = [ctx.params(top_k=30, top_p=0.8, seed=11), ctx.params(top_p=0.6, seed=12), ctx.params(seed=13),
              ctx.params(temperature=0.0), ctx.params(top_k=5, temperature=1.5, seed=14), ctx.params(top_p=0.95, seed=15)]
    sampler = ctx.sampler()
    for step in range(3):
        got = kernel_call(ctx, sampler, "sample", logits, params, [[]] * len(params))
        for i, p in enumerate(params):
            x = logits[i]
            if p.temperature == 0.0:
                want = int(x.argmax())
            else:
                top_k = p.top_k if 0 < p.top_k < len(x) else 0
                plan = row_plan(ctx, x, p.temperature, top_k, p.top_p, learners_block(ctx, len(x)) or 1024)
                want = expect.draw(plan.z, plan.w, *plan.cut, stream_uniform(p.seed, step))
            if got[i] != want:
                raise Fail(ctx.t(f"第 {step + 1} 次调用 KernelSampler.sample，第 {i} 行（{params_text(p)}）-> {got[i]}",
                                 f"call {step + 1} of KernelSampler.sample, row {i} ({params_text(p)}) -> {got[i]}"),
                           ctx.t(f"期望第 {want} 列：这一行保留的单位在 u = stream_uniform({p.seed}, {step}) 处的逆 CDF",
                                 f"expected column {want}: the inverse CDF of this row's kept units at u = "
                                 f"stream_uniform({p.seed}, {step})") if p.temperature else
                           ctx.t(f"期望第 {want} 列：greedy 行取 argmax", f"expected column {want}: a greedy row takes the argmax"),
                           *row_cause(ctx, x, p, [], stream_uniform(p.seed, step) if p.temperature else None),
                           where="KernelSampler.sample")
