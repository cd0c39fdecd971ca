"""P08 — your sampler: batch invariant, one random stream per seeded request.

Fill in the six steps (search for TODO(p08.)). Grade with `./check.sh p08`; stuck? `./check.sh p08 --hint 1`.
The walkthrough is notebooks/p08_sampler.ipynb (English: notebooks/en/p08_sampler.ipynb; §N there is step N here).
"""
import torch  # noqa: F401  (you will need it)

from course.sampling_params import GREEDY_TEMPERATURE, SamplingParams  # noqa: F401  (given: do not re-define)

__all__ = ["SamplingParams", "apply_repetition_penalty", "apply_top_k", "apply_top_p", "Sampler"]


def _todo(step, name):
    return NotImplementedError(
        f"p08 step {step} {name}: see notebooks/p08_sampler.ipynb §{step} · ./check.sh p08 --hint 1")


def apply_repetition_penalty(logits, prev_tokens, penalty):
    """Each distinct token seen before: a positive logit is divided by penalty, a negative one multiplied.

    logits [V] float · prev_tokens: list (or tensor) of token ids, repeats allowed · returns a NEW [V].
    penalty == 1 or an empty history -> an unchanged copy. Never modify `logits` itself.
    """
    # TODO(p08.1): de-duplicate prev_tokens, then v > 0 -> v / penalty, else v * penalty, on a copy.
    raise _todo(1, "apply_repetition_penalty")


def apply_top_k(logits, top_k):
    """When 0 < top_k < V, keep the values >= the k-th largest; the others become -inf.

    logits [V] · returns a NEW [V]. Any other top_k (-1, 0, -2, ..., V, V + 5) means "off": an unchanged copy.
    """
    # TODO(p08.4): find the k-th largest value; everything strictly below it becomes -inf.
    raise _todo(4, "apply_top_k")


def apply_top_p(logits, top_p):
    """Keep the most probable tokens until their probability mass reaches top_p; the others become -inf.

    logits [V] (may already hold -inf) · returns a NEW [V]. top_p == 1 means "off" (an unchanged copy).
    A token's mass before is the sum of the probabilities ranked above it; a token goes once its mass before
    reaches top_p, so the one that carries the mass past top_p is kept, and the most probable token always
    is. Where equal logits straddle the cut, which of them stay is yours to choose (p08-fast pins it: lower id
    first). How: hints L2 (./check.sh p08 --hint 2).
    """
    # TODO(p08.5): the token that crosses top_p stays; at least one token always stays.
    raise _todo(5, "apply_top_p")


class Sampler:
    """Samples one token per row; a seeded request only ever draws from its own generator."""

    def __init__(self):
        # TODO(p08.6): where do the generators live? (one per seeded req_id, one shared for the unseeded)
        pass

    def sample(self, logits, req_ids, params, prev_tokens):
        """logits [B, V] (fp32, bf16 or fp16) -> LongTensor [B] on logits.device; row i is req_ids[i]'s token.

        For each row i, on its own:
          step 0  row = logits[i] in fp32                                    [V]
          step 1  repetition penalty with prev_tokens[i]                     [V]
          step 2  temperature < GREEDY_TEMPERATURE -> argmax, done with this row
          step 3  row / temperature                                          [V]
          step 4  top-k      step 5  top-p                                   [V]
          step 6  draw one token from softmax(row) with THIS request's generator
        """
        # TODO(p08.2): the greedy test comes before any division.
        # TODO(p08.3): temperature.
        # TODO(p08.6): torch.Generator(device=logits.device).manual_seed(seed), created once per req_id.
        raise _todo(6, "Sampler.sample")

    def free(self, req_id):
        """Forget req_id's generator; a later request with the same id starts a fresh stream."""
        # TODO(p08.6): drop the generator (an unknown req_id is not an error).
        raise _todo(6, "Sampler.free")
