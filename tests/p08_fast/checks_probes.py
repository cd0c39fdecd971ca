"""Acceptance checks F7 and F8 of p08-fast: batch invariance probed where the design makes it hard. F7 puts rows on their
own float boundaries and beside the peers that move a row whose route is decided with their help; F8 compares long
rows (V = 151936) alone and in a batch of four copies, for every quantity that is a reduction over V. Each compares a
row only with itself, never with the reference's route: a correct design that routes differently passes."""
import contextlib

import torch

from course.floats import step_between
from course.grader.checks import Fail, check
from tests.p08.context import params_text
from tests.p08.rows import zipf_logits
from tests.p08_fast.causes import exact_owner, penalty_line, reaches_exact, uniform_line
from tests.p08_fast.checks_fast import fast_probs
from tests.p08_fast.probes import Probe, boundary, peers, placed, probe_rows

ROUTES = ("greedy", "top_k", "top_p", "plain", "exact")


def _route(ctx, logits, params, prev, pos):
    """A stub-shaped file's route for row pos of this call: route()'s list, and '-> exact' when the row then took the
    exact route (it reached exact_rows). None for a file in its own shape, or when its pieces do not run."""
    impl = ctx.impl
    if exact_owner(impl) is None or not all(callable(getattr(impl, n, None)) for n in ("route", "penalized_fp32")):
        return None
    try:
        routes = impl.route(params, logits.shape[1])
        name = next(n for n in ROUTES if pos in list(getattr(routes, n)))
        row = impl.penalized_fp32(logits, params, prev)[pos]
        took_exact = reaches_exact(ctx, lambda: ctx.sampler().filtered_probs(logits, params, prev), row)
    except Exception:  # noqa: BLE001 - the learner's pieces cannot say: no route is shown
        return None
    return name if name == "exact" or not took_exact else f"{name} -> exact"


def _facts(probs, tokens):
    """(kept count, total, tokens): total = 1 / the largest probability, the kept mass in units of the largest weight."""
    top = float(probs.max())
    return int((probs > 0).sum()), (1.0 / top if top > 0 else float("inf")), tokens


def _state(ctx, label, facts, route):
    kept, total, tokens = facts
    shown = str(tokens[0]) if len(tokens) == 1 else str(tokens)
    return ctx.t(f"{label}：" + (f"路线 {route}，" if route else "") + f"保留 {kept} 个，total {total:.9g}，token {shown}",
                 f"{label}: " + (f"route {route}, " if route else "") + f"kept {kept}, total {total:.9g}, token {shown}")


