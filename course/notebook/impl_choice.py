"""Which P08 implementation the notebook shows: the learner's mine/p08_sampler.py, or the reference while
mine is still a stub (with one note saying so)."""
import torch

from course.lang import pick
from course.loader import load_module, relpath
from course.problems import get
from course.sampling_params import SamplingParams


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
    """{'module', 'note', 'stand_in'}: the learner's mine/p08_sampler.py, or the reference (when asked for, or while
    mine is a stub or cannot be imported). stand_in is None when the module is the one asked for, else a short
    reason the reference stands in for mine."""
    problem = get("p08")
    reference = load_module(problem.path("solution"), "reference")
    if use_reference:
        return {"module": reference, "stand_in": None,
                "note": pick(lang, f"展示参考解 {problem.solution}", f"showing the reference {problem.solution}")}
    path = mine_path or problem.path("stub")
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


def impl_label(module, lang="zh") -> str:
    """A short 'whose code' tag for a panel (the full note is printed once, by the notebook's setup cell)."""
    path = relpath(module.__file__)
    return pick(lang, f"代码：{path}", f"code: {path}")
