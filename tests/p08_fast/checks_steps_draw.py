"""p08-fast step checks T5: inverse_cdf, and the streams (_uniforms, free). Helpers and the rules of the step checks: tests/p08_fast/checks_steps.py."""
import torch

from course.grader.checks import Fail, _noting, check, describe
from tests.p08.context import params_text
from course.streams import stream_uniform
from tests.p08_fast.checks_steps import call, need_tensor, rows_text, step


# ---- T5 inverse_cdf ----------------------------------------------------------------------------------
def expected_column(cs, total, u, e):
    hits = [j for j, (c, w) in enumerate(zip(cs, e)) if c > u * total and w > 0]
    if hits:
        return hits[0]
    return max(j for j, w in enumerate(e) if w > 0)


@check("T5.inverse_cdf", "inverse_cdf（第 5 步）：第一个前缀质量 > u * total 且有质量的列",
       "inverse_cdf (step 5): the first column whose prefix mass exceeds u * total and has mass",
       hint=("p08-fast", 2, "s5"))
@step("inverse_cdf")
def t6_inverse_cdf(ctx):
    dev = ctx.device
    f32 = lambda rows: torch.tensor(rows, dtype=torch.float32, device=dev)       # noqa: E731
    # example 2's rows a and c (hints L3's trace): cs, total, e
    cs = f32([[1.0, 1.5, 1.8, 1.9], [1.0, 1.75, 2.05, 2.275]])
    e = f32([[1.0, 0.5, 0.0, 0.0], [1.0, 0.75, 0.3, 0.0]])
    total = f32([[1.5], [2.05]])
    t = ctx.t
    cases = [(t("u 取自 hints L3 的演算", "u from hints L3's trace"), [0.8, 0.9]), ("u = 0", [0.0, 0.0]),
             (t("u 刚好小于 1", "u just below 1"), [1 - 2 ** -40, 1 - 2 ** -40]),
             (t("u 落在第一列里", "u inside the first column"), [0.3, 0.2])]
    for label, us in cases:
        u = torch.tensor(us, dtype=torch.float64, device=dev)[:, None]
        _check_columns(ctx, cs, total, u, e, label)
    exact = (f32([[1.0, 1.5, 2.0, 2.5]] * 2), f32([[2.0]] * 2), f32([[1.0, 0.5, 0.5, 0.0]] * 2))
    _check_columns(ctx, exact[0], exact[1], torch.tensor([[0.5], [0.75]], dtype=torch.float64, device=dev), exact[2],
                   t("u * total 恰好等于一个前缀：那一列不算高于它", "u * total exactly equal to a prefix: that column is not above it"))
    # a sweep over u, and a row whose total sits a hair above its last kept prefix (rounding): no column exceeds
    grid = torch.linspace(0, 0.999, 37, dtype=torch.float64)
    cs2 = f32([[1.0, 1.5, 1.8, 1.9]] * 37)
    e2 = f32([[1.0, 0.5, 0.3, 0.0]] * 37)
    _check_columns(ctx, cs2, f32([[1.8]] * 37), grid.to(dev)[:, None], e2, t("[0, 0.999] 里的 37 个 u", "37 values of u in [0, 0.999]"))
    hair = torch.nextafter(torch.tensor(1.5), torch.tensor(2.0)).item()
    _check_columns(ctx, f32([[1.0, 1.5, 1.8]]), f32([[hair]]), torch.tensor([[0.9999999999]], dtype=torch.float64, device=dev),
                   f32([[1.0, 0.5, 0.0]]), t("舍入之后没有一列高于 u * total：取最后一个有质量的列",
                                             "rounding leaves no column above u * total: the last with mass"))
    hair = torch.nextafter(torch.tensor(1.0), torch.tensor(2.0)).item()
    _check_columns(ctx, f32([[1.0, 1.0, 1.0]]), f32([[hair]]), torch.tensor([[0.9999999999]], dtype=torch.float64, device=dev),
                   f32([[1.0, 0.0, 0.0]]), t("舍入，且只有第 0 列有质量：取第 0 列，绝不取没有质量的列",
                                             "rounding, and only column 0 has mass: column 0, never a column without mass"))
    # on a GPU the given prefix sums are a tree of adds, whose rounding can raise cs across a column without mass
    _check_columns(ctx, f32([[1.0, 1.2, 1.7]]), f32([[1.5]]), torch.tensor([[1.1 / 1.5]], dtype=torch.float64, device=dev),
                   f32([[1.0, 0.0, 0.5]]), t("第 1 列没有质量，cs 却在那里升高了（GPU 上给定的前缀和是一棵加法树，舍入会这样）",
                                             "column 1 has no mass, yet cs rose there (on a GPU the given prefix sums are a tree "
                                             "of adds, whose rounding does that)"))
    # u keeps its 53 bits: u * total is computed in float64 (u rounded to float32 is 0.5 here, another column)
    _check_columns(ctx, f32([[0.5, 1.0]]), f32([[1.0]]), torch.tensor([[0.5 - 2 ** -30]], dtype=torch.float64, device=dev),
                   f32([[0.5, 0.5]]), t("u 比 0.5 小 2**-30：u * total 用 float64 算", "u is 2**-30 below 0.5: u * total in float64"))
    # in float32, cs[3] - e[3] = 1.30000007 is above cs[2] = 1.29999995: u * total = 1.3 lies between them
    gap = f32([[1.0, 0.1, 0.2, 0.4, 0.3]])
    _check_columns(ctx, gap.cumsum(-1), f32([[2.0]]), torch.tensor([[0.65]], dtype=torch.float64, device=dev), gap,
                   t("u * total = 1.3 落在 cs[2] = 1.29999995 与 cs[3] - e[3] = 1.30000007 之间（float32 舍入）",
                     "u * total = 1.3 lies between cs[2] = 1.29999995 and cs[3] - e[3] = 1.30000007 (float32 rounding)"))


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
            why = ctx.t("阈值 = u * total（float64）；选第一个 cs > 阈值（严格大于）且 e > 0 的列；一个都没有就取最后一个有质量的列",
                        "threshold = u * total (in float64); the first column with cs > threshold (strictly) and e > 0; none: "
                        "the last column with mass")
            cause = _draw_cause(ctx, cs[r:r + 1], total[r:r + 1], u[r:r + 1], e[r:r + 1], columns[r])
            u_r, threshold = u[r, 0].item(), u[r, 0].item() * total[r, 0].item()
            raise Fail(ctx.t(f"called inverse_cdf({shown}) -> 第 {r} 行：第 {columns[r]} 列，期望 {want} "
                             f"（u = {u_r:.10g}，阈值 {threshold:.10g}；{label}）",
                             f"called inverse_cdf({shown}) -> row {r}: column {columns[r]}, expected {want} "
                             f"(u = {u_r:.10g}, threshold {threshold:.10g}; {label})"), *[c for c in [cause] if c], why,
                       where="inverse_cdf")


