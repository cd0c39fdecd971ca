"""Hostile: apply_top_p is missing."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _reference import ref  # noqa: E402

SamplingParams, apply_repetition_penalty, apply_top_k, Sampler = (
    ref.SamplingParams, ref.apply_repetition_penalty, ref.apply_top_k, ref.Sampler)
