"""Acceptance check I1: batch invariance. A seeded request's tokens are the same alone and inside shuffled,
changing batches; when they are not, the scenario that fails (and a smaller one that passes) names the cause."""
from course import drive, oracle
from course.grader.checks import RAISE_AS_IS, Fail, check
from tests.p08.context import params_text
from tests.p08 import diagnose
from tests.p08.draws import runs



def sample_fn(ctx):
    return lambda sampler, logits, ids, params, prev: ctx.sample(sampler, logits, ids, params, prev)


def peer_params(ctx):
    """A random peer: seeded or not, greedy or sampled, with or without filters and penalty."""
    def make(rng):
        kind = rng.randrange(4)
        if kind == 0:
            return ctx.params()
        if kind == 1:
            return ctx.params(temperature=0.0, repetition_penalty=rng.choice([1.0, 1.3]))
        return ctx.params(seed=rng.randrange(10_000), temperature=rng.choice([0.5, 1.0, 1.6]),
                          top_k=rng.choice([-1, 1, 3, 20, 100]), top_p=rng.choice([1.0, 0.5, 0.9]),
                          repetition_penalty=rng.choice([1.0, 1.2]))
    return make


# ---- I1 ----------------------------------------------------------------------------------------------
SCENARIOS_ZH = {  # I1's scenarios by their English names, as a Chinese report names them
    "one unseeded peer": "一个无 seed 的同伴",
    "one seeded peer": "一个有 seed 的同伴",
    "two requests with the same seed": "两个 seed 相同的请求",
    "seed=0 beside unseeded peers": "seed=0 旁边是无 seed 的同伴",
    "a peer row whose logits are near 120": "一个 logits 在 120 附近的同伴行",
    "peers that join, leave and change": "同伴加入、离开、换参数",
    "joining a sampler that has served others for 5 steps": "加入一个已经为别的请求服务了 5 步的 sampler",
    "targets that sit some steps out (not scheduled) and come back": "目标请求有几步不在 batch 里（没被调度），之后回来",
}


@check("I1", "批不变：batch 乱序、同伴进出、换参数，结果与单独运行逐个相同",
       "batch invariance under shuffled, changing peers", hint=("p08", 1, "q7"))
