"""Load a sampler file by path, and keep a learner's file from changing torch's global state for others."""
from __future__ import annotations

import importlib.util
import itertools
import random
import sys
from pathlib import Path

import torch

from course.problems import ROOT, relpath  # noqa: F401  (relpath: re-exported)

_counter = itertools.count()


def load_module(path, name_hint: str = "impl"):
    """Import the file at path as a fresh module (never cached: every call runs the file again)."""
    path = Path(path).resolve()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    name = f"_course_{name_hint}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


def load_solution(problem):
    """The reference module of a problem (course.problems.Problem)."""
    return load_module(problem.path("solution"), "solution")


class TorchState:
    """A snapshot of torch's process-wide settings (and its public functions), restored on demand."""

    _MODULES = (torch, torch.Tensor, torch.nn.functional)

    def __init__(self):
        self.default_dtype = torch.get_default_dtype()
        self.threads = torch.get_num_threads()
        self.deterministic = self._determinism()
        self.grad = torch.is_grad_enabled()
        self.attrs = [(m, dict(vars(m))) for m in self._MODULES]

    @staticmethod
    def _determinism() -> tuple:
        return torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()

    def restore(self, seed: int = 0) -> None:
        """Undo whatever a learner file changed, then seed the global RNGs with `seed`."""
        for module, saved in self.attrs:
            current = vars(module)
            for key, value in saved.items():
                if current.get(key) is not value:
                    try:
                        setattr(module, key, value)
                    except (AttributeError, TypeError):
                        pass
        torch.set_default_dtype(self.default_dtype)
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        if self._determinism() != self.deterministic:          # only when changed: the call imports torch._inductor,
            enabled, warn_only = self.deterministic             # about 2 s, the larger half of a grader's start
            torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
        torch.set_grad_enabled(self.grad)
        torch.manual_seed(seed)
        random.seed(seed)
