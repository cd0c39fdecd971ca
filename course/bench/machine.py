"""Is the machine quiet enough to time on? Two signals, one before and one after the timing.

Before: how much of the CPU other programs use right now. On Linux the benchmark samples /proc/stat for
SAMPLE_S while it sleeps itself, so every busy tick it sees is someone else's; elsewhere the 1-minute load
average stands in (it lags and counts this process too). When others use at least BUSY_SHARE of the cores
(and at least half a core), torch's intra-op threads would wait for each other behind them, so the benchmark
times with one thread per method instead, and says so.

After: each case's rounds. The course's methods do the same work in every round, so on a quiet machine a
method's median is close to its fastest round; when other work slows most rounds the median itself is
inflated (over NOISY_SPREAD times the fastest). And the floor, one read of the logits (`logits.max(-1)`),
has a cost no machine exceeds when it runs undisturbed (floor_limit_ms); a floor above it means every round
waited. Either way every figure of that case is noise: the case is marked and the output says so, so a busy
machine's figures are never printed as if they were measurements.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

import torch

from course.lang import pick

SAMPLE_S = 0.3          # how long /proc/stat is watched
BUSY_SHARE = 0.25       # others using this share of the cores (and at least half a core) = busy
NOISY_SPREAD = 2.0      # a method's median over its fastest round above this = the case's figures are noise
FLOOR_GB_S = 0.5        # one read of the logits slower than this (plus 0.1 ms) = the case's figures are noise
NOISY_MARK = "~"        # before a case's name in the tables: its figures are noise
STEADY = ("reference", "full_sort", "blog", "fast", "floor")   # the same work every call: their rounds agree


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _cpu_ticks():
    """(busy, total) jiffies summed over every CPU, from /proc/stat; None where there is no /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)                    # idle + iowait
    total = sum(fields[:8])                                                      # guest time is inside user
    return total - idle, total


def load_1min():
    """The 1-minute load average, or None where the OS has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


@dataclass(frozen=True)
class Load:
    others: float | None    # cores' worth of CPU other programs used while this process slept (None: unknown)
    load: float | None      # the 1-minute load average
    cores: int

    @property
    def used(self) -> float | None:
        """The best estimate of others' use, in cores: the sample, else the load average."""
        return self.others if self.others is not None else self.load

    @property
    def busy(self) -> bool:
        used = self.used
        return used is not None and used >= max(0.5, BUSY_SHARE * self.cores)

    def describe(self, lang: str = "en") -> str:
        parts = []
        if self.others is not None:
            parts.append(pick(lang, f"别的程序占 {self.others:.1f}/{self.cores} 核",
                              f"others use {self.others:.1f} of {self.cores} cores"))
        if self.load is not None:
            parts.append(pick(lang, f"负载 {self.load:.1f}", f"load {self.load:.1f}"))
        return pick(lang, "，", ", ").join(parts) or pick(lang, "负载未知", "load unknown")


def measure(sample_s: float = SAMPLE_S) -> Load:
    """How busy the machine is now (this process sleeps while it watches)."""
    n = cores()
    before = _cpu_ticks()
    others = None
    if before is not None:
        time.sleep(sample_s)
        after = _cpu_ticks()
        total = after[1] - before[1]
        if total > 0:
            cpus = os.cpu_count() or n
            others = min(float(n), (after[0] - before[0]) / total * cpus)
    return Load(others=others, load=load_1min(), cores=n)


@contextlib.contextmanager
def timing_threads(threads: int | None = None, lang: str = "en", load: Load | None = None):
    """Set torch's threads for a timing run and restore them after; yields one line saying what was chosen.

    threads given: that many. Otherwise one thread when the machine is busy (measure()), else torch's own."""
    saved = torch.get_num_threads()
    if threads:
        chosen, line = threads, pick(lang, f"{threads} 个线程（按要求）", f"{threads} thread{'s' * (threads != 1)} "
                                                                   "(as asked)")
    else:
        load = load or measure()
        if load.busy:
            chosen = 1
            line = pick(lang, f"机器正忙（{load.describe(lang)}）：每种方法 1 个线程",
                        f"busy ({load.describe(lang)}): 1 thread per method")
        else:
            chosen = saved
            line = pick(lang, f"机器空闲（{load.describe(lang)}）：{saved} 个线程",
                        f"quiet ({load.describe(lang)}): {saved} thread{'s' * (saved != 1)}")
    torch.set_num_threads(chosen)
    try:
        yield line
    finally:
        torch.set_num_threads(saved)


def spread(times) -> float:
    """Median over fastest of one method's round times (1.0 = every round alike)."""
    ordered = sorted(times)
    if not ordered:
        return float("nan")
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return median / ordered[0] if ordered[0] > 0 else 1.0 if median <= 0 else float("inf")


def floor_limit_ms(batch: int, vocab: int, bytes_per_logit: int = 4) -> float:
    """The longest one read of [batch, vocab] logits may take on any machine: 0.1 ms plus the bytes at 0.5 GB/s
    (quiet 2-core machines read them at 2 to 10 GB/s)."""
    return 0.1 + batch * vocab * bytes_per_logit / (FLOOR_GB_S * 1e6)


def noise(result) -> dict:
    """Why a case's figures are noise ({} when they are not): {'spread': the worst median over fastest round of
    the course's own methods, when above NOISY_SPREAD; 'floor_ms': the floor's median, when above floor_limit_ms}.
    A learner's method ('yours') is left out: its work may change from call to call."""
    out = {}
    spreads = [v for m, v in result.get("spread", {}).items() if m in STEADY]
    if spreads and max(spreads) > NOISY_SPREAD:
        out["spread"] = max(spreads)
    floor = result.get("ms", {}).get("floor")
    if floor is not None and floor > floor_limit_ms(result["B"], result["V"]):
        out["floor_ms"] = floor
    return out


def noisy(result) -> bool:
    """A benchmark case (course.bench.run_case's result) whose figures are noise (see noise)."""
    return bool(noise(result))


def noise_note(results, lang="en") -> str:
    """One line saying how many cases' figures are noise and why (see noise), or ''."""
    bad = [noise(r) for r in results if noisy(r)]
    if not bad:
        return ""
    why = []
    if any("spread" in b for b in bad):
        worst = max(b.get("spread", 0) for b in bad)
        why.append(pick(lang, f"同一方法各轮相差到 {worst:.1f} 倍", f"a method's rounds differed up to x{worst:.1f}"))
    if any("floor_ms" in b for b in bad):
        worst = max(b.get("floor_ms", 0) for b in bad)
        why.append(pick(lang, f"读一遍 logits 用了 {worst:.2f} ms", f"one read of the logits took {worst:.2f} ms"))
    n = len(bad)
    return pick(lang, f"{NOISY_MARK} = 噪声：{n} 个场景里{'，'.join(why)}（别的程序在占 CPU），这些数字不是速度；"
                      "机器空闲时再跑一次",
                f"{NOISY_MARK} = noise: in {n} case{'s' * (n != 1)} {' and '.join(why)} (other programs used the "
                "CPU); those figures are not speeds: run again when the machine is quiet")
