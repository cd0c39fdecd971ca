"""Torch ops, host syncs and uploads of Python data per call, counted with torch's profiler on the CPU.

The counts are noise-free (the same call gives the same counts on any CPU, busy or not), so the self-tests may
assert them, and they stand in for a GPU: there, each top-level op is a kernel launch (about 5-10 µs of
overhead each) and each sync stalls the host until the device has caught up. What counts:
  ops      top-level aten ops (an op called inside another one is not counted again)
  syncs    top-level ops that need a value on the host: item / _local_scalar_dense, nonzero (and what uses it:
           masked_select, a boolean index), tolist / numpy (resolve_conj at top level)
  uploads  tensors made from Python data (torch.tensor(list): aten::lift_fresh)
"""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import torch
from torch.autograd.profiler import profile as torch_profile

SYNC_OPS = {"aten::_local_scalar_dense", "aten::item", "aten::nonzero", "aten::resolve_conj"}


@dataclass(frozen=True)
class Counts:
    ops: int
    syncs: int
    uploads: int

    def __str__(self) -> str:
        return f"{self.ops} ops, {self.syncs} sync{'s' if self.syncs != 1 else ''}, {self.uploads} upload" \
               f"{'s' if self.uploads != 1 else ''}"


def _top_level(events) -> list:
    """The aten events with no aten ancestor, each with the names of everything it called."""
    out = []
    for event in events:
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if parent is None:
            out.append(event)
    return out


def _names_below(event) -> set:
    names, todo = set(), list(event.cpu_children)
    while todo:
        child = todo.pop()
        names.add(child.name)
        todo.extend(child.cpu_children)
    return names


@contextlib.contextmanager
def _quiet_stderr():
    """The profiler's own start/stop lines go to fd 2; keep them off the benchmark's output."""
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def profile(fn, warmup: int = 1, shapes: bool = False) -> list:
    """The top-level aten events of one fn() call, after `warmup` uncounted calls (first-call caches are not the
    call's cost); shapes=True records their input shapes too (for full_row_sorts)."""
    for _ in range(warmup):
        fn()
    # the autograd profiler records the same CPU events as torch.profiler.profile, whose start also imports
    # torch._inductor (seconds, once per process: a grader or a notebook kernel would pay it)
    with _quiet_stderr(), torch_profile(use_cpu=True, record_shapes=shapes) as prof:
        fn()
    return _top_level(prof.function_events)


def counts_of(top) -> Counts:
    """Ops, syncs and uploads among the top-level events of one call (see profile)."""
    syncs = sum(1 for e in top if e.name in SYNC_OPS or _names_below(e) & SYNC_OPS)
    uploads = sum(1 for e in top if e.name == "aten::lift_fresh")
    return Counts(ops=len(top), syncs=syncs, uploads=uploads)


def count(fn, warmup: int = 1) -> Counts:
    """Counts of one fn() call, after `warmup` uncounted calls."""
    return counts_of(profile(fn, warmup))


def full_row_sorts(top, width: int) -> int:
    """How many top-level sorts (sort, argsort, msort) a call ran over rows `width` long (a full vocab); `top` from
    profile(fn, shapes=True)."""
    return sum(1 for e in top if e.name in ("aten::sort", "aten::argsort", "aten::msort")
               and e.input_shapes and e.input_shapes[0] and e.input_shapes[0][-1] == width)


def count_methods(fns: dict) -> dict:
    """{method: Counts} for the benchmark's zero-argument callables (CPU tensors: counts are the same on any CPU)."""
    with torch.no_grad():
        return {name: count(fn) for name, fn in fns.items()}
