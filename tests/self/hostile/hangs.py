"""Hostile: sample() never returns (it sleeps rather than spins: the grader stops it the same way, and a spinning
loop would take a core from the rest of the suite)."""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, apply_top_p = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.apply_top_p)


class Sampler(ref.Sampler):
    def sample(self, logits, req_ids, params, prev_tokens):
        while True:
            time.sleep(1)
