"""p08-fast's step checks T1-T5: reported first and in TODO order, each turns green as its step is written (the stub
filled in one step at a time), every TODO is graded at the step its number names, and every step mutant fails the
check aimed at it with its diagnosis."""
import ast
import re

import pytest

from course import problems
from course.grader.checks import checks_for
from tests.self.helpers import mutate, run
from tests.self.mutants_fast_steps import FAST_STEPS

# (check id, the stub functions and methods it needs), in TODO order
STEPS = [("T1.route", ["route"]),
         ("T2.window_topk", ["window_topk"]),
         ("T2.canonical_window", ["canonical_window"]),
         ("T3.row_total", ["row_total"]),
         ("T4.filter_window", ["filter_window"]),
         ("T4.certain", ["filter_window"]),
         ("T5.inverse_cdf", ["inverse_cdf"]),
         ("T5.streams", ["FastSampler.__init__", "FastSampler._uniforms", "FastSampler.free"])]
IDS = [cid for cid, _ in STEPS]
TODO = re.compile(r"TODO\(p08-fast\.(\w+)\)")


def test_step_checks_come_first_in_todo_order():
    fast = problems.get("p08-fast")
    assert list(fast.checks[:len(IDS)]) == IDS         # the CLI reports them first (tests/self/test_cli.py)
    assert all(c.fn.__module__.startswith("tests.p08_fast.checks_steps") for c in checks_for(fast)[:len(IDS)])
    assert [cid for ids in fast.steps for cid in ids] == IDS
    assert fast.step_names == ("1", "2", "3", "4", "5")
    families = [f"T{step}" for step, ids in zip(fast.step_names, fast.steps) for _ in ids]
    assert [cid.split(".")[0] for cid in IDS] == families


def _definitions(path):
    """Top-level function and class definitions of a file, and the methods of its classes ("FastSampler._parts"):
    name -> source text."""
    text = path.read_text(encoding="utf-8")
    out = {}
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = ast.get_source_segment(text, node)
        if isinstance(node, ast.ClassDef):
            out.update({f"{node.name}.{item.name}": ast.get_source_segment(text, item) for item in node.body
                        if isinstance(item, ast.FunctionDef)})
    return out, text


def test_every_todo_is_graded_at_the_step_its_number_names():
    """Each stub function's TODO numbers and its NotImplementedError name one step, and that step's checks are the
    ones that grade the function. sample() and filtered_probs() are given: no TODO."""
    fast = problems.get("p08-fast")
    stub, _ = _definitions(fast.path("stub"))
    step_of_check = {cid: name for name, ids in zip(fast.step_names, fast.steps) for cid in ids}
    graded = {name: step_of_check[cid] for cid, names in STEPS for name in names}
    assert not TODO.findall(stub["FastSampler.sample"] + stub["FastSampler.filtered_probs"])
    seen = set()
    for name, text in stub.items():
        todos = set(TODO.findall(text))
        if isinstance(ast.parse(text).body[0], ast.ClassDef) or not todos:
            continue
        raised = re.findall(r'raise _todo\("?(\w+)"?, "([\w.]+)"\)', text)
        assert len(todos) == 1, (name, todos)
        step = todos.pop()
        assert raised == ([] if name == "FastSampler.__init__" else [(step, name)]), (name, step, raised)
        assert step == graded.get(name), (name, step, graded.get(name))
        seen.add(step)
    assert seen == set(fast.step_names)


def _extras(path, known):
    """Top-level statements of a file that bind names `known` lacks (the solution's own helpers, constants and
    imports, e.g. its selection), as source text: the sampler class needs them to run."""
    text = path.read_text(encoding="utf-8")
    out = []
    for node in ast.parse(text).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name for a in node.names]
        else:
            continue
        if names and not set(names) <= known:
            out.append(ast.get_source_segment(text, node))
    return "\n\n".join(out)


