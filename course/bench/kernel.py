"""The kernel level on a GPU: the Triton kernel beside the fast path, the full sort and flashinfer's fused sampler.

    python -m course.bench.kernel --device cuda                  # solutions/p08_sampler_kernel.py
    python -m course.bench.kernel --device cuda --impl mine      # a learner's KernelSampler instead

The cases are seed 004's and the top-p-only ones (course.bench.fused.FUSED_CASES: no penalties, no greedy rows, so
flashinfer samples the same filters); every method samples the same batch in the same rounds, and the table gives
the median ms and each one's ratio to flashinfer (where it imports; else to the fast path). On a CPU the kernel runs
in Triton's interpreter, whose time is no speed figure: this says so and exits 0.
"""
from __future__ import annotations

import argparse
import sys

import torch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--impl", default=None, help="mine, or a file with a KernelSampler (default: the reference)")
    args = parser.parse_args(argv)
    if args.device != "cuda" or not torch.cuda.is_available():
        print("kernel timing: skipped (on a CPU the kernel runs in Triton's interpreter: its time is no speed figure)")
        return 0
    from course.bench import make_batch, make_logits, time_many
    from course.bench.baselines import FullSortSampler, fast_sampler
    from course.bench.fused import FUSED_CASES, flashinfer_sampler
    from course.bench.learner import repo_file
    from course.loader import load_module
    from course.problems import get

    path = get("p08-kernel").path("solution") if args.impl is None else \
        (get("p08-kernel").path("stub") if args.impl == "mine" else repo_file(args.impl))
    kernel = load_module(path, "kernel_bench")
    header = "| case | B | V | logits | kernel ms | fast path ms | full sort ms | flashinfer ms | kernel / peer |"
    rows = []
    for name, batch, vocab, mix, shape in FUSED_CASES:
        logits = make_logits(batch, vocab, shape, device=args.device)
        ids, params, prev = make_batch(batch, vocab, mix)
        samplers = {"kernel": kernel.KernelSampler(), "fast": fast_sampler(), "sort": FullSortSampler()}
        fns = {key: (lambda s=s: s.sample(logits, ids, params, prev)) for key, s in samplers.items()}
        fused = flashinfer_sampler(params, vocab, args.device)
        if fused is not None:
            fns["fused"] = lambda: fused(logits)
        ms = time_many(fns, device=args.device)
        peer = ms.get("fused", ms["fast"])
        rows.append(f"| {name} | {batch} | {vocab} | {shape} | {ms['kernel']:.3f} | {ms['fast']:.3f} | "
                    f"{ms['sort']:.3f} | {ms['fused']:.3f} | " if "fused" in ms else
                    f"| {name} | {batch} | {vocab} | {shape} | {ms['kernel']:.3f} | {ms['fast']:.3f} | "
                    f"{ms['sort']:.3f} | (no import) | ")
        rows[-1] += f"{ms['kernel'] / peer:.2f} |"
    peer = "flashinfer" if "fused" in ms else "the fast path (flashinfer does not import)"
    print(f"kernel: {path.name}; peer: {peer}")
    print(header + "\n|---|--:|--:|---|--:|--:|--:|--:|--:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