def _falls_back_to(ctx, cs, total, u, e):
    """The file's column on the same row with cs flat at the columns without mass (no rise for a draw without the mass
    test to stop at): a column without mass here comes from its fallback; None when it cannot say."""
    flat = cs.clone()
    for j in range(cs.shape[1]):
        if e[0, j] == 0:
            flat[0, j] = flat[0, j - 1] if j else 0.0
    try:
        return int(ctx.fn("inverse_cdf")(flat, total, u, e)[0, 0])
    except Exception:  # noqa: BLE001 - it cannot say
        return None


def _draw_cause(ctx, cs, total, u, e, got):
    """One row inverse_cdf got wrong: a line naming the cause when the file's column is what one known mistake gives
    (u rounded to float32, u scaled by the window's last prefix sum) or when its own inverse_cdf, re-run with e made
    the exact float differences of cs, answers right (its column depends on cs - e); else None."""
    cs_, e_ = cs[0].cpu().tolist(), e[0].cpu().tolist()
    u_, total_ = u[0, 0].item(), total[0, 0].item()
    want = expected_column(cs_, total_, u_, e_)
    fallback = want == max(j for j, w in enumerate(e_) if w > 0) and not any(
        c > u_ * total_ and w > 0 for c, w in zip(cs_, e_))                      # no column with mass past u * total
    if fallback and 0 <= got < len(e_) and e_[got] == 0 and _falls_back_to(ctx, cs, total, u, e) == got:
        return ctx.t(f"这里没有一个有质量的列的 cs 高于阈值（舍入会这样），就要退回到最后一个有质量的列（第 {want} 列），"
                     f"不是窗口的最后一列（第 {got} 列，它没有质量）", f"no column with mass has its cs above the threshold "
                     f"here (rounding does that), so the draw falls back: to the last column with mass ({want}), not to "
                     f"the window's last column ({got}, which has none)")
    if 0 <= got < len(e_) and e_[got] == 0 and cs_[got] > u_ * total_:
        return ctx.t(f"第 {got} 列没有质量（e = 0），它的 cs 却高于阈值：要的是第一个 cs > 阈值“且 e > 0”的列（GPU 上的前缀和会在没有质量的"
                     "列上因舍入升高）", f"column {got} has no mass (e = 0), yet its cs is above the threshold: the draw is the "
                     f"first column with cs > threshold and e > 0 (on a GPU the prefix sums can rise by rounding at a column "
                     f"without mass)")
    u32 = float(torch.tensor(u_, dtype=torch.float32))
    if u32 != u_ and got == expected_column(cs_, total_, u32, e_):
        return ctx.t(f"你的列正是 u 舍入成 float32（{u32!r}）时的答案：u 是 53 位的 float64，u * total 要在 float64 里算"
                     f"（float32 的 u 到不了 2**-24 以下的尾部，还会把相邻的 u 并成一个）",
                     f"your column is the answer for u rounded to float32 ({u32!r}): u is a 53-bit float64 and u * total "
                     f"is computed in float64 (a float32 u cannot reach the tail below 2**-24 and merges neighbouring u)")
    if cs_[-1] != total_ and got == expected_column(cs_, cs_[-1], u_, e_):
        return ctx.t(f"你的列正是阈值取 u * cs[:, -1]（窗口最后一列的前缀和 {cs_[-1]:.9g}）时的答案：要乘这一行保留的质量 total "
                     f"（{total_:.9g}），cs 的最后一列还含着被删掉的列",
                     f"your column is the answer for a threshold u * cs[:, -1] (the window's last prefix sum, {cs_[-1]:.9g}): "
                     f"scale u by the row's kept mass total ({total_:.9g}); cs's last column still holds the dropped columns")
    gaps = [j for j in range(1, len(cs_)) if e_[j] > 0 and float(torch.tensor(cs_[j]) - torch.tensor(e_[j])) > cs_[j - 1]]
    if not gaps:
        return None
    exact = torch.cat([cs[:, :1], cs[:, 1:] - cs[:, :-1]], 1)                 # [1, W] e that cs - e undoes exactly
    exact = torch.where(e > 0, exact, torch.zeros_like(exact))
    try:
        again = int(ctx.fn("inverse_cdf")(cs, total, u, exact)[0, 0])
    except Exception:  # noqa: BLE001 - it cannot say
        return None
    if again != want:
        return None
    j = gaps[0]
    low = float(torch.tensor(cs_[j]) - torch.tensor(e_[j]))
    return ctx.t(f"换成 e = cs 的逐列差（cs - e 恰好是上一列的 cs）再调用你的 inverse_cdf，就得到第 {want} 列：你的列取决于 cs - e。"
                 f"在 float32 里 cs[{j}] - e[{j}] = {low:.9g}，不等于 cs[{j - 1}] = {cs_[j - 1]:.9g}；落在两者之间的 u * total 不在任何一个 "
                 f"[cs - e, cs) 区间里，就掉到了最后一个有质量的列（词表尾部的 token）。只用 cs 判断：第一个 cs > u * total 的列",
                 f"called again with e made the exact differences of cs (so that cs - e is the previous column's cs), your "
                 f"inverse_cdf gives column {want}: your column depends on cs - e. In float32 cs[{j}] - e[{j}] = {low:.9g} is "
                 f"not cs[{j - 1}] = {cs_[j - 1]:.9g}; a u * total between them lies in no interval [cs - e, cs) and falls "
                 f"through to the last column with mass (a token from the far tail). Decide by cs alone: the first column "
                 f"whose cs exceeds u * total")


