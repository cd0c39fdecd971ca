"""Compile one kernel of a learner's file for a GPU target, in a process of its own (the grader's runs Triton's
interpreter, whose triton.language no compiler can use). Run by checks_compile.C1, not by hand:
    python -m tests.p08_kernel.compile_probe '{"path": ..., "kernel": ..., "signature": ..., "constants": ...}'
Prints one JSON line: {"approximate": [the PTX's approximate divisions]} or {"error", "reason", "line"}."""
import json
import os
import re
import sys


def innermost_error(exc):
    """The innermost of Triton's chained compilation errors: the one at the line that does not compile."""
    found = exc
    while exc is not None:
        if hasattr(exc, "src"):
            found = exc
        exc = exc.__cause__ or exc.__context__
    return found


def file_line(path, exc):
    """The line of `path` a compilation error points at (Triton counts from the function's def)."""
    src, node = getattr(exc, "src", None), getattr(exc, "node", None)
    if not src or node is None or not getattr(node, "lineno", None):
        return None
    head = src.splitlines()[0].strip()
    for number, line in enumerate(open(path, encoding="utf-8"), start=1):
        if line.strip() == head:
            return number + node.lineno - 1
    return None


def main(job) -> dict:
    os.environ.pop("TRITON_INTERPRET", None)
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from course.loader import load_module

    module = load_module(job["path"], "compiled")
    kernel = getattr(module, job["kernel"])
    try:
        compiled = triton.compile(ASTSource(fn=kernel, signature=job["signature"], constexprs=job["constants"]),
                                  target=GPUTarget(*job["target"]), options=job["options"])
    except Exception as exc:  # noqa: BLE001 - the compiler's message is the answer
        inner = innermost_error(exc)
        message = [line.strip() for line in str(inner).strip().splitlines() if line.strip()]
        return {"error": type(inner).__name__, "reason": (message[-1] if message else "")[:200],
                "line": file_line(job["path"], inner)}
    ptx = compiled.asm.get("ptx", "")
    return {"approximate": sorted(set(re.findall(r"\b(div\.(?:full|approx)\.f32|rcp\.approx(?:\.ftz)?\.f32)", ptx)))}


if __name__ == "__main__":
    with open(os.devnull, "w") as quiet:                       # whatever the file prints stays out of the answer
        stdout, sys.stdout = sys.stdout, quiet
        try:
            answer = main(json.loads(sys.argv[1]))
        except Exception as exc:  # noqa: BLE001 - e.g. the file does not import without the interpreter
            answer = {"error": type(exc).__name__, "reason": str(exc).strip()[:200], "line": None}
        finally:
            sys.stdout = stdout
    print(json.dumps(answer))
