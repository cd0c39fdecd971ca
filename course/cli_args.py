"""check.sh's command line: the commands and options, -h, and usage errors said in one line in the learner's language
(with "did you mean" for a mistyped word)."""
from __future__ import annotations

import argparse
import difflib
import re

from course import hints, problems, state
from course.lang import pick

COMMANDS = ("list", "lang", "test", "mutation")

# every option a grade takes, with its one-line explanation: (flags, zh, en); -h prints them
OPTIONS = (
    ("--solution", "评分参考解 {solution}，而不是你的文件", "grade the reference {solution} instead of your file"),
    ("--impl FILE", "评分任意一个 API 相同的文件", "grade any file with the same API"),
    ("--only E2,I3", "只评这些检查族（E2）或完整 id（E2.top_p），不分大小写",
     "grade only these families (E2) or full ids (E2.top_p), in any case"),
    ("--step N", "只评第 N 个 TODO 步骤的检查（{steps}）", "grade only the checks of TODO step N ({steps})"),
    ("--device cpu|cuda", "只在这个设备上评分（默认：cpu，torch 看到 GPU 时再加 cuda）",
     "grade on this device only (default: cpu, plus cuda when torch sees a GPU)"),
    ("--lang zh|en", "这条命令的语言（默认：./check.sh lang 设定的，否则 zh）",
     "the language of this command (default: the one ./check.sh lang set, else zh)"),
    ("-v, --verbose", "同时显示你的代码打印的内容和 traceback", "also show your code's printed output and tracebacks"),
    ("--watch", "每次保存文件就重新评分（h：下一级提示，L3 先问 y/N；Ctrl-C 退出）",
     "re-grade every time you save the file (h: the next hint level, L3 asks y/N first; Ctrl-C to quit)"),
    ("--hint [N]", "显示第 N 级提示（1..3；不写 N：下一个没看过的）",
     "print hint level N (1..3; without N: the next one not seen yet)"),
    ("--yes", "和 --hint 3 一起用：不问，直接显示", "with --hint 3: show it without asking"),
    ("--timeout S", "每项检查的秒数上限（给课程作者；默认见 course.toml）",
     "seconds per check (for course authors; default: course.toml)"),
    ("-h, --help", "这份说明（./check.sh {problem} -h：针对 {problem}）",
     "this help (./check.sh {problem} -h: for {problem})"),
)
COMMAND_HELP = (
    ("PROBLEM [options]", "评分你的文件（{stubs}）；全部通过时退出码为 0",
     "grade your file ({stubs}); exit status 0 iff every check passes"),
    ("list", "各题、上次评分、看过的提示", "the problems, your last grade, the hints you have seen"),
    ("lang zh|en", "以后所有命令的语言", "the language of every later command"),
    ("test [pytest args]", "仓库自己的测试（CI 跑的就是它）", "the repo's own tests (what CI runs)"),
    ("mutation PROBLEM", "给课程作者：变异测试（见 docs/grader.md）",
     "for course authors: mutation testing (docs/grader.md)"),
)
FLAGS = ("--solution", "--impl", "--only", "--step", "--device", "--lang", "-v", "--verbose", "--watch", "--hint",
         "--yes", "--timeout", "-h", "--help")


class UsageError(Exception):
    """A command-line error: one line in each language, and the problem whose -h helps (None: the general one)."""

    def __init__(self, zh: str, en: str | None = None, problem: str | None = None):
        super().__init__(en or zh)
        self.zh, self.en, self.problem = zh, en or zh, problem

    def text(self, lang: str) -> str:
        return pick(lang, self.zh, self.en)


def usage_hint(lang: str, problem: str | None = None) -> str:
    """The short line under a command-line error."""
    if problem:
        return pick(lang, f"用法：./check.sh {problem} [选项]（./check.sh {problem} -h 列出全部选项）",
                    f"usage: ./check.sh {problem} [options]   (./check.sh {problem} -h lists every option)")
    return pick(lang, "用法：./check.sh 题目 [选项] | list | lang zh|en | test（./check.sh -h 列出全部选项）",
                "usage: ./check.sh PROBLEM [options] | list | lang zh|en | test   (./check.sh -h lists every option)")


