"""Triton's interpreter, as the kernel level uses it on a CPU: kernels run on CPU tensors, launches are recorded and
every load and store is checked against the tensors the launch was given.

`setup("cpu")` (the grader's worker, the notebooks) must run before a file with @triton.jit functions is imported:
TRITON_INTERPRET=1 makes triton.jit build interpreted functions. On a GPU (`setup("cuda")`) kernels compile as usual;
launches are still recorded, and memory is not checked (a compiled kernel's loads are not seen from Python).

Three additions to Triton's own interpreter (version 3.x; where its internals differ, each is left out and the
interpreter runs as it is):
- speed: a call of a @triton.jit helper inside a launch does not patch triton.language again (the launch did; the
  interpreter repeats it on every call, which costs more than the helper's arithmetic, and never undoes it);
- `recording()`: the launches made inside it, with their grid and launch parameters (Launch);
- memory: a load or store outside every tensor argument of the launch raises OutOfBounds, naming the argument and
  the element (a missing mask reads past the row instead of crashing or returning garbage).
"""
from __future__ import annotations

import contextlib
import inspect
import os
import sys
import types
from dataclasses import dataclass, field

_LAUNCHES: list = []          # the open recordings (a list per `recording()` block)
_ACTIVE: list = []            # per running interpreted launch: the memory ranges of its tensor arguments
_INSTALLED: list = []


@dataclass
class Launch:
    """One kernel launch: the kernel's name, its grid, the launch parameters and the shapes of its tensors."""
    kernel: str
    grid: tuple
    params: dict                              # constexpr and launch options: BLOCK, num_warps, ...
    shapes: dict = field(default_factory=dict)  # tensor argument -> its shape
    signature: dict = field(default_factory=dict)  # every argument -> its Triton type ("*fp32", "i32", "constexpr")

    def per_row(self) -> tuple:
        """What one row's program gets: the grid past its first axis, and the launch parameters."""
        return tuple(self.grid[1:]), tuple(sorted((k, repr(v)) for k, v in self.params.items()))

    def text(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.kernel}[grid={self.grid}]({shown})"


class OutOfBounds(Exception):
    """A load or store of an interpreted kernel outside every tensor the launch was given."""

    def __init__(self, kind, name, element, numel, shape, line):
        self.kind, self.name, self.element, self.numel, self.shape, self.line = kind, name, element, numel, shape, line
        where = f" (line {line[1]} of {os.path.basename(line[0])})" if line else ""
        super().__init__(f"a {kind} at element {element} of {name} (a tensor of {numel} elements, shape "
                         f"{list(shape)}){where}: past its end (a missing mask?)")


def innermost(exc: BaseException) -> BaseException:
    """What a kernel raised, under the interpreter's InterpreterError wrappers (one per launch or helper call)."""
    while type(exc).__name__ == "InterpreterError" and exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def todo_refused(exc: BaseException) -> bool:
    """A compiled kernel (a GPU) that reaches a stub's `raise _todo(...)`: Triton refuses the reference to _todo
    ("Unsupported function referenced") or the raise before the kernel runs; in the interpreter the step raises its
    NotImplementedError instead."""
    return "_todo" in str(innermost(exc))


def setup(device: str) -> None:
    """Prepare this process for kernels on `device`: the interpreter on a CPU (before any kernel file is imported)."""
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")      # Triton 3.9 warns when it is unset; 1 is its default
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    install()


def install() -> None:
    """Add the recording (always) and, for the interpreter, the speed-up and the memory checks; once per process."""
    if _INSTALLED:
        return
    _INSTALLED.append(True)
    try:
        from triton.runtime.jit import JITFunction
    except ImportError:                      # no Triton: the grader says so where a check needs it
        return
    _wrap_run(JITFunction)
    try:
        from triton.runtime import interpreter
        interpreter.GridExecutor.__call__, interpreter.InterpretedFunction.__call__
        interpreter.InterpreterBuilder.create_masked_load, interpreter.InterpreterBuilder.create_masked_store
    except (ImportError, AttributeError):    # another interpreter: run it as it is
        return
    _wrap_run(interpreter.InterpretedFunction)
    _patch_interpreter(interpreter)


@contextlib.contextmanager
def recording():
    """The launches made inside the block, in order: `with recording() as launches: ...`."""
    launches: list = []
    _LAUNCHES.append(launches)
    try:
        yield launches
    finally:
        _LAUNCHES.remove(launches)


