"""A fused-kernel peer on a GPU: flashinfer's top-k/top-p sampler timed beside the fast path, in one run.

flashinfer-python (the serving engines' fused sampling kernels) runs on CUDA only and is not a requirement of the
course: where it does not import, this says so and exits 0. It samples the same batches with one kernel per call
and its own random generator (no per-request streams, no repetition penalty), so it is a speed reference for the
filters, not a correct peer of the contract.

    python -m course.bench.fused --device cuda
"""
from __future__ import annotations

import argparse
import sys

import torch

from course.bench import CASES, make_batch, make_logits, time_many
from course.bench.baselines import fast_sampler
from course.sampling_params import GREEDY_TEMPERATURE

FUSED_CASES = [case for case in CASES if case[3] in ("seed004", "top_p_only")]   # no penalties, no greedy rows


def flashinfer_sampler(params, vocab, device):
    """A sample(logits) callable of flashinfer's top_k_top_p_sampling_from_logits, or None when it does not import."""
    try:
        from flashinfer.sampling import top_k_top_p_sampling_from_logits
    except Exception:                                    # not installed, or built for another torch / CUDA
        return None
    temp = torch.tensor([[max(p.temperature, GREEDY_TEMPERATURE)] for p in params], device=device)
    top_k = torch.tensor([p.top_k if 0 < p.top_k < vocab else vocab for p in params], device=device, dtype=torch.int32)
    top_p = torch.tensor([p.top_p for p in params], device=device, dtype=torch.float32)
    return lambda logits: top_k_top_p_sampling_from_logits(logits / temp, top_k, top_p, deterministic=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args(argv)
    if args.device != "cuda" or not torch.cuda.is_available():
        print("fused peer: skipped (flashinfer's kernels need a CUDA device)")
        return 0
    rows = []
    for name, batch, vocab, mix, shape in FUSED_CASES:
        logits = make_logits(batch, vocab, shape, device=args.device)
        ids, params, prev = make_batch(batch, vocab, mix)
        fused = flashinfer_sampler(params, vocab, args.device)
        if fused is None:
            print("fused peer: skipped (flashinfer-python does not import here)")
            return 0
        fast = fast_sampler()
        ms = time_many({"fast": lambda: fast.sample(logits, ids, params, prev), "fused": lambda: fused(logits)},
                       device=args.device)
        rows.append(f"| {name} | {batch} | {vocab} | {shape} | {ms['fast']:.3f} | {ms['fused']:.3f} | "
                    f"{ms['fast'] / ms['fused']:.2f} |")
    print("| case | B | V | logits | fast path ms | flashinfer ms | fast / flashinfer |\n|---|--:|--:|---|--:|--:|--:|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
