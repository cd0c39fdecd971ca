"""The fast path's host work per row: the Python a sample() call runs before and around its torch ops.

On a GPU this work is the floor of a call (a fused sampling kernel takes about 0.1-0.3 ms at B = 64), so it is
measured on its own: the host-side steps of a FastSampler, each timed alone on the benchmark's batch (min of
repeats, microseconds per row):

  validate   validate_sample_inputs (the module's own: ids, params, every history token)
  route      route(params, V)
  streams    FastSampler._uniforms (one draw of each row's stream)
  upload     course.fast_batch.upload (knobs and row order, built and uploaded)
  penalty    course.fast_batch.penalized_fp32 on [B, 256] logits with the batch's histories below 256 (its pairs;
             the torch part on 256 columns is small)

    python -m course.bench.hostwork                     # seed 004's and the mixed batch at B = 256
    python -m course.bench.hostwork --batch 64 --impl FILE
"""
from __future__ import annotations

import argparse
import sys
import timeit

import torch

from course import fast_batch
from course.bench import make_batch
from course.bench.baselines import _solution, load_module

STEPS = ("validate", "route", "streams", "upload", "penalty")
PENALTY_VOCAB = 256


def _best_us(fn, number, repeat) -> float:
    """Min over `repeat` runs of the mean of `number` calls, in microseconds (the min: least disturbed)."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def host_us(module, batch=256, vocab=50257, mix="seed004", number=20, repeat=40) -> dict:
    """{step: us per row} of the module's host-side steps on the benchmark's batch, and 'total'."""
    ids, params, prev = make_batch(batch, vocab, mix)
    params = [module.SamplingParams(p.temperature, p.top_k, p.top_p, p.repetition_penalty, p.seed) for p in params]
    logits = torch.zeros(batch, vocab)
    validate = module.validate_sample_inputs
    routes = module.route(params, vocab)
    stream_owner = module.FastSampler()
    u = stream_owner._uniforms(ids, params)
    small_prev = [[t % PENALTY_VOCAB for t in h] for h in prev]
    small = torch.zeros(batch, PENALTY_VOCAB)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)                     # the Python is one thread; a second torch thread that a busy
    with torch.inference_mode():                 # machine has descheduled would add its wake-up to small ops
        fns = {"validate": lambda: validate(logits, ids, params, prev),
               "route": lambda: module.route(params, vocab),
               "streams": lambda: stream_owner._uniforms(ids, params),
               "upload": lambda: fast_batch.upload(params, routes, u, vocab, "cpu"),
               "penalty": lambda: fast_batch.penalized_fp32(small, params, small_prev)}
        try:
            out = {step: _best_us(fns[step], number, repeat) / batch for step in STEPS}
        finally:
            torch.set_num_threads(threads)
    out["total"] = sum(out[step] for step in STEPS)
    return out


def report(module=None, batch=256, mixes=("seed004", "mixed")) -> str:
    """One line per mix: us per row of each host step and their total (module: solutions/' fast path by default)."""
    module = module or _solution("p08-fast")
    lines = [f"host work at B = {batch}, us per row (each host step timed alone, min of repeats):"]
    for mix in mixes:
        us = host_us(module, batch, mix=mix)
        lines.append(f"  {mix:8} total {us['total']:.2f} = " + ", ".join(f"{s} {us[s]:.2f}" for s in STEPS))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--impl", metavar="FILE", help="a FastSampler module of the same design (default: solutions/)")
    args = parser.parse_args(argv)
    print(report(load_module(args.impl) if args.impl else None, args.batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
