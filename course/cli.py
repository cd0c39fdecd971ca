"""check.sh's commands: grade a problem, print hints, list progress, run the repo's own tests."""
from __future__ import annotations

import argparse
import ast
import difflib
import os
import re
import signal
import sys
from pathlib import Path

from course import hints, problems, state
from course.grader import report
from course.lang import pick
from course.problems import ROOT

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


def show_hint(args) -> int:
    """--hint [N]. L3 (the answers) follows hints.L3_RULE: on a terminal it asks first unless --yes; without a
    terminal it needs --yes (a one-line note, exit 1)."""
    seen = state.problem_state(args.problem).get("hints_seen", [])
    available = hints.levels(args.problem)
    if not available:
        raise UsageError(f"{args.problem} 还没有提示", f"{args.problem} has no hints yet", args.problem)
    level = args.hint or hints.next_level(seen, available)
    if level == hints.ANSWERS and not args.yes:
        if not sys.stdin.isatty():
            print(hints.needs_yes(args.problem, args.lang), file=sys.stderr)
            return 1
        if not ask_terminal(hints.question(args.lang)):
            print(hints.not_shown(args.problem, seen, args.lang))
            return 0
    print_hint(args.problem, level, args.lang)
    if level < available[-1]:
        print(pick(args.lang, f"下一级：./check.sh {args.problem} --hint {level + 1}",
                   f"next level: ./check.sh {args.problem} --hint {level + 1} --lang en"))
    return 0


def ask_terminal(question: str) -> bool:
    """Ask on the terminal; True for y / yes / 是."""
    try:
        answer = input(question)
    except EOFError:
        answer = ""
    return answer.strip().lower() in ("y", "yes", "是")


def print_hint(problem: str, level: int, lang: str) -> None:
    """Print hint level `level` of `problem` and record that it was seen."""
    print(hints.render_terminal(hints.read(problem, level, lang), color=report.use_color()), flush=True)
    state.record_hint(problem, level)


def next_hint(problem: str, lang: str, ask=None) -> None:
    """The next hint level not yet seen (the last again once all are), as `h` shows it in --watch: L1, L2, then L3,
    which asks first, as --hint 3 does (ask(question) -> bool reads the answer; without it L3 is not shown)."""
    available = hints.levels(problem)
    if not available:
        print(pick(lang, f"{problem} 还没有提示", f"{problem} has no hints yet"), flush=True)
        return
    seen = state.problem_state(problem).get("hints_seen", [])
    level = hints.next_level(seen, available)
    if level == hints.ANSWERS and not (ask and ask(hints.question(lang))):
        print(hints.not_shown(problem, seen, lang), flush=True)
        return
    print(pick(lang, f"—— 提示第 {level} 级（./check.sh {problem} --hint {level}）——",
               f"—— hint level {level} (./check.sh {problem} --hint {level}) ——"), flush=True)
    print_hint(problem, level, lang)


def impl_path(args) -> Path:
    """The file to grade: --impl FILE, --solution, or the learner's stub."""
    problem = problems.get(args.problem)
    return Path(args.impl).resolve() if args.impl else problem.path("solution" if args.solution else "stub")


def select(ids, only) -> list:
    """The check ids --only names (a family such as E2, or a full id such as E2.top_p), in report order."""
    ids = list(ids)
    if not only:
        return ids
    family = {cid: cid.split(".")[0] for cid in ids}
    given = [w.strip() for arg in only for w in arg.split(",") if w.strip()]
    wanted = [w.lower() for w in given]                                                     # e2 is E2
    unknown = [w for w in given if not any(w.lower() in (cid.lower(), family[cid].lower()) for cid in ids)]
    if unknown or not wanted:
        families = ", ".join(dict.fromkeys(family.values()))
        raise UsageError(f"--only {','.join(unknown) or '（空）'}：没有这项检查；检查族：{families}"
                         f"（或完整 id，例如 {ids[-1]}）",
                         f"--only {','.join(unknown) or '(nothing)'}: no such check; families: {families} "
                         f"(or a full id, e.g. {ids[-1]})")
    return [cid for cid in ids if cid.lower() in wanted or family[cid].lower() in wanted]


