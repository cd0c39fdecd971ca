"""The p08 benchmark and its comparison samplers: it runs, every method shows up, the baselines sample valid
tokens, and the blog's sampler really has its three bugs. No wall-clock asserts: speed lives in the benchmark."""
import math

import pytest
import torch

from course import bench
from course.bench.baselines import (ROOT, BlogSampler, FullSortSampler, fast_sampler, load_module, logits_floor,
                              reference_sampler)
from course.sampling_params import SamplingParams

PROBS = [0.5, 0.25, 0.15, 0.1]


def ref_filtered(logits, params, prev):
    """The reference's filtered distribution per row (the Sampler's own helpers), [B, V]."""
    mod = load_module(ROOT / "solutions" / "p08_sampler.py")
    out = torch.zeros(logits.shape)
    for i, p in enumerate(params):
        row = mod.apply_repetition_penalty(logits[i].float(), prev[i], p.repetition_penalty)
        if p.temperature < 1e-5:
            out[i, row.argmax()] = 1.0
            continue
        out[i] = torch.softmax(mod.apply_top_p(mod.apply_top_k(row / p.temperature, p.top_k), p.top_p), -1)
    return out


@pytest.mark.parametrize("mix", ["seed004", "top_p_only", "mixed"])
def test_run_case_small_times_every_method(mix):
    result = bench.run_case("small", batch=4, vocab=512, mix=mix, shape="peaked", repeat=2, budget_s=0.05)
    assert set(result["ms"]) == set(bench.METHODS)
    assert all(t > 0 and math.isfinite(t) for t in result["ms"].values())
    assert result["ratio"]["fast"] == pytest.approx(1.0)
    assert (result["B"], result["V"], result["mix"]) == (4, 512, mix)


