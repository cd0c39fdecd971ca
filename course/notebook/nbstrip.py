"""git clean filter for the notebooks: outputs, execution counts, cell and widget metadata go; the rest stays.

Installed by `python -m course.notebook.notebook_setup` (a `filter.nbstrip` entry in .git/config; .gitattributes
routes notebooks/**/*.ipynb through it). A notebook that was only run and saved is then byte-identical to
the committed one: `git status` stays clean, and pulling a course update never conflicts with your outputs.
Standard library only, so any python3 can run it: `python3 course/notebook/nbstrip.py < in.ipynb > out.ipynb`.
"""
import json
import sys

METADATA = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python"}}


def dumps(nb: dict) -> str:
    """The JSON text Jupyter (nbformat.write) produces for this notebook."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": ")) + "\n"


def strip(nb: dict) -> dict:
    for cell in nb.get("cells", []):
        cell["metadata"] = {}
        if isinstance(cell.get("source"), str):
            cell["source"] = cell["source"].splitlines(True)
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    nb["metadata"] = json.loads(json.dumps(METADATA))
    return nb


def strip_text(text: str) -> str:
    return dumps(strip(json.loads(text)))


if __name__ == "__main__":
    data = sys.stdin.buffer.read().decode("utf-8")
    try:
        out = strip_text(data)
    except ValueError:          # not JSON (e.g. a merge in progress): pass it through untouched
        out = data
    sys.stdout.buffer.write(out.encode("utf-8"))
