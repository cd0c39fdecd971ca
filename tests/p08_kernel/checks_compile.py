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
        slashes = slash_lines(ctx.impl_path)
        by_temperature = not slashes or any("temperature" in text for _, text in slashes)
        shown = "; ".join(f"{ctx.file}:{n}: {text}" for n, text in slashes[:2])
        raise Fail(f"{called} -> PTX {', '.join(answer['approximate'])}",
                   *([ctx.t(f"你的 kernel 里的 `/`：{shown}", f"the `/` in your kernel: {shown}")] if slashes else []),
                   ctx.t("编译出来的除法是近似的（GPU 上 x / t 是 div.full.f32，误差可到 2 ulp）：z 的 bit 和 torch 的 x / T 不同，"
                         "并列会变。用 tl.div_rn(x, temperature)：它和 torch 一样只按 IEEE 舍入一次",
                         "the compiled division is approximate (on a GPU x / t is div.full.f32, off by up to 2 ulp): z's "
                         "bits differ from torch's x / T and ties move. tl.div_rn(x, temperature) rounds once, as IEEE "
                         "and torch do") if by_temperature else
                   ctx.t("编译出来的除法是近似的（GPU 上 `/` 是 div.full.f32，误差可到 2 ulp），解释器里却按 IEEE 算：两边的 bit 不同。"
                         "步骤里需要除法的只有 z = tl.div_rn(x, temperature)；别的除法（比如 exp(z) / exp(z_max)）换成不用除的写法"
                         "（exp(z - z_max)），或者用 tl.div_rn",
                         "the compiled division is approximate (on a GPU `/` is div.full.f32, off by up to 2 ulp) while the "
                         "interpreter divides as IEEE does: the bits differ between them. The one division the steps need "
                         "is z = tl.div_rn(x, temperature); write any other (exp(z) / exp(z_max), say) without one "
                         "(exp(z - z_max)), or with tl.div_rn"), where=launch.kernel)


def slash_lines(path) -> list:
    """[(line number, code)] of the file's lines with a true division `/` (not `//`) outside comments and strings, inside
    its @triton.jit step functions (the given sample_kernel left out): where an approximate division in the PTX can
    come from."""
    import io
    import tokenize
    from pathlib import Path
    try:
        text = Path(path).read_text()
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (OSError, SyntaxError, tokenize.TokenError):
        return []
    source = text.splitlines()
    jit, found = set(), []
    for n, line in enumerate(source, 1):                          # the lines of every function under @triton.jit
        if line.startswith("@triton.jit"):
            body = next((m for m in range(n, len(source)) if source[m].startswith("def ")), None)
            if body is not None and not source[body].startswith("def sample_kernel("):     # given code: not yours
                end = next((m for m in range(body + 1, len(source)) if source[m] and not source[m][0].isspace()),
                           len(source))
                jit.update(range(body + 1, end + 1))
    for tok in tokens:
        if tok.type == tokenize.OP and tok.string in ("/", "/=") and tok.start[0] in jit:
            found.append((tok.start[0], source[tok.start[0] - 1].strip()[:90]))
    return list(dict.fromkeys(found))