def i1_batch_invariance_under_shuffled_peers(ctx):
    vocab, steps = 48, 12
    P = ctx.params
    targets = [("t0", P(temperature=0.8, top_k=6, seed=11), 1), ("t1", P(temperature=1.3, top_p=0.8, seed=12), 2),
               ("t2", P(repetition_penalty=1.4, seed=13), 3), ("t3", P(temperature=0.0, seed=14), 4),
               ("t4", P(seed=123), 5), ("t5", P(seed=123, top_k=10, top_p=0.9), 6)]
    scenarios = [  # smallest first, so the report shows the smallest failing input
        ("one unseeded peer", targets[:1], drive.Traffic(lambda rng: P(), max_peers=1, join=1.0, leave=0.0), 4),
        ("one seeded peer", targets[:1], drive.Traffic(lambda rng: P(seed=11), max_peers=1, join=1.0, leave=0.0), 4),
        ("two requests with the same seed", [targets[4], ("t4b", P(seed=123), 5)], drive.Traffic(lambda rng: P(), 0), 4),
        ("seed=0 beside unseeded peers", [("z0", P(seed=0, top_k=20), 7)],
         drive.Traffic(lambda rng: P(), max_peers=2, join=1.0, leave=0.0), 4),
        ("a peer row whose logits are near 120", targets[:2] + targets[4:5],
         drive.Traffic(lambda rng: P(seed=77, top_p=0.9), max_peers=1, join=1.0, leave=0.0, shift=120.0), 4),
        ("peers that join, leave and change", targets, drive.Traffic(peer_params(ctx)), steps),
        ("joining a sampler that has served others for 5 steps", targets[:3], drive.Traffic(peer_params(ctx)), 6),
        ("targets that sit some steps out (not scheduled) and come back", targets[:4],
         drive.Traffic(peer_params(ctx), sit_out=0.4), 8),
    ]
    for name, group, traffic, n in scenarios:
        shown = ctx.t(SCENARIOS_ZH[name], name)                              # the scenario in the report's language
        mismatch = first_mismatch(ctx, group, traffic, n, vocab, warmup=5 if name.startswith("joining") else 0)
        if mismatch is None:
            continue
        lines, hint = mismatch, ("p08", 1, "q7")
        diagnose.earlier_step_first(ctx, ctx.t(f"场景“{shown}”：", f"scenario '{shown}': ") + lines[0], stream=True, order=False)              # e.g. the output's order
        if name.startswith("seed=0") and first_mismatch(ctx, [("z1", P(seed=1, top_k=20), 7)], traffic, n, vocab) is None:
            why = ctx.t("同样的场景 seed=1 没问题，seed=0 就不行：0 也是一个 seed（`if not seed` / `if params.seed:` 把 0 当成了没有 seed，要写 `is None`）",
                        "the same scenario with seed=1 passes, with seed=0 it fails: 0 is a seed too (`if not seed` / "
                        "`if params.seed:` treat 0 as no seed; test `seed is None`)")
            hint = ("p08", 1, "q6")
        elif traffic.shift and first_mismatch(ctx, group, drive.Traffic(traffic.make_params, max_peers=1, join=1.0, leave=0.0),
                                              n, vocab) is None and not runs(ctx, (drive.row_for(10_000, 0, vocab) + 120.0)[None].to(ctx.device), top_p=0.9):
            why = ctx.t("一行 logits 在 120 附近时，单独采样也会崩：exp 在 fp32 里溢出（e^89 = inf）；先减去这一行的最大值",
                        "a row whose logits are near 120 crashes even alone: exp overflows in fp32 (e^89 = inf); subtract "
                        "the row's max first")
            hint = ("p08", 2, "traps")
        elif traffic.shift and first_mismatch(ctx, group, drive.Traffic(traffic.make_params, max_peers=1, join=1.0, leave=0.0),
                                              n, vocab) is None:
            why = ctx.t("同伴的 logits 在 0 附近时没问题，在 120 附近时就变了：有个 max 或 sum 是跨整个 batch 算的，要按行（dim=-1）",
                        "with the peer's logits near 0 it passes, near 120 it fails: a max or a sum is taken over the whole "
                        "batch; take it per row (dim=-1)")
            hint = ("p08", 2, "traps")
        elif not isinstance(mismatch, Mismatch):                 # sample() raised in the mixed run
            why, hint = crash_in_batch(ctx, vocab), ("p08", 1, "q5")
        elif leak := filter_leak(ctx, mismatch, vocab):
            why = ctx.t(f"{leak}：某一行的过滤/penalty 受到了同批其他行的影响（整批共用的 k、p、max，或历史混在一起），不是随机数的问题",
                        f"{leak}: one row's filtering or penalty depends on the other rows (a batch-wide k, p or max, or mixed "
                        f"histories), not a matter of random numbers")
            hint = ("p08", 2, "traps")
        elif traffic.leave > 0 and first_mismatch(ctx, group, drive.Traffic(traffic.make_params, traffic.max_peers,
                                                                            traffic.join, 0.0, traffic.sit_out), n, vocab) is None:
            why = ctx.t("同伴不离开（不调用 free）时没问题：free(某个同伴) 影响到了别的请求；free 只能删掉那一个 req_id 的 generator",
                        "with peers that never leave (no free) it passes: free(a peer) changed another request; free must "
                        "drop that one req_id's generator and nothing else")
            hint = ("p08", 1, "q6")
        elif penalty_leak(ctx, mismatch, traffic, n, vocab):
            why = ctx.t("同样的场景把它自己的 repetition_penalty 关掉（1.0）就没问题：它的 penalty 用到了同批其他行的历史（历史混在一起，或补齐用的 id 也被罚了）",
                        "the same scenario with its own repetition_penalty off (1.0) passes: its penalty uses the other rows' "
                        "histories (histories mixed between rows, or the id used to pad them penalised too)")
            hint = ("p08", 2, "traps")
        elif peer := params_leak(ctx, mismatch, vocab):
            why = ctx.t(f"和它参数相同的同伴不改变它，一个 {params_text(peer)} 的同伴会：它的过滤或抽取用到了同伴的参数"
                        "（整批共用的 k、p、温度，或随同伴参数变化的抽取次数）",
                        f"peers with its own params do not change it, one peer with {params_text(peer)} does: its filtering "
                        f"or draw uses the peers' params (a batch-wide k, p or temperature, or a number of draws that depends "
                        f"on them)")
            hint = ("p08", 2, "traps")
        else:
            why = ctx.t("抽到的仍是这一行自己的参数允许的 token，却随同伴变了：带 seed 的请求只能从它自己的 generator 抽，而且每步消耗的随机数不能取决于"
                        "这个 batch（不能整批共用一个、不能按 seed 共用、不能对 [B, V] 调一次 multinomial、不能按最宽的行取窗口）",
                        "the token is still one its own params allow, yet it changed with the peers: a seeded request draws only from its own generator, and "
                        "the randomness it consumes must not depend on the batch (not one generator for the batch, not one "
                        "per seed, not one multinomial over [B, V], not a draw over a width set by the widest row)")
            unseeded_peer = name == "one unseeded peer"
            if unseeded_peer:
                why += ctx.t("（这里唯一的同伴没有 seed：没 seed 的请求用共享 generator，不能动到带 seed 的）",
                             " (the only peer here is unseeded: unseeded requests use the shared generator, never a seeded one's)")
        raise Fail(ctx.t(f"场景“{shown}”：", f"scenario '{shown}': ") + lines[0], lines[1], why, hint=hint, where=f"{ctx.sampler_name}.sample")


