"""Hostile but correct: changes torch's global state at import and in sample()."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, apply_top_p = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.apply_top_p)
torch.set_default_dtype(torch.float64)
torch.set_num_threads(1)
torch.manual_seed(1234)
torch.softmax = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("softmax sabotaged"))


class Sampler(ref.Sampler):
    def sample(self, logits, req_ids, params, prev_tokens):
        torch.manual_seed(99)
        return super().sample(logits, req_ids, params, prev_tokens)
