"""Continuous batching: requests come and go, ids are reused, order is shuffled; seeded requests match
their solo runs over thousands of steps, for the reference and the fast path, and a wrong sampler is caught."""
import pytest

from course import problems
from course.loader import load_module, load_solution
from course.bench.simulate import simulate
from tests.self import mutants
from tests.self.helpers import mutate


@pytest.mark.parametrize("problem", ["p08", "p08-fast"])
def test_seeded_requests_match_their_solo_runs_under_continuous_batching(problem):
    p = problems.get(problem)
    outcome = simulate(load_solution(p), p.sampler_class, steps=2000, vocab=256, seed=3)
    assert outcome.seeded > 500 and outcome.reused_ids > 100 and outcome.largest_batch >= 8
    assert not outcome.mismatches, outcome.mismatches[:2]


def test_the_simulation_catches_a_sampler_with_one_generator_for_the_batch(tmp_path):
    bad = next(m for m in mutants.P08 if m.name == "one_generator_for_batch")
    outcome = simulate(load_module(mutate("p08", bad, tmp_path)), "Sampler", steps=200, vocab=256, seed=3)
    assert len(outcome.mismatches) > 10


def test_the_soak_runs_from_the_benchmark_command(capsys):
    from course import bench

    assert bench.main(["p08", "--soak", "40"]) == 0
    assert capsys.readouterr().out.count("every seeded request matched its solo run") == 2