# ---- T5 the streams ------------------------------------------------------------------------------------
BUILT_KEY, SHARED_KEY, LATER_KEY = 2718, 4321, 8765   # torch's seed when the sampler is made, at its first unseeded
                                                      # draw, and at a later one
FIRST_CALL_KEY = 1357                                 # torch's seed at the first _uniforms call (seeded rows only)


def _which_number(ctx, got, want, per_seed):
    """A line naming what the learner's number is, when it is one the grader can name: the expected number rounded to
    float32, the stream of the request's seed at the count a stream shared by every request of that seed would be at
    (per_seed), a stream keyed by torch's seed at another moment, the seed a returning request came back with, or
    another (key, count) of the given stream. None otherwise."""
    if want[2] is None:
        return None
    key, n = want[2]
    if got == float(torch.tensor(want[0], dtype=torch.float32)):
        return ctx.t("这是对的那个数，但被舍入成了 float32：保留流给的 float64（53 位；float32 的均匀数到不了 2**-24 以下的尾部）",
                     "it is the right number rounded to float32: keep the stream's float64 (53 bits; a float32 uniform "
                     "cannot reach the tail below 2**-24)")
    if per_seed is not None and per_seed != n and got == stream_uniform(key, per_seed):
        return ctx.t(f"它是 stream_uniform({key}, {per_seed})：seed 为 {key} 的所有请求共用了一条流（按 seed 存）。"
                     f"每个请求（req_id）一条自己的流，流的 key 是它的 seed：两个 seed 相同的请求各自从 0 数起",
                     f"it is stream_uniform({key}, {per_seed}): every request with seed {key} shares one stream (streams "
                     f"stored per seed). Each request (req_id) has a stream of its own, whose key is its seed: two requests "
                     f"with the same seed each count from 0")
    known = dict.fromkeys((key, 7, 8, 9, 11, 12, SHARED_KEY, BUILT_KEY, LATER_KEY, FIRST_CALL_KEY, 0))
    found = next(((k, m) for k in known for m in range(8) if stream_uniform(k, m) == got), None)
    if found is None:
        return None
    k, m = found
    if len(want) > 3 and m > 0:
        freed = want[3]
        return ctx.t(f"它是 stream_uniform({k}, {m})：free({freed!r}) 没有丢掉这个请求的流，计数接着数了。free 按调用方给的 id 原样删"
                     f"（整数 id 也一样，别转换它）",
                     f"it is stream_uniform({k}, {m}): free({freed!r}) did not drop this request's stream, its count went on. "
                     f"free drops the stream under the id exactly as the caller gives it (an int id too: no conversion)")
    if len(want) > 3 and m == 0 and k != key:
        freed = want[3]
        return ctx.t(f"它是 stream_uniform({k}, 0)：free({freed!r}) 把计数归零了，却留下了旧的 key {k}。free 要丢掉整条流，这个请求回来时用"
                     f"它的新 seed {key} 从头开始",
                     f"it is stream_uniform({k}, 0): free({freed!r}) reset the count but kept the old key {k}. free forgets the "
                     f"whole stream, so the request comes back with its new seed {key}, from the start")
    if k == key:
        return ctx.t(f"它是 stream_uniform({k}, {m})：流对了，计数错了（应为 {n}）",
                     f"it is stream_uniform({k}, {m}): the right stream at the wrong count (expected {n})")
    if key == SHARED_KEY and k == BUILT_KEY:
        return ctx.t(f"它是 key 为 {BUILT_KEY} 的流，即建 sampler 时 torch.initial_seed() 的值；之后 torch.manual_seed({SHARED_KEY}) 才是"
                     f"第一次无 seed 抽取时的种子：共用流的 key 在第一次无 seed 的抽取时读 torch.initial_seed()，不在 __init__ 里读",
                     f"it is the stream keyed by {BUILT_KEY}, torch.initial_seed() when the sampler was made; "
                     f"torch.manual_seed({SHARED_KEY}) came after, before the first unseeded draw: the shared stream reads "
                     f"torch.initial_seed() at the sampler's first unseeded draw, not in __init__")
    if key == SHARED_KEY and k == FIRST_CALL_KEY:
        return ctx.t(f"它是 key 为 {FIRST_CALL_KEY} 的流，即第一次调用 _uniforms 时的 torch.initial_seed()；那次调用没有抽无 seed 的数"
                     f"（唯一无 seed 的行 q 是 greedy，greedy 什么都不抽，也不建流）：共用流的 key 在第一次“无 seed 的抽取”时读，"
                     f"那时已经是 torch.manual_seed({SHARED_KEY})",
                     f"it is the stream keyed by {FIRST_CALL_KEY}, torch.initial_seed() at the first _uniforms call, which drew "
                     f"no unseeded number (its one unseeded row, q, was greedy: a greedy row draws nothing and makes no "
                     f"stream): the shared stream reads its key at the first unseeded draw, when torch.manual_seed("
                     f"{SHARED_KEY}) had come")
    if key == SHARED_KEY and k == LATER_KEY:
        return ctx.t(f"它是 key 为 {LATER_KEY} 的流：第一次无 seed 的抽取之后又调用了 torch.manual_seed({LATER_KEY})，你的共用流换了 key。"
                     f"共用流的 key 在第一次无 seed 的抽取时定下，之后不再变（像参考解的共享 generator）",
                     f"it is the stream keyed by {LATER_KEY}: torch.manual_seed({LATER_KEY}) came after the first unseeded "
                     f"draw and your shared stream took the new key. The shared stream's key is fixed at the sampler's "
                     f"first unseeded draw and kept (as the reference's shared generator is)")
    if key == SHARED_KEY and k == 0:
        return ctx.t("它是 key 为 0 的流：无 seed 的行共用的流要用 torch.initial_seed() 作 key，不是常数",
                     "it is the stream keyed by 0: the unseeded rows' shared stream is keyed by torch.initial_seed(), "
                     "not a constant")
    if key == 12 and k == 9:
        counted = ctx.t(f"（你的流还在 greedy 那一步数了 {m} 次）", f" (yours even counted {m} draw{'s' * (m > 1)} there)") if m else ""
        return ctx.t(f"它是 seed 9 的流：请求 'g' 带 seed 9 时是 greedy，什么都没抽，也就没有流{counted}；它的流从第一次抽取开始，用那时的 "
                     f"seed（12）", f"it is seed 9's stream: request 'g' had seed 9 while greedy, drew nothing and so had no "
                     f"stream{counted}; its stream starts at its first draw, with the seed it has then (12)")
    if key == SHARED_KEY and k == 8:
        return ctx.t("它是 b 自己的流（seed 8）：b 这次没有 seed，无 seed 的行从共用流里抽，不管它的 req_id 以前带过什么 seed"
                     "（b 自己的流还留着，等它带 seed 回来）",
                     "it is b's own stream (seed 8): b came back without a seed, and an unseeded row draws from the shared "
                     "stream whatever seed its req_id had before (b's own stream stays, for when it comes back with one)")
    if key == 7 and k == 11:
        return ctx.t("它是 seed 11 的流：请求 'a' 没有 free 就带着 seed 11 回来了。一个请求的流一直用到 free() 为止（key 7，计数接着数）；"
                     "新的 seed 在 free 之后才生效",
                     "it is seed 11's stream: request 'a' came back with seed 11 without a free(). A request keeps its "
                     "stream until free() (key 7, the count goes on); a new seed takes effect only after free")
    return ctx.t(f"它是 stream_uniform({k}, {m})：另一条流的数，不是这一行自己的（key {key}）",
                 f"it is stream_uniform({k}, {m}): another stream's number, not this row's own (key {key})")


