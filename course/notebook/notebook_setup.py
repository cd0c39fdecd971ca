"""One-time notebook setup for a clone (idempotent): `python -m course.notebook.notebook_setup`.

1. Saves ipywidgets' state with the notebook (JupyterLab setting "Save Jupyter widget state in notebooks",
   written as an override for this environment's JupyterLab), so a reopened notebook shows its panels as they
   were instead of "Error displaying widget: model not found"; a panel that is not live says so (re-run the
   notebook to make it live again).
2. Routes notebooks/**/*.ipynb through course/notebook/nbstrip.py as a git clean filter (.gitattributes names it,
   this writes its command into .git/config): pulling a course update never conflicts with your outputs.
3. Installs the save hook (course/notebook/save_hook.py) as a Jupyter server extension: a JSON file in this
   environment's etc/jupyter/jupyter_server_config.d/ enables it, and a .pth file in its site-packages puts the
   repo root on the server's sys.path. A notebook that was only run and saved then leaves `git status` clean.
"""
import json
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WIDGETS_PLUGIN = "@jupyter-widgets/jupyterlab-manager:plugin"
FILTER = {"filter.nbstrip.clean": "python3 course/notebook/nbstrip.py", "filter.nbstrip.smudge": "cat"}
SAVE_HOOK = "course.notebook.save_hook"
SAVE_HOOK_CONFIG = "course_save_hook.json"
ROOT_PTH = "course_root.pth"


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


def save_hook_config(config_dir=Path(sys.prefix) / "etc" / "jupyter") -> Path:
    """Enable the save hook as a server extension: config_dir/jupyter_server_config.d/course_save_hook.json."""
    path = Path(config_dir) / "jupyter_server_config.d" / SAVE_HOOK_CONFIG
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"ServerApp": {"jpserver_extensions": {SAVE_HOOK: True}}}, indent=2) + "\n",
                    encoding="utf-8")
    return path


def root_on_path(site_dir=sysconfig.get_paths()["purelib"], root=ROOT) -> Path:
    """A .pth file in site_dir naming the repo root, so every python of this environment (the Jupyter server
    too, whatever its working directory) can import course.notebook.save_hook."""
    path = Path(site_dir) / ROOT_PTH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(Path(root).resolve()) + "\n", encoding="utf-8")
    return path


def install_save_hook() -> list:
    """The .pth and the extension config in this environment; the user's own locations when it is read-only."""
    try:
        return [root_on_path(), save_hook_config()]
    except OSError:
        from jupyter_core.paths import jupyter_config_dir
        return [root_on_path(site.getusersitepackages()), save_hook_config(jupyter_config_dir())]


def main() -> int:
    path = save_widget_state()
    print(f"widget state is saved with notebooks ({path})")
    if git_filter():
        print("git: notebooks are committed without outputs (filter nbstrip in .git/config)")
        pth, config = install_save_hook()
        print(f"git: saving a notebook that only gained outputs leaves git status clean ({config}, {pth})")
    else:
        print("git: not a git checkout, no filter installed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
