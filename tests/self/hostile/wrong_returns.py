"""Hostile: returns the wrong things — lists, [B, 1], NaN-filled floats, out-of-range ids."""
import torch


class SamplingParams:
    def __init__(self, temperature=1.0, top_k=-1, top_p=1.0, repetition_penalty=1.0, seed=None):
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p
        self.repetition_penalty, self.seed = repetition_penalty, seed


def apply_repetition_penalty(logits, prev_tokens, penalty):
    return logits.tolist()


def apply_top_k(logits, top_k):
    return logits[:top_k]


def apply_top_p(logits, top_p):
    return torch.full_like(logits, float("nan"))


class Sampler:
    def sample(self, logits, req_ids, params, prev_tokens):
        if len(req_ids) == 1:
            return torch.full((1,), logits.shape[1] + 7)
        if len(req_ids) % 2 == 0:
            return torch.zeros(len(req_ids), 1)
        return [0] * len(req_ids)

    def free(self, req_id):
        return None
