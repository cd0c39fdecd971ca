"""The notebooks' alone-vs-mixed demo, and the deliberately WRONG sampler it is contrasted with.

SharedGeneratorSampler is the seed page's 'shared lottery machine': every request of every batch draws
from ONE generator, so a seeded request's n-th token depends on how many peers drew before it. It reuses
the reference's filtering functions: the ONLY difference from a correct sampler is where the randomness
comes from. Never use it outside a 'how not to' cell.
"""
import torch

from course import drive
from course.loader import load_solution
from course.problems import get
from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams

_reference = load_solution(get("p08"))


class SharedGeneratorSampler:
    """WRONG ON PURPOSE: one generator for the whole sampler, seeded by the first seed it ever sees."""

    def __init__(self):
        self._generator = None   # the shared lottery machine: every row of every batch turns it

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]; row i consumes the shared stream after rows 0..i-1 did."""
        tokens = torch.empty(len(req_ids), dtype=torch.long, device=logits.device)     # [B]
        for i, p in enumerate(params):
            row = logits[i].float()                                                     # [V] fp32
            row = _reference.apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)  # [V]
            if p.temperature < GREEDY_TEMPERATURE:
                tokens[i] = torch.argmax(row)
                continue
            row = _reference.apply_top_p(_reference.apply_top_k(row / p.temperature, p.top_k), p.top_p)  # [V]
            if self._generator is None:
                seed = p.seed if p.seed is not None else 0
                self._generator = torch.Generator(device=logits.device).manual_seed(seed)
            tokens[i] = torch.multinomial(torch.softmax(row, -1), 1, generator=self._generator)[0]  # scalar
        return tokens

    def free(self, req_id):
        """Nothing to forget: the shared machine keeps turning for everyone (that is the bug)."""


TARGET = ("q", SamplingParams(seed=7), 3)   # request q, seed 7, its logits row_for(3, step, vocab)


def _peer_params(rng):
    return SamplingParams(seed=rng.choice([None, 7, rng.randrange(100)]), temperature=rng.choice([0.7, 1.0, 1.3]))


def invariance_runs(module, mix_seeds, steps=8, vocab=12) -> dict:
    """{'right'|'wrong': {'alone': tokens, 'mixed': [{'seed', 'tokens', 'batches'}]}}: module.Sampler vs the shared machine."""
    def sample(sampler, logits, ids, params, prev):
        return sampler.sample(logits, ids, params, prev)

    req_id, params, row_seed = TARGET
    traffic = drive.Traffic(make_params=_peer_params, max_peers=4, join=0.7, leave=0.2)
    out = {}
    for label, make in (("right", module.Sampler), ("wrong", SharedGeneratorSampler)):
        alone = drive.solo(make, sample, req_id, params, row_seed, steps, vocab, "cpu")
        runs = []
        for seed in mix_seeds:
            log = []
            tokens = drive.mixed(make, sample, [TARGET], steps, vocab, "cpu", traffic, seed=seed, log=log)[req_id]
            runs.append({"seed": seed, "tokens": tokens, "batches": [ids for _, ids in log]})
        out[label] = {"alone": alone, "mixed": runs}
    return out