def _same_number(ctx, values, params, req_ids, r):
    """Row r, unseeded, got the number an earlier unseeded row of the same call got: a line saying the shared stream
    moved on once per call, not once per row. Else None."""
    def unseeded(q):
        return q.seed is None and q.temperature >= 1e-5
    if not unseeded(params[r]):
        return None
    j = next((j for j in range(r) if unseeded(params[j]) and float(values[j]) == float(values[r])), None)
    if j is None:
        return None
    return ctx.t(f"没有 seed 的 {req_ids[j]!r} 和 {req_ids[r]!r} 在同一次调用里拿到了同一个数：共用流每抽一行前进一个，不是每次调用前进一个",
                 f"the unseeded rows {req_ids[j]!r} and {req_ids[r]!r} got the same number in one call: the shared stream "
                 f"moves on once per drawing row, not once per call")


@check("T5.streams", "_uniforms 与 free（第 5 步）：每个请求自己的流，greedy 不抽，free 重来，无 seed 的共用一条",
       "_uniforms and free (step 5): each request's own stream, greedy rows draw nothing, free restarts, "
       "unseeded rows share one", hint=("p08-fast", 2, "s5"))
@step("FastSampler._uniforms")
def t6_streams(ctx):
    with torch.random.fork_rng(devices=[]):                                  # torch's seed is put back after
        torch.manual_seed(BUILT_KEY)
        sampler = _noting(f"called {ctx.sampler_name}()", ctx.fn(ctx.sampler_name))
        torch.manual_seed(SHARED_KEY)                                        # after the sampler is made
        _streams_steps(ctx, sampler)


