"""The grader's worker process: imports the learner's file afresh for each check and runs the checks.

Results go to the parent as JSON lines on the original stdout; whatever the learner's code prints is
captured per check (fd-level, so C extensions are caught too) and never mixed into the report.
When the runner stops a check that ran past its time limit, it first sends SIGUSR1: faulthandler writes every
thread's Python stack to the file given by --dump, so the report can say where the learner's code was.
Run by course.grader.runner, not by hand.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
import traceback
from pathlib import Path

OUTPUT_KEEP = 4000  # characters of captured learner output kept for -v
GRADE_SEED = 271828  # torch's global seed at the start of each check; not 0, so that a shared stream keyed by a
                     # constant (0) instead of torch.initial_seed() draws other numbers than the contract's


@contextlib.contextmanager
def captured_output(box: dict):
    """Send fds 1 and 2 to a temp file for the duration; box gets out_lines, out_bytes, out_text."""
    sys.stdout.flush()
    sys.stderr.flush()
    streams = sys.stdout, sys.stderr
    saved = os.dup(1), os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield box
        finally:
            sys.stdout, sys.stderr = streams
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            size = tmp.seek(0, os.SEEK_END)
            tmp.seek(0)
            head = tmp.read(min(size, 1 << 20)).decode("utf-8", "replace")
            box["out_lines"] = head.count("\n") + (1 if head and not head.endswith("\n") else 0)
            box["out_bytes"] = size
            box["out_text"] = head[:OUTPUT_KEEP]


# a stub's NotImplementedError("<problem> step 3 apply_top_k: see notebooks/<notebook>.ipynb §3 · ..."); a step may
# have lettered parts (step 4a, §4a)
_TODO = re.compile(r"(?P<problem>[\w-]+) step (?P<step>\d+[a-z]?) (?P<name>[\w.]+): see (?P<where>\S+ §\d+[a-z]?)")


def _in_language(where: str, lang: str) -> str:
    """'notebooks/x.ipynb §3' -> the English notebook's path in English, when course.toml names one."""
    from course.problems import problems
    path, _, section = where.partition(" ")
    for problem in problems().values():
        if lang == "en" and path == problem.notebook and problem.notebook_en:
            return f"{problem.notebook_en} {section}".strip()
    return where


def classify(exc: BaseException, impl_path: Path, lang: str) -> dict:
    """Turn an exception raised during a check into a result: todo, missing, fail or error."""
    from course.grader.checks import Fail, Missing
    from course.kernel_interp import innermost
    from course.lang import pick
    from course.problems import relpath

    exc = innermost(exc)                     # a Triton kernel's error, under the interpreter's wrappers
    if isinstance(exc, Fail):
        hint = exc.hint and list(exc.hint)
        return {"status": "fail", "lines": exc.lines, "where_name": exc.where, "hint": hint}
    if isinstance(exc, Missing):
        return {"status": "missing", "lines": [f"MISSING FUNCTION {exc.name} in {relpath(impl_path)}"]}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == impl_path]
    last = frames[-1] if frames else None
    where = f"{relpath(impl_path)}:{last.lineno}" if last else None
    message = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    if isinstance(exc, NotImplementedError) and last:
        todo = _TODO.search(message)
        if todo:
            notebook = _in_language(todo["where"], lang)
            text = pick(lang, f"尚未实现：{todo['name']}（第 {todo['step']} 步，见 {notebook}）",
                        f"not implemented yet: {todo['name']} (step {todo['step']}, see {notebook})")
        else:
            text = (pick(lang, f"尚未实现：{last.name}", f"not implemented yet: {last.name}")
                    + (f" — {message}" if message else ""))
        return {"status": "todo", "lines": [text], "where": where}
    kind = type(exc).__name__
    missing = re.fullmatch(r"'(\w+)' object has no attribute '(\w+)'", message)
    if isinstance(exc, AttributeError) and missing and not last:
        return {"status": "missing", "lines": [f"MISSING METHOD {missing[1]}.{missing[2]} in {relpath(impl_path)}"]}
    if isinstance(exc, SystemExit):
        text = pick(lang, f"{last.name if last else '你的代码'} 调用了 sys.exit({exc.code})",
                    f"{last.name if last else 'your code'} called sys.exit({exc.code})")
    elif last:
        text = pick(lang, f"{last.name} 抛出 {kind}: {message}", f"{last.name} raised {kind}: {message}")
    else:
        text = pick(lang, f"检查过程中出现 {kind}: {message}（多半是返回值类型不对；-v 看完整 traceback）",
                    f"the check hit {kind}: {message} (most likely a return value of the wrong type; "
                    f"-v shows the traceback)")
    notes = [n for n in getattr(exc, "__notes__", []) if isinstance(n, str)]
    return {"status": "error", "lines": [text, *notes[-1:]], "where": where}