def compare(ctx, where, probe, alone, batch, pos, peer_name, long_row=False, here=None):
    """Fail when row pos of batch (logits, params, prev) is not the probe alone, bit for bit (filtered_probs and the
    tokens of fresh samplers). alone, batch: (logits, params, prev, req_ids); facts computed here."""
    got = []
    for logits, params, prev, ids, at in (alone + (0,), batch + (pos,)):
        probs = fast_probs(ctx, ctx.sampler(), logits, params, prev)[at]
        tokens = [ctx.sample(ctx.sampler(), logits, ids, params, prev)[at]]
        got.append((probs, tokens))
    (a_probs, a_tok), (b_probs, b_tok) = got
    if torch.equal(a_probs, b_probs) and a_tok == b_tok:
        return
    a_facts, b_facts, same_probs = _facts(a_probs, a_tok), _facts(b_probs, b_tok), torch.equal(a_probs, b_probs)
    routes = [_route(ctx, *alone[:3], 0), _route(ctx, *batch[:3], pos)]
    names = (ctx.t("保留个数", "kept count"), "total", "token")
    moved = [name for name, a, b in zip(names, a_facts, b_facts) if a != b]
    if routes[0] != routes[1]:
        moved.insert(0, ctx.t("路线", "route"))
    if not moved:
        moved = [ctx.t("概率", "probabilities")]
    diff = (a_probs - b_probs).abs().max().item()
    here = here or ctx.t("在同伴旁", "beside the peer")
    lines = [ctx.t(f"{where}，这一行（{probe.label}；{params_text(probe.params)}）单独 vs 在{peer_name}旁的位置 {pos}："
                   f"{'、'.join(moved)} 变了" + (f"（最大 |概率差| {diff:.2e}）" if diff else ""),
                   f"{where}, row ({probe.label}; {params_text(probe.params)}), alone vs at position {pos} beside {peer_name}: "
                   f"{', '.join(moved)} moved" + (f" (max |probability difference| {diff:.2e})" if diff else "")),
             _state(ctx, ctx.t("  单独", "  alone"), a_facts, routes[0]), _state(ctx, f"  {here}", b_facts, routes[1])]
    if routes[0] != routes[1]:
        logits, params, prev = alone[:3]
        copy = _route(ctx, torch.cat([logits, logits]), params * 2, prev * 2, 0) if len(params) == 1 else None
        if copy not in (routes[0], None):
            lines.append(ctx.t(f"它自己的一份拷贝（同样的行、同样的参数）做同伴也让它换了路线（单独：{routes[0]}，在拷贝旁：{copy}）："
                               f"决定路线的是 batch 的大小（单独 B = 1，这里 B = 2），不是哪个同伴。一行的路线只能由它自己决定",
                               f"a copy of the row itself (the same logits and params) as its peer moves it too (alone: "
                               f"{routes[0]}, beside its copy: {copy}): the batch size decides its route (B = 1 alone, B = 2 here), not which peer. A row's "
                               f"route must be decided by the row alone"))
        else:
            lines.append(ctx.t(f"这个同伴改变了这一行的路线（单独：{routes[0]}，这里：{routes[1]}）：一行的路线和它是否 certain 只能由它自己决定；"
                               "在浮点边界上两条路线保留的集合不同",
                               f"this peer moved the row to another route (alone: {routes[0]}, here: {routes[1]}): a row's route "
                               f"and whether it is certain must be decided by the row alone; at a float boundary two routes keep "
                               f"different sets"))
    elif (changed := penalty_line(ctx, *batch[:3], pos) or _peers_penalty(ctx, a_probs, batch, pos)) is not None:
        lines.append(changed)
    elif long_row and same_probs and (drawn := uniform_line(ctx, probe.params, batch[3], batch[1], pos, alone[0],
                                                            alone[2][0])) and "T5.streams" in drawn:
        lines.append(drawn)
    elif long_row:
        lines.append(ctx.t("只改了 batch 的大小（四份同样的行、同样的参数），这一行的" + ("token" if same_probs else "数") +
                           "就变了：它的计算取决于 batch 的形状",
                           "nothing but the batch size changed (four copies of the row, the same params), yet the row's "
                           + ("drawn token moved (its filtered_probs did not)" if same_probs else "numbers moved")
                           + ": its computation depends on the batch's shape"))
        e = torch.exp(alone[0].float() - alone[0].float().max())                          # [1, V]
        one, four = e.sum(-1).item(), e.expand(4, -1).contiguous().sum(-1)[0].item()
        if one != four:                                                                    # seen here, on this CPU
            lines.append(ctx.t(f"在这个长度上 torch.sum 对单独一行和对 batch 的舍入不同（这一行的 `exp(z - max)`：单独 {one:.9g}，"
                               f"四行的 batch 里 {four:.9g}）：对整行的求和用 int64 定点数（像 row_total）或逐行顺序的 cumsum",
                               f"at this length torch.sum rounds a lone row and a batch differently (this row's exp(z - max): "
                               f"{one:.9g} alone, {four:.9g} in a batch of four): sum over the row in int64 fixed point (as "
                               f"row_total does) or with a sequential per-row cumsum"))
    elif same_probs and (drawn := uniform_line(ctx, probe.params, batch[3], batch[1], pos, alone[0], alone[2][0])):
        lines.append(drawn)
    elif same_probs:
        lines.append(ctx.t("filtered_probs 单独和在 batch 里逐位相同，token 却不同：抽样（消费的随机数或抽样时的求和）取决于同伴",
                           "filtered_probs is bit-identical alone and here, the token is not: the draw (the uniform it "
                           "consumes, or a sum it makes) depends on the peers"))
    else:
        lines.append(ctx.t(("路线相同，" if routes[0] else "") + "这一行的数却随同伴变了：窗口宽度、某个归约的长度或某个整批的值取决于同伴",
                           ("the same route, yet " if routes[0] else "") + "the row's numbers moved with the peer: a window "
                           "width, a reduction's length or a batch-wide value depends on the peers"))
    raise Fail(*lines, where="FastSampler.sample" if same_probs else "FastSampler.filtered_probs")


