"""p08-fast step check T4c: FastSampler._parts puts steps 3-4b together for a batch. Each route's rows are the next
slice of `order`, each window row's distribution is the rule's, and the rows a window cannot settle (and the rows
with top_k > WINDOW_K) come back as the exact route's rows, found with one host sync. The learner's earlier steps
are replaced by the reference's here (their bugs are T3's, T4a's and T4b's to report). Helpers and the rules of
the step checks: tests/p08_fast/checks_steps.py."""
import math

import torch

from course import oracle
from course.grader.checks import Fail, _noting, check, describe, fmt_set
from tests.p08.context import params_text
from tests.p08_fast.causes import narrow_window_line
from tests.p08_fast.checks_steps import reference, step

EARLIER_STEPS = ("window_topk", "canonical_window", "prefix_sum", "_prefix", "row_total", "_first_true", "filter_window")
ROUTES = ("top_k", "top_p", "plain")


def _scattered(row, vocab):
    """A row's distribution in vocab order: [V] float64 with the row's values at their ids, 0 elsewhere."""
    out = torch.zeros(vocab, dtype=torch.float64)
    for token, value in row.items():
        out[token] = value
    return out


def _batches(ctx, window, window_k):
    """(label, logits [B, V], params, {row: why it takes the exact route}) for batches that reach every route."""
    P, g = ctx.params, torch.Generator().manual_seed(48)
    vocab = 512
    ties = torch.randn(vocab, generator=g) * 0.5 - 3.0                   # a run of equal values at the top-k cut
    at = torch.randperm(vocab, generator=g)[:6]
    ties[at] = torch.tensor([6.0, 5.0, 4.0, 4.0, 4.0, 4.0])
    rows = [(torch.randn(vocab, generator=g) * 2.0, P(temperature=0.0, top_k=5)),
            (torch.randn(vocab, generator=g) * 2.0, P(temperature=0.7, top_k=5, seed=1)),
            (torch.randn(vocab, generator=g) * 3.0, P(top_k=40, top_p=0.9, seed=2)),
            (ties, P(top_k=3, seed=3)),
            (torch.randn(vocab, generator=g) * 4.0, P(top_p=0.9, seed=4)),
            (torch.randn(vocab, generator=g) * 0.1, P(top_p=0.95, seed=5)),
            (torch.randn(vocab, generator=g) * 2.0, P(temperature=1.3, seed=6)),
            (torch.randn(vocab, generator=g) * 2.0, P(top_k=window_k + 44, seed=7)),
            (torch.randn(vocab, generator=g) * 5.0, P(temperature=2.0, top_p=0.5))]
    logits = torch.stack([r for r, _ in rows])                                                   # [9, V]
    params = [p for _, p in rows]
    exact = {3: "its k-th value (4.0, top_k=3) ties column k: the run of equal values may go on outside the window",
             5: f"a flat row with top_p=0.95: its nucleus is wider than its window of WINDOW = {window}",
             7: f"top_k={window_k + 44} > WINDOW_K = {window_k}: step 2 put it on the exact route"}
    ladder = torch.cat([torch.tensor([5.0, 4.0, 3.0, 3.0, 3.0]), torch.linspace(-1.0, -6.0, 59)])   # [64]
    flat = torch.randn(2, 48, generator=g) * 0.05
    return [("every route, V=512", logits, params, exact),
            ("the top-k rows alone", logits[1:4], params[1:4], {2: exact[3]}),
            ("top-p-only and plain rows", logits[[4, 6, 8]], [params[i] for i in (4, 6, 8)], {}),
            ("V=64, a peer with top_k=63 makes the top-k window the whole row", torch.stack([torch.randn(64, generator=g), ladder]),
             [P(top_k=63, seed=8), P(top_k=3, seed=9)],
             {1: "its k-th value (3.0, top_k=3) ties column k; a window that happens to be the whole row (the peer's "
                 "top_k + 1 = V) does not make it certain: complete is only for a top-p window of all V"}),
            ("V=48 < WINDOW: the top-p window is the whole row", flat, [P(top_p=0.999, seed=10), P(top_p=0.5, seed=11)], {})]