def grade(args) -> int:
    """Grade and print the report, which ends with what to do next. This process imports neither torch nor the
    checks (the worker does, and sends each check's title and hint), so a grade starts at once."""
    from course.grader.runner import grade as run_checks
    from course.problems import relpath

    problem = problems.get(args.problem)
    impl = impl_path(args)
    if not impl.is_file():
        raise UsageError(f"没有这个文件：{args.impl or impl}", f"no such file: {args.impl or impl}")
    if args.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            raise UsageError("--device cuda：torch 在这里看不到 GPU", "--device cuda: torch sees no GPU here")
    ids = select(problem.checks, args.only or ([",".join(problem.step_checks(args.step))] if args.step else None))
    devices = [args.device or "cpu"]
    color = report.use_color()
    lang, passed, total, failed, first, printed = args.lang, 0, 0, [], None, 0
    collapser = report.Collapser(lang, args.verbose, color)
    while devices:
        device = devices.pop(0)
        print(f"{problem.title(lang)} — {relpath(impl)} · {device}", flush=True)

        def on_result(result):
            lines = collapser.render(result, result.info) if result.status != "not_run" else []
            if lines:
                print("\n".join(lines), flush=True)

        run = run_checks(problem, impl, device, lang, ids, args.timeout, on_result)
        total += len(ids)
        if run.import_error:
            print("\n".join(report.render_import_error(run.import_error, relpath(impl), lang, args.verbose)))
            failed.append(pick(lang, "导入失败", "import failed"))
            break
        if run.timed_out:                                # the checks after a time-out were not run: one line
            print(report.not_run_line(run.timed_out, [r.id for r in run.results if r.status == "not_run"], lang))
        passed += run.passed
        printed += sum(r.output_lines for r in run.results)
        both = not args.device and run.cuda                      # cpu and cuda: say which device failed
        failed += [(r.info.title(lang) if r.info else r.id) + (f" [{device}]" if both else "")
                   for r in run.results if not r.passed]
        first = first or next((r for r in run.results if not r.passed), None)
        if device == "cpu" and not args.device and run.cuda:
            if run.timed_out:                            # the grade stops at the first time-out, cuda included
                print(pick(lang, f"cuda：没有运行（文件在 cpu 上的 {run.timed_out} 中超时）",
                           f"cuda: not run (the file timed out in {run.timed_out} on the cpu)"))
            else:
                devices.append("cuda")                   # the worker's torch sees a GPU: grade there too
    if tail := collapser.tail():
        print("\n".join(tail))
    if not args.device and not run.cuda:
        print(pick(lang, "cuda：跳过（torch 没有看到 GPU）", "cuda: skipped (torch sees no GPU)"))
    if printed and not args.verbose:
        print(report.printed_line(printed, lang))
    if found := cpu_only_generators(impl):
        print(generator_warning(relpath(impl), found, lang))
    print("\n".join(report.summary(passed, total, failed, lang, color)))
    partial = args.only or args.step
    if impl == problem.path("stub") and not partial:            # a partial grade is not the problem's grade
        graded_on = "cpu,cuda" if run.cuda and not args.device else args.device or "cpu"
        state.record_grade(problem.name, passed, total, graded_on)
    if passed == total and total:
        print(problem.next_step(lang).replace("{python}", python_command()) if not partial else
              pick(lang, f"这部分全部通过。完整评分：./check.sh {problem.name}",
                   f"all of these pass. The whole grade: ./check.sh {problem.name}"))
        return 0
    if first is not None:
        print(report.next_line(first, first.info, lang))
    elif failed:
        print(pick(lang, "下一步：先修好上面的导入错误", "next: fix the import error above"))
    return 1


