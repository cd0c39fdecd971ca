"""check.sh end to end: the stub and the reference in both languages, hostile learner files (usage errors:
test_cli_usage.py; a file that hangs: test_cli_hang.py; prints: test_cli_prints.py)."""
from pathlib import Path

import pytest

from course import problems
from course.grader.checks import checks_for
from tests.self.helpers import check_sh

HOSTILE = Path(__file__).parent / "hostile"
P08_CHECKS = len(checks_for(problems.get("p08")))


@pytest.mark.parametrize("lang,word,summary", [("zh", "尚未实现", f"0/{P08_CHECKS} 项检查通过"),
                                               ("en", "not implemented yet", f"0/{P08_CHECKS} checks passed")])
def test_stub_is_graded_cleanly_in_both_languages(lang, word, summary, tmp_path):
    """The untouched stub: each missing step is shown once (four of them), the checks each one blocks are listed on
    one line, and the report ends with the first TODO to write and its hint."""
    code, out, err = check_sh("p08", "--lang", lang, state=tmp_path / "s.json")
    assert code == 1, (out, err)
    assert out.count(word) == 4 and summary in out and "Traceback" not in out + err
    for name in ("apply_repetition_penalty", "apply_top_k", "apply_top_p", "Sampler.sample"):
        assert out.count(f"{word}{'：' if lang == 'zh' else ': '}{name}") == 1, (name, out)
    blocked = out[out.index("E1.greedy"):]
    assert all(cid in blocked for cid in ("E2.temperature", "I1", "I6.large", "S1-5")), out
    assert len(out.splitlines()) <= 30, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("下一步：写 apply_repetition_penalty（第 1 步" if lang == "zh"
                           else "next: write apply_repetition_penalty (step 1") and "--hint 1" in last, last
    assert "solutions/p08_sampler.py" not in out          # the reference is pointed to only after a full pass
    assert '"passed": 0' in (tmp_path / "s.json").read_text()


@pytest.mark.parametrize("problem,next_step", [("p08", "./check.sh p08-fast"),
                                               ("p08-fast", "-m course.bench p08 --impl mine --quick")])
def test_reference_passes_every_check_and_points_to_the_next_step(problem, next_step, tmp_path):
    """The reference passes every check on the CPU (test_grader_verdicts.py grades it on a GPU) and the report ends
    pointing at what comes next."""
    total = len(checks_for(problems.get(problem)))
    code, out, _ = check_sh(problem, "--solution", "--lang", "en", state=tmp_path / "s.json")
    assert code == 0, out
    assert f"{total}/{total} checks passed" in out and next_step in out and "✗" not in out, out


def test_a_file_that_hangs_at_import_is_one_clear_block():
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "hangs_at_import.py"), "--lang", "en", "--timeout", "2",
                            COURSE_IMPORT_LIMIT_S="3")
    assert code == 1 and "did not finish" in out and f"0/{P08_CHECKS} checks passed" in out


@pytest.mark.parametrize("name,expected", [("syntax_error.py", "SyntaxError"),
                                           ("raises_at_import.py", "FileNotFoundError")])
def test_a_file_that_fails_at_import_gets_one_block_with_file_and_line(name, expected):
    code, out, err = check_sh("p08", "--impl", str(HOSTILE / name), "--lang", "en")
    assert code == 1 and expected in out and f"{name}:" in out and "Traceback" not in out + err
    assert out.count("✗") == 1


def test_a_missing_function_or_method_is_named():
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "missing_function.py"), "--lang", "en",
                            "--only", "E2.top_p,E2.top_k")
    assert code == 1 and "MISSING FUNCTION apply_top_p in tests/self/hostile/missing_function.py" in out
    assert "✓ E2 top-k" in out
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "missing_method.py"), "--lang", "en", "--only", "E3,I3")
    assert code == 1 and "MISSING METHOD Sampler.free in tests/self/hostile/missing_method.py" in out and "✓ I3" in out


def test_wrong_return_types_are_reported_per_check():
    code, out, err = check_sh("p08", "--impl", str(HOSTILE / "wrong_returns.py"), "--lang", "en")
    assert code == 1 and f"0/{P08_CHECKS} checks passed" in out and "Traceback" not in out + err
    assert "expected a floating tensor of shape [4]" in out and "sample() returns a LongTensor of shape [B]" in out
    assert "it returned a list, not a tensor" in out and "its dtype is float32" in out and "(drop the last dim)" in out


