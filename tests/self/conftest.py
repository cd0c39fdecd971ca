"""The self-tests run in parallel (pytest.ini: pytest-xdist, one worker per core, at most 4): each worker and
everything it starts (graders, notebook kernels, JupyterLab) computes with one torch thread, so two workers on
two cores never wait on each other's spinning OpenMP threads (no test depends on the thread count), and keeps its
own progress file, so one worker's `lang en` or grade never shows in another's. A notebook the browser test runs
is not run headless as well (below)."""
import os
import sys
import tempfile

import pytest
import torch

# jsonschema (imported by nbformat) builds an IRI grammar at import when the optional rfc3987_syntax is installed (the
# jupyter packages bring it): about 3 s of CPU in every worker, for a string format no notebook uses. Without it,
# jsonschema leaves that format unchecked.
sys.modules.setdefault("rfc3987_syntax", None)

# Triton's kernels (p08-kernel) run in its interpreter on a machine without a GPU. The interpreter must be chosen
# before Triton is first imported (its own @triton.jit helpers are made then), so here, before any test module.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["OMP_NUM_THREADS"] = "1"          # subprocesses: graders, kernels, benchmarks
        torch.set_num_threads(1)
        os.environ["COURSE_STATE"] = os.path.join(tempfile.mkdtemp(prefix=f"course-{worker}-"), "state.json")


# The modules whose tests take the longest (tens of seconds each) start first, so the workers finish together
# instead of one waiting on a last long test.
LONGEST_FIRST = {name: rank for rank, name in enumerate(["test_browser.py", "test_alternatives.py", "test_cli.py",
                                                         "test_notebooks.py", "test_fairness.py", "test_simulation.py",
                                                         "test_cuda_path.py"])}


@pytest.hookimpl(trylast=True)                      # after -m and -k have deselected
def pytest_collection_modifyitems(config, items):
    """The longest modules first (LONGEST_FIRST). A notebook that a selected browser test runs in JupyterLab and
    checks as saved (its `runs_notebook` mark) is not run headless as well; when the browser test is not selected,
    or cannot run here, the headless run stays."""
    items.sort(key=lambda item: LONGEST_FIRST.get(item.path.name, len(LONGEST_FIRST)))    # stable: modules stay whole
    in_browser = {mark.args[0] for item in items for mark in item.iter_markers("runs_notebook")
                  if not any(skip.args and skip.args[0] for skip in item.iter_markers("skipif"))}
    for item in items:
        notebook = getattr(item, "callspec", None) and item.callspec.params.get("notebook")
        if item.originalname == "test_notebook_runs_top_to_bottom_headless" and notebook in in_browser:
            item.add_marker(pytest.mark.skip(reason=f"{notebook} runs in JupyterLab in test_browser.py, "
                                                    "which checks it as saved"))
