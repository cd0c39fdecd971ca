"""Which implementation a notebook shows: for P08 the learner's mine/p08_sampler.py, or the reference while mine
is still a stub (with one note saying so); for P08-fast each step of mine/p08_sampler_fast.py once it runs, the
reference's meanwhile (FastImpl)."""
from pathlib import Path

import torch

from course import fast_batch
from course.bench.learner import repo_file
from course.lang import pick
from course.loader import load_module, relpath
from course.notebook.text import LINE_COLUMNS, wrap
from course.problems import get
from course.sampling_params import SamplingParams
from course.selection import exact_rows
from course.streams import stream_uniform, stream_uniforms


def unfinished(module) -> list:
    """The names of module's steps that still raise NotImplementedError (or are missing) on a tiny input."""
    row = torch.tensor([2.0, 1.0, 0.5])                                               # [3]
    probes = {"apply_repetition_penalty": lambda: module.apply_repetition_penalty(row, [0], 1.5),
              "apply_top_k": lambda: module.apply_top_k(row, 1),
              "apply_top_p": lambda: module.apply_top_p(row, 0.5),
              "Sampler.sample": lambda: module.Sampler().sample(row[None], ["probe"], [SamplingParams(seed=0)], [[]])}
    todo = []
    for name, call in probes.items():
        try:
            call()
        except (NotImplementedError, AttributeError):
            todo.append(name)
        except Exception:            # a bug, not a stub: keep the learner's code so they see it
            pass
    return todo


def resolve_impl(use_reference: bool, lang: str = "zh", mine_path=None) -> dict:
    """{'module', 'note', 'stand_in'}: the learner's mine/p08_sampler.py (or mine_path, a relative one taken from the
    repo root), or the reference (when asked for, or while mine is a stub or cannot be imported). stand_in is None
    when the module is the one asked for, else a short reason the reference stands in for mine."""
    problem = get("p08")
    reference = load_module(problem.path("solution"), "reference")
    if use_reference:
        return {"module": reference, "stand_in": None,
                "note": pick(lang, f"展示参考解 {problem.solution}", f"showing the reference {problem.solution}")}
    path = repo_file(mine_path) if mine_path else problem.path("stub")
    try:
        mine = load_module(path, "mine")
    except Exception as error:
        return {"module": reference,
                "stand_in": pick(lang, f"{relpath(path)} 无法导入（{type(error).__name__}）",
                                 f"{relpath(path)} cannot be imported ({type(error).__name__})"),
                "note": pick(lang, f"{relpath(path)} 无法导入（{type(error).__name__}: {error}），先展示参考解",
                             f"{relpath(path)} cannot be imported ({type(error).__name__}: {error}); showing the reference")}
    todo = unfinished(mine)
    if todo:
        return {"module": reference,
                "stand_in": pick(lang, f"{relpath(path)} 还是桩代码（未实现：{', '.join(todo)}）",
                                 f"{relpath(path)} is still a stub (not implemented: {', '.join(todo)})"),
                "note": pick(
                    lang, f"{relpath(path)} 还是桩代码（未实现：{', '.join(todo)}），下面展示的是参考解 {problem.solution}；"
                          f"实现之后重新运行即可看到你自己的代码",
                    f"{relpath(path)} is still a stub (not implemented: {', '.join(todo)}); showing the reference "
                    f"{problem.solution} instead. Re-run once yours is done to see your own code")}
    return {"module": mine, "stand_in": None,
            "note": pick(lang, f"展示你的实现 {relpath(path)}", f"showing your implementation {relpath(path)}")}


def choose_impl(use_reference: bool, lang: str = "zh", mine_path=None):
    """(module, note): the learner's mine/p08_sampler.py, or the reference while mine is a stub (the note says so)."""
    chosen = resolve_impl(use_reference, lang, mine_path)
    return chosen["module"], chosen["note"]


def is_learners(module, problem="p08") -> bool:
    """True when module is not the problem's reference: the learner's code ran (a notebook says "yours" only then)."""
    return Path(module.__file__).resolve() != get(problem).path("solution").resolve()


def impl_label(module, lang="zh") -> str:
    """A short 'whose code' tag for a panel (the full note is printed once, by the notebook's setup cell)."""
    path = relpath(module.__file__)
    return pick(lang, f"代码：{path}", f"code: {path}")


# ---- p08-fast: each step from mine/p08_sampler_fast.py once it runs, else from the reference -------------------
FAST_STEPS = ("route", "window_topk", "canonical_window", "row_total", "filter_window", "inverse_cdf",
              "FastSampler._uniforms", "FastSampler")
TODO_OF = {"route": 1, "window_topk": 2, "canonical_window": 2, "row_total": 3, "filter_window": 4, "inverse_cdf": 5,
           "FastSampler._uniforms": 5, "FastSampler": 5}      # the stub's TODO(p08-fast.N) of each step