def test_a_file_that_exits_is_reported_and_later_checks_still_run():
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "exits.py"), "--lang", "en", "--only", "I3,S6,E1.greedy")
    assert code == 1
    assert "the process died during this check (exit code 7" in out and "called sys.exit(3)" in out
    assert "✓ E1 the penalty" in out


def test_global_state_edits_neither_fail_a_correct_file_nor_pass_a_wrong_one():
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "edits_global_state.py"), "--lang", "en")
    assert code == 0, out
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "global_rng_reseeded.py"), "--lang", "en", "--only", "I1,I5")
    assert code == 1 and "✗ I1" in out and "✗ I5" in out


def test_the_fast_path_stub_is_graded_cleanly_on_one_screen(tmp_path):
    total = len(checks_for(problems.get("p08-fast")))
    code, out, err = check_sh("p08-fast", "--lang", "en", state=tmp_path / "s.json")
    assert code == 1 and f"0/{total} checks passed" in out and "Traceback" not in out + err
    # the steps first, in TODO order, each missing step once; English points at the English notebook
    assert out.index("✗ T1 route") < out.index("✗ T5 inverse_cdf") < out.index("F1")
    assert "see notebooks/en/p08_fast_path.ipynb §" in out and "see notebooks/p08_fast_path.ipynb" not in out
    assert "not implemented yet: filter_window (step 4, see notebooks/en/p08_fast_path.ipynb §4)" in out
    assert len(out.splitlines()) <= 25, f"{len(out.splitlines())} lines:\n{out}"
    assert out.splitlines()[-1].startswith("next: write route (step 1"), out


def test_a_step_of_two_functions_grades_both(tmp_path):
    code, out, _ = check_sh("p08-fast", "--solution", "--step", "2", "--lang", "en", state=tmp_path / "s.json")
    assert code == 0 and "2/2 checks passed" in out, out
    assert "✓ T2 window_topk" in out and "✓ T2 canonical_window" in out, out


def test_a_long_explanation_is_folded_whole_and_a_flood_is_cut():
    """A why line longer than one report line goes on over a few lines, every word kept; a learner's huge value
    (a repr of a whole tensor) still ends after MAX_FOLDS lines with '…'."""
    from course.grader.report import MAX_FOLDS, MAX_LINE, fold
    why = " ".join(f"word{i}" for i in range(60))                                      # ~ 400 characters
    lines = fold(why)
    assert 1 < len(lines) <= MAX_FOLDS and all(len(line) <= MAX_LINE for line in lines)
    assert " ".join(lines) == why, f"fold({why[:40]}...) lost words: {lines}"
    flood = fold("[" + ", ".join("0.125" for _ in range(5000)) + "]")
    assert len(flood) == MAX_FOLDS and flood[-1].endswith("…") and all(len(line) <= MAX_LINE for line in flood)


def test_the_benchmark_command_of_the_last_line_works_as_printed_from_the_repo_root(monkeypatch, tmp_path):
    """After a full pass p08-fast's last line names the benchmark of the learner's file, started by the Python check.sh
    runs: the repo's .venv by its path from the repo root, else the name PATH finds it by, else its full path."""
    import shutil
    import sys

    from course import cli
    from course.problems import ROOT

    fast = problems.get("p08-fast")
    assert all("{python} -m course.bench p08 --impl mine --quick" in line for line in (fast.next_en, fast.next_zh))
    monkeypatch.setattr(sys, "executable", str(ROOT / ".venv" / "bin" / "python"))
    assert cli.python_command() == ".venv/bin/python"
    on_path = shutil.which("python3")
    if on_path:
        monkeypatch.setattr(sys, "executable", str(Path(on_path).resolve()))
        name = cli.python_command()
        assert name in ("python", "python3") and Path(shutil.which(name)).samefile(on_path)
    elsewhere = tmp_path / "bin" / "python3.11"               # an interpreter outside the repo that PATH does not name
    elsewhere.parent.mkdir()
    elsewhere.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "executable", str(elsewhere))
    assert cli.python_command() == str(elsewhere)
