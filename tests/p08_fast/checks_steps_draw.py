"""p08-fast step checks T5-T6: filtered_probs on example 2's batch (ties at the top-p cut by token id,
whatever the peers), inverse_cdf, and the streams (_uniforms, free). Helpers and the rules of the step checks: tests/p08_fast/checks_steps.py."""
import torch

from course import oracle
from course.grader.checks import Fail, _noting, check, describe, fmt_set
from tests.p08.context import params_text
from course.sampling_params import GREEDY_TEMPERATURE as GREEDY
from course.streams import stream_uniform
from tests.p08_fast.causes import alone_line, exact_gap_line, window_mass_line
from tests.p08_fast.checks_steps import call, need_tensor, rows_text, step


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
       hint=("p08-fast", 2, "s5"))
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
                if kept != want and len(kept | want) > 12:                        # long sets: say where they differ
                    lines.append(f"yours keeps {len(kept)} tokens, the reference {len(want)}: extra {fmt_set(kept - want)}, "
                                 f"missing {fmt_set(want - kept)}")
                total = float(out[i].double().sum())
                if kept == want and abs(total - 1.0) > 1e-4:
                    lines.append(ctx.t(f"你的这一行加起来是 {total:.4g}，不是 1：保留的权重要除以保留的质量",
                                       f"your row sums to {total:.4g}, not 1: divide the kept weights by the kept mass"))
                if vocab <= 8:
                    lines.append(f"got {rows_text(out[i:i + 1], 8)}, expected {rows_text([expected], 8)}")
                dev = logits.to(ctx.device)
                causes = [alone_line(ctx, dev, params, prev, i, expected), window_mass_line(ctx, logits[i], p, h, kept),
                          exact_gap_line(ctx, dev, params, prev, i)]
                lines += [c for c in causes if c]
                raw_max = int(torch.argmax(logits[i]))                            # the argmax before the penalty
                if p.temperature < GREEDY and h and kept == {raw_max} != want and not causes[0]:
                    lines.append(ctx.t(f"greedy 行的 one-hot 落在了惩罚之前的 argmax（token {raw_max}）：先惩罚（第 1 步），再取 argmax",
                                       f"the greedy row's one-hot sits at the argmax before the penalty (token {raw_max}): "
                                       f"penalise first (step 1), then take the argmax"))
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
       hint=("p08-fast", 2, "s6"))
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
    hair = torch.nextafter(torch.tensor(1.0), torch.tensor(2.0)).item()
    _check_columns(ctx, f32([[1.0, 1.0, 1.0]]), f32([[hair]]), torch.tensor([[0.9999999999]], dtype=torch.float64, device=dev),
                   f32([[1.0, 0.0, 0.0]]), "rounding, and only column 0 has mass: column 0, never a column without mass")


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


# ---- T6 the streams ------------------------------------------------------------------------------------
def _which_number(ctx, got, want):
    """A line naming what the learner's number is, when it is one the grader can name: the expected number rounded
    to float32, or another (seed, count) of the given stream (the seeds of T6's requests, the shared key, 0)."""
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


@check("T6.streams", "_uniforms 与 free（第 6 步）：每个请求自己的计数流，greedy 不抽，free 重来，无 seed 的共用一条",
       "_uniforms and free (step 6): each request's own counted stream, greedy rows draw nothing, free restarts, "
       "unseeded rows share one", hint=("p08-fast", 2, "s6"))
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
                raise Fail(f"called {shown} -> row {r}: {float(v)!r}, expected {want[0]!r} = {want[1]} ({label})",
                           *[w for w in [_which_number(ctx, float(v), want)] if w],
                           ctx.t("一个带 seed 的请求：第 n 次抽取 = stream_uniform(seed, n)，n 从 0 数起、跨 step 累加、free 后归零；"
                                 "无 seed 的行共用一条流（key = torch.initial_seed()）；greedy 行不抽（0.0），也不计数",
                                 "a seeded request's n-th draw = stream_uniform(seed, n), n counted from 0, across steps, "
                                 "back to 0 after free; unseeded rows share one stream (key torch.initial_seed()); greedy rows "
                                 "draw nothing (0.0) and count nothing"), where="FastSampler._uniforms")

    def s(seed, n):
        return stream_uniform(seed, n), f"stream_uniform({seed}, {n})", (seed, n)
    key = torch.initial_seed()
    draw(["a", "b", "c", "g"], [seven, eight, seven, greedy], [s(7, 0), s(8, 0), s(7, 0), (0.0, "0.0: greedy", None)],
         "first step: c has a's seed and a stream of its own")
    draw(["b", "a"], [eight, seven], [s(8, 1), s(7, 1)], "second step, another order")
    draw(["u", "v"], [unseeded, unseeded], [s(key, 0), s(key, 1)], "unseeded rows: one shared stream")
    draw(["g"], [hot], [s(9, 0)], "g was greedy before: it had drawn nothing")
    _noting("called free('a')", sampler.free, "a")
    _noting("called free('never-seen')", sampler.free, "never-seen")
    draw(["a", "b", "w"], [seven, eight, unseeded], [s(7, 0), s(8, 2), s(key, 2)], "after free('a'): a starts again, b goes on")
