"""The batches F1 compares with the reference: random mixed batches, wide top-p rows, ties, edge rows (greedy maxima
in a chunk's tail, top_k = 0 or V, exact top-p boundaries) and cuts inside runs of nearly equal values."""
import functools
import random

import torch

from course import oracle
from tests.p08.rows import head_and_tail, top_p_keeping, zipf_logits


def random_knobs(rng, vocab) -> dict:
    return dict(temperature=rng.choice([0.0, 0.6, 1.0, 1.4]), top_k=rng.choice([-1, -1, 1, 5, 40, 200, vocab + 3]),
                top_p=rng.choice([1.0, 0.9, 0.5, 0.97]), repetition_penalty=rng.choice([1.0, 1.0, 1.3]),
                seed=rng.choice([None, rng.randrange(10_000)]))


def random_params(ctx, rng, vocab):
    return ctx.params(**random_knobs(rng, vocab))


def heterogeneous_batch(ctx, seed, batch, vocab, dtype=torch.float32):
    """Random logits (peaked and flat rows), params and histories, kept away from top-p ties: a fresh copy each call."""
    logits, knobs, prev = _heterogeneous(seed, batch, vocab, dtype)
    return logits.clone(), [ctx.params(**k) for k in knobs], [list(h) for h in prev]


@functools.lru_cache(maxsize=None)      # the same for every file graded in one process (the self-tests grade many)
def _heterogeneous(seed, batch, vocab, dtype):
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    peaked = zipf_logits(g, batch, vocab)
    flat = torch.randn(batch, vocab, generator=g) * 0.3
    logits = torch.where(torch.rand(batch, 1, generator=g) < 0.5, peaked, flat).to(dtype)     # [B, V]
    knobs, prev, i = [], [], 0
    while len(knobs) < batch:
        k = random_knobs(rng, vocab)
        history = [rng.randrange(vocab) for _ in range(rng.choice([0, 3, 20]))]
        values = oracle.penalize(logits[i].float().tolist(), history, k["repetition_penalty"])
        if k["temperature"] > 0 and not oracle.cut_is_clear([v / k["temperature"] for v in values], k["top_k"],
                                                               k["top_p"]):
            continue                                           # a tie or a near-tie at the cut: either answer is right
        knobs.append(k)
        prev.append(tuple(history))
        i += 1
    return logits, tuple(knobs), tuple(prev)


def wide_top_p_batch(ctx, seed, batch, vocab):
    """Top-p-only rows whose kept sets are wider than a first window of 64 tokens (clear cuts)."""
    g, rng = torch.Generator().manual_seed(seed), random.Random(seed)
    rows = torch.stack([head_and_tail(g, vocab, 300) for _ in range(batch)])                   # [B, V]
    params = [ctx.params(top_p=top_p_keeping(rows[i], rng.randrange(70, 280)), seed=i) for i in range(batch)]
    return rows, params, [[] for _ in range(batch)]