def cpu_only_generators(path) -> list:
    """The lines of `path` that create a torch.Generator with no device (torch.Generator() or Generator(), no
    positional argument, no device= and no **kwargs): such a generator is a CPU one, and drawing with it from a
    tensor on a GPU fails. Read from the source (ast), so a file that does not parse has none."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        named = ((isinstance(func, ast.Attribute) and func.attr == "Generator" and isinstance(func.value, ast.Name)
                  and func.value.id == "torch") or (isinstance(func, ast.Name) and func.id == "Generator"))
        if named and not node.args and not any(k.arg in ("device", None) for k in node.keywords):
            found.append(node.lineno)
    return sorted(found)


def generator_warning(shown: str, lines: list, lang: str) -> str:
    where = ", ".join(f"{shown}:{n}" for n in lines)
    return pick(lang, f"注意：{where} 创建 torch.Generator() 时没有给 device=：在 CPU 上能通过，在 GPU 上会出错"
                      f"（用 torch.Generator(device=logits.device)）",
                f"warning: {where} creates torch.Generator() without device=: it passes on the CPU but fails on a "
                f"GPU (use torch.Generator(device=logits.device))")


def python_command() -> str:
    """How to start this Python from the repo root, as a command that works as printed: the repo's own .venv (or
    any interpreter inside the repo) by its relative path, else the name PATH finds it by, else its full path."""
    import shutil

    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(ROOT))
    except ValueError:
        pass
    for name in ("python", "python3"):
        found = shutil.which(name)
        if found and os.path.exists(exe) and os.path.samefile(found, exe):
            return name
    return str(exe)


def watch(args) -> int:
    """Grade now and after every save of the graded file, until Ctrl-C."""
    from course.grader import watch as watching
    from course.problems import relpath

    impl = impl_path(args)
    if not impl.is_file():
        raise UsageError(f"没有这个文件：{args.impl or impl}", f"no such file: {args.impl or impl}")

    def grade_once():
        try:
            code = grade(args)                         # the report ends with its own "next:" line
        except UsageError as exc:                      # e.g. the file was deleted between two saves
            print(f"check.sh: {exc.text(args.lang)}", file=sys.stderr)
            code = 2
        return code

    return watching.run(impl, relpath(impl), grade_once, args.lang, poll_s=watching.poll_seconds(),
                        show_hint=lambda ask: next_hint(args.problem, args.lang, ask))


def list_problems(lang: str) -> int:
    data = state.load()
    for name, problem in problems.problems().items():
        entry = data.get(name, {})
        g = entry.get("grade")
        grade_text = (pick(lang, f"上次 {g['passed']}/{g['total']}（{g['when']}）",
                           f"last {g['passed']}/{g['total']} ({g['when']})")
                      if g else pick(lang, "未评分", "not graded yet"))
        done = "✓" if g and g["passed"] == g["total"] else "·"
        seen = entry.get("hints_seen", [])
        hint_text = (pick(lang, f"提示已看 {seen}", f"hints seen {seen}") if seen
                     else pick(lang, "未看提示", "no hints seen"))
        notebook = problem.notebook_en if lang == "en" and problem.notebook_en else problem.notebook
        where = " · ".join(p for p in (problem.stub, notebook) if p)
        print(f"{done} {name:<9} {problem.title(lang)}\n    {grade_text} · {hint_text} · {where}")
    return 0


def set_language(rest) -> int:
    """./check.sh lang en|zh: remember the language for every later command (saved with the progress)."""
    if len(rest) != 1 or rest[0] not in ("zh", "en"):
        raise UsageError(f"lang 只接受 zh 或 en，收到 {' '.join(rest) or '（空）'}",
                         f"lang takes zh or en, got {' '.join(rest) or 'nothing'}")
    state.set_language(rest[0])
    print(pick(rest[0], "以后的输出用中文（./check.sh lang en 切换到英文）",
               "From now on the course speaks English (./check.sh lang zh switches back)."))
    return 0


def main(argv=None) -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)      # `./check.sh p08 --hint 1 | head` ends quietly
    argv = list(sys.argv[1:] if argv is None else argv)
    given = argv[argv.index("--lang") + 1:][:1] if "--lang" in argv else []
    lang = given[0] if given and given[0] in ("zh", "en") else state.language()
    try:
        if not argv or argv[0] in ("-h", "--help", "help"):
            print(help_text(lang))
            return 0 if argv else 2
        if argv[0] == "list":
            return list_problems(lang)
        if argv[0] == "lang":
            return set_language(argv[1:])
        if argv[0] == "mutation":                    # for course authors: cosmic-ray with the grader as oracle
            from course.grader import mutation
            return mutation.main(argv[1:])
        if argv[0] == "test":
            os.chdir(ROOT)
            os.execv(sys.executable, [sys.executable, "-m", "pytest", *argv[1:]])   # pytest.ini: testpaths = tests/self
        if "-h" in argv or "--help" in argv:         # ./check.sh p08 -h: every option, for that problem
            name = argv[0] if argv[0] in problems.problems() else None
            if name is None and not argv[0].startswith("-"):
                raise unknown_problem(argv[0])
            print(help_text(lang, name))
            return 0
        args = parse(argv)
        if args.watch:
            return watch(args)
        return show_hint(args) if args.hint is not None else grade(args)
    except UsageError as exc:                        # one line, then one short line on how to get help
        problem = exc.problem or (argv[0] if argv and argv[0] in problems.problems() else None)
        print(f"check.sh: {exc.text(lang)}\n{usage_hint(lang, problem)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