def _peers_penalty(ctx, alone_probs, batch, pos):
    """A penalised row that moved beside peers without a penalty: a line when giving those peers one (1.0001 on their
    own history) puts the row back as it is alone (the cause, established by the re-run), else None."""
    logits, params, prev, _ = batch
    row = params[pos]
    if row.repetition_penalty == 1.0 or all(p.repetition_penalty != 1.0 for i, p in enumerate(params) if i != pos):
        return None
    given = [p if i == pos or p.repetition_penalty != 1.0 else ctx.params(
        temperature=p.temperature, top_k=p.top_k, top_p=p.top_p, repetition_penalty=1.0001, seed=p.seed)
        for i, p in enumerate(params)]
    if not torch.equal(fast_probs(ctx, ctx.sampler(), logits, given, prev)[pos], alone_probs):
        return None
    return ctx.t("同伴没有 penalty 时这一行变了；给同伴一个 penalty（1.0001）它就和单独时一样：这一行的 penalty 取决于同伴有没有 penalty",
                 "beside peers without a penalty the row moved; with a penalty of 1.0001 given to those peers it is as "
                 "alone: the row's penalty depends on whether its peers have one")


@check("F7", "边界上的批不变：top_p 恰在这一行自己的边界、k 处并列、并列最大值、窗口边缘；专挑会挪动它的同伴",
       "batch invariance at float boundaries: top_p on the row's own boundary, ties at the k-th value, tied maxima, the "
       "window's edge; beside the peers that move such a row", hint=("p08-fast", 1, "q5"))
def f7_boundary_rows_beside_adversarial_peers(ctx):
    window_k = getattr(ctx.impl, "WINDOW_K", 256)
    for vocab in (300, 200):
        for probe in placed(ctx, probe_rows(ctx, vocab)):
            row = probe.row.to(ctx.device)
            alone = (row[None], [probe.params], [probe.history], ["t"])
            for n, (name, (rows, params, prev)) in enumerate(peers(ctx, vocab, probe, window_k).items()):
                pos = n % 2                                                     # before and after the peer
                logits = torch.cat([rows.to(ctx.device), row[None]] if pos else [row[None], rows.to(ctx.device)])
                batch = (logits, [*params, probe.params] if pos else [probe.params, *params],
                         [*prev, probe.history] if pos else [probe.history, *prev], ["p", "t"] if pos else ["t", "p"])
                compare(ctx, f"V={vocab}", probe, alone, batch, pos, name)


@check("F8", "长行的批不变：V = 151936 的一行单独 vs 四份同样的行组成的 batch（每个对整行的归约）",
       "long rows: V = 151936 alone vs the same row in a batch of four copies (every reduction over the row)",
       hint=("p08-fast", 1, "q5"))
