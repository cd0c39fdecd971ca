"""Is the machine quiet enough to time on? Two signals, one before and one after the timing, and one verdict.

Before: how much of the CPU other programs use right now. On Linux the benchmark samples /proc/stat for
SAMPLE_S while it sleeps itself, so every busy tick it sees is someone else's; elsewhere the 1-minute load
average stands in (it lags and counts this process too). When others use at least BUSY_SHARE of the cores
(and at least half a core), torch's intra-op threads would wait for each other behind them, so the benchmark
times with one thread per method instead, and says so (a line that says what was measured and chosen, no verdict).

After: each case's rounds. The course's methods do the same work in every round, so on a quiet machine a
method's median is close to its fastest round; when other work slows most rounds the median itself is
inflated (over NOISY_SPREAD times the fastest). The floor, one read of the logits (`logits.amax(-1)`), has a
cost no machine exceeds when it runs undisturbed (floor_limit_ms), and it cannot cost more than the fast path,
which reads every logit too; a floor above either means its rounds waited. Either way every figure of that case
is noise: the case is marked, so a busy machine's figures are never printed as if they were measurements.

Then one verdict (verdict()): others' CPU use while the timing ran (Watch: /proc/stat's busy ticks less this
process's own CPU time) and the cases found to be noise, said once, in full sentences, naming the marks the
output uses for noise (~ in a table, hollow in a chart).
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
VERDICT_START = {"zh": "计时期间，", "en": "While timing, "}   # how the one verdict line of a run begins
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
        """'other programs used 0.2 of 2 cores' (the sample), else the load average, else 'unknown'."""
        if self.others is not None:
            return pick(lang, f"别的程序占 {self.others:.1f}/{self.cores} 核",
                        f"other programs used {self.others:.1f} of {self.cores} cores")
        if self.load is not None:
            return pick(lang, f"1 分钟负载 {self.load:.1f}（{self.cores} 核）",
                        f"the 1-minute load average was {self.load:.1f} on {self.cores} cores")
        return pick(lang, "别的程序占多少 CPU 不知道", "how much CPU other programs used is unknown")


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
    """Set torch's threads for a timing run and restore them after; yields one sentence saying what was measured
    before the timing and what was chosen (no verdict: verdict() gives that once the timing is done).

    threads given: that many. Otherwise one thread when the machine is busy (measure()), else torch's own."""
    saved = torch.get_num_threads()
    if threads:
        chosen = threads
        line = pick(lang, f"每种方法 {threads} 个线程（按要求）。",
                    f"{threads} thread{'s' * (threads != 1)} per method, as asked.")
    else:
        load = load or measure()
        chosen = 1 if load.busy else saved        # busy: several threads would wait for one another
        line = pick(lang, f"计时前{load.describe(lang)}：每种方法 {chosen} 个线程。",
                    f"Before timing, {load.describe(lang)}: {chosen} thread{'s' * (chosen != 1)} per method.")
    torch.set_num_threads(chosen)
    try:
        yield line
    finally:
        torch.set_num_threads(saved)


class Watch:
    """`with Watch() as watch:` ... `watch.load`: how much CPU other programs used while the block ran, in cores:
    /proc/stat's busy ticks over the block less this process's own CPU time (None where there is no /proc/stat)."""

    load: Load | None = None

    def __enter__(self):
        self._start = (_cpu_ticks(), time.process_time(), time.perf_counter())
        return self

    def __exit__(self, *exc):
        ticks, cpu, wall = self._start
        after, n = _cpu_ticks(), cores()
        elapsed = time.perf_counter() - wall
        others = None
        if ticks is not None and after is not None and after[1] > ticks[1] and elapsed > 0:
            used = (after[0] - ticks[0]) / (after[1] - ticks[1]) * (os.cpu_count() or n)   # every program, in cores
            others = min(float(n), max(0.0, used - (time.process_time() - cpu) / elapsed))
        self.load = Load(others=others, load=load_1min(), cores=n)
        return False


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
    the course's own methods, when above NOISY_SPREAD; 'floor_ms': the floor's median, when above floor_limit_ms;
    'floor_over_fast': the floor's median, when above the fast path's (one read cannot cost more than a sampler
    that reads every logit too)}. A learner's method ('yours') is left out: its work may change from call to call."""
    out = {}
    spreads = [v for m, v in result.get("spread", {}).items() if m in STEADY]
    if spreads and max(spreads) > NOISY_SPREAD:
        out["spread"] = max(spreads)
    ms = result.get("ms", {})
    floor = ms.get("floor")
    if floor is not None and floor > floor_limit_ms(result["B"], result["V"]):
        out["floor_ms"] = floor
    if floor is not None and ms.get("fast") is not None and floor > ms["fast"]:
        out["floor_over_fast"] = floor
    return out


