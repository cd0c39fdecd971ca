"""One-time notebook setup for a clone (idempotent): `python -m course.notebook.notebook_setup`.

1. Saves ipywidgets' state with the notebook (JupyterLab setting "Save Jupyter widget state in notebooks",
   written as an override for this environment's JupyterLab), so a reopened notebook shows its panels as they
   were instead of "Error displaying widget: model not found" (re-run a panel's cell to make it live again).
2. Routes notebooks/**/*.ipynb through course/notebook/nbstrip.py as a git clean filter (.gitattributes names it,
   this writes its command into .git/config): running and saving a notebook leaves `git status` clean, and
   pulling a course update never conflicts with your outputs.
"""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
FILTER = {"filter.nbstrip.clean": "python3 course/notebook/nbstrip.py", "filter.nbstrip.smudge": "cat"}


def overrides_path(prefix=sys.prefix) -> Path:
    return Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.json"


def save_widget_state(prefix=sys.prefix) -> Path:
    """Merge {"saveState": true} for the widget manager into JupyterLab's overrides.json under prefix."""
    path = overrides_path(prefix)
    data = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except ValueError:
            data = {}
    data.setdefault(WIDGETS_PLUGIN, {})["saveState"] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def git_filter(root=ROOT) -> bool:
    """Write the nbstrip filter into the clone's git config; False when root is not a git checkout."""
    if not (Path(root) / ".git").exists():
        return False
    for key, value in FILTER.items():
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True)
    return True


def main() -> int:
    path = save_widget_state()
    print(f"widget state is saved with notebooks ({path})")
    if git_filter():
        print("git: notebooks are committed without outputs (filter nbstrip in .git/config)")
    else:
        print("git: not a git checkout, no filter installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
