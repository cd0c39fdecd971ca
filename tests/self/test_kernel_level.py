"""The kernel level is graded right: every known-buggy kernel fails the check aimed at it with the cause named, the
steps pass one by one as they are written, and the interpreter's additions (launch records, memory checks) hold."""
import os
import re

import pytest

pytest.importorskip("triton")

import torch  # noqa: E402

from course import kernel_interp, problems  # noqa: E402
from tests.self.helpers import check_ids, mutate, run  # noqa: E402
from tests.self.mutants_kernel import KERNEL  # noqa: E402

KERNEL_IDS = check_ids("p08-kernel")
OWN = [cid for cid in KERNEL_IDS if cid[0] in "KGC"]        # the level's own checks (the rest are p08's, shared)


@pytest.mark.parametrize("mutant", KERNEL, ids=[m.name for m in KERNEL])
def test_kernel_mutant_fails_the_check_aimed_at_it(mutant, tmp_path):
    impl = mutate("p08-kernel", mutant, tmp_path)
    result = run("p08-kernel", impl, [mutant.aimed_at])[mutant.aimed_at]
    assert result.status in ("fail", "error"), f"{mutant.name} ({mutant.bug}): {mutant.aimed_at} -> {result.status}"
    text = " ".join(result.lines)
    assert mutant.named_in(text), f"{mutant.name} ({mutant.bug}): the report does not say {mutant.phrase!r}: {text}"


def test_every_check_of_the_level_has_a_mutant():
    assert {m.aimed_at for m in KERNEL} == set(OWN)


STEPS = [("launch_config", "row_max"), ("count_at_least", "kth_largest"), ("units", "mass_at_least"), ("top_p_cut",),
         ("draw",)]


def _blocks(text: str) -> dict:
    """name -> its whole definition (decorator included), for the functions of a kernel file."""
    out = {}
    for match in re.finditer(r"(?:@triton\.jit\n)?def (\w+)\(.*?(?=\n\n\n|\n# )", text, flags=re.S):
        out[match[1]] = match[0]
    return out


def test_the_steps_pass_one_by_one_as_they_are_written(tmp_path):
    """The stub with steps 1..n of the solution pasted in: exactly the checks of steps 1..n pass."""
    kernel = problems.get("p08-kernel")
    stub, solution = kernel.path("stub").read_text(), kernel.path("solution").read_text()
    mine, theirs = _blocks(stub), _blocks(solution)
    step_checks = [kernel.step_checks(str(n)) for n in range(1, 6)]
    ids = [cid for checks in step_checks for cid in checks]
    text = stub
    for done, names in enumerate(STEPS, start=1):
        for name in names:
            text = text.replace(mine[name], theirs[name]) if name in mine else \
                text.replace("@triton.jit\ndef kth_largest", theirs[name] + "\n\n\n@triton.jit\ndef kth_largest", 1)
        path = tmp_path / f"after_{done}.py"
        path.write_text(text, encoding="utf-8")
        results = run("p08-kernel", path, ids)
        passing = {cid for cid, r in results.items() if r.passed}
        written = {cid for checks in step_checks[:done] for cid in checks}
        assert passing == written, (done, {cid: (r.status, r.lines[:1]) for cid, r in results.items()})
        assert all(results[cid].status == "todo" for cid in set(ids) - written)


def test_a_load_past_the_tensor_is_named_with_its_line(tmp_path):
    kernel_interp.setup("cpu")
    source = tmp_path / "reads_too_far.py"
    source.write_text("import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef first_block(x_ptr, out_ptr, "
                      "BLOCK: tl.constexpr):\n    tl.store(out_ptr, tl.max(tl.load(x_ptr + tl.arange(0, BLOCK)), 0))\n")
    from course.loader import load_module
    module = load_module(source)
    x, out = torch.randn(100), torch.empty(1)
    with pytest.raises(Exception) as raised:
        module.first_block[(1,)](x, out, BLOCK=128)
    inner = raised.value
    while not isinstance(inner, kernel_interp.OutOfBounds) and inner.__cause__ is not None:
        inner = inner.__cause__
    assert isinstance(inner, kernel_interp.OutOfBounds), raised.value
    assert (inner.kind, inner.name, inner.element, inner.numel) == ("load", "x_ptr", 100, 100)
    assert inner.line and inner.line[1] == 7
    module.first_block[(1,)](x, out, BLOCK=64)                     # inside the tensor: no complaint
    assert out.item() == x[:64].max().item()


def test_launches_are_recorded_with_their_grid_and_parameters():
    kernel_interp.setup("cpu")
    from course.loader import load_solution
    solution = load_solution(problems.get("p08-kernel"))
    params = [solution.SamplingParams(top_k=5, seed=1)] * 3
    with kernel_interp.recording() as launches:
        solution.KernelSampler().sample(torch.randn(3, 50), ["a", "b", "c"], params, [[]] * 3)
    assert len(launches) == 1
    launch = launches[0]
    assert (launch.kernel, launch.grid, launch.params["BLOCK"]) == ("sample_kernel", (3,), solution.BLOCK)
    assert launch.signature["x_ptr"] == "*fp32" and launch.signature["BLOCK"] == "constexpr"
    assert launch.per_row() == ((), (("BLOCK", repr(solution.BLOCK)), ("PROBS", "False"), ("num_warps", "4")))


