"""Hostile but correct on the CPU: each request's generator is torch.Generator() with no device, a CPU generator, so
drawing from a tensor on a GPU fails. The report warns (one line) without failing a check."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, apply_top_p = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.apply_top_p)


class Sampler(ref.Sampler):
    def _generator(self, req_id, params, device):
        if params.seed is None:
            if device not in self._shared:
                self._shared[device] = torch.Generator().manual_seed(torch.initial_seed())
            return self._shared[device]
        if req_id not in self._seeded:
            self._seeded[req_id] = torch.Generator().manual_seed(params.seed)
        return self._seeded[req_id]
