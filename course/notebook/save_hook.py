"""After JupyterLab saves a notebook that only gained outputs or widget state, `git status` stays clean.

The clean filter (course/notebook/nbstrip.py) strips outputs, so `git diff` is empty after a run and a save; but the
saved file's size changed, and git trusts a size change without running the filter: `git status` would report
the notebook as modified until something refreshes its index entry. This hook runs in the Jupyter server after
every save: when the saved file, cleaned by its filter, is exactly the blob already in the index, `git add`
refreshes that entry (no content change is staged). A real edit of a cell's source cleans to another blob and is
left alone, so it shows as modified. The hook never fails a save and does nothing outside a git work tree, for an
untracked file, or for a file git does not filter.

Installed by `python -m course.notebook.notebook_setup` as a Jupyter server extension: a JSON file in the
environment's etc/jupyter/jupyter_server_config.d/ names this module, and a .pth file puts the repo root on the
environment's sys.path so that the server can import it. Standard library only.
"""
import logging
import os
import subprocess
from pathlib import Path

TIMEOUT_S = 20
log = logging.getLogger(__name__)


def _git(cwd, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, GIT_LITERAL_PATHSPECS="1", GIT_TERMINAL_PROMPT="0")
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT_S)


def refresh_index(path) -> bool:
    """True when path's index entry was refreshed: path is tracked, filtered, and cleans to its index blob."""
    path = Path(path).resolve()
    if not path.is_file():
        return False
    top = _git(path.parent, "rev-parse", "--show-toplevel")
    if top.returncode:
        return False                                               # not in a git work tree
    root = Path(os.fsdecode(top.stdout.strip())).resolve()
    if root not in path.parents:
        return False
    rel = path.relative_to(root).as_posix()
    attr = _git(root, "check-attr", "-z", "filter", "--", rel).stdout.split(b"\0")
    if attr[2:3] in ([], [b"unspecified"], [b"unset"]):
        return False                                               # no clean filter: the size is the content
    staged = [e for e in _git(root, "ls-files", "-z", "--stage", "--", rel).stdout.split(b"\0") if e]
    if len(staged) != 1:
        return False                                               # untracked, or a merge in progress
    meta, _, name = staged[0].partition(b"\t")
    _mode, blob, stage = meta.split()
    if stage != b"0" or os.fsdecode(name) != rel:
        return False
    cleaned = _git(root, "hash-object", "--", rel)                 # runs the clean filter, writes nothing
    if cleaned.returncode or cleaned.stdout.strip() != blob:
        return False                                               # a real change: leave it modified
    return _git(root, "add", "--", rel).returncode == 0            # same blob: only the stat info is refreshed


def post_save(model=None, os_path=None, contents_manager=None, **_):
    """jupyter_server's post-save hook signature; never raises (a failed hook must not fail the save)."""
    try:
        if os_path and refresh_index(os_path):
            log.debug("git index refreshed for %s (only outputs changed)", os_path)
    except Exception:                                              # a save must never fail here
        log.debug("git index refresh skipped for %s", os_path, exc_info=True)


def _jupyter_server_extension_points():
    return [{"module": "course.notebook.save_hook"}]


def _load_jupyter_server_extension(serverapp):
    manager = serverapp.contents_manager
    if hasattr(manager, "register_post_save_hook"):                # jupyter_server >= 2: hooks add up
        manager.register_post_save_hook(post_save)
    elif getattr(manager, "post_save_hook", None) is None:
        manager.post_save_hook = post_save