def said(items, lang: str) -> str:
    """'1, 2 or 3' / '1、2 或 3'."""
    items = [str(i) for i in items]
    if len(items) < 2:
        return "".join(items)
    return pick(lang, "、".join(items[:-1]) + " 或 " + items[-1], ", ".join(items[:-1]) + " or " + items[-1])


def help_text(lang: str, problem: str | None = None) -> str:
    """Every command and option, one line each (for one problem: its file, solution and steps filled in)."""
    names = list(problems.problems())
    shown = problems.get(problem) if problem else None
    steps = (said(shown.step_names, lang) if shown and shown.step_names else
             pick(lang, "例如 3，或 4a；4：第 4 步的每一部分", "e.g. 3, or 4a; 4: every part of step 4"))
    fill = {"solution": shown.solution if shown else "solutions/…", "steps": steps, "problem": problem or "p08",
            "stubs": shown.stub if shown else ", ".join(problems.get(n).stub for n in names)}
    out = [usage_hint(lang, problem).split("（")[0].split("   (")[0]
           + ("" if problem else pick(lang, f"    题目：{', '.join(names)}", f"    problems: {', '.join(names)}"))]
    if not shown:
        out.append(pick(lang, "命令：", "commands:"))
        out += [f"  {pick(lang, name.replace('PROBLEM [options]', '题目 [选项]      '), name):<20} "
                f"{pick(lang, zh, en).format(**fill)}" for name, zh, en in COMMAND_HELP]
    out.append(pick(lang, f"评分选项（写在 {problem or '题目名'} 后面）：", f"options (after {problem or 'PROBLEM'}):"))
    out += [f"  {flags:<20} {pick(lang, zh, en).format(**fill)}" for flags, zh, en in OPTIONS]
    out.append(pick(lang, *hints.L3_RULE))
    return "\n".join(out)


def _choices(text: str) -> list:
    return re.findall(r"[\w-]+", text)                  # "'cpu', 'cuda'" -> ['cpu', 'cuda']


_ARGPARSE = (  # argparse's messages, as one line in each language (flags, values and numbers as they are)
    (r"argument (\S+?)(?:/\S+)?: invalid choice: '(.*)' \(choose from (.*)\)",
     lambda m, lang: pick(lang, f"{m[1]} 只接受 {said(_choices(m[3]), lang)}，收到 {m[2]!r}",
                          f"{m[1]} takes {said(_choices(m[3]), lang)}, got {m[2]!r}")),
    (r"argument (\S+?)(?:/\S+)?: expected one argument",
     lambda m, lang: pick(lang, f"{m[1]} 后面要跟一个值", f"{m[1]} needs a value")),
    (r"argument (\S+?)(?:/\S+)?: invalid (?:int|float) value: '(.*)'",
     lambda m, lang: pick(lang, f"{m[1]} 要一个数，收到 {m[2]!r}", f"{m[1]} takes a number, got {m[2]!r}")),
    (r"argument (\S+?)(?:/\S+)?: not allowed with argument (\S+)",
     lambda m, lang: pick(lang, f"{m[1]} 和 {m[2]} 不能一起用", f"{m[1]} and {m[2]} do not go together")),
    (r"the following arguments are required: .*",
     lambda m, lang: pick(lang, f"缺少题目名：{', '.join(problems.problems())}",
                          f"which problem? {', '.join(problems.problems())}")),
)