def tie_batch(ctx, vocab=50257):
    """Rows built to trip a window: ties at the top-k cut and at the top-p cut (lower ids stay), the top
    tokens in the last, partial chunk (V = 50257 is no multiple of any power of two), and a penalty that
    pushes the top token out of the top-k window or pulls a negative one into it."""
    g = torch.Generator().manual_seed(17)
    tail = lambda: torch.randn(vocab, generator=g) * 0.5 - 8.0                                  # noqa: E731  [V]
    spots = lambda n: torch.randperm(vocab - 64, generator=g)[:n]                               # noqa: E731  [n]
    rows, params, prev = [], [], []

    def add(row, history=(), **kwargs):
        rows.append(row)
        params.append(ctx.params(seed=len(rows), **kwargs))
        prev.append(list(history))

    row, at = tail(), spots(40)                                                                  # 10 distinct, 30 tied
    row[at[:10]], row[at[10:]] = torch.linspace(5.0, 4.1, 10), 3.0
    add(row, top_k=20)                                                                           # keeps all 40
    add(row.clone(), top_k=12, top_p=0.999, temperature=0.7)
    row, at = tail(), spots(204)                                                                 # 4 high, 200 tied
    row[at[:4]], row[at[4:]] = torch.tensor([4.0, 3.5, 3.2, 3.0]), 1.0
    add(row, top_p=top_p_keeping(row, 90))                                                       # cut inside the tie run
    add(row.clone(), top_p=top_p_keeping(row, 150), temperature=1.3)
    row = tail()
    row[vocab - 8:] = torch.linspace(6.0, 3.0, 8)                                                # top 8 in the last chunk
    add(row, top_k=5)
    add(row.clone(), top_p=top_p_keeping(row, 6))
    row, at = tail(), spots(40)                                                                  # a top-k row, top-p cut
    row[at[:4]], row[at[4:34]], row[at[34:]] = torch.tensor([4.0, 3.5, 3.2, 3.0]), 1.0, torch.linspace(0.5, 0.0, 6)
    add(row, top_k=40, top_p=top_p_keeping(row, 20))                                            # inside 30 tied values
    row = torch.full((vocab,), -30.0)                                                           # fp32 mass hits 1.0 at once
    row[spots(3)] = torch.tensor([0.0, 5.0, 5.0])                                                # tied maxima
    add(row, temperature=0.0)                                                                    # greedy: the first maximum
    add(row.clone())                                                                             # top_p = 1 is off: no zeros
    row, at = tail(), spots(41)
    row[at[:40]], row[at[40]] = torch.linspace(1.0, 0.6, 40), 5.0                                # token at[40]: 5.0 / 10 = 0.5
    add(row, history=[int(at[40])], top_k=40, repetition_penalty=10.0)                           # out of the top 40
    row, at = tail(), spots(61)
    row[at[:40]], row[at[40:60]], row[at[60]] = torch.linspace(-0.2, -1.5, 40), torch.linspace(-2, -4, 20), -5.0
    add(row, history=[int(at[60])], top_k=40, repetition_penalty=0.1)                            # -5.0 * 0.1 = -0.5: from
                                                                                                 # rank 60 into the top 40
    return torch.stack(rows), params, prev


