"""P08 reference: a batch-invariant token sampler with per-request seeds.

Each row goes through the seed page's six steps on its own, in fp32:
penalty -> greedy? -> temperature -> top-k -> top-p -> draw with the request's own generator.
"""
import torch

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams, validate_sample_inputs

__all__ = ["SamplingParams", "apply_repetition_penalty", "apply_top_k", "apply_top_p", "Sampler"]


# step 1 ---------------------------------------------------------------------------------------------
def apply_repetition_penalty(logits, prev_tokens, penalty):
    """Each distinct token seen before: a positive logit is divided by penalty, a negative one multiplied."""
    out = logits.clone()                                                        # [V], never the caller's
    if penalty == 1.0 or len(prev_tokens) == 0:
        return out
    seen = torch.unique(torch.as_tensor(prev_tokens, dtype=torch.long, device=logits.device))  # [n] distinct
    values = out[seen]                                                          # [n]
    out[seen] = torch.where(values > 0, values / penalty, values * penalty)    # [n]
    return out


# step 4 ---------------------------------------------------------------------------------------------
def apply_top_k(logits, top_k):
    """When 0 < top_k < V, keep the values >= the k-th largest; the others become -inf."""
    vocab = logits.shape[-1]
    if not 0 < top_k < vocab:
        return logits.clone()                                                   # off: -1, 0, >= V
    kth_value = torch.topk(logits, top_k).values[-1]                            # scalar
    return logits.masked_fill(logits < kth_value, float("-inf"))               # [V]


# step 5 ---------------------------------------------------------------------------------------------
def apply_top_p(logits, top_p):
    """Keep the smallest prefix (by descending probability) whose mass reaches top_p; the first always stays."""
    if not 0 < top_p < 1:
        return logits.clone()                                                   # off: top_p == 1
    sorted_logits, order = torch.sort(logits, descending=True, stable=True)     # [V], [V] ties: lower id first
    probs = torch.softmax(sorted_logits, dim=-1)                                # [V]
    mass_before = torch.cumsum(probs, dim=-1) - probs                           # [V] mass strictly before
    remove_sorted = mass_before >= top_p                                        # [V] the crossing token stays
    remove_sorted[0] = False                                                    # at least one token
    remove = torch.empty_like(remove_sorted).scatter_(0, order, remove_sorted)  # [V] back to vocab order
    return logits.masked_fill(remove, float("-inf"))                            # [V]


# the sampler: steps 0-6 per row, one generator per seeded request ------------------------------------
class Sampler:
    """Samples one token per row; a seeded request only ever draws from its own generator."""

    def __init__(self):
        self._seeded = {}   # req_id -> torch.Generator, created on first sample, dropped by free()
        self._shared = {}   # device -> torch.Generator shared by the unseeded requests

    def _generator(self, req_id, params, device):
        if params.seed is None:
            if device not in self._shared:
                self._shared[device] = torch.Generator(device=device).manual_seed(torch.initial_seed())
            return self._shared[device]
        if req_id not in self._seeded:
            self._seeded[req_id] = torch.Generator(device=device).manual_seed(params.seed)
        return self._seeded[req_id]

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] -> LongTensor [B]: row i is req_ids[i]'s next token."""
        validate_sample_inputs(logits, req_ids, params, prev_tokens)
        tokens = torch.empty(len(req_ids), dtype=torch.long, device=logits.device)  # [B]
        for i, (req_id, p) in enumerate(zip(req_ids, params)):
            row = logits[i].float()                                                  # step 0: [V] fp32
            row = apply_repetition_penalty(row, prev_tokens[i], p.repetition_penalty)  # step 1: [V]
            if p.temperature < GREEDY_TEMPERATURE:                                   # step 2: greedy
                tokens[i] = torch.argmax(row)
                continue
            row = row / p.temperature                                                # step 3: [V]
            row = apply_top_k(row, p.top_k)                                          # step 4: [V]
            row = apply_top_p(row, p.top_p)                                          # step 5: [V]
            probs = torch.softmax(row, dim=-1)                                       # step 6: [V]
            generator = self._generator(req_id, p, logits.device)
            tokens[i] = torch.multinomial(probs, 1, generator=generator)[0]          # scalar
        return tokens

    def free(self, req_id):
        """Forget req_id's generator; a later request with the same id starts a fresh stream."""
        self._seeded.pop(req_id, None)
