"""check.sh's command line: -h lists every option with a one-line explanation (both languages), a mistyped flag
gets a suggestion, --only ignores case, and every command-line error is one line plus one short usage line, in
Chinese under --lang zh (the default) and in English under --lang en."""
import re

import pytest

from course import cli, cli_args, problems
from tests.self.helpers import check_ids

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def _fresh_state(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_STATE", str(tmp_path / "s.json"))
    monkeypatch.delenv("COURSE_LANG", raising=False)


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", [("-h",), ("--help",), ("p08", "-h"), ("p08-fast", "--help"), ("p08", "--step", "-h")])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_help_lists_every_option_with_a_one_line_explanation(capsys, argv, lang):
    code, out, err = run(capsys, *argv, "--lang", lang)
    assert code == 0 and not err
    lines = out.splitlines()
    for flags, _, _ in cli_args.OPTIONS:
        line = next((line for line in lines if line.startswith(f"  {flags} ")), None)
        assert line is not None, (flags, out)
        explanation = line[len(flags) + 2:].strip()
        assert explanation and (CJK.search(explanation) if lang == "zh" else not CJK.search(explanation)), line
    every_flag = " ".join(lines)
    assert all(flag in every_flag for flag in cli_args.FLAGS)
    if argv[0] in problems.problems():                      # a problem's help names its own file and steps
        assert problems.get(argv[0]).solution in out and f"./check.sh {argv[0]} -h" in out
    else:
        assert all(f"  {command}" in out for command in ("list", "lang zh|en", "test [pytest args]"))


@pytest.mark.parametrize("argv,zh,en", [
    (("p08", "--solutoin"), "没有 --solutoin 这个选项；你是想用 --solution 吗？",
     "no option --solutoin; did you mean --solution?"),
    (("p08", "--hnit", "2"), "你是想用 --hint 吗？", "did you mean --hint?"),
    (("p8",), "没有这道题：'p8'（题目：p08, p08-fast, p08-kernel）；你是想用 p08 吗？",
     "unknown problem 'p8' (problems: p08, p08-fast, p08-kernel); did you mean p08?"),
    (("p08", "--bogus"), "没有 --bogus 这个选项", "no option --bogus"),
    (("p08", "--device", "gpu"), "--device 只接受 cpu 或 cuda，收到 'gpu'", "--device takes cpu or cuda, got 'gpu'"),
    (("p08", "--impl"), "--impl 后面要跟一个值", "--impl needs a value"),
    (("p08", "--hint", "x"), "--hint 要一个数，收到 'x'", "--hint takes a number, got 'x'"),
    (("p08", "--hint", "7"), "p08 的 --hint 只接受 1、2 或 3，收到 7", "--hint takes 1, 2 or 3 for p08, got 7"),
    (("p08", "--solution", "--impl", "x.py"), "--impl 和 --solution 不能一起用",
     "--impl and --solution do not go together"),
    (("p08", "--impl", "nope.py"), "没有这个文件：nope.py", "no such file: nope.py"),
    (("p08", "--only", "Z9"), "--only Z9：没有这项检查", "--only Z9: no such check"),
    (("p08-fast", "--step", "7"), "--step 只接受 1、2、3、4 或 5",
     "--step takes 1, 2, 3, 4 or 5"),
    (("p08", "--step", "4a"), "p08 的 --step 只接受 1、2、3、4、5 或 6，收到 4a",
     "--step takes 1, 2, 3, 4, 5 or 6 for p08"),
    (("p08", "--step", "2", "--only", "E1"), "--step 和 --only 不能一起用", "--step and --only do not go together"),
    (("p08", "--watch", "--hint"), "--watch 是评分；不能和 --hint 一起用",
     "--watch grades; it does not go with --hint"),
    (("p08", "extra"), "多余的参数 'extra'", "unexpected argument 'extra'"),
    (("lang", "fr"), "lang 只接受 zh 或 en，收到 fr", "lang takes zh or en, got fr"),
])
def test_a_command_line_error_is_one_line_and_a_short_usage_line_in_the_learners_language(capsys, argv, zh, en):
    for lang, message in (("zh", zh), ("en", en)):
        extra = () if lang == "zh" or argv[0] == "lang" else ("--lang", "en")       # zh: the default
        if argv[0] == "lang" and lang == "en":
            cli.state.set_language("en")
        code, out, err = run(capsys, *argv, *extra)
        lines = err.strip().splitlines()
        assert code == 2 and not out and len(lines) == 2, (lang, err)
        assert lines[0].startswith("check.sh: ") and message in lines[0], (lang, err)
        assert len(lines[1]) <= 110 and "-h" in lines[1] and lines[1].startswith("用法：" if lang == "zh" else "usage:")
        if lang == "zh":                             # Chinese prose; flags, values and numbers as they are
            assert CJK.search(lines[0]) and not re.search(r"\b(takes|got|unknown|needs|did you mean)\b", lines[0])


def test_only_ignores_case():
    ids = check_ids("p08")
    assert cli.select(ids, ["e2,i3"]) == cli.select(ids, ["E2,I3"]) != []
    assert cli.select(ids, ["e2.TOP_P"]) == ["E2.top_p"]
    assert cli.select(check_ids("p08-fast"), ["t3.ROW_TOTAL"]) == ["T3.row_total"]
