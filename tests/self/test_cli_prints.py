"""A learner file that prints during the checks: graded as if it did not, and the report says so in one line (-v
shows what it printed)."""
import re
from pathlib import Path

import pytest

from course import problems
from tests.self.helpers import check_sh

HOSTILE = Path(__file__).parent / "hostile"


def test_a_passing_file_that_prints_gets_one_line_and_v_shows_the_output():
    args = ("p08", "--impl", str(HOSTILE / "prints_a_lot.py"), "--lang", "en", "--only", "E1.greedy,I1")
    code, out, err = check_sh(*args)
    assert code == 0 and "LEARNER-NOISE" not in out + err and "2/2 checks passed" in out, out
    said = re.findall(r"^your file printed (\d+) lines during the checks; -v shows them$", out, re.M)
    assert len(said) == 1 and int(said[0]) > 2, out
    code, out, _ = check_sh(*args, "-v")
    assert code == 0 and "LEARNER-NOISE" in out and "-v shows them" not in out


@pytest.mark.parametrize("lang,line", [("en", "your file printed 2 lines during the checks; -v shows them"),
                                       ("zh", "你的文件在检查中打印了 2 行；-v 可查看")])
def test_a_failing_file_that_prints_is_failed_as_before_with_the_same_one_line(tmp_path, lang, line):
    """The stub with a print at module level (each check imports the file afresh: one line per check): the checks
    fail as the stub's do, and the output is one line at the end, not a note under each check."""
    impl = tmp_path / "attempt.py"
    impl.write_text(problems.get("p08").path("stub").read_text(encoding="utf-8") + '\nprint("hello from the file")\n',
                    encoding="utf-8")
    code, out, err = check_sh("p08", "--impl", str(impl), "--lang", lang, "--only", "E1.penalty,E2.top_k")
    assert code == 1 and out.count("✗") == 2 and "hello from the file" not in out + err, out
    assert out.count(line) == 1 and "printed" not in out.replace(line, "") and "打印" not in out.replace(line, "")
