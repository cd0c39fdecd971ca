"""Hostile: the Sampler has no free()."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, apply_top_p = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.apply_top_p)


class Sampler:
    def __init__(self):
        self._inner = ref.Sampler()

    def sample(self, logits, req_ids, params, prev_tokens):
        return self._inner.sample(logits, req_ids, params, prev_tokens)
