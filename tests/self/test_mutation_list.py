"""The list of equivalent mutants stays honest: every entry names a line that is still in its solution,
an operator, the mutated line and a reason; and the mutation run counts an unlisted survivor as such."""
import signal
import tomllib


from course import problems
from course.grader import mutation

DATA = tomllib.loads(mutation.EQUIVALENTS.read_text(encoding="utf-8"))
ENTRIES = [(name, e) for name in DATA for e in DATA[name]]


def source_of(label):
    """A list's label is a problem (its solution) or 'problem:path' (a module the solution imports)."""
    problem, _, module = label.partition(":")
    return mutation.target(problem, module or None)[2]


def test_the_list_only_names_known_problems_and_files():
    assert {label.partition(":")[0] for label in DATA} <= set(problems.problems())
    assert all(source_of(label).is_file() for label in DATA)


def test_a_module_target_has_its_own_label_files_and_source():
    assert mutation.target("p08-fast")[:2] == ("p08-fast", "p08-fast")
    label, slug, source = mutation.target("p08-fast", "course/selection.py")
    assert (label, slug) == ("p08-fast:course/selection.py", "p08-fast-selection")
    assert source == mutation.ROOT / "course/selection.py"


def list_problems(data) -> list:
    """What is wrong with the list of equivalents, one line per stale line or bad entry, grouped by source line."""
    by_line: dict = {}
    for label in data:
        for entry in data[label]:
            by_line.setdefault((label, entry["before"]), []).append(entry)
    code_of = {label: {line.split("#")[0].strip() for line in source_of(label).read_text(encoding="utf-8").splitlines()}
               for label in data}
    found = []
    for (label, before), entries in by_line.items():
        if before not in code_of[label]:
            found.append(f"stale: {label}: {before!r} is no longer a line of its source ({len(entries)} entries)")
        for e in entries:
            if not e["operator"].startswith("core/") or e["after"] == e["before"]:
                found.append(f"malformed: {label}: {before!r} -> {e['after']!r} ({e['operator']})")
            if len(e["reason"]) <= 20:
                found.append(f"no reason: {label}: {before!r} -> {e['after']!r}: say why it cannot be told apart")
    return found


def test_every_equivalent_mutant_is_still_in_its_solution_and_says_why():
    """One table-driven pass over the whole list: every stale or unexplained entry is named at once."""
    assert ENTRIES
    assert not list_problems(DATA), "\n".join(list_problems(DATA))


def test_a_stale_or_unexplained_entry_is_named():
    label, entry = ENTRIES[0]
    data = {label: [entry, dict(entry, before="x = gone()"), dict(entry, reason="because")]}
    found = list_problems(data)
    assert len(found) == 2, found
    assert any(f.startswith("stale: ") and "'x = gone()'" in f for f in found), found
    assert any(f.startswith("no reason: ") for f in found), found


def record(outcome, before, after, op="core/NumberReplacer"):
    diff = f"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-    {before}  # note\n+    {after}  # note\n"
    return [{"mutations": [{"operator_name": op, "start_pos": [1, 0]}]}, {"test_outcome": outcome, "diff": diff}]


def test_summary_counts_killed_listed_and_unexplained_survivors(monkeypatch):
    monkeypatch.setattr(mutation, "equivalents", lambda name: {("core/NumberReplacer", "a = 1", "a = 2"): "why"})
    records = [record("killed", "b = 1", "b = 2"), record("survived", "a = 1", "a = 2"),
               record("survived", "c = 1", "c = 0"),
               [{"mutations": [{"operator_name": "core/X", "start_pos": [3, 0]}]}, None]]
    result = mutation.summarize("p08", records, 1.0)
    assert (result["mutants"], result["run"], result["killed"], result["equivalent"]) == (4, 3, 1, 1)
    assert [u["key"] for u in result["unexplained"]] == [["core/NumberReplacer", "c = 1", "c = 0"]]


def test_recheck_forgets_only_the_unlisted_survivors(tmp_path):
    import sqlite3
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        db.execute("CREATE TABLE mutation_specs (job_id TEXT, operator_name TEXT)")
        db.execute("CREATE TABLE work_results (job_id TEXT, test_outcome TEXT, diff TEXT)")
        for job, outcome, before, after in [("k", "KILLED", "b = 1", "b = 2"), ("listed", "SURVIVED", "a = 1", "a = 2"),
                                            ("new", "SURVIVED", "c = 1", "c = 0")]:
            db.execute("INSERT INTO mutation_specs VALUES (?, 'core/NumberReplacer')", (job,))
            diff = record(outcome, before, after)[1]["diff"]
            db.execute("INSERT INTO work_results VALUES (?, ?, ?)", (job, outcome, diff))
        forgotten = mutation.forget_unlisted_survivors(db, {("core/NumberReplacer", "a = 1", "a = 2"): "why"})
        left = sorted(job for (job,) in db.execute("SELECT job_id FROM work_results"))
    assert (forgotten, left) == (1, ["k", "listed"])


def test_the_oracle_passes_the_solution_and_kills_a_mutant(tmp_path):
    """The mutation run's oracle, in process (as its forked child runs it): 0 for the solution, 1 for a mutant.
    It once answered 1 for everything (an event without a status), and a whole run read as 100 % killed."""
    from course.grader.mutation_oracle import _grade_child
    from tests.self.helpers import mutate
    from tests.self.mutants import P08

    problem = problems.get("p08")
    ids = ["E2.temperature", "I3"]
    limits = {cid: 60.0 for cid in ids}
    mutant = next(m for m in P08 if m.aimed_at in ids)
    try:
        assert _grade_child(problem, str(problem.path("solution")), ids, limits) == 0
        assert _grade_child(problem, str(mutate("p08", mutant, tmp_path)), ids, limits) == 1
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)        # the child's per-check alarm must not outlive the test
