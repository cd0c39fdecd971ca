"""A problem is data plus its own files: the tiny problem in tests/toy/ (a stub, a solution, two checks, one hint,
one mutant) is graded, hinted, listed, filtered with --only and offered to mutation testing by the same grader,
through COURSE_TOML alone; and the grader's code names no problem."""
import os
import subprocess
import sys

import pytest

from course import problems
from course.grader.runner import grade_in_process
from course.problems import ROOT
from tests.self.helpers import apply_patches, check_sh
from tests.self.mutants import Mutant

TOY_TOML = ROOT / "tests" / "toy" / "course.toml"
FORGETS_HIGH = Mutant("clamp_forgets_high", "C2.outside", (("min(max(v, low), high)", "max(v, low)"),),
                      "moves values below low but leaves those above high", "above high becomes high")


def toy_sh(*args, state):
    return check_sh(*args, state=state, timeout=120, COURSE_TOML=str(TOY_TOML))


@pytest.fixture
def toy(monkeypatch):
    """course.problems reads tests/toy/course.toml for the length of a test."""
    monkeypatch.setenv("COURSE_TOML", str(TOY_TOML))
    problems.problems.cache_clear()
    yield problems.get("toy")
    monkeypatch.undo()
    problems.problems.cache_clear()


def test_the_stub_the_solution_and_a_mutant_are_graded_in_process(toy, tmp_path):
    ids = list(toy.checks)
    stub = grade_in_process(toy, toy.path("stub"), ids)
    assert [stub[i].status for i in ids] == ["todo", "todo"]
    assert "not implemented yet: clamp" in stub["C1.inside"].lines[0]
    solution = grade_in_process(toy, toy.path("solution"), ids)
    assert [solution[i].status for i in ids] == ["pass", "pass"]
    impl = tmp_path / "mutant.py"
    impl.write_text(apply_patches(toy.path("solution").read_text(encoding="utf-8"), FORGETS_HIGH.patches, "toy"))
    result = grade_in_process(toy, impl, ids)
    assert result["C1.inside"].status == "pass" and result["C2.outside"].status == "fail"
    assert FORGETS_HIGH.named_in(" ".join(result["C2.outside"].lines)), result["C2.outside"].lines


def test_check_sh_grades_hints_lists_and_filters_the_toy(tmp_path):
    state = tmp_path / "s.json"
    code, out, err = toy_sh("toy", "--lang", "en", state=state)
    assert code == 1 and out.count("not implemented yet: clamp") == 1 and "0/2 checks passed" in out, (out, err)
    assert "the same cause as C1.inside blocks 1 more check:" in out and "next: write clamp (step 1" in out, out
    code, out, _ = toy_sh("toy", "--solution", "--lang", "en", state=state)
    assert code == 0 and "2/2 checks passed" in out and "All passed!" in out, out
    code, out, _ = toy_sh("toy", "--solution", "--only", "C2", state=state)
    assert code == 0 and "1/1 项检查通过" in out and "C1" not in out, out
    code, out, _ = toy_sh("toy", "--hint", "1", "--lang", "en", state=state)
    assert code == 0 and "What should a value below low become?" in out and "--hint 2" not in out, out
    code, _, err = toy_sh("toy", "--hint", "2", "--lang", "en", state=state)
    assert code == 2 and "--hint takes 1 for toy" in err, err
    code, out, _ = toy_sh("list", "--lang", "en", state=state)
    assert code == 0 and "toy" in out and "last 0/2" in out and "hints seen [1]" in out and "p08" not in out, out


def test_mutation_testing_offers_the_toy_as_a_target(tmp_path):
    code = ("from course.grader import mutation; import sys; label, slug, source = mutation.target('toy'); "
            "print(label, source.relative_to(mutation.ROOT)); sys.argv = ['m', '--help']; mutation.main(['--help'])")
    env = dict(os.environ, PYTHONPATH=str(ROOT), COURSE_TOML=str(TOY_TOML))
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "toy tests/toy/solution_clamp.py" in proc.stdout and "{toy}" in proc.stdout, proc.stdout + proc.stderr


def test_the_grader_names_no_problem():
    names = set(problems.problems()) | {"toy", "p08"}
    for path in sorted((ROOT / "course" / "grader").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for name in names:
            assert f'"{name}' not in text and f" {name} " not in text and f"{name}-" not in text, (path.name, name)


def test_every_declared_check_is_run_by_a_problem_and_listed_once():
    from course.grader.checks import _REGISTRY, checks_for

    listed = set()
    for problem in problems.problems().values():
        assert len(set(problem.checks)) == len(problem.checks), f"{problem.name} lists a check twice"
        listed |= {c.id for c in checks_for(problem)}
    declared = {cid for cid, c in _REGISTRY.items() if not c.fn.__module__.startswith("tests.toy")}
    assert declared == listed, f"declared but run by no problem: {declared - listed}"
