"""The self-tests run in parallel (pytest.ini: pytest-xdist, one worker per core, at most 4): each worker and
everything it starts (graders, notebook kernels, JupyterLab) computes with one torch thread, so two workers on
two cores never wait on each other's spinning OpenMP threads (no test depends on the thread count), and keeps its
own progress file, so one worker's `lang en` or grade never shows in another's."""
import os
import tempfile

import torch


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        os.environ["OMP_NUM_THREADS"] = "1"          # subprocesses: graders, kernels, benchmarks
        torch.set_num_threads(1)
        os.environ["COURSE_STATE"] = os.path.join(tempfile.mkdtemp(prefix=f"course-{worker}-"), "state.json")
