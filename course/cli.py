"""check.sh's commands: grade a problem, print hints, list progress, run the repo's own tests."""
from __future__ import annotations

import ast
import os
import signal
import sys
from pathlib import Path

from course import hints, problems, state
from course.cli_args import UsageError, help_text, parse, unknown_problem, usage_hint
from course.grader import report
from course.lang import pick
from course.problems import ROOT


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
