"""The suite's own parallel set-up does what conftest.py and pytest.ini say: under pytest-xdist's loadgroup, a test
marked xdist_group carries its group in its node id, which is what keeps the group on one worker (the browser tests
share one JupyterLab and one Chromium that way)."""
import os

import pytest


@pytest.mark.xdist_group("suite-setup")
def test_xdist_group_keeps_a_group_on_one_worker(request):
    if not os.environ.get("PYTEST_XDIST_WORKER") or not getattr(request.config.option, "loadgroup", False):
        pytest.skip("runs under pytest-xdist's --dist loadgroup (pytest.ini's default)")
    from importlib import metadata
    versions = f"pytest {metadata.version('pytest')}, pytest-xdist {metadata.version('pytest-xdist')}"
    assert request.node.nodeid.endswith("@suite-setup"), (
        f"node id {request.node.nodeid!r}, expected it to end with '@suite-setup': with {versions} xdist_group does "
        "nothing, and each worker starts its own JupyterLab; install requirements.txt's range")
