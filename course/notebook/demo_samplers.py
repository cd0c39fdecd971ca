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
from course.sampling_params import SamplingParams

_reference = load_solution(get("p08"))


class SharedGeneratorSampler(_reference.Sampler):
    """WRONG ON PURPOSE: the reference sampler, except that one generator (seeded by the first seed it
    ever sees) serves every row of every batch, so row i draws after rows 0..i-1 turned the machine."""

    def _generator(self, req_id, params, device):
        if not hasattr(self, "_machine"):                                    # the shared lottery machine
            self._machine = torch.Generator(device=device).manual_seed(params.seed if params.seed is not None else 0)
        return self._machine

    def free(self, req_id):
        """Nothing to forget: the shared machine keeps turning for everyone (that is the bug)."""


TARGET = ("q", SamplingParams(seed=7), 3)   # request q, seed 7, its logits row_for(3, step, vocab)


def _peer_params(rng):
    """A peer's params: unseeded or a seed of its own (never q's, so a peer never looks like q's twin)."""
    seed = rng.randrange(99)
    seed += seed >= TARGET[1].seed                                          # 0..99 except q's seed
    return SamplingParams(seed=rng.choice([None, seed]), temperature=rng.choice([0.7, 1.0, 1.3]))


def peer_label(req_id, params) -> str:
    """'peer2 (seed 41, T 0.7)': a peer as the sampler saw it (ids are reused, so the name alone says little)."""
    seed = "-" if params.seed is None else params.seed
    return f"{req_id} (seed {seed}, T {params.temperature:g})"


def invariance_runs(module, mix_seeds, steps=8, vocab=12) -> dict:
    """{'right'|'wrong': {'alone': tokens, 'mixed': [{'seed', 'tokens', 'batches', 'peers'}]}}: module.Sampler vs
    the shared machine. 'peers' lists every peer that shared a batch with q, with its params (peer_label)."""
    seen = []

    def sample(sampler, logits, ids, params, prev):
        if TARGET[0] in ids:                                                     # peers beside q, as sampled
            seen.extend(peer_label(r, p) for r, p in zip(ids, params) if r != TARGET[0])
        return sampler.sample(logits, ids, params, prev)

    req_id, params, row_seed = TARGET
    traffic = drive.Traffic(make_params=_peer_params, max_peers=4, join=0.7, leave=0.2)
    out = {}
    for label, make in (("right", module.Sampler), ("wrong", SharedGeneratorSampler)):
        alone = drive.solo(make, sample, req_id, params, row_seed, steps, vocab, "cpu")
        runs = []
        for seed in mix_seeds:
            log = []
            seen.clear()
            tokens = drive.mixed(make, sample, [TARGET], steps, vocab, "cpu", traffic, seed=seed, log=log)[req_id]
            runs.append({"seed": seed, "tokens": tokens, "batches": [ids for _, ids in log],
                         "peers": list(dict.fromkeys(seen))})
        out[label] = {"alone": alone, "mixed": runs}
    return out
