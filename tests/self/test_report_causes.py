"""One block per cause: a single-bug file's report shows its cause once, names the root cause's step in its first block
and in `next:`, and keeps its failure part short (p08 and p08-fast)."""
import pytest

from course import problems
from course.grader import report
from course.grader.checks import checks_for
from tests.self import mutants, mutants_feedback_fast
from tests.self.helpers import check_ids, mutate, run

MAX_FAILURE_LINES = 30


def report_of(problem: str, impl, lang: str = "en", ids=None) -> tuple:
    """(failure part, next line) of the report check.sh prints for impl, graded in process: the failure part is what the
    Collapser renders for the failing checks (their blocks and the one-line lists of checks that share a cause)."""
    ids = ids or check_ids(problem)
    results = run(problem, impl, ids, lang=lang)
    catalogue = {c.id: c for c in checks_for(problems.get(problem))}
    collapser, lines, first = report.Collapser(lang, verbose=False, color=False), [], None
    for cid in ids:
        result = results[cid]
        if result.passed:
            continue
        first = first or result
        lines += collapser.render(result, catalogue[cid])
    lines += collapser.tail()
    return lines, (report.next_line(first, catalogue[first.id], lang) if first else "")


def by_name(group, *names):
    found = {m.name: m for m in group}
    return [found[n] for n in names]


# single-bug files whose reports repeated one cause in many blocks (a review of 2026-12-03)
SINGLE_BUGS = by_name(mutants.P08, "column_output", "drop_crossing_token", "top_p_in_place_seen_by_i4",
                      "temperature_after_filters", "divide_before_greedy", "empty_history_crash_seen_by_e2_off",
                      "penalty_in_place", "float_output", "top_p_gather_seen_by_s6")
DEFAULT = {"column_output", "empty_history_crash_seen_by_e2_off"}      # the others: -m slow (a grade each)


@pytest.mark.parametrize("mutant", [pytest.param(m, marks=() if m.name in DEFAULT else pytest.mark.slow, id=m.name)
                                    for m in SINGLE_BUGS])
def test_a_single_bug_p08_report_stays_short(mutant, tmp_path):
    lines, last = report_of("p08", mutate("p08", mutant, tmp_path))
    assert lines, f"{mutant.name}: nothing failed"
    assert len(lines) <= MAX_FAILURE_LINES, f"{mutant.name}: {len(lines)} failure lines\n" + "\n".join(lines)
    assert last.startswith("next: "), last


FAST_BUGS = [pytest.param(m, marks=() if m.name in mutants_feedback_fast.DEFAULT else pytest.mark.slow, id=m.name)
             for m in mutants_feedback_fast.SINGLE_BUGS]


@pytest.mark.parametrize("mutant", FAST_BUGS)
def test_a_single_bug_p08_fast_report_stays_short(mutant, tmp_path):
    """A bug in one of the learner's steps is one block, under its step check: every later check that fails names
    that step as its cause and is listed on one line."""
    impl = mutate("p08-fast", mutant, tmp_path)
    lines, last = report_of("p08-fast", impl)
    assert lines and len(lines) <= MAX_FAILURE_LINES, f"{mutant.name}: {len(lines)} failure lines\n" + "\n".join(lines)
    if mutant.name in mutants_feedback_fast.STEP_BUGS:
        blocks = [line for line in lines if line.startswith("  ✗ ") and "blocks" not in line]
        assert len(blocks) == 1 and blocks[0].startswith(f"  ✗ {mutant.aimed_at.split('.')[0]} "), "\n".join(lines)
        text = " ".join(line.strip() for line in lines)                   # a folded line joined again
        assert mutant.named_in(text) and last.startswith("next: fix T"), "\n".join(lines + [last])


ROOTS = [  # (mutant, the checks that fail, in report order, the check its first block and next: must name as the root)
    ("divide_before_greedy", ["E1.greedy", "E1.history", "I3", "I3.edges"], "I3"),
    ("temperature_after_filters", ["I6", "S0", "S1-5"], "S1-5"),
    ("penalty_in_place", ["E1.penalty", "I6", "I2"], "E1.penalty"),
]


