"""A continuous-batching scheduler driving a sampler, and the proof that seeded requests stay batch invariant.

Requests arrive at random steps with mixed params, run for random lengths, are freed when they finish,
their ids are reused by later requests, and the batch order is shuffled at every step. Afterwards each
seeded request is replayed alone in a fresh sampler: its tokens must be the same, step for step.

    python -m course.bench.simulate --sampler fast --steps 3000          # the demo
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field

import torch

from course import drive, problems
from course.loader import load_solution


@dataclass
class Outcome:
    steps: int
    requests: int = 0
    seeded: int = 0
    tokens: int = 0
    largest_batch: int = 0
    reused_ids: int = 0
    mismatches: list = field(default_factory=list)   # (req_id, params, mixed tokens, solo tokens)


def random_params(module, rng):
    """Mixed traffic: seeded and unseeded, greedy and sampled, with and without filters and penalty."""
    return module.SamplingParams(
        temperature=rng.choice([0.0, 0.5, 0.8, 1.0, 1.3]), top_k=rng.choice([-1, -1, 1, 5, 50]),
        top_p=rng.choice([1.0, 1.0, 0.6, 0.9]), repetition_penalty=rng.choice([1.0, 1.0, 1.2]),
        seed=rng.randrange(1 << 20) if rng.random() < 0.7 else None)


def simulate(module, sampler_class: str, steps: int, vocab: int = 512, seed: int = 0, max_batch: int = 12,
             arrival: float = 0.6, mean_length: int = 12, device: str = "cpu", progress=None) -> Outcome:
    """Run the scheduler for `steps` steps, then replay every seeded request alone; see Outcome."""
    rng = random.Random(seed)
    make = getattr(module, sampler_class)
    sampler, active, finished, outcome = make(), [], [], Outcome(steps)
    free_ids, next_id, length = [], 0, {}          # length: stream -> tokens it will draw before finishing

    def sample(s, logits, ids, params, prev):
        return s.sample(logits, ids, params, prev).tolist()

    for step in range(steps):
        while len(active) < max_batch and rng.random() < arrival:
            if free_ids and rng.random() < 0.5:
                req_id = free_ids.pop(rng.randrange(len(free_ids)))
                outcome.reused_ids += 1
            else:
                req_id, next_id = f"req{next_id}", next_id + 1
            stream = drive.Stream(req_id, random_params(module, rng), row_seed=outcome.requests)
            length[id(stream)] = max(1, int(rng.expovariate(1 / mean_length)))
            active.append(stream)
            outcome.requests += 1
        if active:
            rng.shuffle(active)
            drive.step_batch(sampler, sample, active, vocab, device)
            outcome.largest_batch = max(outcome.largest_batch, len(active))
            outcome.tokens += len(active)
        for stream in [s for s in active if len(s.tokens) >= length[id(s)]]:
            active.remove(stream)
            sampler.free(stream.req_id)
            free_ids.append(stream.req_id)
            finished.append(stream)
        if progress and step % 200 == 0:
            progress(step, steps)
    if progress:
        progress(steps, steps)
    finished += active
    for stream in finished:
        if stream.params.seed is None:
            continue
        outcome.seeded += 1
        alone = drive.solo(make, sample, stream.req_id, stream.params, stream.row_seed, len(stream.tokens), vocab,
                           device)
        if alone != stream.tokens:
            outcome.mismatches.append((stream.req_id, stream.params, stream.tokens, alone))
    return outcome


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampler", choices=["reference", "fast"], default="fast")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--vocab", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args(argv)
    problem = problems.get("p08" if args.sampler == "reference" else "p08-fast")
    started = time.perf_counter()
    outcome = simulate(load_solution(problem), problem.sampler_class, args.steps, args.vocab, args.seed,
                       device=args.device,
                       progress=lambda s, n: print(f"\r  step {s}/{n}", end="", file=sys.stderr, flush=True))
    print(file=sys.stderr)
    print(f"\r{problem.sampler_class} on {args.device}: {outcome.steps} steps, {outcome.requests} requests "
          f"({outcome.seeded} seeded, {outcome.reused_ids} reused ids), {outcome.tokens} tokens, "
          f"batches up to {outcome.largest_batch}, {time.perf_counter() - started:.1f} s")
    for req_id, params, mixed, alone in outcome.mismatches[:5]:
        print(f"  MISMATCH {req_id} ({params}): mixed {mixed[:10]} alone {alone[:10]}")
    print("every seeded request matched its solo run" if not outcome.mismatches
          else f"{len(outcome.mismatches)} seeded requests differ from their solo run")
    return 1 if outcome.mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
