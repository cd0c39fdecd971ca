"""The self-tests run in parallel (pytest.ini: pytest-xdist, one worker per core, at most 4): each worker and
everything it starts (graders, notebook kernels, JupyterLab) computes with one torch thread, so two workers on
two cores never wait on each other's spinning OpenMP threads. No test depends on the thread count."""
import os

import torch


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"          # subprocesses: graders, kernels, benchmarks
        torch.set_num_threads(1)