SHOWN_AS = {"FastSampler._uniforms": ("FastSampler 的 __init__、_uniforms 和 free",
                                      "FastSampler's __init__, _uniforms and free")}   # (zh, en): what is written
STEP_FUNCTIONS = FAST_STEPS[:6]      # the functions the given batch code calls (course.fast_batch.Steps, in order)


def _fast_probes(module) -> dict:
    """{step: a call on a tiny input}: each raises NotImplementedError while that step (or one it uses) is a stub."""
    x = torch.tensor([[2.0, 1.0, 0.5, 0.0]])                                          # [1, V=4]
    z, ids = torch.tensor([[2.0, 1.0, 1.0, 0.0]]), torch.tensor([[0, 2, 1, 3]])       # [1, 4] a descending window
    one = lambda v, dtype=torch.float32: torch.tensor([[v]], dtype=dtype)              # noqa: E731  [1, 1]
    params = [SamplingParams(top_k=2, top_p=0.9, seed=0)]

    def uniforms():
        sampler = module.FastSampler()
        sampler._uniforms(["probe"], params)
        sampler.free("probe")

    def whole():
        sampler = module.FastSampler()
        sampler.sample(x, ["probe"], params, [[]])
        sampler.filtered_probs(x, params, [[]])
        sampler.free("probe")

    return {"route": lambda: module.route(params, 4),
            "window_topk": lambda: module.window_topk(x, 2),
            "canonical_window": lambda: module.canonical_window(z, ids),
            "row_total": lambda: module.row_total(torch.exp(x - 2.0)),
            "filter_window": lambda: module.filter_window(z, one(2, torch.long), one(0.9), None, False),
            "inverse_cdf": lambda: module.inverse_cdf(z.cumsum(-1), one(6.0), one(0.5, torch.float64), z),
            "FastSampler._uniforms": uniforms, "FastSampler": whole}


def _runs(call) -> bool:
    try:
        call()
    except (NotImplementedError, AttributeError):
        return False
    except Exception:                # a bug, not a stub: keep the learner's code so they see it
        pass
    return True


