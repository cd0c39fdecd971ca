"""Acceptance check F9 of p08-fast: the contract details no other check reaches. The shared stream is keyed by
torch.initial_seed() (the grader runs every check with a non-zero torch seed), the draw keeps the stream's 53 bits
(stream positions found offline whose float64 uniform lands another token than its float32 rounding), and sample()
and filtered_probs() return ordinary tensors that a caller may update in place."""
import torch

from course.grader.checks import Fail, _noting, check, describe
from course.streams import stream_uniform

# (seed, V, params) whose first uniform lies just below k / 64 while its float32 rounding is k / 64 exactly: on 64
# equal weights the float64 uniform draws token k - 1, the float32 one token k (found by a search over seeds; the
# tokens are computed from stream_uniform below, not written here)
FINE_SEEDS = (1095905, 2602904, 7204975)
STEPS = 6


def _equal_rows(ctx):
    """(label, logits [n, V], params): 64 equal logits on the plain route, the top-k window and the top-p route."""
    P = ctx.params
    plain = torch.zeros(1, 64)                                                               # [1, 64]
    ladder = torch.cat([torch.zeros(2, 64), torch.full((2, 64), -30.0)], 1)                   # [2, 128]: 64 equal
    return [(ctx.t("64 个相等的 logits，不过滤", "64 equal logits, no filter"), plain, [P(seed=FINE_SEEDS[0])]),
            (ctx.t("64 个相等的 logits 和 64 个 -30：top_k=64 | top_p=0.999", "64 equal logits and 64 at -30: top_k=64 | top_p=0.999"),
             ladder,
             [P(top_k=64, seed=FINE_SEEDS[1]), P(top_p=0.999, seed=FINE_SEEDS[2])])]


def _unordinary(ctx, name, out):
    """Fail when out is an inference-mode tensor (a caller's `out += 1` raises)."""
    if isinstance(out, torch.Tensor) and out.is_inference():
        raise Fail(ctx.t(f"called FastSampler.{name}(...) -> 一个 inference 张量（out.is_inference() 为 True）：调用方的 "
                         f"`out += 1` 会报错 `Inplace update to inference tensor outside InferenceMode`",
                         f"called FastSampler.{name}(...) -> an inference tensor (out.is_inference() is True): the caller's "
                         f"`out += 1` raises 'Inplace update to inference tensor outside InferenceMode'"),
                   ctx.t(f"{name}() 要返回普通张量：在 torch.inference_mode() 块里算可以，返回前在块外 clone 一份（或者改用 torch.no_grad()）",
                         f"{name}() must return an ordinary tensor: compute inside torch.inference_mode() if you like, but "
                         f"return a clone made outside the block (or compute under torch.no_grad())"),
                   where=f"FastSampler.{name}")


@check("F9", "契约细节：无 seed 的流以 torch.initial_seed() 为 key；抽样用满 53 位；返回普通张量",
       "contract details: the shared stream keyed by torch.initial_seed(); the draw keeps 53 bits; ordinary tensors returned",
       hint=("p08-fast", 2, "s5"))
