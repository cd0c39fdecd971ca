"""A learner file that hangs: the grade stops at its first time-out, says where the learner's code was (file:line in
the learner's file, from the worker's stack), and lists the checks it did not run on one line."""
from pathlib import Path

import pytest

from course.grader.runner import hang_site, learner_frames
from tests.self.helpers import check_sh

HOSTILE = Path(__file__).parent / "hostile"
HANGS = HOSTILE / "hangs.py"
SLEEP_LINE = next(n for n, line in enumerate(HANGS.read_text().splitlines(), 1) if "time.sleep(1)" in line)


@pytest.mark.parametrize("lang,timed_out,where,not_run", [
    ("en", "timed out: did not finish within 2 s", "when stopped it was in sample(): time.sleep(1)",
     "✗ not run: the file timed out in E1.greedy (3 checks): E2.top_k, I4, S6"),
    ("zh", "超时：2 秒内没有结束", "被停下时它正在 sample() 里：time.sleep(1)",
     "✗ 没有运行：文件在 E1.greedy 中超时（3 项）：E2.top_k, I4, S6")])
def test_the_first_time_out_stops_the_grade_and_says_where_the_code_was(lang, timed_out, where, not_run):
    code, out, err = check_sh("p08", "--impl", str(HANGS), "--lang", lang, "--timeout", "2",
                              "--only", "E1.penalty,E1.greedy,I4,E2.top_k,S6")
    assert code == 1 and "Traceback" not in out + err, (out, err)
    assert out.count(timed_out) == 1, out                   # one time-out: the checks after it were not run
    assert where in out and f"tests/self/hostile/hangs.py:{SLEEP_LINE}" in out, out
    assert not_run in out and out.count("✗") == 2, out
    assert ("✓ E1 repetition penalty" in out or "✓ E1 重复惩罚" in out)    # the check before the hang still passes
    assert ("1/5 checks passed" if lang == "en" else "1/5 项检查通过") in out


def test_a_file_that_hangs_at_import_says_the_line():
    code, out, _ = check_sh("p08", "--impl", str(HOSTILE / "hangs_at_import.py"), "--lang", "en", "--timeout", "2",
                            "--only", "E1.greedy", COURSE_IMPORT_LIMIT_S="2")
    line = next(n for n, text in enumerate((HOSTILE / "hangs_at_import.py").read_text().splitlines(), 1)
                if "time.sleep" in text)
    assert code == 1 and "did not finish in time" in out and "when stopped it was at module level" in out
    assert f"hangs_at_import.py:{line}" in out, out


def test_the_stack_dump_is_read_for_the_learner_file_only(tmp_path):
    """A faulthandler dump as the worker writes it: the learner's innermost frame is the line, its outermost the
    function the check called; another thread's frames and the grader's own do not count."""
    impl = tmp_path / "mine.py"
    impl.write_text("def helper():\n    while True:\n        pass\n\n\ndef sample():\n    return helper()\n")
    dump = ('Thread 0x00007f01 (most recent call first):\n  File "/usr/lib/python3.11/threading.py", line 320 in wait\n'
            f'\nCurrent thread 0x00007f00 (most recent call first):\n  File "{impl}", line 3 in helper\n'
            f'  File "{impl}", line 7 in sample\n  File "/repo/tests/p08/checks_x.py", line 40 in e1\n'
            f'  File "/repo/course/grader/worker.py", line 150 in _run\n')
    assert learner_frames(dump, impl) == [(3, "helper"), (7, "sample")]
    lines, where = hang_site(dump, impl, "en")
    assert lines == ["when stopped it was in helper() (called from sample()): pass"] and where.endswith("mine.py:3")
    assert hang_site("", impl, "en") == ([], None)