def _wrap_run(cls) -> None:
    run = cls.run

    def recorded_run(self, *args, grid, warmup, **kwargs):
        if _LAUNCHES and not warmup:
            names = list(inspect.signature(self.fn).parameters)
            constexprs = _constexprs(self.fn)
            bound = dict(zip(names, args)) | kwargs
            shapes = {k: tuple(v.shape) for k, v in bound.items() if hasattr(v, "data_ptr")}
            params = {k: v for k, v in kwargs.items() if not hasattr(v, "data_ptr") and k in constexprs
                      or k in ("num_warps", "num_stages", "num_ctas")}
            shown = grid(dict(bound)) if callable(grid) else grid
            signature = {k: "constexpr" if k in constexprs else _type_of(v) for k, v in bound.items() if k in names}
            launch = Launch(self.fn.__name__, tuple(int(g) for g in shown), params, shapes, signature)
            for launches in _LAUNCHES:
                launches.append(launch)
        return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    cls.run = recorded_run


def _type_of(value) -> str:
    from triton.runtime.jit import mangle_type
    return mangle_type(value)


def _constexprs(fn) -> set:
    return {name for name, p in inspect.signature(fn).parameters.items()
            if "constexpr" in str(p.annotation)}


def _patch_interpreter(interpreter) -> None:
    import numpy as np
    import triton.language as tl

    grid_call = interpreter.GridExecutor.__call__
    device_call = interpreter.InterpretedFunction.__call__
    init_args = interpreter.GridExecutor._init_args_hst
    load = interpreter.InterpreterBuilder.create_masked_load
    store = interpreter.InterpreterBuilder.create_masked_store

    both = types.FunctionType((lambda: None).__code__, {"tl": tl, "core": tl.core})   # sees both language modules

    def launch(self, *args, **kwargs):
        scope = interpreter._patch_lang(both)        # for the whole launch, undone after it (Triton's own device calls
        _ACTIVE.append([])                            # patch again at every call and never undo it, so a compiler in
        try:                                          # the same process would see an interpreted triton.language)
            return grid_call(self, *args, **kwargs)
        finally:
            _ACTIVE.pop()
            scope.restore()

    def call(self, *args, **kwargs):
        if not _ACTIVE:                               # outside a launch: as Triton does it
            return device_call(self, *args, **kwargs)
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            raise interpreter.InterpreterError(repr(exc)) from exc

    def host_args(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        if _ACTIVE:
            ranges = _ACTIVE[-1]
            for name, arg in list(zip(self.arg_names, args_hst)) + list(kwargs_hst.items()):
                if hasattr(arg, "data_ptr") and arg.numel():
                    last = sum((n - 1) * s for n, s in zip(arg.shape, arg.stride()))
                    start = arg.data_ptr()
                    ranges.append((start, start + (last + 1) * arg.element_size(), name, arg.element_size(),
                                   arg.numel(), tuple(arg.shape)))
        return args_hst, kwargs_hst

    def check(kind, ptrs, mask):
        if not _ACTIVE or not _ACTIVE[-1]:
            return
        ranges = _ACTIVE[-1]
        size = ptrs.get_element_ty().primitive_bitwidth // 8
        addresses = np.asarray(ptrs.data, dtype=np.uint64)[np.asarray(mask.data, dtype=bool)].ravel()
        if not addresses.size:
            return
        inside = np.zeros(addresses.shape, dtype=bool)
        for start, end, *_ in ranges:
            inside |= (addresses >= start) & (addresses + size <= end)
        if inside.all():
            return
        bad = int(addresses[~inside][0])
        start, end, name, item, numel, shape = min(ranges, key=lambda r: abs(bad - r[0]) if bad < r[0] else
                                                   abs(bad - r[1]))
        raise OutOfBounds(kind, name, (bad - start) // item, numel, shape, _kernel_line())

    def checked_load(self, ptrs, mask, other, cache_policy, is_volatile):
        check("load", ptrs, mask)
        return load(self, ptrs, mask, other, cache_policy, is_volatile)

    def checked_store(self, ptrs, value, mask, cache_policy):
        check("store", ptrs, mask)
        return store(self, ptrs, value, mask, cache_policy)

    interpreter.GridExecutor.__call__ = launch
    interpreter.InterpretedFunction.__call__ = call
    interpreter.GridExecutor._init_args_hst = host_args
    interpreter.InterpreterBuilder.create_masked_load = checked_load
    interpreter.InterpreterBuilder.create_masked_store = checked_store


def _kernel_line():
    """(file, line) of the innermost frame outside Triton and this module: the kernel line that made the access."""
    frame = sys._getframe(2)
    here = os.path.dirname(os.path.abspath(__file__))
    while frame is not None:
        name = frame.f_code.co_filename
        if "triton" not in name.split(os.sep) and os.path.dirname(os.path.abspath(name)) != here \
                and not name.startswith("<"):
            return name, frame.f_lineno
        frame = frame.f_back
    return None