def edge_batches(ctx):
    """Small batches that take a fast path's rarer turns (each once let a wrong fast path through)."""
    ladder = torch.cat([torch.tensor([5.0, 4.0, 3.0, 3.0, 3.0]), torch.linspace(-1.0, -6.0, 59)])    # [64]
    spread = torch.randn(64, generator=torch.Generator().manual_seed(23))                         # [64]
    tied = torch.full((50257,), -4.0)
    tied[[9000, 31]] = 6.0                                                                        # maxima at 31 and 9000
    edge = torch.randn(50257, generator=torch.Generator().manual_seed(29)) - 4.0                  # [V]
    edge[50240] = 3.0                                                                             # 50240 = 785 * 64
    g = torch.Generator().manual_seed(31)
    wide_k = [torch.randn(1, vocab, generator=g) * 2.0 for vocab in (1000, 50257)]                 # [1, V] each
    twin = torch.cat([torch.tensor([[5.0, 5.0]]), spread[None, 2:] - 8.0], 1)                      # [1, 64]
    h = torch.Generator().manual_seed(37)                             # its own stream: g's batches stay as they were
    greedy = torch.randn(8, 50257, generator=h) - 4.0                 # [8, V]: 8 * V >= 2 ** 18, a big batch
    for row, ids in enumerate([[50256], [50240], [100, 50250], [63, 64], [0], [50239], [50241, 50255], [5]]):
        greedy[row, ids] = 5.0                                        # maxima in the tail, across chunks, tied
    greedy[7, 50250] = 4.0                                            # row 7: its penalty moves the max to 50250
    short = torch.randn(3, 575, generator=h)                          # [3, 575]: 8 chunks of 64 and a tail of 63
    short[0, 574], short[1, 520] = 9.0, 9.0                           # maxima far into a tail longer than 8 chunks
    return [
        # the k-th value ties the next in a small vocabulary (the tie run decides); top_k = 0 is off, like -1
        (torch.stack([ladder, spread]), [ctx.params(top_k=3, seed=1), ctx.params(top_k=0, top_p=0.9, seed=2)], [[], []]),
        (torch.zeros(1, 64), [ctx.params(top_k=3, seed=3)], [[]]),              # a lone row, all values equal
        (tied[None], [ctx.params(top_p=1e-30, seed=4)], [[]]),                   # tied maxima: only the lower id stays
        (tied[None], [ctx.params(top_k=300, top_p=1e-30, seed=14)], [[]]),       # the same on the exact route
        (edge[None], [ctx.params(top_k=5, seed=5)], [[]]),                       # the max opens the last partial chunk
        *[(row, [ctx.params(top_k=300, seed=6)], [[]]) for row in wide_k],        # top_k above 256
        (torch.cat(wide_k[:1] * 2), [ctx.params(temperature=1e-5, top_k=300, seed=12), ctx.params(top_k=300, seed=13)],
         [[], []]),                                                              # T = 1e-5 (not greedy) beside T = 1
        (torch.stack([spread, ladder]), [ctx.params(top_k=64, seed=7), ctx.params(top_k=4, seed=8)], [[], []]),  # k = V: off
        (twin, [ctx.params(top_k=2, top_p=0.5, seed=9)], [[]],                   # mass before the 2nd is exactly 0.5: it goes
         ("两个相等的最大值：第二个之前的质量恰好是 0.5 = top_p，已经达到，它要被删掉（mass_before >= top_p，不是 >）",
          "two equal maxima: the mass before the second is exactly 0.5 = top_p, which already reaches it, so it goes "
          "(mass before >= top_p, not >)")),
        (torch.randn(300, 1100, generator=g), [ctx.params(top_k=300, seed=i) for i in range(300)], [[]] * 300),  # many rows
        (greedy, [ctx.params(temperature=0.0)] * 7 + [ctx.params(temperature=0.0, repetition_penalty=2.0)],
         [[]] * 7 + [[5]]),                                                     # greedy rows: the first maximum
        (short, [ctx.params(temperature=0.0)] * 2 + [ctx.params(top_k=1, seed=11)], [[]] * 3),  # beside a window row
    ]


def order_batch(ctx, vocab=4096):
    """Top-p-only rows whose cut falls inside a run of nearly equal values: +0.0 beside -0.0 (equal: lower ids
    first), +1e-4 beside -1e-4 (signs mixed in one probability bucket) and floats one or two ulp apart (2.5 and -2.5).
    111 tokens kept, past a window of 64: the exact route's own order inside a bucket decides the cut."""
    up = torch.tensor(2.5).nextafter(torch.tensor(3.0)).item()                                  # 2.5 + 1 ulp
    down = torch.tensor(-2.5).nextafter(torch.tensor(-3.0)).item()                              # -2.5 - 1 ulp
    lower = torch.tensor(down).nextafter(torch.tensor(-3.0)).item()                             # -2.5 - 2 ulp
    runs = [(1.0, [-0.0] * 100 + [0.0] * 100), (1.0, [-1e-4, 1e-4] * 100), (3.0, [2.5, up] * 100),
            (-1.0, [down, -2.5] * 100), (-1.0, [lower, -2.5] * 100)]
    rows = []
    for top, run in runs:
        row = torch.full((vocab,), -10.0)
        row[7], row[100:300] = top, torch.tensor(run)
        rows.append(row)
    return (torch.stack(rows), [ctx.params(top_p=top_p_keeping(row, 111), seed=10 + i) for i, row in enumerate(rows)],
            [[]] * len(rows))                                        # 111 kept: past a window of 64, the exact route
