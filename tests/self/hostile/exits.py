"""Hostile: sample() ends the process (os._exit) or calls sys.exit, depending on the batch size."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, apply_top_p = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.apply_top_p)


class Sampler(ref.Sampler):
    def sample(self, logits, req_ids, params, prev_tokens):
        if len(req_ids) == 4:
            os._exit(7)
        if len(req_ids) == 5:
            sys.exit(3)
        return super().sample(logits, req_ids, params, prev_tokens)