def f8_long_rows_alone_and_in_a_batch(ctx):
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 4))               # torch.sum splits a lone long row across threads
    try:
        vocab, g, P = 151936, torch.Generator().manual_seed(81), ctx.params
        peaked, flat = zipf_logits(g, 1, vocab)[0], torch.randn(vocab, generator=g) * 0.3             # [V] each
        t = ctx.t
        probes = [Probe(t("尖峰，不过滤", "peaked, no filter"), peaked, P(seed=1), []),
                  Probe(t("平坦，不过滤，temperature 0.8", "flat, no filter, temperature 0.8"), flat, P(temperature=0.8, seed=2), []),
                  Probe(t("平坦，top_k=1000", "flat, top_k=1000"), flat, P(top_k=1000, seed=3), []),
                  Probe(t("尖峰，top_k=50，top_p=0.9", "peaked, top_k=50, top_p=0.9"), peaked, P(top_k=50, top_p=0.9, seed=4), [])]
        four = t("在四行的 batch 里", "in the batch of four")

        def top_p_only(top_p):
            return P(top_p=top_p, seed=5)
        for row in _seas(vocab):                             # top-p only, cut inside a head of 20: the window's route
            base = Probe(ctx.t(f"{vocab - 20} 个小值之上的 20 个大值，只有 top-p", f"a head of 20 over a sea of {vocab - 20}, top-p only"),
                         row, top_p_only(1.0), [])
            for below, top_p in zip((True, False), boundary(ctx, base, 12, top_p_only) or ()):
                label = ctx.t(f"{base.label}，top_p {'刚好低于' if below else '恰在'}它自己保留 12 与 13 个之间的边界",
                              f"{base.label}, top_p {'just below' if below else 'at'} its own boundary between keeping 12 and 13")
                probes.append(Probe(label, row, top_p_only(top_p), []))
        for n, probe in enumerate(probes):
            row = probe.row.to(ctx.device)
            p = probe.params
            copies = [probe.params] + [P(temperature=p.temperature, top_k=p.top_k, top_p=p.top_p, seed=p.seed + 100 * c)
                                       for c in range(1, 4)]
            alone = (row[None], [probe.params], [[]], ["t"])
            batch = (row[None].expand(4, -1).contiguous(), copies, [[]] * 4, ["t", "c1", "c2", "c3"])
            compare(ctx, f"V={vocab}", probe, alone, batch, 0, t("它自己的三份拷贝（别的 seed）", "three copies of itself (other seeds)"),
                    long_row=True, here=four)
            if n < 2:                                                   # the plain rows: a draw on its own boundary
                for u in draw_boundary(ctx, alone):
                    with fixed_uniform(ctx, u):
                        compare(ctx, t(f"V={vocab}，每行的 uniform 都设为 {u!r}（单独一行的 token 在这里改变）",
                                       f"V={vocab}, every row's uniform set to {u!r} (where the lone row's token changes)"),
                                probe, alone, batch, 0, t("它自己的三份拷贝", "three copies of itself"), long_row=True, here=four)
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def fixed_uniform(ctx, u):
    """While inside, the file's stream_uniform and stream_uniforms (the given streams it imported: one number, a
    batch's at once) return u for every draw."""
    given = {name: getattr(ctx.impl, name) for name in ("stream_uniform", "stream_uniforms") if hasattr(ctx.impl, name)}
    ctx.impl.stream_uniform = lambda seed, n: u
    ctx.impl.stream_uniforms = lambda seeds, counts: [u] * len(seeds)
    try:
        yield
    finally:
        for name in ("stream_uniform", "stream_uniforms"):
            if name in given:
                setattr(ctx.impl, name, given[name])
            else:
                delattr(ctx.impl, name)


def draw_boundary(ctx, alone):
    """Two neighbouring float64 uniforms where the lone row's drawn token changes (found with the learner's own
    sample(), its stream_uniform held at each value); () for a file that draws from another stream."""
    if not any(callable(getattr(ctx.impl, name, None)) for name in ("stream_uniform", "stream_uniforms")):
        return ()

    def token(u):
        with fixed_uniform(ctx, u):
            return ctx.sample(ctx.sampler(), alone[0], alone[3], alone[1], alone[2])[0]
    lo, hi = 0.5, 0.5 + 1e-4
    first = token(lo)
    if token(hi) == first or token(0.25) == token(0.75):           # the uniform moves nothing: another stream
        return ()
    return step_between(lambda u: token(u) != first, lo, hi)


def _seas(vocab, wanted=3):
    """Rows whose top-p cut falls in a head of 20 values while most of their mass is a sea of small ones: a row whose
    100 % (all of V) the grader's own torch.sum rounds differently alone than in a batch of four, where this CPU
    shows one (the first `wanted` of a few candidates)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(max(threads, 4))
    try:
        rows, split = [], []
        for seed in range(8):
            row = torch.randn(vocab, generator=torch.Generator().manual_seed(800 + seed)) * 0.3 - 5.0
            row[torch.randperm(vocab, generator=torch.Generator().manual_seed(900 + seed))[:20]] = torch.linspace(3.0, 0.0, 20)
            e = torch.exp(row - row.max())[None]                                               # [1, V]
            rows.append(row)
            if not torch.equal(e.sum(-1), e.expand(4, -1).contiguous().sum(-1)[:1]):
                split.append(row)
        return (split + rows)[:wanted]
    finally:
        torch.set_num_threads(threads)