def run(problem_name: str, impl: str, device: str, lang: str, ids: list, emit) -> None:
    import torch  # (imported before the learner's file, so its import time is not charged to it)

    threads = torch.get_num_threads()
    torch.set_num_threads(1)      # checks are small; one thread cannot stall on a busy machine (OpenMP spin-waits)
    try:
        _run(problem_name, impl, device, lang, ids, emit)
    finally:
        torch.set_num_threads(threads)


def _run(problem_name, impl, device, lang, ids, emit) -> None:
    import torch

    from course.grader.checks import checks_for
    from course.hints import resolve
    from course.loader import TorchState, load_module
    from course.problems import get

    problem = get(problem_name)
    problem.prepare(device)                  # e.g. Triton's interpreter on a CPU, before any kernel file is imported
    impl_path = Path(impl).resolve()
    state = TorchState()
    by_id = {c.id: c for c in checks_for(problem)}
    context = problem.context_class()

    emit({"event": "catalogue", "cuda": torch.cuda.is_available(),      # what the report shows of each check
          "checks": {cid: [by_id[cid].title_zh, by_id[cid].title_en, list(resolve(problem.name, by_id[cid].hint))]
                     for cid in ids}})
    emit({"event": "start", "id": "__import__"})
    box: dict = {}
    with captured_output(box):
        try:
            load_module(impl_path)
            error = None
        except BaseException as exc:  # noqa: BLE001 - a learner's file may raise anything, SystemExit included
            error = exc
    state.restore(GRADE_SEED)
    if error is not None:
        frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).resolve() == impl_path]
        line = (getattr(error, "lineno", None) if isinstance(error, SyntaxError)
                else (frames[-1].lineno if frames else None))
        emit({"event": "end", "id": "__import__", "status": "import_error",
              "lines": [f"{type(error).__name__}: {str(error).strip()[:300]}"],
              "where": f"{impl}:{line}" if line else impl,
              "traceback": "".join(traceback.format_exception(error)), **box})
        return
    emit({"event": "end", "id": "__import__", "status": "pass", **box})

    for check_id in ids:
        check = by_id[check_id]
        emit({"event": "start", "id": check_id})
        ctx, box, result = None, {}, {"status": "pass"}
        with captured_output(box):
            try:
                impl = load_module(impl_path)        # a fresh copy: no state carried over from other checks
                state.restore(GRADE_SEED)            # and whatever its import changed in torch is undone
                ctx = context(problem=problem, impl=impl, impl_path=str(impl_path), device=device, lang=lang)
                ctx.run(check)
                result["lines"] = list(ctx.notes)
            except BaseException as exc:  # noqa: BLE001
                result = classify(exc, impl_path, lang)
                result["traceback"] = "".join(traceback.format_exception(exc))
        if result.get("hint"):                       # a shared check points at this problem's own hints
            result["hint"] = list(resolve(problem.name, result["hint"]))
        if result.get("where_name") and ctx is not None:
            result["where"] = ctx.where(result.pop("where_name"))
        state.restore(GRADE_SEED)
        emit({"event": "end", "id": check_id, **result, **box})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", required=True)
    parser.add_argument("--impl", required=True)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--lang", default="zh")
    parser.add_argument("--checks", default="")
    parser.add_argument("--dump", help="a file for the stack dump that SIGUSR1 asks for (a check past its limit)")
    args = parser.parse_args(argv)
    if args.dump:
        import faulthandler
        dump = open(args.dump, "w", encoding="utf-8")      # open until the worker ends
        faulthandler.register(signal.SIGUSR1, file=dump, all_threads=True)
    channel = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")

    def emit(event: dict) -> None:
        channel.write(json.dumps(event, ensure_ascii=False) + "\n")
        channel.flush()

    run(args.problem, args.impl, args.device, args.lang, [c for c in args.checks.split(",") if c], emit)
    channel.close()
    os._exit(0)  # skip interpreter teardown: a learner's atexit hooks or threads must not hang the grader


if __name__ == "__main__":
    sys.exit(main())