def _expected(ref, x, params, vocab, device):
    """The reference's _parts on the batch: ({row: {token: probability}} for window rows, the exact route's rows)."""
    routes = ref.route(params, vocab)
    knobs, order = ref._upload(params, routes, [0.0] * len(params), vocab, device)
    windows, exact = ref.FastSampler()._parts(x, params, routes, knobs, order)
    probs = {}
    for rows, e, _, total, ids in windows:
        dist = (e / total).double().cpu()
        cols = ids.cpu() if ids is not None else None
        for r, row in enumerate(rows.tolist()):
            kept = (dist[r] > 0).nonzero().flatten().tolist()
            probs[row] = {int(cols[r, c]) if cols is not None else c: float(dist[r, c]) for c in kept}
    return routes, knobs, order, probs, sorted(exact.tolist())


@check("T4c.parts", "_parts（第 4c 步）：每条路线的行、窗口与数值；窗口定不下来的行在一次 host sync 里并入 exact 路线",
       "_parts (step 4c): each route's rows, window and numbers; the rows a window cannot settle join the exact "
       "route, in one host sync", hint=("p08-fast", 2, "s4c"))
@step("FastSampler._parts")
def t4c_parts(ctx):
    ref = reference()
    for name in EARLIER_STEPS:                          # an earlier step's bug is its own check's to report
        if hasattr(ctx.impl, name):
            setattr(ctx.impl, name, getattr(ref, name))
    window, window_k = getattr(ctx.impl, "WINDOW", ref.WINDOW), getattr(ctx.impl, "WINDOW_K", ref.WINDOW_K)
    routes_cls = getattr(ctx.impl, "Routes", ref.Routes)
    first = None
    for label, logits, params, exact_why in _batches(ctx, window, window_k):
        batch, vocab = logits.shape
        x = logits.to(ctx.device)
        routes, knobs, order, expected, expected_exact = _expected(ref, x, params, vocab, ctx.device)
        routes = routes_cls(*routes)
        shown = f"x [{batch}, {vocab}], params, routes, knobs, order ({label})"
        sampler = _noting(f"called {ctx.sampler_name}()", ctx.fn(ctx.sampler_name))
        try:
            got = _noting(f"called FastSampler._parts({shown})", sampler._parts, x, params, routes, knobs, order)
        except NotImplementedError:
            raise
        except Exception as exc:
            if (why := narrow_window_line(ctx, sampler, x, params, routes, knobs, order)) is None:
                raise
            raise Fail(f"called FastSampler._parts({shown}) raised {type(exc).__name__}: {str(exc).splitlines()[0][:160]}",
                       why, where="FastSampler._parts") from exc
        windows, exact = _shape_of(ctx, got, shown)
        _check_parts(ctx, shown, x, params, routes, order, windows, expected, set(expected_exact) | set(exact), vocab)
        _check_exact(ctx, shown, x, params, routes, windows, exact, expected_exact, exact_why, window)
        first = first or (sampler, x, params, routes, knobs, order, shown)
    _check_one_sync(ctx, *first)


def _shape_of(ctx, got, shown):
    """(windows as [(rows list, e, cs, total, ids), ...], exact as a list) or a Fail saying what came back."""
    form = ctx.t("期望：([(rows, e, cs, total, ids 或 None), ...], exact 行 [m] 的 long 张量)",
                 "expected ([(rows, e, cs, total, ids or None), ...], the exact route's rows as a long tensor [m])")
    if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], (list, tuple))):
        raise Fail(f"called FastSampler._parts({shown}) -> {describe(got)}", form, where="FastSampler._parts")
    windows = []
    for part in got[0]:
        if not (isinstance(part, (list, tuple)) and len(part) == 5 and isinstance(part[0], torch.Tensor)):
            raise Fail(f"called FastSampler._parts({shown}) -> a part {describe(part)}", form, where="FastSampler._parts")
        windows.append((part[0].flatten().tolist(), *part[1:]))
    exact = got[1]
    if not (isinstance(exact, torch.Tensor) and exact.dim() == 1 and not exact.is_floating_point()
            and exact.dtype != torch.bool):
        raise Fail(f"called FastSampler._parts({shown}) -> exact rows {describe(exact)}",
                   ctx.t("exact 行要是一维 long 张量（sample 用它 index_copy_）",
                         "the exact rows must be a 1-D long tensor (sample() index_copy_s with it)"), where="FastSampler._parts")
    return windows, exact.tolist()


