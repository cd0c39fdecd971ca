"""The fast path's cheap reads (course/chunks.py, running_sum) and its plumbing (penalised rows sampled apart,
inference mode): exact against torch on crafted rows, and bit-for-bit batch invariant. Fixed seeds."""
import pytest
import torch

from course.bench.baselines import ROOT, load_module
from course.chunks import CHUNK, argmax_rows, chunk_maxima

FAST = load_module(ROOT / "solutions" / "p08_sampler_fast.py")
P = FAST.SamplingParams
INF = float("inf")


def crafted(vocab, g):
    """[9, V]: random, runs of ties, coarse values, the maximum in the tail or tied across chunks, -inf rows."""
    rows = [torch.randn(vocab, generator=g),
            torch.randint(0, 4, (vocab,), generator=g).float(),                  # long runs of ties
            (torch.randn(vocab, generator=g) * 3).bfloat16().float(),            # coarse: ties here and there
            torch.zeros(vocab),                                                  # all equal
            torch.full((vocab,), -INF)]                                          # all -inf
    tail = torch.randn(vocab, generator=g)
    tail[-1] = 50.0                                                              # the maximum in the tail
    split = torch.randn(vocab, generator=g)
    split[[3, CHUNK + 5, vocab - 1]] = 9.0                                       # tied maxima: 2 chunks, the tail
    late = torch.randn(vocab, generator=g)
    late[vocab // CHUNK * CHUNK - 1] = INF                                       # +inf at the body's last logit
    spiky = torch.where(torch.rand(vocab, generator=g) < 0.5, -INF, torch.randn(vocab, generator=g))
    return torch.stack(rows + [tail, split, late, spiky])


@pytest.mark.parametrize("vocab", [4096, 4096 + 37, 50257])
def test_window_topk_is_torch_topk_on_the_listed_rows(vocab):
    """Same values as torch.topk (in order), ids that point at them, distinct; any subset of rows, given maxima."""
    made = crafted(vocab, torch.Generator().manual_seed(vocab))
    wide = torch.cat([made, torch.randn(len(made), 3, generator=torch.Generator().manual_seed(3))], 1)
    for x in (made, wide[:, :vocab], wide[:, :vocab].t().contiguous().t()):     # contiguous, then two strided views
        for rows in (None, torch.tensor([7, 0, 5]), torch.tensor([4])):
            picked = x if rows is None else x[rows]
            for width in (1, 2, 41, vocab // CHUNK // 4):
                for maxima in (None, chunk_maxima(x)):
                    vals, ids = FAST.window_topk(x, width, rows, maxima)
                    assert torch.equal(vals, torch.topk(picked, width, dim=-1).values), (vocab, rows, width)
                    assert torch.equal(picked.gather(1, ids), vals), (vocab, rows, width)
                    assert all(len(set(r)) == width for r in ids.tolist()), (vocab, rows, width)


@pytest.mark.parametrize("vocab", [1024, 4096 + 37, 50257])
def test_argmax_rows_is_torch_argmax(vocab):
    """The first maximum, as torch.argmax finds it: ties across chunks, the tail, +-inf, NaN."""
    x = crafted(vocab, torch.Generator().manual_seed(vocab + 1))
    nan = torch.randn(1, vocab)
    nan[0, vocab // 2] = float("nan")
    x = torch.cat([x, nan])
    rows = torch.arange(len(x))
    assert torch.equal(argmax_rows(x, rows, chunk_maxima(x)), torch.argmax(x, dim=-1))
    some = torch.tensor([6, 1, 9])
    assert torch.equal(argmax_rows(x, some, chunk_maxima(x)), torch.argmax(x[some], dim=-1))


def test_cpu_cumsum_is_one_float64_pass_per_row_for_any_width_and_batch():
    """filter_window's prefix sums on the CPU (torch.cumsum): entry j = the float64 sum of e[0..j], rounded once;
    the same alone, in a batch and in a narrower window; never decreasing."""
    g = torch.Generator().manual_seed(5)
    e = torch.rand(16, 3000, generator=g) ** 8                                   # [16, 3000] in [0, 1]
    cs = e.cumsum(-1)
    assert torch.equal(cs, e.double().cumsum(-1).float())
    for i in (0, 7, 15):
        assert torch.equal(e[i:i + 1].cumsum(-1), cs[i:i + 1])
        for width in (1, 41, 257, 2999):
            assert torch.equal(e[i:i + 1, :width].cumsum(-1), cs[i:i + 1, :width])
    assert bool((cs[:, 1:] >= cs[:, :-1]).all())
    z = torch.sort(torch.randn(4, 300, generator=g), descending=True).values    # [4, 300] a descending window
    _, got, _, _ = FAST.filter_window(z, torch.zeros(4, 1, dtype=torch.long), torch.full((4, 1), INF),
                                      torch.ones(4, 1), complete=True)
    assert torch.equal(got, torch.exp(z - z[:, :1]).cumsum(-1))                  # the solution relies on it


def mixed_batch(batch, vocab, g):
    """Rows of every kind, a third of them with a repetition penalty and a history."""
    params, prev = [], []
    for i in range(batch):
        params.append(P(temperature=[0.0, 0.7, 1.0, 1.3][i % 4], top_k=[-1, 20, 40, 300][i % 4 if i % 5 else 2],
                        top_p=[1.0, 0.9][i % 2], repetition_penalty=1.3 if i % 3 == 0 else 1.0, seed=100 + i))
        prev.append(torch.randint(0, vocab, (20,), generator=g).tolist() if i % 3 == 0 else [])
    return [f"r{i}" for i in range(batch)], params, prev


def test_penalised_rows_sampled_apart_match_each_row_alone():
    """A batch big enough to sample its penalised rows apart gives each row the token it gets alone, and
    leaves the caller's logits untouched; filtered_probs too."""
    g = torch.Generator().manual_seed(11)
    batch, vocab = 12, 50257                                                     # 12 * 50257 >= 2 ** 18
    logits = torch.randn(batch, vocab, generator=g) * 3
    before = logits.clone()
    req_ids, params, prev = mixed_batch(batch, vocab, g)
    together = FAST.FastSampler()
    alone = {r: FAST.FastSampler() for r in req_ids}
    for step in range(3):
        got = together.sample(logits, req_ids, params, prev)
        want = [alone[r].sample(logits[i:i + 1], [r], [params[i]], [prev[i]])[0].item()
                for i, r in enumerate(req_ids)]
        assert got.tolist() == want, step
    assert torch.equal(logits, before)
    probs = FAST.FastSampler().filtered_probs(logits, params, prev)
    for i in (0, 3, 5, 9):
        assert torch.equal(probs[i:i + 1], FAST.FastSampler().filtered_probs(logits[i:i + 1], [params[i]], [prev[i]]))
    assert torch.equal(logits, before)


def test_sample_returns_an_ordinary_tensor_the_caller_can_write():
    """The sampler works in inference mode but hands back ordinary tensors."""
    logits = torch.randn(3, 4096, generator=torch.Generator().manual_seed(2))
    sampler = FAST.FastSampler()
    tokens = sampler.sample(logits, ["a", "b", "c"], [P(top_k=40, seed=1), P(temperature=0.0), P(top_p=0.9)],
                            [[], [], []])
    probs = sampler.filtered_probs(logits, [P(top_k=40)] * 3, [[], [], []])
    assert not tokens.is_inference() and not probs.is_inference()
    tokens[0] = 7                                                                # an in-place write works
    probs.mul_(2.0)
