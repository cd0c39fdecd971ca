"""Rows built to move a fast path's row, and the peers that try to: the pieces of F7 and F8
(tests/p08_fast/checks_probes.py).

A probe row sits on a float boundary of its own: a top_p placed exactly where the row alone changes its kept count
(found with the learner's own filtered_probs, so any design's boundary is found, not the reference's), a tie at its
k-th value, tied maxima, a nucleus that ends at the window's edge (WINDOW = 64). Beside each peer a correct fast
path computes the row bit for bit as it does alone; a route or a reduction that the peers decide moves it there.
"""
import math
from dataclasses import dataclass

import torch

from course.floats import step_between
from course.grader.checks import _noting
from tests.p08.context import params_text

WINDOW = 64


@dataclass
class Probe:
    label: str          # what the row is built to test, for the report
    row: torch.Tensor   # [V] fp32
    params: object      # SamplingParams
    history: list


def _kept(ctx, row, params, history) -> int:
    """How many tokens the learner's filtered_probs keeps for the row alone."""
    out = _noting(f"called FastSampler.filtered_probs(logits [1, {len(row)}], params: {params_text(params)})",
                  ctx.sampler().filtered_probs, row[None].to(ctx.device), [params], [history])
    return int((out[0] > 0).sum())


def mass_before(row, params, history, rank) -> float:
    """float64: the mass strictly before the token of this rank, after the penalty, temperature and top-k."""
    from course import oracle
    values = oracle.penalize(row.tolist(), history, params.repetition_penalty)
    z = torch.tensor(values, dtype=torch.float64) / params.temperature
    if 0 < params.top_k < len(z):
        z = z.masked_fill(z < torch.sort(z, descending=True).values[params.top_k - 1], -math.inf)
    probs = torch.softmax(z, -1)
    ordered = torch.sort(probs, descending=True, stable=True).values
    return float(ordered[:rank].sum())


def boundary(ctx, probe, rank, make):
    """The two neighbouring float64 top_p values where the row alone goes from keeping <= rank tokens to keeping more:
    (below, at). make(top_p) -> params. None when the learner's row does not change there (another check's bug)."""
    guess = mass_before(probe.row, probe.params, probe.history, rank)
    lo, hi = max(guess * (1 - 1e-5), 1e-12), min(guess * (1 + 1e-5), 1.0)
    low_kept = _kept(ctx, probe.row, make(lo), probe.history)
    if low_kept > rank or _kept(ctx, probe.row, make(hi), probe.history) <= low_kept:
        return None
    return step_between(lambda top_p: _kept(ctx, probe.row, make(top_p), probe.history) > low_kept, lo, hi)


def probe_rows(ctx, vocab):
    """[(Probe, boundary ranks)]: rows at V = vocab whose top_p (where they have one) is placed at a boundary of the
    row alone for each listed rank (the count it keeps goes from rank to rank + 1 there)."""
    P, g = ctx.params, torch.Generator().manual_seed(vocab)
    tail = lambda: torch.randn(vocab, generator=g) * 0.3 - 4.0                                # noqa: E731  [V]
    spots = lambda n: torch.randperm(vocab, generator=g)[:n]                                  # noqa: E731  [n]
    out = []
    row, at = tail(), spots(34)                                                                # ranks 27-33 tied:
    row[at[:27]], row[at[27:]] = torch.linspace(3.0, 1.0, 27), 0.5                             # the k-th (30th) too
    t = ctx.t
    out.append((Probe(t("第 k 大的值处并列（top_k=30 保留 34 个）", "ties at its k-th value (top_k=30 keeps 34)"), row,
                      P(top_k=30, seed=1), []), (3,)))
    row, at = tail(), spots(60)
    row[at] = torch.linspace(2.5, -1.0, 60)
    out.append((Probe(t("第 k 大的值分明，temperature 0.7", "a clear k-th value, temperature 0.7"), row,
                      P(top_k=40, temperature=0.7, seed=2), []), (5,)))
    row, at = tail(), spots(20)
    row[at] = torch.linspace(3.0, 0.0, 20)
    out.append((Probe(t("只有 top-p，核心约 10 个", "top-p only, a nucleus of about 10"), row, P(seed=3), []), (10,)))
    row, at = tail() - 4.0, spots(80)
    row[at] = torch.linspace(1.0, -1.0, 80)                                                    # 80 close values
    out.append((Probe(t("只有 top-p，核心恰好止于窗口边缘（64 列）", "top-p only, a nucleus that ends at the window's edge (64 columns)"),
                      row, P(seed=4), []),
                (WINDOW - 1, WINDOW)))
    row, at = tail(), spots(12)
    row[at[:2]], row[at[2:]] = 2.0, torch.linspace(1.0, 0.0, 10)                               # tied maxima
    out.append((Probe(t("并列的最大值", "tied maxima"), row, P(seed=5), []), (1,)))
    out.append((Probe(t("并列的最大值，greedy", "tied maxima, greedy"), row.clone(), P(temperature=0.0), []), ()))
    out.append((Probe(t("并列的最大值，top_k=1 两个都保留", "tied maxima, top_k=1 keeps both"), row.clone(), P(top_k=1, seed=6), []), ()))
    row, at = tail(), spots(30)
    row[at] = torch.linspace(2.0, -0.5, 30)
    out.append((Probe(t("有 penalty 的行（前 3 个 1.3）", "a penalised row (1.3 on its top 3)"), row,
                      P(top_k=20, temperature=1.2, repetition_penalty=1.3, seed=7),
                      [int(i) for i in at[:3]]), (4,)))
    out.append((Probe(t("普通的行，temperature 1.3", "a plain row, temperature 1.3"), torch.randn(vocab, generator=g),
                      P(temperature=1.3, seed=8), []), ()))
    return out


