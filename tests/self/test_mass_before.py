"""One contract for top-p's "mass before" a token, in p08 and p08-fast alike: the sum of the probabilities ranked
above it. Either way of computing it is correct: the prefix sum shifted by one, or the inclusive prefix sum minus the
token itself (they can differ in the last bit; the checks meet exact boundaries only where fp32 sums are exact).
Each form passes the checks that read it, and a mass before that already holds the token itself does not."""
import pytest

from tests.self.helpers import mutate, run
from tests.self.mutants import Mutant

FAST_CS_MINUS_E = Mutant("mass_before_as_cs_minus_e", "T4.filter_window",
                         (("n_top_p = 1 + first_true(cs[:, :-1] >= top_p * mass)",
                           "n_top_p = first_true((cs - e) >= top_p * mass).clamp(min=1)"),),
                         "the mass before as cs - e (a correct form)")
P08_SHIFTED = Mutant("mass_before_as_shifted_cumsum", "E2.top_p",
                     (("mass_before = torch.cumsum(probs, dim=-1) - probs",
                       "mass_before = torch.cat([probs.new_zeros(1), torch.cumsum(probs, dim=-1)[:-1]])"),),
                     "the mass before as the prefix sum shifted by one (a correct form)")


@pytest.mark.parametrize("problem,variant,checks", [
    ("p08-fast", FAST_CS_MINUS_E, ["T4.filter_window", "F1", "F3", "F7", "I6"]),
    ("p08", P08_SHIFTED, ["E2.top_p", "E2.trace", "I4", "I6"])], ids=["fast-cs-minus-e", "p08-shifted"])
def test_either_form_of_the_mass_before_passes(problem, variant, checks, tmp_path):
    results = run(problem, mutate(problem, variant, tmp_path), checks)
    failed = {cid: r.lines[:3] for cid, r in results.items() if not r.passed}
    assert not failed, f"{variant.bug} fails: {failed}"


def test_the_stub_states_the_rule_and_forbids_neither_form():
    from course import problems
    stub = problems.get("p08-fast").path("stub").read_text(encoding="utf-8")
    words = " ".join(stub.split())
    assert "a column's mass before is the sum of e over the columns left of it" in words, "the rule, stated once"
    assert "cs - e" not in stub and "cs[:, :-1]" not in stub, "neither form dictated"
    p08 = " ".join(problems.get("p08").path("stub").read_text(encoding="utf-8").split())
    assert "a token's mass before is the sum of the probabilities ranked above it" in p08.lower()
