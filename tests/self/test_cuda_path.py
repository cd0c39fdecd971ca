"""The fast path's CUDA code path, taken on the CPU: CI has no GPU, so every branch on the device is answered the
way CUDA answers it (the log-step prefix_sum instead of torch.cumsum) and the grader's checks run on CPU tensors.
The list of branches is pinned: a new `device.type` / `is_cuda` test in the solution or the code it imports fails
here until it is added to CUDA_ANSWERS."""
import re

from course import problems
from tests.self.helpers import apply_patches, run, with_given_code
from tests.self.mutants import Mutant

SOURCES = ["solutions/p08_sampler_fast.py", "course/fast_batch.py", "course/selection.py", "course/streams.py",
           "course/sampling_params.py"]
BRANCH = re.compile(r"device\.type|\.is_cuda|torch\.cuda|device\s*==\s*['\"]c")
# each line of the solution that branches on the device, and the same line as it runs on CUDA
CUDA_ANSWERS = {
    'return e.cumsum(-1) if e.device.type == "cpu" else prefix_sum(e)': "return prefix_sum(e)",
    'if mask.device.type == "cpu":': "if False:",
}
CHECKS = ["T3.row_total", "T4.filter_window", "T4.certain", "F1", "F2", "F3", "F4", "F6", "F7",
          "F8", "I1", "E3"]


def test_every_device_branch_of_the_fast_path_has_its_cuda_answer():
    root = problems.get("p08-fast").path("solution").parents[1]
    found = {line.split("#")[0].strip() for path in SOURCES
             for line in (root / path).read_text(encoding="utf-8").splitlines() if BRANCH.search(line.split("#")[0])}
    assert found == set(CUDA_ANSWERS), f"device branches {sorted(found)}, answered {sorted(CUDA_ANSWERS)}"


def _cuda_path(folder, extra=()):
    """The solution with every device branch answered as on CUDA (plus extra patches), as a file."""
    fast = problems.get("p08-fast")
    patches = tuple(CUDA_ANSWERS.items()) + tuple(extra)
    path = folder / "cuda_path.py"
    text = with_given_code(fast.path("solution").read_text(encoding="utf-8"), patches)
    path.write_text(apply_patches(text, patches, "cuda_path"), encoding="utf-8")
    return path


def test_the_cuda_code_path_passes_the_grader_on_cpu_tensors(tmp_path):
    results = run("p08-fast", _cuda_path(tmp_path), CHECKS)
    bad = {cid: r.lines[:3] for cid, r in results.items() if r.status != "pass"}
    assert not bad, bad


# On the CPU torch.cumsum gives the window and the exact route the same floats for a top-k row, so a shared window
# whose width (set by a peer's top_k + 1 = V) decides the row's certainty changes nothing there; on CUDA's scan it
# moves the row's floats, and F4's small-vocabulary case must see it.
PEER_DECIDES_COMPLETE = Mutant("peer_decides_complete", "F4",
                               (('complete = name == "top_p" and width == vocab', "complete = width == vocab"),),
                               "a top-k row counts as certain when a peer's top_k makes the window the whole row")


def test_f4_catches_a_peer_decided_route_on_the_cuda_path(tmp_path):
    """The CUDA answers are what makes this check bite: the same mutant on the CPU path proves nothing."""
    result = run("p08-fast", _cuda_path(tmp_path, PEER_DECIDES_COMPLETE.patches), ["F4"])["F4"]
    assert result.status == "fail", (PEER_DECIDES_COMPLETE.bug, result.status, result.lines[:3])
