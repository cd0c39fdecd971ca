"""The fast path's window (window_topk's chunk maxima), its CPU prefix sums, its streams and its plumbing (every
route in one batch, inference mode): exact against torch on crafted rows, bit-for-bit batch invariant, and a
cost per call that does not grow with the batch. Fixed seeds."""
import pytest
import torch

from course.bench.baselines import ROOT, load_module
from course.bench import make_batch, make_logits, opcount
from course.streams import stream_uniform

FAST = load_module(ROOT / "solutions" / "p08_sampler_fast.py")
CHUNK = FAST.CHUNK
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
def test_window_topk_is_torch_topk(vocab):
    """Same values as torch.topk (in order), ids that point at them, distinct; contiguous rows or strided views."""
    made = crafted(vocab, torch.Generator().manual_seed(vocab))
    wide = torch.cat([made, torch.randn(len(made), 3, generator=torch.Generator().manual_seed(3))], 1)
    for x in (made, wide[:, :vocab], wide[:, :vocab].t().contiguous().t()):     # contiguous, then two strided views
        for width in (1, 2, 41, vocab // CHUNK // 4):
            vals, ids = FAST.window_topk(x, width)
            assert torch.equal(vals, torch.topk(x, width, dim=-1).values), (vocab, width)
            assert torch.equal(x.gather(1, ids), vals), (vocab, width)
            assert all(len(set(r)) == width for r in ids.tolist()), (vocab, width)


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


def test_every_route_in_one_batch_matches_each_row_alone():
    """A batch with greedy, top-k, top-p-only, plain and exact rows (top_k 300 > WINDOW_K), penalised or not,
    gives each row the token and the probabilities it gets alone, and leaves the caller's logits untouched."""
    g = torch.Generator().manual_seed(11)
    batch, vocab = 12, 50257
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


def test_stream_uniform_is_a_pure_function_of_seed_and_count():
    """The same (seed, n) gives the same float in [0, 1); neighbouring seeds and counts give unrelated ones."""
    draws = [[stream_uniform(seed, n) for n in range(200)] for seed in (0, 1, 1000, 1001, -5, 2 ** 70 + 3)]
    assert draws[2][:5] == [stream_uniform(1000, n) for n in range(5)]
    flat = [u for row in draws for u in row]
    assert all(0.0 <= u < 1.0 for u in flat) and len(set(flat)) == len(flat)
    mean = sum(flat) / len(flat)                                                 # 1200 uniforms: sd of the mean 0.0083
    assert abs(mean - 0.5) < 6 * (1 / 12 / len(flat)) ** 0.5
    shifted = [stream_uniform(1001, n) for n in range(199)]
    assert shifted != draws[2][1:]                                               # seed + 1 is not the stream moved on


@pytest.mark.parametrize("mix", ["seed004", "mixed"])
def test_ops_syncs_and_uploads_per_call_do_not_grow_with_the_batch(mix):
    """For one mix of routes, a sample() call issues the same torch ops and host syncs at B = 8, 64 and 256
    (counted by the profiler: deterministic); seed 004's mix syncs once and uploads once (the knobs and uniforms);
    the mixed one uploads at most twice (step 1's penalty pairs too). Eight rows repeated: the same routes at
    every B, exact route included."""
    counts = {}
    for batch in (8, 64, 256):
        logits = make_logits(8, 4096, "peaked").repeat(batch // 8, 1)          # [B, V]
        _, params, prev = make_batch(8, 4096, mix, seed=0)
        params, prev = params * (batch // 8), prev * (batch // 8)
        req_ids = [f"r{i}" for i in range(batch)]
        sampler = FAST.FastSampler()
        counts[batch] = opcount.count(lambda: sampler.sample(logits, req_ids, params, prev))
    assert counts[8] == counts[64] == counts[256], counts
    assert counts[8].uploads <= (1 if mix == "seed004" else 2), counts
    if mix == "seed004":
        assert counts[8].syncs == 1, counts