def noisy(result) -> bool:
    """A benchmark case (course.bench.run_case's result) whose figures are noise (see noise)."""
    return bool(noise(result))


def _reasons(bad, lang) -> str:
    """What made the noisy cases noise, the worst of each kind, joined."""
    why = []
    if any("spread" in b for b in bad):
        worst = max(b.get("spread", 0) for b in bad)
        why.append(pick(lang, f"同一方法各轮相差到 {worst:.1f} 倍", f"a method's rounds differed up to x{worst:.1f}"))
    if any("floor_ms" in b for b in bad):
        worst = max(b.get("floor_ms", 0) for b in bad)
        why.append(pick(lang, f"读一遍 logits 用了 {worst:.2f} ms（不受打扰的机器用不了这么久）",
                        f"one read of the logits took {worst:.2f} ms (no undisturbed machine takes that long)"))
    if any("floor_over_fast" in b and "floor_ms" not in b for b in bad):
        why.append(pick(lang, "读一遍 logits 比快速路径还慢（快速路径也要读每个 logit）",
                        "one read of the logits took longer than the fast path, which reads every logit too"))
    if lang != "en":
        return "，".join(why)
    return why[0] if len(why) == 1 else ", ".join(why[:-1]) + " and " + why[-1]


def verdict(results, during: Load | None = None, lang: str = "en", marks=("标 ~", "marked ~")) -> str:
    """The run's one verdict on the machine, in full sentences beginning with VERDICT_START[lang]: others' CPU use
    while timing (during, from Watch; None: unknown) and how many cases are noise and why (noise()). marks: how the
    output marks a noisy case, (zh, en), e.g. ("表里标 ~、图里空心", "~ in the table, hollow in the chart")."""
    bad = [noise(r) for r in results if noisy(r)]
    start = VERDICT_START["zh" if lang != "en" else "en"]
    measured = during is not None and during.others is not None   # the load average counts the timing itself
    busy = measured and Load(others=during.others, load=None, cores=during.cores).busy
    used = during.describe(lang) if measured else None
    if not bad:
        if busy:
            return pick(lang, f"{start}机器正忙（{used}），但每个场景各轮一致：这些数字是速度，只是比没人占用时慢。",
                        f"{start}the machine was busy ({used}), yet every case's rounds agree: these figures are "
                        "speeds, if slower than a quiet machine's.")
        state = pick(lang, f"机器空闲（{used}），", f"the machine was quiet ({used}) and ") if used else ""
        return pick(lang, f"{start}{state}每个场景各轮一致：这些数字是速度。",
                    f"{start}{state}every case's rounds agree: these figures are speeds.")
    n, total, why = len(bad), len(results), _reasons(bad, lang)
    if busy:
        state = pick(lang, f"机器正忙（{used}）：", f"the machine was busy ({used}): ")
    elif used:
        state = pick(lang, f"机器不稳：{used}，可是 ", f"the machine was unsteady: {used}, yet ")
    else:
        state = ""
    cases = pick(lang, f"{total} 个场景里有 {n} 个{why}。", f"in {n} of {total} case{'s' * (total != 1)} {why}.")
    those = pick(lang, "这些场景" if n > 1 else "这个场景", "Those cases' figures" if n > 1 else "That case's figures")
    return pick(lang, f"{start}{state}{cases}{those}（{marks[0]}）的数字是噪声，不是速度；等机器闲下来再运行一次。",
                f"{start}{state}{cases} {those} ({marks[1]}) are noise, not speeds: run again when the machine is "
                "quiet.")


def is_verdict(line: str) -> bool:
    """Whether a printed line is a run's verdict (verdict()'s first words, in either language)."""
    return line.startswith(tuple(VERDICT_START.values()))