def f9_contract_details(ctx):
    P = ctx.params
    row = torch.zeros(1, 64, device=ctx.device)
    tokens = ctx.sampler().sample(row, ["r"], [P(seed=1)], [[]])
    _unordinary(ctx, "sample", tokens)
    _unordinary(ctx, "filtered_probs", _noting("called FastSampler.filtered_probs(logits [1, 64], ...)",
                                               ctx.sampler().filtered_probs, row, [P(top_k=5)], [[]]))
    _filtered_probs_draws_nothing(ctx)
    _low_precision_without_penalties(ctx)
    draws = {}
    for seed in (1, 2):                                                    # the shared stream follows torch's seed
        torch.manual_seed(seed)
        sampler = ctx.sampler()
        draws[seed] = [ctx.sample(sampler, row, ["u"], [P()], [[]])[0] for _ in range(12)]
    if draws[1] == draws[2]:
        raise Fail(ctx.t(f"新建的 FastSampler，一个无 seed 的请求，从 64 个相等的 logits 抽 12 次：torch.manual_seed(1) 之后 "
                         f"-> {draws[1]}，torch.manual_seed(2) 之后 -> 一样",
                         f"a fresh FastSampler, one unseeded request, 12 draws from 64 equal logits: after torch.manual_seed(1) "
                         f"-> {draws[1]}, after torch.manual_seed(2) -> the same"),
                   ctx.t("无 seed 的请求共用的那条流要以 torch.initial_seed() 为 key（像参考解的共享 generator 那样）：用常数做 key，"
                         "换了 torch 的 seed 也抽出同样的 token",
                         "the unseeded requests' shared stream is keyed by torch.initial_seed() (as the reference's shared "
                         "generator is seeded): keyed by a constant, it draws the same tokens whatever torch's seed"),
                   where="FastSampler.sample")
    for label, logits, params in _equal_rows(ctx):
        sampler, got = ctx.sampler(), []
        ids = [f"r{i}" for i in range(len(params))]
        for _ in range(STEPS):
            got.append(ctx.sample(sampler, logits.to(ctx.device), ids, params, [[]] * len(params)))
        for i, p in enumerate(params):
            mine = [step[i] for step in got]
            u64 = [stream_uniform(p.seed, n) for n in range(STEPS)]
            by64 = [int(u * 64) for u in u64]
            by32 = [int(float(torch.tensor(u, dtype=torch.float32)) * 64) for u in u64]
            plain = [n for n in range(STEPS) if by64[n] == by32[n]]
            if any(mine[n] != by64[n] for n in plain):
                continue                       # another stream than stream_uniform: this probe cannot tell its bits
            fine = [n for n in range(STEPS) if by64[n] != by32[n] and mine[n] != by64[n]]
            if fine:
                n = fine[0]
                as32 = float(torch.tensor(u64[n], dtype=torch.float32))
                raise Fail(ctx.t(f"{label}，{ctx.sampler_name}.sample，seed={p.seed}：抽到 {mine}；除第 {n} 步外，每一步都是"
                                 f"流的 uniform 给出的 token（int(u * 64)）",
                                 f"{label}, {ctx.sampler_name}.sample with seed={p.seed}: draws {mine}; at every step but "
                                 f"step {n} they are the token the stream's uniform gives (int(u * 64))"),
                           ctx.t(f"第 {n} 步：stream_uniform({p.seed}, {n}) = {u64[n]!r} -> token {by64[n]}；它舍入成 float32 "
                                 f"{as32!r} -> token {by32[n]}；你的 {mine[n]}",
                                 f"step {n}: stream_uniform({p.seed}, {n}) = {u64[n]!r} -> token {by64[n]}; its float32 rounding "
                                 f"{as32!r} -> token {by32[n]}; yours {mine[n]}"),
                           ctx.t("抽样要用流的完整 53 位（float64）：均匀数先转成 float32（例如 torch.tensor(一串 Python float) 默认就是 "
                                 "float32）只剩 24 位，2**-24 以下的尾部永远抽不到",
                                 "the draw must use the stream's full 53 bits (float64): a uniform made float32 first (e.g. "
                                 "torch.tensor of a list of Python floats, float32 by default) keeps 24, and the tail "
                                 "below 2**-24 can never be drawn"), where="FastSampler.sample")


def _mixed_batch(ctx, vocab=300, dtype=torch.float32):
    """(logits [5, V], req_ids, params): a greedy, a top-k, a top-p-only, a plain and an unseeded row, no penalty."""
    P = ctx.params
    logits = (torch.randn(5, vocab, generator=torch.Generator().manual_seed(91)) * 2.0).to(dtype).to(ctx.device)
    params = [P(temperature=0.0, seed=3), P(top_k=20, top_p=0.9, seed=4), P(top_p=0.8, seed=5), P(seed=6), P(top_k=50)]
    return logits, [f"r{i}" for i in range(5)], params


