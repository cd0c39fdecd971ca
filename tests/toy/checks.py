"""The toy problem's two checks: they use only the grader's generic Ctx."""
from course.grader.checks import Fail, check


@check("C1.inside", "区间内的值不变", "values inside the range stay", hint=("toy", 1, "q1"))
def c1_inside_values_stay(ctx):
    got = ctx.fn("clamp")([1, 2, 3], 0, 5)
    if got != [1, 2, 3]:
        raise Fail(f"called clamp([1, 2, 3], 0, 5) -> {got!r}, expected [1, 2, 3]", where="clamp")


@check("C2.outside", "区间外的值移到最近的端点", "values outside go to the nearest end", hint=("toy", 1, "q1"))
def c2_outside_values_go_to_the_nearest_end(ctx):
    got = ctx.fn("clamp")([-4, 9], 0, 5)
    if got != [0, 5]:
        raise Fail(f"called clamp([-4, 9], 0, 5) -> {got!r}, expected [0, 5]",
                   ctx.t("低于 low 的变成 low，高于 high 的变成 high",
                         "below low becomes low, above high becomes high"),
                   where="clamp")