def test_a_kernel_that_never_ends_is_stopped_at_its_line(tmp_path):
    """A search whose loop never ends: the time limit stops the grade and names the kernel's line."""
    from tests.self.helpers import check_sh
    source = problems.get("p08-kernel").path("solution").read_text(encoding="utf-8")
    assert source.index("for _ in range(32):") > source.index("def kth_largest")       # the first: kth_largest's
    path = tmp_path / "endless.py"
    path.write_text(source.replace("for _ in range(32):", "for _ in range(2**40):", 1), encoding="utf-8")
    code, out, _ = check_sh("p08-kernel", "--impl", str(path), "--only", "K2", "--timeout", "6", "--lang", "en")
    lines = path.read_text().splitlines()

    def body(name, end):                       # the lines of a function, from its def to its return
        first = next(n for n, text in enumerate(lines, 1) if text.startswith(f"def {name}("))
        return range(first + 1, next(n for n, text in enumerate(lines, 1) if n > first and text.strip() == end) + 1)
    assert code != 0 and "timed out" in out, out
    name, at = re.search(r"when stopped it was in (\w+)\(\)", out), re.search(r"endless\.py:(\d+)\b", out)
    loop = {"count_at_least": body("count_at_least", "return count"),
            "kth_largest": body("kth_largest", "return key_value(lo)")}
    assert name and at and name[1] in loop and int(at[1]) in loop[name[1]], out    # a line of the endless search,
    #                                                                                 wherever the limit found it


def test_a_step_not_written_reads_as_such_when_the_kernel_is_compiled(tmp_path):
    """On a GPU a stub's `raise _todo(...)` inside a jit function never runs: Triton refuses the reference to _todo
    when it hashes the kernel. The report still names the unwritten step, at its line: the probed step's own, else
    that of a step it calls; a whole check's error too."""
    import json
    import subprocess
    import sys
    import types

    from course.grader.worker import classify
    from course.loader import load_module
    from tests.p08_kernel.checks_compile import TARGET
    from tests.p08_kernel.context import KernelCtx

    stub = problems.get("p08-kernel").path("stub")
    job = {"path": str(stub), "kernel": "row_max", "signature": {"row": "*fp32", "V": "i32", "temperature": "fp32",
           "BLOCK": "constexpr"}, "constants": {"BLOCK": 128}, "options": {}, "target": TARGET}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "tests.p08_kernel.compile_probe", json.dumps(job)], env=env,
                          capture_output=True, text=True, timeout=120)
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert "_todo" in answer.get("reason", ""), answer                  # what the compiler says of the stub's step
    refused = RuntimeError(answer["reason"])

    def compiled_stub_step():
        raise refused
    from course.notebook.kernel_impl import _written
    assert not _written(compiled_stub_step)                             # the notebook counts it as not written

    def graded(path, name):
        ctx = KernelCtx(problem=problems.get("p08-kernel"), impl=load_module(path), impl_path=str(path),
                        device="cpu", lang="en")
        return ctx, classify(ctx.kernel_cause(refused, name), path, "en")

    def line_of(path, text):
        return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)

    for name, step in (("row_max", 1), ("kth_largest", 2), ("top_p_cut", 4)):
        ctx, result = graded(stub, name)
        assert result["status"] == "todo", result
        assert result["lines"][0].startswith(f"not implemented yet: {name} (step {step}, see notebooks/en/"), result
        todo = f'raise _todo({step}, "{name}")'
        assert result["where"].endswith(f":{line_of(stub, todo)}"), result

    calls = tmp_path / "calls.py"                     # a written step that calls an unwritten one
    calls.write_text("import triton\n\n\ndef _todo(step, name):\n    return NotImplementedError(f\"p08-kernel step "
                     "{step} {name}: see notebooks/p08_kernel.ipynb §{step}\")\n\n\n@triton.jit\ndef first(x):\n"
                     "    raise _todo(1, \"first\")\n\n\n@triton.jit\ndef units(z):\n    raise _todo(3, \"units\")\n"
                     "\n\n@triton.jit\ndef mass(z):\n    return units(z) + 1\n", encoding="utf-8")
    _, result = graded(calls, "mass")
    assert result["status"] == "todo" and result["lines"][0].startswith("not implemented yet: units (step 3"), result
    assert result["where"].endswith(f":{line_of(calls, 'raise _todo(3')}"), result

    def whole(_ctx):
        raise refused                                  # as the stub's sample() would, its kernel refused
    with pytest.raises(NotImplementedError, match="step 1 launch_config"):
        ctx.run(types.SimpleNamespace(id="G1", fn=whole))