@pytest.mark.parametrize("name,ids,root", ROOTS)
def test_the_first_block_and_next_name_the_same_root(name, ids, root, tmp_path):
    """The block under the first failing check names the root (the check itself, or "fix <root> first"), `next:` names
    the same, and the other checks are one line."""
    mutant = by_name(mutants.P08, name)[0]
    lines, last = report_of("p08", mutate("p08", mutant, tmp_path), ids=ids)
    first_block = []
    for line in lines[1:]:
        if line.startswith("  ✗"):
            break
        first_block.append(line)
    named = lines[0].startswith(f"  ✗ {root.split('.')[0]}") or f"fix {root} first" in " ".join(first_block)
    assert named and (f"fix {root} first" in last or root == ids[0]), "\n".join(lines + [last])
    assert sum(line.startswith("  ✗") for line in lines) == 2, "\n".join(lines)


def test_a_crash_is_reported_at_the_line_that_raised(tmp_path):
    """An empty history crashing the penalty (torch.tensor([]) is float): E2.off reports the crash where it happened,
    in apply_repetition_penalty, not the top-k 'off' rule at `def sample`."""
    mutant = by_name(mutants.P08, "empty_history_crash_seen_by_e2_off")[0]
    impl = mutate("p08", mutant, tmp_path)
    result = run("p08", impl, ["E2.off"])["E2.off"]
    raised = [i for i, text in enumerate(impl.read_text().splitlines(), 1) if "values = out[seen]" in text]
    assert result.status == "error" and result.where == f"{impl}:{raised[0]}" or \
        (result.where or "").endswith(f":{raised[0]}"), (result.where, raised, result.lines)
    assert "apply_repetition_penalty raised IndexError" in result.lines[0], result.lines


def test_the_collapser_shows_each_cause_once():
    """Synthetic results, no grading: a check named as the cause, a later "fix X first", the same function wrong, the
    same crash, the same explanation with other numbers; each later one is a name on its cause's one line."""
    from course.grader.runner import Result

    def fail(cid, *lines, where="f.py:60", status="fail"):
        return Result(cid, status, list(lines), where=where)

    top_p = "called apply_top_p([1, 2], top_p=0.7) -> kept {0}, expected {0, 1}"
    shape = "its shape is [1, 1], it must be [1]"
    contract = "sample() returns a LongTensor of shape [B]"
    results = [fail("E2.top_p", top_p, "why", where="f.py:36"),
               fail("E2.trace", top_p.replace("0.7", "0.6"), where="f.py:36"),
               fail("I6", "draws", top_p, "the cause is step 5, apply_top_p: fix E2.top_p first", where="f.py:36"),
               fail("E3", "called Sampler.sample(logits [1, 4]) -> tensor(shape=[1, 1])", contract, shape),
               fail("I1", "called Sampler.sample(logits [7, 4]) -> tensor(shape=[7, 1])", contract,
                    shape.replace("1", "7")),
               fail("I5", "called Sampler.sample(logits [2, 4]) -> list", contract, "it returned a list, not a tensor"),
               fail("I4", "apply_top_k raised IndexError: x", "called apply_top_k(...)", status="error"),
               fail("S0", "apply_top_k raised IndexError: x", "called apply_top_k(other)", status="error")]
    collapser = report.Collapser("en", verbose=False, color=False)
    shown = [line for r in results for line in collapser.render(r, None) if line.startswith("  ✗")]
    assert [line.split()[1] for line in shown] == ["E2.top_p", "E3", "I5", "I4"], shown
    assert collapser.tail() == ["  ✗ the same cause as E2.top_p blocks 2 more checks: ✗ E2.trace, ✗ I6",
                                "  ✗ the same cause as E3 blocks 1 more check: ✗ I1",
                                "  ✗ the same cause as I4 blocks 1 more check: ✗ S0"]
    last = report.next_line(results[2], None, "en")
    assert last.startswith("next: the cause is step 5, apply_top_p: fix E2.top_p first"), last
