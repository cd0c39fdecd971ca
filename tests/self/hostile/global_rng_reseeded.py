"""Hostile and wrong: draws from torch's global RNG, re-seeded when a Sampler is created — it replays
a fresh sampler's stream, but is not batch invariant and free() does not reset anything."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, apply_top_p = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.apply_top_p)


class Sampler(ref.Sampler):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)

    def _generator(self, req_id, params, device):
        return None
