"""Acceptance check C1 of p08-kernel: the kernel compiles for a GPU, checked on any machine.

Triton's interpreter runs a @triton.jit function as Python, so it takes what the compiler does not (a `break`, a
global that is no constexpr, a Python list); and it divides as IEEE does, where a compiled `/` is an approximate
division. C1 compiles the file's sample_kernel for an H100 (sm_90) ahead of time, with the argument types of a real
launch, and reads the PTX: no GPU is needed, only Triton's compiler (in a process of its own: compile_probe.py)."""
import json
import os
import subprocess
import sys

import torch

from course.grader.checks import Fail, check
from course.kernel_interp import recording
from course.problems import ROOT

TARGET = ("cuda", 90, 32)      # an H100: Triton's compiler takes any target without the GPU
COMPILE_LIMIT_S = 40           # a fresh process, torch and Triton imported, one kernel compiled: about 5 s


def launch_of(ctx):
    """The launch KernelSampler.sample makes on a small batch: its kernel's argument types and launch parameters."""
    g = torch.Generator().manual_seed(61)
    logits = torch.randn(2, 100, generator=g).to(ctx.device)
    params = [ctx.params(top_k=10, top_p=0.9, seed=1), ctx.params(temperature=0.0)]
    with recording() as launches:
        try:
            ctx.sampler().sample(logits, ["a", "b"], params, [[], []])
        except Exception as exc:  # noqa: BLE001 - the other checks say why it raises; here only the launch matters
            cause = ctx.kernel_cause(exc)
            if isinstance(cause, NotImplementedError):
                raise cause from None                              # a step not written yet: reported as such
    return launches[0] if launches else None


def compile_elsewhere(path, launch) -> dict:
    """The answer of compile_probe.py for the file's kernel with this launch's argument types and constants."""
    constants = {k: v for k, v in launch.params.items() if launch.signature.get(k) == "constexpr"}
    options = {k: launch.params[k] for k in ("num_warps", "num_stages") if k in launch.params}
    job = json.dumps({"path": str(path), "kernel": launch.kernel, "signature": launch.signature, "constants": constants,
                      "options": options, "target": TARGET})
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    try:
        done = subprocess.run([sys.executable, "-m", "tests.p08_kernel.compile_probe", job], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=COMPILE_LIMIT_S)
    except subprocess.TimeoutExpired:
        return {"error": "TimeoutExpired", "reason": f"no answer in {COMPILE_LIMIT_S} s", "line": None}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"error": "no answer", "reason": (done.stderr.strip().splitlines() or ["?"])[-1][:200], "line": None}
    return json.loads(lines[-1])


@check("C1", "能为 GPU 编译（在任何机器上检查）：解释器接受而编译器不接受的写法；除法按 IEEE 舍入",
       "compiles for a GPU (checked on any machine): what the interpreter takes and the compiler does not; a division "
       "that rounds as IEEE's", hint=("p08-kernel", 2, "compile"))
def c1_compiles_for_a_gpu(ctx):
    launch = launch_of(ctx)
    if launch is None:
        raise Fail(ctx.t("调用 KernelSampler.sample(logits [2, 100], ...)：没有启动任何 kernel",
                         "called KernelSampler.sample(logits [2, 100], ...): no kernel was launched"),
                   ctx.t("先让 sample() 跑起来（看上面的检查）", "make sample() run first (see the checks above)"))
    constants = {k: v for k, v in launch.params.items() if launch.signature.get(k) == "constexpr"}
    called = f"triton.compile({launch.kernel}, sm_{TARGET[1]}, {', '.join(f'{k}={v}' for k, v in constants.items())})"
    answer = compile_elsewhere(ctx.impl_path, launch)
    if "error" in answer:
        line = answer.get("line")
        raise Fail(f"{called} -> {answer['error']}: {answer['reason']}",
                   ctx.t("解释器把 kernel 当 Python 跑，所以这里能过；Triton 的编译器只接受它的语言：没有 break/continue 或提前 "
                         "return，全局变量要是 tl.constexpr，循环里的变量类型不能变",
                         "the interpreter runs the kernel as Python, so it passes there; Triton's compiler takes its own "
                         "language only: no break/continue or early return, globals must be tl.constexpr, a loop's "
                         "variables keep their types"), where=f"{ctx.file}:{line}" if line else launch.kernel)
    if answer["approximate"]:
        raise Fail(f"{called} -> PTX {', '.join(answer['approximate'])}",
                   ctx.t("编译出来的除法是近似的（GPU 上 x / t 是 div.full.f32，误差可到 2 ulp）：z 的 bit 和 torch 的 x / T 不同，"
                         "并列会变。用 tl.div_rn(x, temperature)：它和 torch 一样只按 IEEE 舍入一次",
                         "the compiled division is approximate (on a GPU x / t is div.full.f32, off by up to 2 ulp): z's "
                         "bits differ from torch's x / T and ties move. tl.div_rn(x, temperature) rounds once, as IEEE "
                         "and torch do"), where=launch.kernel)