def crash_in_batch(ctx, vocab):
    """Why sample() raised in a mixed batch while the targets ran alone: a request with the default params (the
    peers' params in most scenarios) is tried alone."""
    row = drive.row_for(10_000, 0, vocab)[None].to(ctx.device)
    try:
        ctx.sample(ctx.sampler(), row, ["d"], [ctx.params()], [[]])
    except Exception as exc:  # noqa: BLE001 - that is the established cause
        if isinstance(exc, RAISE_AS_IS):
            raise
        return ctx.t(f"单独一个默认参数的请求（top_k=-1、top_p=1、temperature=1）也会抛出 {type(exc).__name__}：这里的同伴就是默认参数；"
                     f"-1 和 1 表示关闭",
                     f"a lone request with the default params (top_k=-1, top_p=1, temperature=1) raises {type(exc).__name__} "
                     f"too, and the peers here have the default params: -1 and 1 mean off")
    return ctx.t("目标请求单独运行没问题，和同伴放在一个 batch 里就抛异常了（上面一行是出错那一步的 batch）",
                 "the targets alone run; in a batch with their peers sample() raises (the line above names the batch of "
                 "the failing step)")


def first_mismatch(ctx, group, traffic, steps, vocab, warmup=0):
    """None when every target draws the same tokens mixed as alone; else two lines saying where they differ.
    An exception inside the mixed run (e.g. NaN from a batch-wide max) counts as a mismatch."""
    log = []
    try:
        together = drive.mixed(ctx.sampler, sample_fn(ctx), group, steps, vocab, ctx.device, traffic, seed=8, log=log,
                               warmup=warmup)
    except Fail:
        raise
    except Exception as exc:  # noqa: BLE001 - a mismatch if the targets run alone without it, else the crash itself
        if isinstance(exc, RAISE_AS_IS):
            raise
        if (peer := getattr(exc, "freed", None)) is not None:
            kind = ctx.t("没有 seed，没有 generator", "unseeded: it has no generator") if peer.params.seed is None else \
                ctx.t(f"seed={peer.params.seed}", f"seed={peer.params.seed}")
            raise Fail(f"{ctx.sampler_name}.free({peer.req_id!r}) " + ctx.t("抛出", "raised") + f" {type(exc).__name__}: "
                       f"{str(exc)[:100]} ({kind})",
                       ctx.t("free 一个没有 generator 的 id（没 seed 的、从没采样过的、已经 free 过的）什么也不做：用 dict.pop(req_id, None)",
                             "free of an id that has no generator (unseeded, never sampled, or freed already) does nothing: "
                             "dict.pop(req_id, None)"), hint=("p08", 1, "q6"), where=f"{ctx.sampler_name}.free") from None
        for req_id, params, row_seed in group:
            drive.solo(ctx.sampler, sample_fn(ctx), req_id, params, row_seed, steps, vocab, ctx.device)
        return [ctx.t(f"在混合的 batch 里 {ctx.sampler_name}.sample 抛出 {type(exc).__name__}: {str(exc)[:100]}",
                      f"in mixed batches {ctx.sampler_name}.sample raised {type(exc).__name__}: {str(exc)[:100]}"),
                ctx.t(f"（出错那一步的 batch：{log[-1][1] if log else '?'}）", f"(batch of the failing step: {log[-1][1] if log else '?'})")]
    for req_id, params, row_seed in group:
        alone = drive.solo(ctx.sampler, sample_fn(ctx), req_id, params, row_seed, steps, vocab, ctx.device)
        if together[req_id] != alone:
            step = next(i for i, (a, b) in enumerate(zip(alone, together[req_id])) if a != b)
            batch = [ids for _, ids in log if req_id in ids][step]
            return Mismatch([ctx.t(f"请求 {req_id!r}（{params_text(params)}）单独 -> {alone}",
                                   f"request {req_id!r} ({params_text(params)}) alone -> {alone}"),
                             ctx.t(f"在打乱的 batch 里 -> {together[req_id]}；第一次不同在它的第 {step} 次抽取，batch {batch}",
                                   f"in shuffled batches -> {together[req_id]}; first difference at its draw {step}, batch {batch}")],
                            params, row_seed, alone[:step], together[req_id][step])
    return None


