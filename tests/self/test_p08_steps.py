"""p08 graded step by step: the reference with its later steps still TODO passes exactly the checks of the
steps written so far (course.toml's `steps`), the others say "not implemented yet"; --step N grades one step."""
import pytest

from course import problems
from tests.self.helpers import run
from tests.self.helpers import check_sh

P08 = problems.get("p08")
TODO = ('    raise NotImplementedError("p08 step {n} {name}: see notebooks/p08_sampler.ipynb §{n} · '
        './check.sh p08 --hint 1")\n')


def _body_todo(text: str, name: str, step: int) -> str:
    """The function `name` of the reference with its body (after the docstring) replaced by the stub's raise."""
    start = text.index(f"def {name}(")
    doc_end = text.index('"""', text.index('"""', start) + 3) + 3
    indent = start - text.rindex("\n", 0, start) - 1
    ends = [text.find(mark, start) for mark in ("\n\n\n", "\n\n" + " " * indent + "def ")]
    end = min(e for e in ends if e != -1)
    raise_line = TODO.format(n=step, name=name).rstrip("\n").replace("    raise", " " * (indent + 4) + "raise", 1)
    return text[:doc_end] + "\n" + raise_line + text[end:]


def written_up_to(step: int) -> str:
    """The reference as a learner has it after writing TODO steps 1..step (step 3, the temperature, goes with 6)."""
    text = P08.path("solution").read_text(encoding="utf-8")
    if step < 6:
        non_greedy = text.index("            row = row / p.temperature")
        text = (text[:non_greedy] + TODO.format(n=6, name="Sampler.sample").replace("    raise", "            raise", 1)
                + text[text.index("        return tokens\n"):])
    if step < 2:
        text = _body_todo(text, "sample", 6).replace("step 6 sample:", "step 6 Sampler.sample:")
    if step < 5:
        text = _body_todo(text, "apply_top_p", 5)
    if step < 4:
        text = _body_todo(text, "apply_top_k", 4)
    if step < 1:
        text = _body_todo(text, "apply_repetition_penalty", 1)
    return text


def test_the_report_shows_the_steps_checks_first_in_step_order():
    flat = [cid for ids in P08.steps for cid in ids]
    assert len(P08.steps) == 6 and list(P08.checks[:len(flat)]) == flat


@pytest.mark.parametrize("done", [1, 2, 4, 5])   # 0 (the stub) and 6 (the reference): test_grader_verdicts
def test_each_steps_checks_pass_as_soon_as_it_is_written(done, tmp_path):
    path = tmp_path / f"after_{done}.py"
    path.write_text(written_up_to(done), encoding="utf-8")
    ids = [cid for ids in P08.steps for cid in ids]
    results = run("p08", path, ids)
    ready = {n for n in range(1, 7) if n <= done and (n != 3 or done >= 6)}
    expected = {cid: "pass" if n in ready else "todo" for n, ids in enumerate(P08.steps, 1) for cid in ids}
    got = {cid: results[cid].status for cid in ids}
    assert got == expected, {cid: results[cid].lines[:1] for cid in ids if got[cid] != expected[cid]}


def test_step_grades_one_steps_checks(tmp_path):
    code, out, _ = check_sh("p08", "--solution", "--step", "5", "--lang", "en", state=tmp_path / "s.json")
    assert code == 0 and "2/2 checks passed" in out and "E2 top-p keep sets" in out and "E1" not in out, out
    assert "all of these pass. The whole grade: ./check.sh p08" in out
    code, out, _ = check_sh("p08", "--step", "4", "--lang", "en", state=tmp_path / "s.json")
    assert code == 1 and "0/1 checks passed" in out and out.strip().endswith("(key question 5)"), out
    assert "not graded yet" in check_sh("list", "--lang", "en", state=tmp_path / "s.json")[1]   # not the grade


def test_only_takes_a_family_and_the_language_is_remembered(tmp_path):
    state = tmp_path / "s.json"
    code, out, _ = check_sh("lang", "en", state=state)
    assert code == 0 and "English" in out
    code, out, _ = check_sh("p08", "--solution", "--only", "I3", state=state)
    assert code == 0 and "I3 greedy" in out and out.count("✓ I3") == 2 and "2/2 checks passed" in out, out
    code, out, err = check_sh("p08", "--only", "Z9", state=state)
    assert code == 2 and "--only Z9: no such check; families: E1, E2," in err, err
    code, out, _ = check_sh("lang", "zh", state=state)
    assert code == 0 and "中文" in out
