"""Acceptance check I5 of the seed page: one random stream per seed, continuous across steps, reset by free."""
import torch

from course.grader.checks import Fail, check
from course.loader import load_module



# ---- I5 ----------------------------------------------------------------------------------------------
@check("I5", "随机流连续；free 之后重置", "stream continuity, and reset after free", hint=("p08", 1, "q6"))
def i5_stream_continuity_and_reset(ctx):
    flat = ctx.tensor([[0.0] * 64])
    method = f"{ctx.sampler_name}.sample"

    def draws(sampler, req_id, seed, n):
        return [ctx.sample(sampler, flat, [req_id], [ctx.params(seed=seed)], [[]])[0] for _ in range(n)]

    sampler = ctx.sampler()
    first = draws(sampler, "q", 21, 8)
    if len(set(first)) == 1:
        raise Fail(ctx.t(f"请求 'q'（seed=21）在 64 个相等的 logits 上抽 8 次 -> {first}",
                         f"8 draws of request 'q' (seed=21) over 64 equal logits -> {first}"),
                   ctx.t("每一步都抽到同一个 token：generator 是不是每步重新 manual_seed 了？要跨 step 复用",
                         "every step drew the same token: is the generator re-seeded every step? keep it across steps"),
                   where=method)
    again = draws(ctx.sampler(), "q", 21, 8)
    if again != first:
        observed = ctx.t(f"第二个新的 {ctx.sampler_name}，请求 'q'（seed=21）抽 8 次 -> {again}，期望 {first}",
                         f"a second fresh {ctx.sampler_name}, request 'q' (seed=21), 8 draws -> {again}, expected {first}")
        fresh = getattr(load_module(ctx.impl_path), ctx.sampler_name)()           # a fresh copy of the learner's module
        if draws(fresh, "q", 21, 16) == first + again:
            raise Fail(observed, ctx.t("第二个 sampler 接着第一个的随机流往下抽：generator 存在类属性或模块全局变量里，被所有 sampler 共用；放进 __init__ 的 self 里",
                                       "the second sampler went on with the first one's stream: the generators live in a "
                                       "class attribute or a module-level variable, shared by all samplers; keep them on "
                                       "self, made in __init__"), where=method)
        raise Fail(observed, ctx.t("同一个 seed 在新的 sampler 里要重放同样的随机流", "the same seed in a fresh sampler must replay the same stream"),
                   where=method)
    sampler.free("q")
    sampler.free("never-seen")                                          # unknown id: a no-op
    replay = draws(sampler, "q", 21, 8)
    if replay != first:
        observed = ctx.t(f"抽 8 次，free('q')，再用 seed=21 抽 8 次 -> {replay}，期望重放前 8 次 {first}",
                         f"8 draws, free('q'), 8 draws again with seed=21 -> {replay}, expected the first 8 again {first}")
        shared = ctx.sampler()
        draws(shared, "q", 21, 8)
        if (beside := draws(shared, "q2", 21, 8)) != first:         # a free cannot help a generator that is not q's own
            raise Fail(observed, ctx.t(f"同一个 {ctx.sampler_name} 里：'q'（seed=21）抽 8 次，然后新请求 'q2'（seed=21）-> "
                                       f"{beside}，期望 seed 21 的随机流 {first}",
                                       f"in one {ctx.sampler_name}: 'q' (seed=21) 8 draws, then a new request 'q2' (seed=21) -> "
                                       f"{beside}, expected seed 21's stream {first}"),
                       ctx.t("同一个 sampler 里，另一个同 seed 的新请求没有从头开始：generator 被请求之间共用了（按 seed 共用或整个 "
                             "sampler 一个）；每个 req_id 一个自己的 generator，free 再删掉它",
                             "a new request with the same seed did not start its own stream: the generator is shared between "
                             "requests (one per seed value, or one for the sampler); give each req_id its own, and free drops it"),
                       where=method)
        raise Fail(observed, ctx.t("free 之后要删除 generator，同名请求重新开始", "free must drop the generator so the id starts afresh"),
                   where=f"{ctx.sampler_name}.free")
    numbered = ctx.sampler()                                            # an int id is freed as it is given
    head = draws(numbered, 7, 21, 8)
    numbered.free(7)
    if (replay := draws(numbered, 7, 21, 8)) != head:
        raise Fail(ctx.t(f"请求 7（整数 req_id，seed=21）：抽 8 次，free(7)，再抽 8 次 -> {replay}，期望重放前 8 次 {head}"
                         "（字符串 id 的 free('q') 是重置了的）",
                         f"request 7 (an int req_id, seed=21): 8 draws, free(7), 8 draws -> {replay}, expected the first 8 "
                         f"again {head} (free('q') with a str id did reset)"),
                   ctx.t("字符串 id 'q' 的 free 重置了，整数 id 7 的 free 却没有：free 要按调用方给的 id 原样删除（不要 str(req_id) 之类的转换）",
                         "free('q') resets a str id, but free(7) did not reset the int id 7: free must drop the id exactly "
                         "as the caller gives it (no str(req_id) or other conversion)"), where=f"{ctx.sampler_name}.free")
    solo = draws(ctx.sampler(), "r10", 42, 8)                           # free drops one id, not its look-alikes

    def r10_beside_r1(free_r1):
        live = ctx.sampler()
        head = [draws(live, req_id, seed, 4) for req_id, seed in (("r1", 41), ("r10", 42))][1]
        if free_r1:
            live.free("r1")
        return head + draws(live, "r10", 42, 4)
    if (freed := r10_beside_r1(True)) != solo and r10_beside_r1(False) == solo:
        raise Fail(ctx.t(f"请求 'r1'（seed=41）和 'r10'（seed=42）各抽 4 次，free('r1')，'r10' 再抽 4 次 -> {freed}，"
                         f"期望与 'r10' 单独时一样 {solo}（不 free 时是一样的）",
                         f"requests 'r1' (seed=41) and 'r10' (seed=42): 4 draws each, free('r1'), 4 more of 'r10' -> "
                         f"{freed}, expected 'r10' alone {solo} (without the free it is)"),
                   ctx.t("free('r1') 也动了 'r10' 的 generator：free 只删掉那一个 req_id（按 id 相等，不按前缀或子串）",
                         "free('r1') also touched the generator of 'r10': free drops that one req_id only (equal ids, not "
                         "a prefix or a substring)"), where=f"{ctx.sampler_name}.free")
    other_id = draws(ctx.sampler(), "another-id", 21, 8)
    if other_id != first:
        raise Fail(ctx.t(f"请求 'another-id'（seed=21）-> {other_id}，期望与 seed=21 的 'q' 同一个随机流 {first}",
                         f"request 'another-id' with seed=21 -> {other_id}, expected the same stream as 'q' with seed=21 "
                         f"{first}"),
                   ctx.t("随机流只由 seed 决定，与 req_id 无关", "the stream is decided by the seed alone, not by the req_id"),
                   where=method)
    sampler.free("q")
    other_seed = draws(sampler, "q", 22, 8)
    expected = draws(ctx.sampler(), "q", 22, 8)
    if other_seed == first and expected != first:                    # seed 22 is right in a fresh sampler
        raise Fail(ctx.t(f"free('q') 之后 'q' 用 seed=22 重新来 -> {other_seed}，正是 seed=21 的随机流；新的 "
                         f"{ctx.sampler_name} 给 seed 22 的是 {expected}",
                         f"free('q'), then 'q' reused with seed=22 -> {other_seed}, the very stream of seed=21; a fresh "
                         f"{ctx.sampler_name} gives seed 22 {expected}"),
                   ctx.t("free 之后 'q' 的 seed-21 generator（或它的 seed）还在：free 要删掉它，下一个 'q' 用自己的 seed 重新建",
                         "after free, q's seed-21 generator (or its seed) is still there: free must delete it, so the next "
                         "'q' is made from its own seed"), where=f"{ctx.sampler_name}.free")
    if other_seed == first:
        raise Fail(ctx.t(f"seed=22 的 'q' -> {other_seed}，正是 seed=21 的随机流", f"'q' with seed=22 -> {other_seed}, the very "
                         f"stream of seed=21"),
                   ctx.t("不同的 seed 要给出不同的随机流：generator 用 manual_seed(seed) 初始化", "different seeds must give different "
                         "streams: initialise the generator with manual_seed(seed)"), where=method)
    if other_seed != expected:
        raise Fail(ctx.t(f"free('q') 之后 'q' 用 seed=22 重新来 -> {other_seed}，期望一个新的 seed-22 随机流 {expected}",
                         f"free('q'), then 'q' reused with seed=22 -> {other_seed}, expected a fresh seed-22 stream {expected}"),
                   where=f"{ctx.sampler_name}.free")
    kept = ctx.sampler()
    switched = draws(kept, "k", 31, 4) + draws(kept, "k", 32, 4)   # no free between: the first generator stays
    if switched != draws(ctx.sampler(), "k", 31, 8):
        raise Fail(ctx.t(f"请求 'k'：用 seed=31 抽 4 次，再用 seed=32 抽 4 次（中间没有 free）-> {switched}，期望 seed 31 随机流的"
                         f"前 8 个 {draws(ctx.sampler(), 'k', 31, 8)}",
                         f"request 'k': 4 draws with seed=31, then 4 more with seed=32 (no free) -> {switched}, expected the "
                         f"first 8 of seed 31's stream {draws(ctx.sampler(), 'k', 31, 8)}"),
                   ctx.t("req_id 第一次被采样时建 generator，一直用到 free：之后同一个 id 换了 seed 也不重建",
                         "a req_id's generator is made the first time it is sampled and kept until free: a later seed for "
                         "the same id changes nothing"), where=method)
    zero = []
    for global_seed in (1, 2):                                    # seed=0 must not depend on torch's global seed
        torch.manual_seed(global_seed)
        zero.append(draws(ctx.sampler(), "z", 0, 8))
    if zero[0] != zero[1]:
        raise Fail(ctx.t(f"新的 {ctx.sampler_name} 里 seed=0 的请求 'z'：torch.manual_seed(1) 之后 -> {zero[0]}，"
                         f"torch.manual_seed(2) 之后 -> {zero[1]}",
                         f"request 'z' with seed=0 in a fresh {ctx.sampler_name}, after torch.manual_seed(1) -> {zero[0]}, "
                         f"after torch.manual_seed(2) -> {zero[1]}"),
                   ctx.t("0 也是一个 seed：`if not seed` / `if params.seed:` 把它当成了没有 seed，要写 `seed is None`",
                         "0 is a seed too: `if not seed` / `if params.seed:` treat it as no seed; test `seed is None`"),
                   where=method)
    pair = ctx.sampler()
    unseeded = [ctx.sample(pair, ctx.tensor([[0.0] * 64] * 2), ["u1", "u2"], [ctx.params(), ctx.params()], [[], []])
                for _ in range(10)]
    if all(a == b for a, b in unseeded):
        raise Fail(ctx.t(f"两个没有 seed 的请求，同样 64 个相等的 logits，在一个 batch 里 10 步 -> 两个的 token 完全相同 "
                         f"{[a for a, _ in unseeded]}",
                         f"two unseeded requests with the same 64 equal logits, 10 steps in one batch -> the same tokens "
                         f"{[a for a, _ in unseeded]} for both"),
                   ctx.t("没有 seed 的请求共用 sampler 的一个 generator，一个接一个地消费它；不能各自用同一个常数 seed 新建",
                         "unseeded requests share the sampler's one generator, consuming it in turn; they must not each get "
                         "a generator made with the same constant seed"), where=method)
    after = []
    for calls in (1, 20):                                         # the shared generator is the sampler's, not torch's
        torch.manual_seed(5)
        own = ctx.sampler()
        for _ in range(calls):
            ctx.sample(own, flat, ["u"], [ctx.params()], [[]])
        after.append(torch.rand(1).item())
    if after[0] != after[1]:
        raise Fail(ctx.t(f"torch.manual_seed(5)，调 1 次和 20 次没有 seed 的 sample()，之后 torch.rand(1) -> {after[0]:.6f} 和 "
                         f"{after[1]:.6f}", f"torch.manual_seed(5), 1 vs 20 unseeded sample() calls, then torch.rand(1) -> "
                         f"{after[0]:.6f} vs {after[1]:.6f}"),
                   ctx.t("没有 seed 的请求在消耗 torch 的全局随机流：它们要共用 sampler 自己的一个 torch.Generator",
                         "unseeded requests consume torch's global random stream: they share the sampler's own torch.Generator"),
                   where=method)
    one, two = ctx.sampler(), ctx.sampler()
    interleaved = [(draws(one, "q", 21, 1)[0], draws(two, "q", 21, 1)[0]) for _ in range(8)]
    if [a for a, _ in interleaved] != first or [b for _, b in interleaved] != first:
        raise Fail(ctx.t(f"两个 {ctx.sampler_name} 对象轮流用，各有一个 'q'（seed=21）-> {interleaved}",
                         f"two {ctx.sampler_name} objects used in turns, each with 'q' (seed=21) -> {interleaved}"),
                   ctx.t("两个 sampler 实例不能共享 generator（别把字典放在类属性或模块全局里）",
                         "two sampler objects must not share generators (no class-level or module-level dict)"),
                   where=method)