def test_each_step_turns_green_as_it_is_written(tmp_path):
    fast = problems.get("p08-fast")
    solution, _ = _definitions(fast.path("solution"))
    stub, text = _definitions(fast.path("stub"))
    stub_module = ast.parse(text)
    known = {a.asname or a.name for n in stub_module.body if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names}
    known |= {t.id for n in stub_module.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    known |= {name for name in stub if "." not in name}
    filled, passed, extras = set(), [], False
    for done in range(len(STEPS) + 1):
        for _, names in STEPS[:done]:
            for name in names:
                if stub[name] != solution[name] and name.startswith("FastSampler.") and not extras:
                    helpers = _extras(fast.path("solution"), known)
                    text += "\n\n\n# the solution's helpers the sampler uses\n" + helpers + "\n"
                    extras = True
                text = text.replace(stub[name], solution[name])
                stub[name] = solution[name]
                filled.add(name)
        path = tmp_path / f"after_{done}_steps.py"
        path.write_text(text, encoding="utf-8")
        results = run("p08-fast", path, IDS)
        statuses = [results[cid].status for cid in IDS]
        expected = ["pass" if set(names) <= filled else "todo" for _, names in STEPS]
        assert statuses == expected, (done, statuses, {c: r.lines for c, r in results.items()})
        for (cid, names), status in zip(STEPS, statuses):
            if status == "todo":
                line = results[cid].lines[0]
                assert line.startswith("not implemented yet: "), line
                assert any(n in line for n in names), line
        passed.append(statuses.count("pass"))
    rises = [b - a for a, b in zip(passed, passed[1:])]       # a function written turns its checks green (T4's two
    assert passed[0] == 0 and passed[-1] == len(STEPS) and min(rises) >= 0 and rises.count(0) == 1, passed  # at once)


@pytest.mark.parametrize("mutant", FAST_STEPS, ids=[m.name for m in FAST_STEPS])
def test_step_mutant_fails_the_check_aimed_at_it(mutant, tmp_path):
    assert mutant.aimed_at in IDS
    impl = mutate("p08-fast", mutant, tmp_path)
    result = run("p08-fast", impl, [mutant.aimed_at])[mutant.aimed_at]
    assert result.status in ("fail", "error"), f"{mutant.name} ({mutant.bug}): {mutant.aimed_at} -> {result.status}"
    text = " ".join(result.lines)
    assert all(mutant.phrases()) and mutant.named_in(text), f"{mutant.name}: {text}"


def test_every_step_has_a_mutant():
    assert {m.aimed_at for m in FAST_STEPS} == set(IDS)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_step_failure_reads_in_both_languages(lang, tmp_path):
    mutant = next(m for m in FAST_STEPS if m.name == "canonical_left_to_topk")
    result = run("p08-fast", mutate("p08-fast", mutant, tmp_path), [mutant.aimed_at], lang=lang)[mutant.aimed_at]
    text = " ".join(result.lines)
    expected = "期望 ids [[4, 2, 7, 9, 0]]" if lang == "zh" else "expected ids [[4, 2, 7, 9, 0]]"
    assert "called canonical_window(" in text and expected in text, text
    assert ("升序" in text) if lang == "zh" else ("ascending token id" in text)


def test_a_helper_named_like_a_step_with_other_arguments_is_the_learners_own_design(tmp_path):
    """A fast path in its own shape may have a helper called filter_window(z, top_k, top_p, row_mass): T4 must
    not call it the step's way and report a TypeError; it notes that the step is not graded on its own. The same
    helper with the step's arguments but a wrong rule still fails T4 (its certain: T4.certain)."""
    solution = problems.get("p08-fast").path("solution").read_text(encoding="utf-8")
    own = solution + ("\n\ndef filter_window(z, top_k, top_p, row_mass):   # a helper of the learner's own design\n"
                      "    raise AssertionError('the step check must not call this')\n")
    path = tmp_path / "own_helper.py"
    path.write_text(own, encoding="utf-8")
    result = run("p08-fast", path, ["T4.filter_window"])["T4.filter_window"]
    assert result.status == "pass" and "takes other arguments than this step's" in " ".join(result.lines), result.lines
    wrong = mutate("p08-fast", next(m for m in FAST_STEPS if m.name == "certain_by_count"), tmp_path)
    assert run("p08-fast", wrong, ["T4.certain"])["T4.certain"].status == "fail"


def test_stub_and_solution_share_names_signatures_and_constants():
    """One design from stub to solution: every function, class, method and constant of the solution is in the stub
    with the same signature and value (the stub adds only its _todo helper)."""
    def shape(path):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        out = {}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                out[node.name] = ast.unparse(node.args)
            elif isinstance(node, ast.ClassDef):
                out[node.name] = "class"
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        out[f"{node.name}.{item.name}"] = ast.unparse(item.args)
                    elif isinstance(item, ast.AnnAssign):
                        out[f"{node.name}.{ast.unparse(item.target)}"] = ast.unparse(item.annotation)
            elif isinstance(node, ast.Assign):
                out[", ".join(ast.unparse(t) for t in node.targets)] = ast.unparse(node.value)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out["import " + ast.unparse(node)] = "import"
        return out
    fast = problems.get("p08-fast")
    stub, solution = shape(fast.path("stub")), shape(fast.path("solution"))
    assert {k: v for k, v in stub.items() if k != "_todo"} == solution


# correct spellings of a step that the contract allows: each passes its step check (a whole grade: -m slow)
CORRECT_STEPS = [
    ("row_total_through_float64", "T3.row_total",
     (("return (units.sum(-1, keepdim=True) / scale).float()",
       "return (units.sum(-1, keepdim=True).double() / scale).float()"),)),
    ("row_total_exactly_rounded", "T3.row_total",
     (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())",
       "    return torch.tensor([[math.fsum(row)] for row in e.double().tolist()], device=e.device).float()\n"
       "    scale = 2.0 ** (62 - e.shape[-1].bit_length())"),
      ("import torch\n", "import math\n\nimport torch\n"))),
    ("row_total_coarser_int64_units", "T3.row_total",
     (("    scale = 2.0 ** (62 - e.shape[-1].bit_length())", "    scale = 2.0 ** 40"),)),
    ("window_by_plain_topk", "T2.window_topk", (("    if chunks < 4 * width:", "    if True:"),)),
    ("mass_before_as_cs_minus_e", "T4.filter_window",
     (("n_top_p = 1 + first_true(cs[:, :-1] >= top_p * mass)",
       "n_top_p = first_true((cs - e) >= top_p * mass).clamp(min=1)"),)),
    ("kept_by_masks", "T4.filter_window",
     (("e = e.masked_fill(torch.arange(z.shape[1], device=z.device) >= n_kept, 0.0)",
       "cols = torch.arange(z.shape[1], device=z.device)\n    e = torch.where(cols < n_kept, e, torch.zeros_like(e))"),
      ("total = cs.gather(1, n_kept - 1)",
       "total = torch.where(cols == n_kept - 1, cs, torch.zeros_like(cs)).sum(-1, keepdim=True)"))),
]


@pytest.mark.parametrize("name,check_id,patches", [pytest.param(*c, id=c[0]) for c in CORRECT_STEPS])
def test_a_correct_spelling_of_a_step_passes_its_check(name, check_id, patches, tmp_path):
    from tests.self.mutants import Mutant
    impl = mutate("p08-fast", Mutant(name, check_id, patches, "a correct spelling"), tmp_path)
    result = run("p08-fast", impl, [check_id])[check_id]
    assert result.status == "pass", (name, result.lines)


@pytest.mark.slow
@pytest.mark.parametrize("name,check_id,patches", [pytest.param(*c, id=c[0]) for c in CORRECT_STEPS])
def test_a_correct_spelling_of_a_step_passes_every_check(name, check_id, patches, tmp_path):
    from tests.self.helpers import check_ids
    from tests.self.mutants import Mutant
    impl = mutate("p08-fast", Mutant(name, check_id, patches, "a correct spelling"), tmp_path)
    failed = {cid: r.lines for cid, r in run("p08-fast", impl, check_ids("p08-fast")).items() if not r.passed}
    assert not failed, (name, failed)