def placed(ctx, probes):
    """The probes, each top_p row once per side of each of its boundaries: [Probe]."""
    out = []
    for probe, ranks in probes:
        if not ranks:
            out.append(probe)
            continue
        p = probe.params

        def make(top_p, p=p):
            return ctx.params(temperature=p.temperature, top_k=p.top_k, top_p=top_p,
                              repetition_penalty=p.repetition_penalty, seed=p.seed)
        for rank in ranks:
            sides = boundary(ctx, probe, rank, make)
            for side, top_p in zip(("below", "at"), sides or ()):
                label = ctx.t(f"{probe.label}；top_p {'刚好低于' if side == 'below' else '恰在'}它自己保留 {rank} 与 {rank + 1} "
                              f"个之间的边界",
                              f"{probe.label}; top_p {'just below' if side == 'below' else 'at'} its own boundary between "
                              f"keeping {rank} and {rank + 1}")
                out.append(Probe(label, probe.row, make(top_p), probe.history))
    return out


def peers(ctx, vocab, probe, window_k):
    """{name: (rows [n, V], params, histories)}: one kind of peer each, the kinds that move a row whose route or sums
    the batch decides."""
    P, g = ctx.params, torch.Generator().manual_seed(vocab + 1)
    spread = lambda: torch.randn(1, vocab, generator=g) * 2.0                                # noqa: E731
    top = [int(i) for i in torch.topk(probe.row, 3).indices]
    t = ctx.t
    kinds = {t(f"一个 top_k = V - 1 = {vocab - 1} 的同伴", f"a peer with top_k = V - 1 = {vocab - 1}"):
             (spread(), [P(top_k=vocab - 1, seed=101)], []),
             t(f"一个 top_k = V = {vocab}（关闭）且 top_p=0.9 的同伴", f"a peer with top_k = V = {vocab} (off) and top_p=0.9"):
             (spread(), [P(top_k=vocab, top_p=0.9, seed=102)], [])}
    if vocab - 1 > window_k + 1:
        kinds[t(f"一个 top_k = {window_k + 20}（大于 WINDOW_K = {window_k}）的同伴",
                f"a peer with top_k = {window_k + 20} (above WINDOW_K = {window_k})")] = (
            spread(), [P(top_k=window_k + 20, seed=103)], [])
    kinds[t("一个平坦、只有 top-p 的同伴（它的核心装不进窗口）", "a flat top-p-only peer (its nucleus cannot fit a window)")] = (
        torch.randn(1, vocab, generator=g) * 0.01, [P(top_p=0.9, seed=104)], [])
    kinds[t("一个 greedy 同伴", "a greedy peer")] = (spread(), [P(temperature=0.0)], [])
    kinds[t("一个有 penalty 的同伴（对这一行的前 3 个 id 用 2.0）", "a penalised peer (2.0 on this row's top 3 ids)")] = (
        spread(), [P(top_k=10, repetition_penalty=2.0, seed=106)], top)
    p = probe.params
    kinds[t("它自己的拷贝（另一个 seed）", "its own copy (another seed)")] = (probe.row[None].clone(), [ctx.params(
        temperature=p.temperature, top_k=p.top_k, top_p=p.top_p, repetition_penalty=p.repetition_penalty,
        seed=None if p.seed is None else p.seed + 1000)], probe.history)
    return {name: (rows, params, [history]) for name, (rows, params, history) in kinds.items()}
