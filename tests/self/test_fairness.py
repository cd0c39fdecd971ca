"""No statistical check fails a correct sampler by chance: the reference with other random streams (a
constant added to every seed; exponential-race, Gumbel-max and inverse-CDF draws) passes every check.
One variant runs by default; all twenty with `./check.sh test -m slow tests/self/test_fairness.py`."""
import pytest

from tests.self.helpers import check_ids, run
from tests.self.mutants import Mutant

SEED = "manual_seed(params.seed)"
DRAW = "torch.multinomial(probs, 1, generator=generator)[0]"
DRAWS = {
    "multinomial": DRAW,
    "exponential_race": "torch.argmax(probs / torch.empty_like(probs).exponential_(generator=generator))",
    "gumbel_max": "torch.argmax(torch.log(probs) - torch.log(-torch.log(torch.rand(probs.shape, generator=generator, "
                  "device=probs.device).clamp_min(1e-30))))",
    "inverse_cdf": "torch.minimum(torch.searchsorted(torch.cumsum(probs.double(), 0), "
                   "torch.rand(1, generator=generator, device=probs.device, dtype=torch.float64) "
                   "* probs.double().sum())[0], probs.nonzero()[-1, 0])",
}
VARIANTS = [Mutant(f"{draw}_seed_plus_{c}", "", ((SEED, f"manual_seed(params.seed + {c})"), (DRAW, code)),
                   "a correct variant")
            for draw, code in DRAWS.items() for c in (1, 7, 1000, 31337, 2 ** 40)]
DEFAULT = {"exponential_race_seed_plus_7"}
STATISTICAL = ["E2.temperature", "E2.small_t", "I3.edges", "I6", "I6.large", "S0", "S1-5"]


@pytest.mark.parametrize("variant", [pytest.param(v, marks=() if v.name in DEFAULT else pytest.mark.slow)
                                     for v in VARIANTS], ids=lambda v: v.name)
def test_a_correct_sampler_with_other_random_streams_passes(variant, tmp_path):
    from tests.self.helpers import mutate

    impl = mutate("p08", variant, tmp_path)
    ids = [c for c in check_ids("p08") if c in STATISTICAL]
    failed = {cid: r.lines for cid, r in run("p08", impl, ids).items() if not r.passed}
    assert not failed, f"{variant.name} is correct but failed: {failed}"
