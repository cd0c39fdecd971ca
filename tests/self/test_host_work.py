"""The fast path's host work, made cheaper without changing what it computes: the vectorised streams are
course/streams.py's definition bit for bit, the quick validation never lets through what the row-by-row checks
reject (and the message stays theirs), the knobs are the per-row rule's, and the host-work figure runs. No
wall-clock asserts: the figure is measured, not tested."""
import random

import numpy as np
import pytest
import torch

from course import bench, fast_batch
from course.bench import hostwork
from course.bench.baselines import ROOT, load_module
from course.sampling_params import SamplingParams, _plainly_valid, validate_sample_inputs
from course.streams import MASK, stream_uniform, stream_uniforms

FAST = load_module(ROOT / "solutions" / "p08_sampler_fast.py")
EDGE_SEEDS = [0, 1, 7, -1, -2**63, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70 + 5, -(2**80), np.int64(-5),
              np.uint64(2**63 + 3), np.int32(-7)]


@pytest.mark.parametrize("batch", [3, 15, 16, 40, 300])
def test_stream_uniforms_are_stream_uniform_bit_for_bit(batch):
    """Both sides of the few-rows cut, negative, 64-bit and larger seeds, numpy integers, large counts."""
    rng = random.Random(batch)
    seeds = [rng.choice(EDGE_SEEDS) if rng.random() < 0.3 else rng.randrange(-2**70, 2**70) for _ in range(batch)]
    counts = [rng.choice([0, 1, 2**31, 2**40 + 1]) if rng.random() < 0.2 else rng.randrange(1000) for _ in range(batch)]
    got = stream_uniforms(seeds, counts)
    want = [stream_uniform(int(s), n) for s, n in zip(seeds, counts)]
    assert isinstance(got, list) and len(got) == batch
    mismatch = [(s, n, g, w) for s, n, g, w in zip(seeds, counts, got, want) if g != w]
    assert not mismatch, f"called stream_uniforms, returned {mismatch[0][2]!r} for (seed {mismatch[0][0]}, n " \
                         f"{mismatch[0][1]}), expected stream_uniform's {mismatch[0][3]!r}"
    assert all(0.0 <= g < 1.0 and g * 2.0 ** 53 == int(g * 2.0 ** 53) for g in got)   # 53-bit uniforms


def test_stream_uniforms_key_a_seed_as_its_value_modulo_2_to_the_64():
    assert stream_uniforms([-1] * 20, [3] * 20) == stream_uniforms([MASK] * 20, [3] * 20)
    assert stream_uniforms([5] * 20, list(range(20))) == [stream_uniform(5, n) for n in range(20)]


def test_sampler_uniforms_follow_each_requests_stream_across_calls():
    """_uniforms over 40 rows (the numpy path) gives each row stream_uniform(seed, its count), greedy rows 0.0."""
    sampler = FAST.FastSampler()
    params = [SamplingParams(seed=100 + i % 30, temperature=0.0 if i % 7 == 0 else 1.0) for i in range(40)]
    ids = [f"r{i}" for i in range(40)]
    for step in range(3):
        got = sampler._uniforms(ids, params)
        want = [0.0 if p.temperature == 0 else stream_uniform(p.seed, step) for p in params]
        assert got == want, f"step {step}: called _uniforms, returned {got[:4]}..., expected {want[:4]}..."


def _errors(logits, req_ids, params, prev):
    try:
        validate_sample_inputs(logits, req_ids, params, prev)
    except (ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


BAD_HISTORIES = [[True], [3.0], [-1], [16], [1, 2, "3"], [np.int64(3), 16], (1, 2), torch.tensor([1, 16]),
                 torch.tensor([1.0]), range(3), [2**70]]


@pytest.mark.parametrize("history", BAD_HISTORIES, ids=[repr(h)[:20] for h in BAD_HISTORIES])
def test_quick_validation_is_never_looser_than_the_row_checks(history):
    """Where the quick pass says valid, the row-by-row checks find nothing either; where they raise, the message
    is theirs (the quick pass only decides whether to run them)."""
    logits = torch.zeros(3, 16)
    params = [SamplingParams()] * 3
    prev = [[], history, [1, 2]]
    got = _errors(logits, ["a", "b", "c"], params, prev)
    quick = _plainly_valid(["a", "b", "c"], params, prev, 16)
    if quick:
        assert got is None, f"quick pass accepted {history!r}, the row checks say {got}"
    ids = list(history.tolist() if isinstance(history, torch.Tensor) else history)
    valid = all(type(t) is int or isinstance(t, np.integer) for t in ids) and all(0 <= t < 16 for t in ids)
    assert (got is None) == valid, (history, got)
    if got:
        assert "request 'b'" in got and "prev_tokens holds" in got, got


def test_quick_validation_leaves_duplicates_and_foreign_params_to_the_row_checks():
    logits = torch.zeros(2, 8)
    assert "appears twice" in _errors(logits, ["a", "a"], [SamplingParams()] * 2, [[], []])
    assert "must be a SamplingParams" in _errors(logits, ["a", "b"], [SamplingParams(), object()], [[], []])
    assert not _plainly_valid(["a", "b"], [SamplingParams(), object()], [[], []], 8)


def test_upload_holds_each_rows_own_knobs():
    """The numpy columns give the per-row rule: greedy temperature 1, top_k 0 when off, top_p inf when off."""
    vocab = 100
    params = [SamplingParams(temperature=0.0, top_k=5), SamplingParams(temperature=1e-5, top_k=100, top_p=0.5),
              SamplingParams(temperature=0.7, top_k=99, top_p=1.0), SamplingParams(top_k=-3, top_p=0.9),
              SamplingParams(top_k=10**30)]
    routes = FAST.route(params, vocab)
    knobs, order = fast_batch.upload(params, routes, [0.0, 0.25, 0.5, 0.75, 0.125], vocab, "cpu")
    want = [[1.0, 5, float("inf"), 0.0], [1e-5, 0, 0.5, 0.25], [0.7, 99, float("inf"), 0.5],
            [1.0, 0, 0.9, 0.75], [1.0, 0, float("inf"), 0.125]]
    assert knobs.tolist() == want, f"called upload, returned {knobs.tolist()}, expected {want}"
    assert order.tolist() == [i for rows in routes for i in rows]


def test_host_work_figure_has_every_step():
    us = hostwork.host_us(FAST, batch=8, mix="mixed", number=1, repeat=1)
    assert set(us) == set(hostwork.STEPS) | {"total"} and all(v > 0 for v in us.values())
    assert "us per row" in hostwork.report(FAST, batch=8, mixes=("seed004",))
    assert bench.make_batch(8, 64, "mixed")[0] == [f"req{i}" for i in range(8)]


def test_a_numpy_integer_seed_draws_like_the_same_python_int():
    """SamplingParams takes any integral seed; its stream is keyed by the number (numpy's int64 & MASK overflowed)."""
    logits = torch.randn(20, 50, generator=torch.Generator().manual_seed(0))
    ids = [f"r{i}" for i in range(20)]
    as_numpy = FAST.FastSampler().sample(logits, ids, [SamplingParams(seed=np.int64(-5 - i)) for i in range(20)],
                                         [[]] * 20)
    as_int = FAST.FastSampler().sample(logits, ids, [SamplingParams(seed=-5 - i) for i in range(20)], [[]] * 20)
    assert as_numpy.tolist() == as_int.tolist()