def test_quick_run_prints_a_table_with_every_method(capsys, tmp_path):
    png = tmp_path / "p08.png"
    assert bench.main(["p08", "--quick", "--repeat", "1", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    for label in bench.LABELS.values():
        assert label in out
    for name, batch, vocab, mix, shape in bench.QUICK_CASES:
        assert any(name in line and str(vocab) in line and shape in line for line in out.splitlines())
    assert png.exists() and png.stat().st_size > 1000


def test_table_fits_100_columns_and_markdown_has_every_case():
    results = [bench.run_case(name, batch, 256, mix, shape, repeat=1, budget_s=0.01)
               for name, batch, _, mix, shape in bench.CASES[:3]]
    text = bench.format_table(results)
    assert max(len(line) for line in text.splitlines()) <= 100
    md = bench.format_table(results, markdown=True).splitlines()
    assert md[0].startswith("| case |") and len(md) == 2 + len(results)
    assert all(line.count("|") == md[0].count("|") for line in md)


def test_default_cases_hold_the_small_mixed_batch_and_b1():
    assert ("heterogeneous", 8, 4096, "mixed", "peaked") in bench.CASES
    assert {mix for _, b, _, mix, _ in bench.CASES if b == 1} >= {"seed004", "top_p_only", "mixed"}


def test_progress_is_one_line_per_step_when_not_a_terminal(capsys):
    threads = torch.get_num_threads()
    try:
        assert bench.main(["p08", "--quick", "--repeat", "1", "--threads", "1"]) == 0
    finally:
        torch.set_num_threads(threads)
    out, err = capsys.readouterr()                       # pytest's capture is not a terminal
    assert out.splitlines()[0].endswith("1 thread")      # --threads 1 took effect for the run
    assert "\r" not in err and len(err.strip().splitlines()) == len(bench.QUICK_CASES)


def test_time_ms_returns_a_median_and_calls_fn():
    calls = []
    ms = bench.time_ms(lambda: calls.append(1), repeat=5, warmup=2)
    assert ms >= 0 and len(calls) >= 2 + 3


def test_time_many_varies_which_callable_goes_first():
    """Every callable is timed, and the order changes between rounds (a call can pay for its predecessor)."""
    order = []
    ms = bench.time_many({name: (lambda n: lambda: order.append(n))(name) for name in "abcd"}, repeat=6, warmup=1)
    assert set(ms) == set("abcd") and all(t >= 0 for t in ms.values())
    rounds = [tuple(order[i:i + 4]) for i in range(4, len(order), 4)]            # after the first look
    assert len(rounds) == 6 and all(sorted(r) == list("abcd") for r in rounds)
    assert len({r[0] for r in rounds}) > 1, f"called in the orders {rounds}, expected them to vary"


def test_made_logits_and_batches_are_deterministic():
    for shape in ("peaked", "heavy", "flat"):
        a, b = bench.make_logits(3, 100, shape, seed=4), bench.make_logits(3, 100, shape, seed=4)
        assert a.shape == (3, 100) and torch.equal(a, b)
    peaked = bench.make_logits(1, 1000, "peaked")[0]
    assert sorted(peaked.tolist(), reverse=True)[:2] == pytest.approx([0.0, -bench.PEAKED_ALPHA * math.log(2)])
    ids, params, prev = bench.make_batch(32, 1000, "mixed")
    assert len(ids) == len(params) == len(prev) == 32 and len(set(ids)) == 32
    assert {p.seed is None for p in params} == {True, False}
    assert any(p.temperature == 0 for p in params) and any(p.repetition_penalty != 1 for p in params)


@pytest.mark.parametrize("make", [reference_sampler, FullSortSampler, BlogSampler, fast_sampler])
def test_baselines_sample_valid_tokens(make):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(6, 300, generator=g) * 2
    params = [SamplingParams(top_k=20, top_p=0.9, seed=i) for i in range(6)]
    tokens = make().sample(logits, list(range(6)), params, [[]] * 6)
    assert tokens.dtype == torch.long and tokens.shape == (6,)
    assert bool(((tokens >= 0) & (tokens < 300)).all())
    kept = ref_filtered(logits, params, [[]] * 6)
    if make is not BlogSampler:                        # the blog may draw a removed token (bug 2)
        assert bool((kept.gather(1, tokens[:, None]) > 0).all())


def test_full_sort_sampler_matches_the_reference_distribution():
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(8, 400, generator=g) * 2                              # no ties
    params = [SamplingParams(temperature=t, top_k=k, top_p=p, repetition_penalty=r, seed=s)
              for t, k, p, r, s in [(1.0, 40, 0.9, 1.0, 1), (0.7, -1, 0.8, 1.3, None), (0.0, 5, 1.0, 1.0, 2),
                                    (1.3, 0, 1.0, 1.0, 3), (1.0, 400, 0.95, 1.0, None), (0.5, 3, 0.5, 1.2, 4),
                                    (1.0, 1, 1.0, 1.0, 5), (2.0, -1, 1e-9, 1.0, 6)]]
    prev = [[1, 2, 2], [5, 6], [], [7], [], [8, 9], [], []]
    got = FullSortSampler().filtered_probs(logits, params, prev)
    assert (got - ref_filtered(logits, params, prev)).abs().max() < 1e-6
    tokens = FullSortSampler().sample(logits, list("abcdefgh"), params, prev)
    assert bool((got.gather(1, tokens[:, None]) > 0).all())
    assert tokens[2] == got[2].argmax()                                        # the greedy row


def test_full_sort_sampler_seeded_rows_are_reproducible():
    logits = torch.randn(4, 300, generator=torch.Generator().manual_seed(2))
    params = [SamplingParams(top_p=0.95, seed=7 + i) for i in range(4)]
    runs = [[FullSortSampler().sample(logits, list("abcd"), params, [[]] * 4).tolist()] for _ in range(2)]
    assert runs[0] == runs[1]


def test_logits_floor_is_one_read_without_indices():
    """One op, the row maxima alone (`max(-1)` would also find the indices, several reads' time on a CPU)."""
    from course.bench import opcount
    x = torch.randn(3, 50)
    assert torch.equal(logits_floor(x), x.amax(-1))
    counts = opcount.count_methods({"floor": lambda: logits_floor(x)})["floor"]
    assert (counts.ops, counts.syncs, counts.uploads) == (1, 0, 0)


# the blog's bugs, shown on purpose ----------------------------------------------------------------------
def test_blog_bug1_cumsum_greater_than_top_p_drops_the_crossing_token():
    logits = torch.tensor([[math.log(p) for p in PROBS]])
    blog = BlogSampler().filtered_probs(logits, [SamplingParams(top_p=0.7)])[0]
    assert set((blog > 1e-6).nonzero().flatten().tolist()) == {0}               # the blog keeps {0}
    right = ref_filtered(logits, [SamplingParams(top_p=0.7)], [[]])[0]
    assert set((right > 0).nonzero().flatten().tolist()) == {0, 1}             # the rule keeps {0, 1}


def test_blog_bug2_clamp_floor_gives_removed_tokens_mass():
    vocab = 50257
    logits = torch.randn(1, vocab, generator=torch.Generator().manual_seed(3)) * 0.5
    logits[0, :10] += 12.0                                                    # ten likely tokens, a long tail
    params = [SamplingParams(top_p=0.9)]
    blog = BlogSampler().filtered_probs(logits, params)[0]
    right = ref_filtered(logits, params, [[]])[0]
    removed = right == 0
    assert int(removed.sum()) > vocab - 20
    assert bool((blog[removed] > 0).all())                                     # never exactly zero
    assert 4e-5 < blog[removed].sum().item() < 1e-4          # about V x 1e-9 = 5e-5 per step, renormalised


def test_blog_bug3_one_global_rng_so_seeds_do_not_reproduce():
    logits = torch.randn(1, 1000, generator=torch.Generator().manual_seed(4)) * 0.1   # flat: draws vary a lot
    params = [SamplingParams(top_k=500, seed=123)]
    blog = BlogSampler()

    def draws(global_seed, batch_peers=0):
        torch.manual_seed(global_seed)
        rows = torch.cat([logits.repeat(batch_peers, 1), logits]) if batch_peers else logits
        return [blog.sample(rows, list(range(len(rows))), params * len(rows), [[]] * len(rows))[-1].item()
                for _ in range(8)]

    assert draws(0) == draws(0)                             # deterministic only through torch's global seed
    assert draws(0) != draws(1)                             # the request's own seed=123 does not pin its tokens
    assert draws(0) != draws(0, batch_peers=3)              # and its tokens depend on who shares the batch
    fast = [fast_sampler() for _ in range(2)]
    torch.manual_seed(0)
    a = [fast[0].sample(logits, ["r"], params, [[]]).item() for _ in range(8)]
    torch.manual_seed(1)
    b = [fast[1].sample(logits, ["r"], params, [[]]).item() for _ in range(8)]
    assert a == b                                           # the fast path: the request's seed decides


def test_blog_takes_the_first_rows_params_for_the_whole_batch():
    logits = torch.randn(2, 200, generator=torch.Generator().manual_seed(5))
    params = [SamplingParams(), SamplingParams(top_k=1)]                        # row 1 asks for argmax
    blog = BlogSampler().filtered_probs(logits, params)
    assert int((blog[1] > 0).sum()) == 200                                      # but gets row 0's "no filter"


def test_op_counts_are_exact_and_tell_a_per_row_loop_from_a_batched_sampler():
    """Ops, syncs and uploads per call (course/bench/opcount.py) are counts, not timings: the same twice, exact on a
    known call, growing with B for the reference loop and flat for the blog's batched sampler."""
    from course.bench import opcount

    x = torch.randn(4, 100)
    known = opcount.count(lambda: (torch.softmax(x, -1)[0, 0].item(), torch.tensor([1, 2])))
    assert (known.syncs, known.uploads) == (1, 1) and known == opcount.count(lambda: (torch.softmax(x, -1)[0, 0].item(),
                                                                                       torch.tensor([1, 2])))
    counts = {}
    for batch in (1, 8):
        logits = bench.make_logits(batch, 256, "peaked")
        ids, params, prev = bench.make_batch(batch, 256, "seed004")
        counts[batch] = opcount.count_methods(bench.method_fns(logits, ids, params, prev, ("reference", "blog")))
    assert counts[8]["reference"].ops > 6 * counts[1]["reference"].ops and counts[8]["reference"].syncs == 8
    assert counts[8]["blog"] == counts[1]["blog"] and counts[1]["blog"].syncs == 1
    result = bench.run_case("tiny", 2, 128, methods=("reference", "fast"), repeat=1, budget_s=0.05, counts=True)
    assert set(result["counts"]) == {"reference", "fast"}
    assert "ops/syncs/uploads" in bench.format_counts([result], ("reference", "fast"), markdown=True)
    counted = bench.run_case("tiny", 2, 128, methods=("reference", "fast", "floor"), counts=True, timing=False)
    assert "ms" not in counted and set(counted["counts"]) == {"reference", "fast"}          # --counts: no timing
