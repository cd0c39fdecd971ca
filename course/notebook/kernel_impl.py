"""Whose kernel the kernel notebook runs: the learner's mine/p08_sampler_kernel.py, step by step, or the reference
when asked for (USE_REFERENCE = True). A step not written yet is not replaced by the reference: the cell that would
run it says which function to write, and to run the cell again."""
import torch

from course import kernel_oracle, kernel_probes
from course.kernel_interp import innermost, todo_refused
from course.bench.learner import repo_file
from course.lang import pick
from course.loader import load_module, relpath
from course.notebook.text import wrap
from course.problems import get

STEPS = {"launch_config": 1, "row_max": 1, "kth_largest": 2, "units": 3, "mass_at_least": 3, "top_p_cut": 4,
         "draw": 5}


def _tries(module):
    """name -> a call of that step on a tiny row (it raises NotImplementedError while the step is a stub)."""
    x, dev = torch.tensor([[0.5, 2.0, -1.0, 2.0, 1.5]]), "cpu"
    scale = kernel_oracle.scale_of(5)
    return {"launch_config": lambda: module.launch_config(1, 5),
            "row_max": lambda: kernel_probes.row_max(module.row_max, x, [1.0], 16, dev),
            "kth_largest": lambda: kernel_probes.kth(module.kth_largest, x, [1.0], [2], 16, dev),
            "units": lambda: kernel_probes.units(module.units, x, [1.0], [2.0], scale, 16, dev),
            "mass_at_least": lambda: kernel_probes.mass(module.mass_at_least, x, [1.0], [2.0], [1.0], scale, 16, dev),
            "top_p_cut": lambda: kernel_probes.cut(module.top_p_cut, x, [1.0], [2.0], [1], scale, 16, dev),
            "draw": lambda: kernel_probes.draw(module.draw, x, [1.0], [2.0], [1.5], [4], [scale], [0.5], scale, 16,
                                               dev)}


def _written(call) -> bool:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - a bug is the learner's to see; only a stub counts as unwritten
        return not (isinstance(innermost(error), (NotImplementedError, AttributeError)) or todo_refused(error))
    return True


class KernelImpl:
    """`kernel.row_max` (the file's function), `kernel.written("row_max")`, `kernel.todo("row_max")` (the line to print
    instead of running an unwritten step), `kernel.label("row_max")` (whose code a cell ran)."""

    def __init__(self, use_reference=False, lang="zh", mine_path=None):
        problem = get("p08-kernel")
        self.lang = lang
        path = problem.path("solution") if use_reference else (repo_file(mine_path) if mine_path else
                                                                problem.path("stub"))
        self.path, self.error = relpath(path), None
        try:
            self.module = load_module(path, "kernel_reference" if use_reference else "kernel_mine")
        except Exception as error:  # noqa: BLE001 - said once in the note; every step then counts as unwritten
            self.module, self.error = None, f"{type(error).__name__}: {error}"
        tries = _tries(self.module) if self.module is not None else {}
        self.done = {name: name in tries and _written(tries[name]) for name in STEPS}
        for name in (*STEPS, "sample_kernel", "KernelSampler", "BLOCK", "NUM_WARPS"):
            setattr(self, name, getattr(self.module, name, None))

    def written(self, *names) -> bool:
        return all(self.done[name] for name in names)

    def todo(self, *names) -> str:
        """'row_max is not written yet: write it in mine/... (step 1), then run this cell again.'"""
        missing = [name for name in names if not self.done[name]]
        steps = sorted({STEPS[name] for name in missing})
        where = ", ".join(str(s) for s in steps)
        return wrap(pick(self.lang, f"{'、'.join(missing)} 还没写：在 {self.path} 里写好（第 {where} 步），再运行这一格",
                         f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not written yet: write "
                         f"{'it' if len(missing) == 1 else 'them'} in {self.path} (step {where}), then run this cell "
                         f"again"))

    def label(self, *names) -> str:
        return wrap(pick(self.lang, f"代码：{', '.join(names)} 来自 {self.path}", f"code: {', '.join(names)} from {self.path}"))

    @property
    def note(self) -> str:
        lang, done = self.lang, [name for name in STEPS if self.done[name]]
        if self.error:
            return wrap(pick(lang, f"{self.path} 无法导入（{self.error}）：先修好它，再从头运行",
                             f"{self.path} cannot be imported ({self.error}): fix it, then run from the top"))
        if len(done) == len(STEPS):
            return pick(lang, f"运行 {self.path}：每一步都写好了", f"running {self.path}: every step is written")
        return wrap(pick(lang, f"运行 {self.path}：已写好 {', '.join(done) or '（还没有）'}；每节先跑朴素的写法，再跑你的函数"
                               "（没写的步骤会说写哪个函数）",
                         f"running {self.path}: written so far {', '.join(done) or '(none yet)'}; each section runs "
                         f"the naive version first, then your function (a step not written says which to write)"))


def choose_kernel(use_reference=False, lang="zh", mine_path=None) -> KernelImpl:
    return KernelImpl(use_reference, lang, mine_path)


def kernel_device() -> str:
    """'cuda' where torch sees a GPU (kernels compile), else 'cpu' (Triton's interpreter)."""
    return "cuda" if torch.cuda.is_available() else "cpu"