def _check_exact(ctx, shown, x, params, routes, windows, exact, expected, why, window):
    vocab = x.shape[1]
    head = f"called FastSampler._parts({shown}) -> exact rows {sorted(exact)}, expected {expected}"
    twice = sorted({r for r in exact if exact.count(r) > 1})
    if twice:
        raise Fail(head, ctx.t(f"行 {twice} 出现了不止一次", f"rows {twice} appear more than once"), where="FastSampler._parts")
    missing, extra = [r for r in expected if r not in exact], [r for r in exact if r not in expected]
    # another design may settle a row in a window of its own (wider, or the whole row) or send a row the reference's
    # window settles to the exact route: only a wrong distribution, a row a peer settled, or a clear-cut row is a fault
    missing = [r for r in missing if not _settled_in_own_window(x, params, routes, windows, r)]
    extra = [r for r in extra if r in routes.greedy or r in routes.plain or _clear_cut(x, params[r], r)]
    if not missing and not extra:
        return
    r = (missing or extra)[0]
    lines = [head]
    if missing and r in routes.exact:
        lines.append(ctx.t("top_k > WINDOW_K 的行第 2 步就走 exact：exact 行从 order 的尾部（greedy、top_k、top_p、plain 之后）开始",
                           "a row with top_k > WINDOW_K is on the exact route from step 2: the exact rows start with "
                           "order's tail (after the greedy, top_k, top_p and plain rows)"))
    elif missing and r in routes.top_p and _mass_over_window(x, params, windows, r):
        lines.append(_WINDOW_MASS(ctx))
    elif missing:
        lines.append(ctx.t(f"它在窗口里不 certain（{why.get(r, '')}）：filter_window 说 certain 为 False 的行要并入 exact 行",
                           f"it is not certain in its window ({why.get(r, '')}): the rows filter_window calls not certain "
                           f"join the exact rows"))
    elif r in routes.greedy or r in routes.plain:
        lines.append(ctx.t("greedy 行和 plain 行不走窗口，也就从不进 exact 路线", "greedy and plain rows take no window, so they never join the exact route"))
    else:
        lines.append(ctx.t("它在自己的窗口里是 certain 的：只有 certain 为 False 的窗口行（rows[~certain]）才并入",
                           "it is certain in its own window: only the window rows whose certain is False (rows[~certain]) join"))
    top_p = next((w for w in windows if r in w[0] and r in routes.top_p), None)
    if top_p is not None and top_p[1].shape[-1] != min(window, vocab):
        lines.append(ctx.t(f"你的 top-p 窗口有 {top_p[1].shape[-1]} 列，应为 WINDOW = {min(window, vocab)}：只开 top-p 的行的 certain 读窗口最后一个值",
                           f"your top-p window has {top_p[1].shape[-1]} columns, expected WINDOW = {min(window, vocab)}: a "
                           f"top-p-only row's certain reads its window's last value"))
    if r in routes.top_p and min(window, vocab) == vocab and extra:
        lines.append(ctx.t(f"这个 top-p 窗口就是整行（W = V = {vocab}）：complete=True，每行都 certain",
                           f"this top-p window is the whole row (W = V = {vocab}): complete=True, every row is certain"))
    lines[1] = f"row {r} ({params_text(params[r])}): {lines[1]}"
    raise Fail(*lines, where="FastSampler._parts")


def _right_distribution(x, p, r):
    """Row r's filtered distribution by the rule, over V: [V] float64 (the oracle, from the row alone)."""
    return torch.tensor(oracle.filtered_probs(x[r].double().cpu().tolist(), p.temperature, p.top_k, p.top_p),
                        dtype=torch.float64)


def _settled_in_own_window(x, params, routes, windows, r):
    """Did the file's own window (not one the peers made the whole row) hold row r's whole, right distribution?"""
    part = next((w for w in windows if r in w[0]), None)
    if r in routes.exact or part is None or not isinstance(part[1], torch.Tensor) or part[1].dim() != 2:
        return False
    vocab, (rows, e, _, total, ids) = x.shape[1], part
    if r in routes.top_k and e.shape[-1] == vocab and params[r].top_k + 1 < vocab:   # the peers' widest top_k
        return False
    return not _differs(_in_vocab(e, total, ids, rows.index(r), vocab), _right_distribution(x, params[r], r))