def did_you_mean(word: str, known, lang: str) -> str:
    """'; did you mean --solution?' for the known word that `word` begins, or else the closest one (difflib,
    dashes aside), or ''."""
    known = list(known)
    bare = {k.lstrip("-"): k for k in known}
    stem = word.lstrip("-")
    close = [k for k in known if len(stem) >= 2 and k.lstrip("-").startswith(stem) and k.startswith(word[:2])][:1]
    close = close or [bare[k] for k in difflib.get_close_matches(stem, list(bare), n=1, cutoff=0.6)]
    return pick(lang, f"；你是想用 {close[0]} 吗？", f"; did you mean {close[0]}?") if close else ""


def unknown_problem(name: str) -> UsageError:
    names = ", ".join(problems.problems())
    known = [*problems.problems(), *COMMANDS]
    return UsageError(f"没有这道题：{name!r}（题目：{names}）" + did_you_mean(name, known, "zh"),
                      f"unknown problem {name!r} (problems: {names})" + did_you_mean(name, known, "en"))


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        extra = re.fullmatch(r"unrecognized arguments: (.*)", message)
        if extra:
            word = extra[1].split()[0]
            if word.startswith("-"):
                flag = word.split("=")[0]
                raise UsageError(f"没有 {flag} 这个选项" + did_you_mean(flag, FLAGS, "zh"),
                                 f"no option {flag}" + did_you_mean(flag, FLAGS, "en"))
            raise UsageError(f"多余的参数 {word!r}", f"unexpected argument {word!r}")
        for pattern, say in _ARGPARSE:
            match = re.fullmatch(pattern, message)
            if match:
                raise UsageError(say(match, "zh"), say(match, "en"))
        raise UsageError(message)


def parse(argv):
    parser = _Parser(add_help=False, allow_abbrev=False)
    parser.add_argument("problem")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--solution", action="store_true")
    which.add_argument("--impl")
    parser.add_argument("--device", choices=["cpu", "cuda"])
    parser.add_argument("--lang", choices=["zh", "en"], default=state.language())
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--hint", nargs="?", const=0, type=int)
    parser.add_argument("--yes", action="store_true")
    parser.add_argument("--watch", action="store_true")
    parser.add_argument("--only", action="append", help="check families or ids, comma-separated: E2 or E2.top_p,I3")
    parser.add_argument("--step", help="grade the checks of one TODO step: 3, or 4a (4: every part of step 4)")
    parser.add_argument("--timeout", type=float, help="seconds per check (for course authors)")
    if argv and argv[0] not in problems.problems() and not argv[0].startswith("-"):
        raise unknown_problem(argv[0])                 # before any option's error: the first word is wrong
    args = parser.parse_args(argv)
    name = args.problem
    if name not in problems.problems():
        raise unknown_problem(name)
    levels = hints.levels(name)
    if args.hint is not None and args.hint not in (0, *levels):
        raise UsageError(f"{name} 的 --hint 只接受 {said(levels, 'zh')}，收到 {args.hint}",
                         f"--hint takes {said(levels, 'en')} for {name}, got {args.hint}", name)
    problem = problems.get(name)
    if args.step is not None and problem.step_checks(args.step) is None:
        names = problem.step_names
        if names:
            raise UsageError(f"{name} 的 --step 只接受 {said(names, 'zh')}，收到 {args.step}",
                             f"--step takes {said(names, 'en')} for {name}, got {args.step}", name)
        raise UsageError(f"{name} 没有 --step（course.toml 没有列出步骤）",
                         f"{name} has no --step (course.toml lists no steps)", name)
    if args.step is not None and not problem.step_checks(args.step):
        raise UsageError(f"{name} 的第 {args.step} 步没有自己的检查；./check.sh {name} 会评它",
                         f"step {args.step} of {name} has no check of its own; ./check.sh {name} grades it", name)
    if args.step is not None and args.only:
        raise UsageError("--step 和 --only 不能一起用", "--step and --only do not go together", name)
    if args.watch and args.hint is not None:
        raise UsageError("--watch 是评分；不能和 --hint 一起用", "--watch grades; it does not go with --hint", name)
    return args