def test_the_hints_worked_rows_are_the_kernels_answers():
    """Hint L1's examples and L3's trace, computed by the reference kernel's own steps."""
    from course import kernel_oracle as oracle
    from course import kernel_probes as probes
    from course.loader import load_solution
    kernel_interp.setup("cpu")
    solution = load_solution(problems.get("p08-kernel"))
    inf = float("inf")
    row = torch.tensor([[0.5, 2.0, -1.0, 2.0, 1.5, -inf, 0.0, 2.0, 1.0, -3.0]])
    z, col = probes.row_max(solution.row_max, row, [0.5], 4, "cpu")
    assert (z.item(), col.item()) == (4.0, 1)                                           # example 1
    kth = probes.kth(solution.kth_largest, row.expand(3, -1), [1.0] * 3, [2, 4, 10], 4, "cpu").tolist()
    assert kth == [2.0, 1.5, -inf]                                                      # example 2
    scale = oracle.scale_of(8)                                                          # example 3
    cut = probes.cut(solution.top_p_cut, torch.zeros(1, 8), [1.0], [0.0], [4 * 2 ** 58], scale, 4, "cpu")
    assert scale == 2.0 ** 58 and [v.item() for v in cut] == [0.0, 3, 4 * 2 ** 58]
    drawn = probes.draw(solution.draw, torch.zeros(1, 8), [1.0], [0.0], [0.0], [3], [4 * 2 ** 58], [0.5], scale, 4,
                        "cpu")
    assert drawn.item() == 2
    scale = oracle.scale_of(10)                                                         # L3's trace, top_k 4, top_p 0.9
    kept = probes.mass(solution.mass_at_least, row, [1.0], [2.0], [1.5], scale, 4, "cpu").item()
    quota = oracle.quota(0.9, kept)
    assert round(kept / scale, 3) == 3.607 and round(quota / scale, 3) == 3.246
    cut, last, kept = (v.item() for v in probes.cut(solution.top_p_cut, row, [1.0], [2.0], [quota], scale, 4, "cpu"))
    assert (cut, last, round(kept / scale, 3)) == (1.5, 4, 3.607)
    assert probes.draw(solution.draw, row, [1.0], [2.0], [cut], [last], [kept], [0.5], scale, 4, "cpu").item() == 3
    for lang in ("en", "zh"):
        from course import hints
        l1, l3 = hints.read("p08-kernel", 1, lang), hints.read("p08-kernel", 3, lang)
        assert "row_max -> (4.0, 1)" in l1 and "kth_largest(k=4) -> 1.5" in l1 and "(cut 0.0, last 3" in l1
        assert "3.607" in l3 and "3.246" in l3 and "last = 4" in l3


PIVOT_SEARCH = '''    lo = tl.full((), KEY_MIN, tl.int64)
    width = tl.full((), 1 << 28, tl.int64)
    for _ in range(8):
        pivots = tl.minimum(lo + (tl.arange(0, 16) + 1).to(tl.int64) * width, KEY_MAX + 1)
        counts = tl.zeros((16,), tl.int32)
        for start in range(0, V, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            z = tl.div_rn(tl.load(row + cols, mask=cols < V, other=float("-inf")), temperature)
            counts += tl.sum(((z[:, None] >= key_value(pivots)[None, :]) & (cols < V)[:, None]).to(tl.int32), 0)
        lo += tl.sum((counts >= k).to(tl.int64), 0) * width
        width = width // 16
    return key_value(lo)
'''

# correct kernels in other styles: each passes the checks its choice could trip
CORRECT_KERNELS = [
    ("units_by_exp2", ["K3.units", "K3.mass_at_least", "K4.top_p_cut", "K5.draw", "G1"],
     (("return (tl.exp(z - z_max) * scale).to(tl.int64)",
       "return (tl.exp2((z - z_max) * 1.4426950408889634) * scale).to(tl.int64)"),)),
    ("block_256_two_warps", ["K1.launch", "K1.row_max", "G2", "G3", "G4"],
     (("BLOCK = 1024", "BLOCK = 256"), ("NUM_WARPS = 4", "NUM_WARPS = 2"))),
    ("sixteen_pivots_a_pass", ["K2.kth_largest", "G1"],
     (("    lo = tl.full((), KEY_MIN, tl.int64)\n    hi = tl.full((), KEY_MAX + 1, tl.int64)\n    for _ in range(32):\n"
       "        mid = lo + (hi - lo) // 2\n"
       "        enough = count_at_least(row, V, temperature, key_value(mid), BLOCK) >= k\n"
       "        lo = tl.where(enough, mid, lo)\n        hi = tl.where(enough, hi, mid)\n    return key_value(lo)\n",
       PIVOT_SEARCH),)),
]


@pytest.mark.parametrize("name,ids,patches", [pytest.param(*c, id=c[0]) for c in CORRECT_KERNELS])
def test_a_correct_kernel_in_another_style_passes(name, ids, patches, tmp_path):
    from tests.self.mutants import Mutant
    impl = mutate("p08-kernel", Mutant(name, ids[0], patches, "a correct style"), tmp_path)
    results = run("p08-kernel", impl, ids)
    assert all(r.passed for r in results.values()), {cid: r.lines for cid, r in results.items() if not r.passed}