class Mismatch(list):
    """The two lines of a mismatch, plus what it takes to re-derive the row: params, row_seed, history, token."""

    def __init__(self, lines, params, row_seed, history, mixed_token):
        super().__init__(lines)
        self.params, self.row_seed, self.history, self.mixed_token = params, row_seed, history, mixed_token


def penalty_leak(ctx, mismatch, traffic, steps, vocab):
    """True when the mismatched request, alone among its scenario's peers, still changes, and no longer does with
    its repetition penalty off: the penalty step is what the peers reach."""
    p = mismatch.params if isinstance(mismatch, Mismatch) else None
    if p is None or p.repetition_penalty == 1.0 or p.temperature < 1e-5:
        return False
    off = ctx.params(seed=p.seed, **dict(diagnose.knobs(p), repetition_penalty=1.0))
    return (first_mismatch(ctx, [("t", p, mismatch.row_seed)], traffic, steps, vocab) is not None
            and first_mismatch(ctx, [("t", off, mismatch.row_seed)], traffic, steps, vocab) is None)


def params_leak(ctx, mismatch, vocab):
    """The first peer whose params change the mismatched request when it is its only peer, provided peers with the
    request's own params (unseeded, or another seed) do not; else None. Only the steps up to the mismatch are run."""
    if not isinstance(mismatch, Mismatch):
        return None
    target, steps, p = [("t", mismatch.params, mismatch.row_seed)], len(mismatch.history) + 1, mismatch.params
    own = diagnose.knobs(p)

    def changes(peer):
        one = drive.Traffic(lambda rng: peer, max_peers=1, join=1.0, leave=0.0)
        return first_mismatch(ctx, target, one, steps, vocab) is not None
    if any(changes(ctx.params(seed=seed, **own)) for seed in (None, 4242)):
        return None
    others = (ctx.params(temperature=0.0), ctx.params(seed=99, top_k=3), ctx.params(seed=98, top_p=0.5),
              ctx.params(seed=97, temperature=0.4), ctx.params(seed=96, repetition_penalty=1.5))
    return next((peer for peer in others if changes(peer)), None)


def filter_leak(ctx, mismatch, vocab):
    """A sentence when the mixed run's token is one the row's own rule rules out (probability 0, or not the
    argmax of a greedy row): then the peers changed the filtering, not the randomness. Else None."""
    if not isinstance(mismatch, Mismatch):
        return None
    row = drive.row_for(mismatch.row_seed, len(mismatch.history), vocab).tolist()
    probs = oracle.probs_for(row, mismatch.params, mismatch.history)
    if probs[mismatch.mixed_token] == 0 and mismatch.mixed_token not in oracle.ambiguous_tokens(row, mismatch.params, mismatch.history):
        return ctx.t(f"在 batch 里这一行得到 token {mismatch.mixed_token}，而按它自己的参数这个 token 的概率是 0",
                     f"in the batch this row produced token {mismatch.mixed_token}, which its own params give probability 0")
    return None
