"""Why a whole-kernel check failed: the learner's own steps re-run, one at a time, on the very row, each against what
it must return (course/kernel_oracle.py). The first step that is wrong is the cause: the check says "fix K<n>
first" and names it, instead of guessing from the kernel's output."""
import torch

from course import kernel_oracle as expect, kernel_probes as probes
from course.kernel_batch import knobs
from tests.p08_kernel.checks_steps import f32, learners_block
from tests.p08_kernel.checks_steps_mass import units_allowance
from tests.p08_kernel.context import STEP_OF_KERNEL

INF = float("inf")


def first_wrong_step(ctx, x, t, top_k, top_p, u=None):
    """(check id, what differs) for the first step of the file that is wrong on row x [V] (penalised, fp32) with
    temperature t, top_k (0: off) and top_p (1: off), and its draw at u when given; None when every step is right
    on it (or cannot be asked)."""
    vocab = len(x)
    block = learners_block(ctx, vocab) or 1024
    scale = expect.scale_of(vocab)
    try:
        return _first_wrong(ctx, x.float().cpu(), t, top_k, top_p, vocab, block, scale, u)
    except Exception:  # noqa: BLE001 - a step that raises here is reported by its own check
        return None


def _first_wrong(ctx, x, t, top_k, top_p, vocab, block, scale, u):
    run = lambda fn, *args: fn(ctx.step_fn(args[0]), *args[1:], ctx.device)  # noqa: E731
    top, col = expect.row_max(x, t)
    z_max, got_col = run(probes.row_max, "row_max", x[None], [t], block)
    if float(z_max[0]) != top or int(got_col[0]) != col:
        return "K1.row_max", f"row_max -> ({f32(float(z_max[0]))}, {int(got_col[0])}), {ctx.t('期望', 'expected')} ({f32(top)}, {col})"
    low = -INF
    if top_k:
        low = expect.kth(x, t, top_k)
        got = float(run(probes.kth, "kth_largest", x[None], [t], [top_k], block)[0])
        if got != low:
            return "K2.kth_largest", f"kth_largest(k={top_k}) -> {f32(got)}, {ctx.t('期望', 'expected')} {f32(low)}"
    w = run(probes.units, "units", x[None], [t], [top], scale, block)[0].tolist()
    z = expect.z_of(x, t)
    want_w = expect.numpy_units(z, top, scale)
    off = [c for c, (a, b) in enumerate(zip(w, want_w))
           if a != b and (b == int(scale) or abs(a - b) > units_allowance(b, float(z[c]) - top))]
    if off:
        c = off[0]
        return "K3.units", f"units(z={f32(float(z[c]))}) -> {w[c]}, {ctx.t('期望', 'expected')} {want_w[c]}"
    total = expect.mass_at_least(z, w, low)
    got = int(run(probes.mass, "mass_at_least", x[None], [t], [top], [low], scale, block)[0])
    if got != total:
        return "K3.mass_at_least", f"mass_at_least(v={f32(low)}) -> {got}, {ctx.t('期望', 'expected')} {total}"
    cut = (low, vocab - 1, total)
    if top_p < 1:
        q = expect.quota(top_p, total)
        cut = expect.top_p_cut(z, w, q)
        got = run(probes.cut, "top_p_cut", x[None], [t], [top], [q], scale, block)
        got = float(got[0][0]), int(got[1][0]), int(got[2][0])
        if got != cut:
            return "K4.top_p_cut", (f"top_p_cut(quota={q}) -> (cut {f32(got[0])}, last {got[1]}, kept {got[2]}), "
                                    f"{ctx.t('期望', 'expected')} (cut {f32(cut[0])}, last {cut[1]}, kept {cut[2]})")
    if u is not None:
        want = expect.draw(z, w, *cut, u)
        got = int(run(probes.draw, "draw", x[None], [t], [top], [cut[0]], [cut[1]], [cut[2]], [u], scale, block)[0])
        if got != want:
            return "K5.draw", f"draw(u={u!r}) -> {got}, {ctx.t('期望', 'expected')} {want}"
    return None


def cause_line(ctx, found) -> list:
    """The lines that name a found cause: what the step returned on this row, and "fix K<n> first"."""
    if not found:
        return []
    check_id, evidence = found
    zh, en = STEP_OF_KERNEL[check_id]
    return [ctx.t(f"在这一行上单独重跑你的各步：{evidence}", f"your steps re-run alone on this row: {evidence}"),
            ctx.t(f"原因在{zh}：先修好 {check_id}", f"the cause is {en}: fix {check_id} first")]


def penalised(ctx, logits_row, params, prev):
    """The row the kernel sees: the given penalty applied, fp32, on the CPU."""
    from course.fast_batch import penalized_fp32
    return penalized_fp32(logits_row[None].float(), [params], [prev])[0].cpu()


def row_cause(ctx, logits_row, params, prev, u=None) -> list:
    """cause_line for one request's row (its draw at u too, when given), or []; greedy rows: row_max alone."""
    x = penalised(ctx, torch.as_tensor(logits_row), params, prev)
    t, top_k, top_p, _ = knobs([params], len(x), [0.0], "cpu")[0].tolist()    # as the given kernel reads them
    greedy = t == 0.0                                                            # (greedy: t 0, no filter)
    return cause_line(ctx, first_wrong_step(ctx, x, 1.0 if greedy else t, int(top_k), top_p, None if greedy else u))