def _streams_steps(ctx, sampler):
    p = ctx.params
    seven, eight, greedy, unseeded, hot, eleven = p(seed=7), p(seed=8), p(temperature=0.0, seed=9), p(), p(seed=12), p(seed=11)
    cold = p(temperature=0.0)                                                # unseeded and greedy: draws nothing
    drawn = {}                                                               # seed -> draws of every request with it

    def draw(req_ids, params, expected, label):
        shown = f"_uniforms({req_ids}, [{', '.join(params_text(q) for q in params)}])"
        got = _noting(f"called {shown}", sampler._uniforms, req_ids, params)
        values = got.flatten().tolist() if isinstance(got, torch.Tensor) else list(got) if isinstance(got, (list, tuple)) else None
        if values is None or len(values) != len(req_ids):
            raise Fail(f"called {shown} -> {describe(got)}",
                       ctx.t(f"期望 {len(req_ids)} 个浮点数（每行一个）", f"expected {len(req_ids)} floats, one per row"),
                       where="FastSampler._uniforms")
        per_seed = []
        for q in params:
            if q.seed is not None and q.temperature >= 1e-5:
                per_seed.append(drawn.get(q.seed, 0))
                drawn[q.seed] = drawn.get(q.seed, 0) + 1
            else:
                per_seed.append(None)
        for r, (v, want) in enumerate(zip(values, expected)):
            if float(v) != want[0]:
                raise Fail(ctx.t(f"called {shown} -> 第 {r} 行：{float(v)!r}，期望 {want[0]!r} = {want[1]}（{label}）",
                                 f"called {shown} -> row {r}: {float(v)!r}, expected {want[0]!r} = {want[1]} ({label})"),
                           *[w for w in [_same_number(ctx, values, params, req_ids, r)
                                         or _which_number(ctx, float(v), want, per_seed[r])] if w],
                           ctx.t("每个请求（req_id）一条自己的流，key 是它的 seed，用到 free() 为止：第 n 次抽取 = stream_uniform(seed, n)，"
                                 "n 从 0 数起、跨 step 累加、free 后归零；无 seed 的行共用一条流，key 是第一次无 seed 抽取时的 "
                                 "torch.initial_seed()；greedy 行不抽（0.0），也不计数",
                                 "each request (req_id) has a stream of its own, whose key is its seed, kept until free(): its "
                                 "n-th draw = stream_uniform(seed, n), n counted from 0, across steps, back to 0 after free; "
                                 "unseeded rows share one stream, keyed by torch.initial_seed() at the first unseeded draw; "
                                 "greedy rows draw nothing (0.0) and count nothing"), where="FastSampler._uniforms")

    def s(seed, n):
        return stream_uniform(seed, n), f"stream_uniform({seed}, {n})", (seed, n)
    t = ctx.t
    torch.manual_seed(FIRST_CALL_KEY)
    draw(["a", "b", "c", "g", "q"], [seven, eight, seven, greedy, cold],
         [s(7, 0), s(8, 0), s(7, 0), (0.0, "0.0: greedy", None), (0.0, "0.0: greedy", None)],
         t("第一步：c 的 seed 和 a 相同，但有它自己的流；g 和 q 是 greedy", "first step: c has a's seed and a stream of its own; "
           "g and q are greedy"))
    torch.manual_seed(SHARED_KEY)                                            # no unseeded draw yet: this one counts
    draw(["b", "a"], [eight, seven], [s(8, 1), s(7, 1)], t("第二步，换个顺序", "second step, another order"))
    draw(["u", "v"], [unseeded, unseeded], [s(SHARED_KEY, 0), s(SHARED_KEY, 1)],
         t(f"无 seed 的行共用一条流；torch.manual_seed({SHARED_KEY}) 在 sampler 建好之后、在没有抽过无 seed 的数的调用之后",
           f"unseeded rows share one stream; torch.manual_seed({SHARED_KEY}) came after the sampler was made and after "
           f"calls that drew no unseeded number"))
    torch.manual_seed(LATER_KEY)
    draw(["g", 5, "w"], [hot, seven, unseeded], [s(12, 0), s(7, 0), s(SHARED_KEY, 2)],
         t(f"g 之前是 greedy（seed 9），什么都没抽过，现在带 seed 12；5（整数 id）是新请求；之后又调用了 torch.manual_seed({LATER_KEY})，"
           f"共用流不变", f"g was greedy before (seed 9) and drew nothing, and now has seed 12; 5 (an int id) is a new request; "
           f"torch.manual_seed({LATER_KEY}) came after the first unseeded draw: the shared stream stays"))
    draw(["b"], [unseeded], [s(SHARED_KEY, 3)], t("b 回来时没有 seed：无 seed 的行从共用流里抽", "b comes back without a seed: an "
                                                                                            "unseeded row draws from the shared stream"))
    draw(["a"], [eleven], [s(7, 2)], t("a 没有 free 就带着 seed 11 回来：它的流不变", "a comes back with seed 11 without a free: "
                                                                                   "its stream stays"))
    for req_id in ("a", 5, "never-seen"):
        _noting(f"called free({req_id!r})", sampler.free, req_id)
    drawn.pop(7, None)                                                       # free: per-seed counts are not the rule
    draw(["a", "b", 5, "w"], [eleven, eight, seven, unseeded], [s(11, 0) + ("a",), s(8, 2), s(7, 0) + (5,), s(SHARED_KEY, 4)],
         t("free('a') 和 free(5) 之后：a 用新的 seed 11 从头开始，5 也从头开始，b 接着数",
           "after free('a') and free(5): a starts again with its new seed 11, 5 starts again, b goes on"))