def _filtered_probs_draws_nothing(ctx):
    """sample(), filtered_probs(), sample() must draw what sample(), sample() draws: filtered_probs moves no stream."""
    logits, ids, params = _mixed_batch(ctx)
    prev = [[]] * len(params)
    torch.manual_seed(5)
    plain = ctx.sampler()
    want = [ctx.sample(plain, logits, ids, params, prev) for _ in range(3)]
    torch.manual_seed(5)
    probed = ctx.sampler()
    got = [ctx.sample(probed, logits, ids, params, prev)]
    _noting("called FastSampler.filtered_probs(logits [5, 300], ...)", probed.filtered_probs, logits, params, prev)
    got += [ctx.sample(probed, logits, ids, params, prev) for _ in range(2)]
    if got != want:
        step = next(n for n in range(3) if got[n] != want[n])
        rows = [i for i in range(len(ids)) if got[step][i] != want[step][i]]
        raise Fail(ctx.t(f"在同一个 batch（有 seed 和无 seed 的行）上依次 sample()、filtered_probs()、sample()、sample() -> {got}；"
                         f"在新建的 sampler 上 sample() 三次 -> {want}",
                         f"sample(), filtered_probs(), sample(), sample() on one batch (seeded and unseeded rows) -> {got}; "
                         f"sample() three times on a fresh sampler -> {want}"),
                   ctx.t(f"第 {step + 1} 次 sample() 在行 {rows} 上不同：filtered_probs() 动了随机流。它只报告分布，不抽取，"
                         f"也不推进任何请求的计数（也不动无 seed 的共享流）",
                         f"sample() call {step + 1} differs in rows {rows}: filtered_probs() moved the streams. It reports "
                         f"the distribution only: it draws nothing and advances no request's count (nor the shared stream)"),
                   where="FastSampler.filtered_probs")


def _low_precision_without_penalties(ctx):
    """bf16 and fp16 logits with no penalty anywhere in the batch: sample() runs, and filtered_probs gives the same
    probabilities as for the same logits made fp32 first (every step computes in fp32, whether or not a penalty made a
    copy)."""
    for dtype in (torch.bfloat16, torch.float16):
        logits, ids, params = _mixed_batch(ctx, dtype=dtype)
        prev, name = [[]] * len(params), str(dtype)[6:]
        shown = ctx.t(f"{name} logits [5, 300]（batch 里没有 penalty）", f"{name} logits [5, 300], no penalty in the batch")
        why = ctx.t(f"{name} 的 logits 要在 fp32 里算，batch 里没有 penalty 时也一样（.float() 不能只在加 penalty 的分支里做）",
                    f"{name} logits are computed in fp32 even when no row has a penalty (the .float() may not live only "
                    f"in the penalty's branch)")
        try:
            probs = ctx.sampler().filtered_probs(logits, params, prev)
            ctx.sample(ctx.sampler(), logits, ids, params, prev)     # sample() must run on it too
        except (NotImplementedError, Fail):
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's crash on this batch is the finding
            message = str(exc).splitlines()[0][:160] if str(exc) else ""
            raise Fail(ctx.t(f"called FastSampler.filtered_probs({shown}) 和 sample() -> {type(exc).__name__}: `{message}`",
                             f"called FastSampler.filtered_probs({shown}) and sample() -> {type(exc).__name__}: {message}"),
                       why, hint=("p08-fast", 2, "given"), where="FastSampler.filtered_probs") from exc
        want_probs = ctx.sampler().filtered_probs(logits.float(), params, prev)
        if not (isinstance(probs, torch.Tensor) and probs.dtype == torch.float32 and torch.equal(probs, want_probs)):
            gap = ("" if not isinstance(probs, torch.Tensor) or probs.shape != want_probs.shape
                   else f", max |difference| {(probs.float() - want_probs).abs().max():.2e}")
            raise Fail(ctx.t(f"在 {shown} 上调用 filtered_probs -> `{describe(probs)}`；同样的 logits 先 .float() -> float32 概率{gap}",
                             f"called filtered_probs on {shown} -> {describe(probs)}; on the same logits .float() first -> "
                             f"float32 probabilities{gap}"),
                       why, hint=("p08-fast", 2, "given"), where="FastSampler.filtered_probs")
