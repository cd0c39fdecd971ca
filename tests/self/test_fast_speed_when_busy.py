"""F5 times the fast path beside the reference loop and the full sort, in one run. Where other programs keep the CPU
busy, those figures are noise: F5 times once more, and if the machine is still busy and the ratios still fall short,
it passes with a note that speed was not judged. What is counted (a per-row loop, a full-row sort) fails anywhere."""
import pytest

import course.bench as bench
from course.bench import machine
from course.problems import ROOT
from tests.self.helpers import run

SOLUTION = ROOT / "solutions" / "p08_sampler_fast.py"


def _machine(monkeypatch, busy: bool, ratio: float) -> list:
    """time_many answers the loop and the full sort `ratio` times the fast path; Watch says busy or idle."""
    calls = []

    def time_many(fns, *args, **kwargs):
        calls.append(sorted(fns))
        return {"fast": 10.0, "loop": 10.0 * ratio, "sort": 10.0 * ratio}

    class Watch:
        load = None

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.load = machine.Load(others=1.6 if busy else 0.0, load=None, cores=2)
            return False

    monkeypatch.setattr(bench, "time_many", time_many)
    monkeypatch.setattr(machine, "Watch", Watch)
    return calls


@pytest.mark.parametrize("busy, ratio, passed, timings", [
    (False, 5.0, True, 1),      # idle, fast enough: one timing
    (False, 1.2, False, 1),     # idle and too slow: the figures are the machine's, F5 fails
    (True, 1.2, True, 2),       # busy and too slow: timed again, still busy: not judged
    (True, 5.0, True, 1),       # busy but fast enough: nothing to doubt
])
def test_f5_judges_speed_only_on_a_machine_that_other_programs_leave_alone(monkeypatch, busy, ratio, passed, timings):
    calls = _machine(monkeypatch, busy, ratio)
    result = run("p08-fast", SOLUTION, ["F5"])["F5"]
    text = "\n".join(result.lines)
    assert result.passed == passed, f"called F5 with a {'busy' if busy else 'idle'} machine and ratio {ratio}, " \
                                    f"returned passed={result.passed}: {text}"
    assert len(calls) == timings, f"timed {len(calls)} times, expected {timings}"
    assert ("not judged" in text) == (busy and ratio < 3), text
    if not passed:
        assert "expected at least 3x the loop" in text, text


def test_f5_fails_a_full_row_sort_even_on_a_busy_machine(monkeypatch):
    from tests.self.mutants_fast import P08_FAST
    from tests.self.helpers import mutate
    import tempfile
    from pathlib import Path

    _machine(monkeypatch, busy=True, ratio=1.0)
    mutant = next(m for m in P08_FAST if m.name == "full_vocab_sort_always")
    with tempfile.TemporaryDirectory() as folder:
        result = run("p08-fast", mutate("p08-fast", mutant, Path(folder)), ["F5"])["F5"]
    assert not result.passed and "it sorts full rows (V=50257)" in "\n".join(result.lines), result.lines