def _in_vocab(e, total, ids, i, vocab):
    """Row i of a part as a distribution over V: [V] float64, e / total at its ids (ids None: vocab order)."""
    dist = (e[i].double() / total[i].double()).cpu()
    return dist if ids is None else torch.zeros(vocab, dtype=torch.float64).index_put_(
        (ids[i].long().cpu(),), dist, accumulate=True)


def _differs(got, want):
    """Other zeros, or any token off by more than 1e-6."""
    return bool(((got > 0) != (want > 0)).any()) or (got - want).abs().max().item() > 1e-6


def _clear_cut(x, p, r, most=16):
    """Is row r settled by any window of `most` columns: at most that many kept tokens, none tied with the next?"""
    kept = int((_right_distribution(x, p, r) > 0).sum())
    z = sorted(x[r].double().cpu().tolist(), reverse=True)
    return kept <= most and (kept == len(z) or z[kept - 1] > z[kept])


def _check_parts(ctx, shown, x, params, routes, order, windows, expected, exact, vocab):
    start = len(routes.greedy)
    for name in ROUTES:
        members = getattr(routes, name)
        want, start = order[start:start + len(members)].tolist(), start + len(members)
        if not members:
            continue
        part = next((w for w in windows if w[0] == want), None)
        if part is None:
            holding = next((w[0] for w in windows if set(w[0]) & set(want)), None)
            raise Fail(f"called FastSampler._parts({shown}) -> parts with rows {[w[0] for w in windows]}",
                       ctx.t(f"{name} 路线的行是 order[{start - len(members)}:{start}] = {want}（order 里 greedy 行在前，然后 top_k、top_p、plain）"
                             + (f"；你的一份里是 {holding}" if holding else ""),
                             f"the {name} route's rows are order[{start - len(members)}:{start}] = {want} (order lists the "
                             f"greedy rows first, then top_k, top_p, plain)" + (f"; one of your parts holds {holding}" if holding else "")),
                       where="FastSampler._parts")
        rows, e, cs, total, ids = part
        n = len(rows)
        width = e.shape[-1] if isinstance(e, torch.Tensor) and e.dim() == 2 else None
        ok = (width is not None and isinstance(total, torch.Tensor) and tuple(total.shape) == (n, 1)
              and tuple(e.shape) == (n, width) and (ids is None if name == "plain" else
                                                    isinstance(ids, torch.Tensor) and tuple(ids.shape) == (n, width)))
        if not ok:
            raise Fail(f"called FastSampler._parts({shown}) -> the {name} part: e {describe(e)}, total {describe(total)}, "
                       f"ids {describe(ids)}",
                       ctx.t(f"期望 e [{n}, W]、total [{n}, 1]、ids [{n}, W]（plain 行：None，列就是词表 id）",
                             f"expected e [{n}, W], total [{n}, 1], ids [{n}, W] (plain rows: None, the columns are vocab ids)"),
                       where="FastSampler._parts")
        for r, row in enumerate(rows):
            if row in exact:                              # computed, then overridden by the exact route
                continue
            got, want_row = _in_vocab(e, total, ids, r, vocab), _scattered(expected[row], vocab)
            if _differs(got, want_row):
                _wrong_row(ctx, shown, x, params, row, name, got, want_row, width, vocab)