class FastImpl:
    """The fast path's steps as the notebook calls them: `fast.window_topk(...)`, `fast.FastSampler()`, ...

    Each step comes from the learner's mine/p08_sampler_fast.py once it runs (a bug included: it shows), else from
    the reference. `fast.label("window_topk", ...)` says whose code a cell ran; `fast.note` says it for every step.
    `fast.steps()` is the Steps tuple the given batch code (course/fast_batch.py) calls, one chosen function per
    step, so `fast_batch.filtered_batch(fast.steps(), ...)` runs the learner's finished steps beside the
    reference's stand-ins. The given code (constants, the penalty, the upload, the windows, the exact route, the
    streams) is the same for both files and comes from its own modules.
    """

    def __init__(self, use_reference=False, lang="zh", mine_path=None):
        problem = get("p08-fast")
        self.lang, self.reference = lang, load_module(problem.path("solution"), "reference_fast")
        self.ref_path, self.path = problem.solution, repo_file(mine_path) if mine_path else problem.path("stub")
        self.mine_path, self.use_reference = relpath(self.path), use_reference
        self.load()
        for name in ("WINDOW", "WINDOW_K", "CHUNK", "Routes", "Steps", "penalized_fp32", "upload", "windows",
                     "cumulative", "prefix_sum", "first_true", "filtered_batch", "sample_batch"):
            setattr(self, name, getattr(fast_batch, name))                   # given code: course/fast_batch.py
        self.exact_rows, self.stream_uniform, self.stream_uniforms = exact_rows, stream_uniform, stream_uniforms

    def load(self):
        """(Re)read the learner's file and choose each step's source: a fix cell calls it (through ready()), so that
        a step written since the notebook's first cells ran is seen when the cell runs again."""
        self.mine, self.error = None, None
        if not self.use_reference:
            try:
                self.mine = load_module(self.path, "mine_fast")
            except Exception as error:
                self.error = f"{type(error).__name__}: {error}"
        probes = _fast_probes(self.mine) if self.mine is not None else {}
        self.source = {step: self.mine if step in probes and _runs(probes[step]) else self.reference
                       for step in FAST_STEPS}
        for step in STEP_FUNCTIONS:
            setattr(self, step, getattr(self.source[step], step))
        self.FastSampler = self.source["FastSampler"].FastSampler

    def steps(self):
        """The Steps tuple (course.fast_batch.Steps) of the chosen functions: the learner's where they run."""
        return fast_batch.Steps(*(getattr(self, step) for step in STEP_FUNCTIONS))

    def reference_steps(self):
        """The reference's Steps tuple: what a naive cell runs beside the one step it makes naive (it shows a failure,
        never the learner's answer or a half-written file's crash)."""
        return fast_batch.Steps(*(getattr(self.reference, step) for step in STEP_FUNCTIONS))

    def sampler(self, step="FastSampler"):
        """A fresh instance of the FastSampler class whose `step` runs (mine's once it does)."""
        return self.source[step].FastSampler()

    def yours(self, step) -> bool:
        return self.source[step] is self.mine

    def ready(self, *steps) -> bool:
        """May a fix cell run these steps? Yes when they are the learner's, or when the reference was chosen on purpose
        (USE_REFERENCE = True). Otherwise it prints which function to write and returns False, so that a fix cell never
        shows the reference's answer to a step the learner has not written."""
        if self.use_reference:                                           # USE_REFERENCE = True: asked for
            return True
        self.load()                                                      # the file as it is now
        todo = [s for s in steps if not self.yours(s)]
        if not todo:
            return True
        if self.error is not None:
            print(wrap(pick(self.lang, f"{self.mine_path} 无法导入（{self.error}）：先修好它再运行这一格"
                                       f"（或在最上面设 USE_REFERENCE = True 看参考解）",
                            f"{self.mine_path} cannot be imported ({self.error}): fix it, then run this cell again "
                            f"(or set USE_REFERENCE = True at the top to see the reference)")))
            return False
        shown = [pick(self.lang, *SHOWN_AS[s]) if s in SHOWN_AS else s for s in todo]
        todos = sorted({TODO_OF[s] for s in todo})
        tags = ", ".join(f"TODO(p08-fast.{n})" for n in todos)
        print(wrap(pick(self.lang, f"这一格运行你的代码：先在 {self.mine_path} 里写好 {'、'.join(shown)}（{tags}），再运行这一格"
                                   f"（想先看参考解的结果：在最上面设 USE_REFERENCE = True）",
                        f"this cell runs your code: write {' and '.join(shown)} ({tags}) in {self.mine_path}, then run "
                        f"this cell again (to see the reference's answer instead, set USE_REFERENCE = True at the top)")))
        return False

    @property
    def mine_steps(self) -> list:
        return [s for s in FAST_STEPS if self.yours(s)]

    @property
    def stub_steps(self) -> list:
        return [s for s in FAST_STEPS if not self.yours(s)]

    def label(self, *steps, width=LINE_COLUMNS) -> str:
        """Whose code ran these steps, e.g. 'code: window_topk from mine/p08_sampler_fast.py', wrapped to width
        columns for printing (width=None: one line, for a panel's HTML note)."""
        groups = {}
        for step in steps:
            groups.setdefault(self.mine_path if self.yours(step) else self.ref_path, []).append(step)
        parts = [pick(self.lang, f"{', '.join(names)} 来自 {path}", f"{', '.join(names)} from {path}")
                 for path, names in groups.items()]
        line = pick(self.lang, "代码：", "code: ") + " · ".join(parts)
        return wrap(line, width) if width else line

    @property
    def note(self) -> str:
        """What runs below, said once by the notebook's setup cell."""
        lang, mine, ref = self.lang, self.mine_path, self.ref_path
        if self.mine is None and self.error is None:
            return pick(lang, f"展示参考解 {ref}", f"showing the reference {ref}")
        if self.error is not None:
            return pick(lang, f"{mine} 无法导入（{self.error}），下面全部展示参考解 {ref}",
                        f"{mine} cannot be imported ({self.error}); showing the reference {ref} throughout")
        if not self.stub_steps:
            return pick(lang, f"展示你的实现 {mine}（每一步都已实现）",
                        f"showing your implementation {mine} (every step runs)")
        if not self.mine_steps:
            return pick(lang, f"{mine} 还是桩代码（没有一步已实现），下面展示参考解 {ref}；实现一步后重新运行，就会看到你自己的结果",
                        f"{mine} is still a stub (no step runs yet); showing the reference {ref}. Re-run once a step "
                        f"is done to see your own results")
        yours = ", ".join(self.mine_steps)
        return pick(lang, f"{mine}：你的代码用于 {yours}；还是桩代码的步骤由参考解 {ref} 代替："
                          f"{', '.join(self.stub_steps)}。实现一步后重新运行，就会看到你自己的结果。",
                    f"{mine}: your code runs {yours}; the reference {ref} stands in for the steps that are "
                    f"still stubs: {', '.join(self.stub_steps)}. Re-run once a step is done to see your own results.")


def choose_fast_impl(use_reference=False, lang="zh", mine_path=None) -> FastImpl:
    """The fast path's steps for the notebook: mine/p08_sampler_fast.py's where they run, else the reference's."""
    return FastImpl(use_reference, lang, mine_path)
