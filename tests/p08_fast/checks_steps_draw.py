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
            u_r, threshold = u[r, 0].item(), u[r, 0].item() * total[r, 0].item()
            raise Fail(ctx.t(f"called inverse_cdf({shown}) -> 第 {r} 行：第 {columns[r]} 列，期望 {want} "
                             f"（u = {u_r:.10g}，阈值 {threshold:.10g}；{label}）",
                             f"called inverse_cdf({shown}) -> row {r}: column {columns[r]}, expected {want} "
                             f"(u = {u_r:.10g}, threshold {threshold:.10g}; {label})"), why,
                       where="inverse_cdf")


# ---- T5 the streams ------------------------------------------------------------------------------------
def _which_number(ctx, got, want):
    """A line naming what the learner's number is, when it is one the grader can name: the expected number rounded
    to float32, or another (seed, count) of the given stream (the seeds of T5's requests, the shared key, 0)."""
    if want[2] is None:
        return None
    seed, n = want[2]
    if got == float(torch.tensor(want[0], dtype=torch.float32)):
        return ctx.t("这是对的那个数，但被舍入成了 float32：保留流给的 float64（53 位；float32 的均匀数到不了 2**-24 以下的尾部）",
                     "it is the right number rounded to float32: keep the stream's float64 (53 bits; a float32 uniform "
                     "cannot reach the tail below 2**-24)")
    key = torch.initial_seed()
    found = next(((k, m) for k in dict.fromkeys((seed, 7, 8, 9, key, 0)) for m in range(8) if stream_uniform(k, m) == got), None)
    if found is None:
        return None
    k, m = found
    if k == seed:
        return ctx.t(f"它是 stream_uniform({k}, {m})：流对了，计数错了（应为 {n}）",
                     f"it is stream_uniform({k}, {m}): the right stream at the wrong count (expected {n})")
    if seed == key and k == 0:
        return ctx.t("它是 key 为 0 的流：无 seed 的行共用的流要用 torch.initial_seed() 作 key，不是常数",
                     "it is the stream keyed by 0: the unseeded rows' shared stream is keyed by torch.initial_seed(), "
                     "not a constant")
    return ctx.t(f"它是 stream_uniform({k}, {m})：另一条流的数，不是这一行自己的（key {seed}）",
                 f"it is stream_uniform({k}, {m}): another stream's number, not this row's own (key {seed})")


@check("T5.streams", "_uniforms 与 free（第 5 步）：每个请求自己的计数流，greedy 不抽，free 重来，无 seed 的共用一条",
       "_uniforms and free (step 5): each request's own counted stream, greedy rows draw nothing, free restarts, "
       "unseeded rows share one", hint=("p08-fast", 2, "s5"))
@step("FastSampler._uniforms")
def t6_streams(ctx):
    sampler = _noting(f"called {ctx.sampler_name}()", ctx.fn(ctx.sampler_name))
    p = ctx.params
    seven, eight, greedy, unseeded, hot = p(seed=7), p(seed=8), p(temperature=0.0, seed=9), p(), p(seed=9)

    def draw(req_ids, params, expected, label):
        shown = f"_uniforms({req_ids}, [{', '.join(params_text(q) for q in params)}])"
        got = _noting(f"called {shown}", sampler._uniforms, req_ids, params)
        values = got.flatten().tolist() if isinstance(got, torch.Tensor) else list(got) if isinstance(got, (list, tuple)) else None
        if values is None or len(values) != len(req_ids):
            raise Fail(f"called {shown} -> {describe(got)}",
                       ctx.t(f"期望 {len(req_ids)} 个浮点数（每行一个）", f"expected {len(req_ids)} floats, one per row"),
                       where="FastSampler._uniforms")
        for r, (v, want) in enumerate(zip(values, expected)):
            if float(v) != want[0]:
                raise Fail(ctx.t(f"called {shown} -> 第 {r} 行：{float(v)!r}，期望 {want[0]!r} = {want[1]}（{label}）",
                                 f"called {shown} -> row {r}: {float(v)!r}, expected {want[0]!r} = {want[1]} ({label})"),
                           *[w for w in [_which_number(ctx, float(v), want)] if w],
                           ctx.t("一个带 seed 的请求：第 n 次抽取 = stream_uniform(seed, n)，n 从 0 数起、跨 step 累加、free 后归零；"
                                 "无 seed 的行共用一条流（key = torch.initial_seed()）；greedy 行不抽（0.0），也不计数",
                                 "a seeded request's n-th draw = stream_uniform(seed, n), n counted from 0, across steps, "
                                 "back to 0 after free; unseeded rows share one stream (key torch.initial_seed()); greedy rows "
                                 "draw nothing (0.0) and count nothing"), where="FastSampler._uniforms")

    def s(seed, n):
        return stream_uniform(seed, n), f"stream_uniform({seed}, {n})", (seed, n)
    key = torch.initial_seed()
    t = ctx.t
    draw(["a", "b", "c", "g"], [seven, eight, seven, greedy], [s(7, 0), s(8, 0), s(7, 0), (0.0, "0.0: greedy", None)],
         t("第一步：c 的 seed 和 a 相同，但有它自己的流", "first step: c has a's seed and a stream of its own"))
    draw(["b", "a"], [eight, seven], [s(8, 1), s(7, 1)], t("第二步，换个顺序", "second step, another order"))
    draw(["u", "v"], [unseeded, unseeded], [s(key, 0), s(key, 1)], t("无 seed 的行：共用一条流", "unseeded rows: one shared stream"))
    draw(["g"], [hot], [s(9, 0)], t("g 之前是 greedy：它还什么都没抽过", "g was greedy before: it had drawn nothing"))
    _noting("called free('a')", sampler.free, "a")
    _noting("called free('never-seen')", sampler.free, "never-seen")
    draw(["a", "b", "w"], [seven, eight, unseeded], [s(7, 0), s(8, 2), s(key, 2)],
         t("free('a') 之后：a 从头开始，b 接着数", "after free('a'): a starts again, b goes on"))
