"""A correct P08 sampler in the style of serving engines: ascending sort with `cumsum <= 1 - top_p` for
top-p, a boolean mask filled with masked_fill, and the exponential race (probs / Exp(1), argmax) as the
draw, with q drawn from the request's own generator. The grader must pass it."""
import torch

from course.sampling_params import SamplingParams  # noqa: F401


def apply_repetition_penalty(logits, prev_tokens, penalty):
    out = logits.clone()
    if len(prev_tokens):
        seen = torch.zeros(logits.shape[-1], dtype=torch.bool, device=logits.device)
        seen[torch.as_tensor(prev_tokens, dtype=torch.long, device=logits.device)] = True
        out = torch.where(seen & (out > 0), out / penalty, torch.where(seen, out * penalty, out))
    return out


def apply_top_k(logits, top_k):
    if not 0 < top_k < logits.shape[-1]:
        return logits.clone()
    kth = logits.topk(top_k).values[..., -1:]
    return logits.masked_fill(logits < kth, float("-inf"))


def apply_top_p(logits, top_p):
    if not 0 < top_p < 1:
        return logits.clone()
    ascending, order = logits.sort(descending=False)
    mass_up_to = ascending.softmax(-1).cumsum(-1)
    drop = mass_up_to <= 1 - top_p
    drop[-1] = False
    return logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))


class Sampler:
    _GREEDY = 1e-5

    def __init__(self):
        self._gens, self._default = {}, None

    def sample(self, logits, req_ids, params, prev_tokens):
        out = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        for i in range(logits.shape[0]):
            p = params[i]
            row = apply_repetition_penalty(logits[i].to(torch.float32), prev_tokens[i], p.repetition_penalty)
            if p.temperature < self._GREEDY:
                out[i] = row.argmax()
                continue
            probs = apply_top_p(apply_top_k(row / p.temperature, p.top_k), p.top_p).softmax(-1)
            if p.seed is None:
                self._default = self._default or torch.Generator(device=logits.device)
                gen = self._default
            else:
                gen = self._gens.setdefault(req_ids[i], torch.Generator(device=logits.device).manual_seed(p.seed))
            q = torch.empty_like(probs).exponential_(1.0, generator=gen)
            out[i] = (probs / q).argmax()
        return out

    def free(self, req_id):
        self._gens.pop(req_id, None)