def _wrong_row(ctx, shown, x, params, row, name, got, want, width, vocab):
    p = params[row]
    kept, should = oracle.kept(got.tolist()), oracle.kept(want.tolist())
    lines = [f"called FastSampler._parts({shown}) -> row {row} ({params_text(p)}, the {name} part): kept {fmt_set(kept)}, "
             f"expected {fmt_set(should)}" + ("" if kept != should else f"; max |difference| {(got - want).abs().max().item():.2e}")]
    values = x[row].double().cpu().tolist()
    untempered = torch.tensor(oracle.filtered_probs(values, 1.0, p.top_k, p.top_p), dtype=torch.float64)
    if p.temperature != 1.0 and (got - untempered).abs().max().item() < 1e-5:
        lines.append(ctx.t("这一行没有除以温度：窗口取出之后除以 T（knobs 第 0 列），plain 行除它的整行",
                           "this row was not divided by its temperature: divide the window by T (knobs column 0) once it is "
                           "taken; plain rows divide their whole row"))
    elif name == "top_p" and width and width < vocab and len(kept) < len(should) and len(kept) == _kept_over_window(values, p, width):
        lines.append(_WINDOW_MASS(ctx))
    elif name == "top_p" and p.temperature != 1.0 and len(kept) in _kept_with_untempered_mass(values, p):
        lines.append(ctx.t("这一行的 100 % 是在没除以温度的 x 上算的：row_mass = row_total(exp(x / T - max))，用这一行自己的 T",
                           "this row's 100 % was taken over x not divided by its temperature: row_mass = "
                           "row_total(exp(x / T - max)), with the row's own T"))
    elif abs(float(got.sum()) - 1.0) > 1e-4:
        lines.append(ctx.t(f"这一行加起来是 {float(got.sum()):.4g}：total 是保留列的质量（filter_window 给的）",
                           f"this row sums to {float(got.sum()):.4g}: total is the kept columns' mass (filter_window's)"))
    raise Fail(*lines, where="FastSampler._parts")


def _WINDOW_MASS(ctx):  # noqa: N802 - a message
    return ctx.t("只开 top-p 的行的 100 % 用了窗口的质量：窗口的质量比整行小，留下的集合就太小。row_mass = row_total(exp(x / T - max))，覆盖整个 V",
                 "a top-p-only row's 100 % was the window's mass: the window holds less than the whole row, so the kept set "
                 "comes out too small. row_mass = row_total(exp(x / T - max)) over all of V")


def _mass_over_window(x, params, windows, row):
    """Does the learner's window for this top-p-only row keep what a 100 % of the window's own mass keeps (fewer than
    the whole row's 100 % would, inside the window)?"""
    part = next((w for w in windows if row in w[0]), None)
    if part is None or not isinstance(part[1], torch.Tensor) or part[1].dim() != 2:
        return False
    width, kept = part[1].shape[-1], int((part[1][part[0].index(row)] > 0).sum())
    return kept < width and kept == _kept_over_window(x[row].double().cpu().tolist(), params[row], width)


def _kept_with_untempered_mass(values, p):
    """How many tokens a top-p-only row keeps when its window is divided by T but its 100 % is the mass of x not
    divided by T (less the max of x or of x / T): a set of the counts either way."""
    z = sorted((v / p.temperature for v in values), reverse=True)
    e, counts = [math.exp(v - z[0]) for v in z], set()
    for top in (max(values), z[0]):
        mass, before = sum(math.exp(v - top) for v in values), 0.0
        counts.add(next((j for j, w in enumerate(e) if j and (before := before + e[j - 1]) >= p.top_p * mass), len(e)))
    return counts


def _kept_over_window(values, p, width):
    """How many tokens a top-p-only row keeps when its 100 % is its window's mass instead of the row's."""
    z = sorted((v / p.temperature for v in values), reverse=True)[:width]
    e = [math.exp(v - z[0]) for v in z]
    mass, before = sum(e), 0.0
    for j, w in enumerate(e):
        if j and before >= p.top_p * mass:
            return j
        before += w
    return width


def _check_one_sync(ctx, sampler, x, params, routes, knobs, order, shown):
    """At most one host sync per call, counted with torch's profiler (course/bench/opcount.py): the same on any CPU."""
    if x.device.type != "cpu":
        return
    from course.bench import opcount

    counts = opcount.count(lambda: sampler._parts(x, params, routes, knobs, order))
    if counts.syncs > 1:
        raise Fail(f"called FastSampler._parts({shown}): {counts} per call",
                   ctx.t("一次调用最多一次 host sync：把各窗口路线的 rows 和 certain 拼起来，只做一次 rows[~certain]"
                         "（.item()、.tolist()、布尔下标、nonzero 都要等设备）",
                         "at most one host sync per call: concatenate the window routes' rows and certain, and take "
                         "rows[~certain] once (.item(), .tolist(), a boolean index and nonzero each wait for the device)"),
                   where="FastSampler._parts")
