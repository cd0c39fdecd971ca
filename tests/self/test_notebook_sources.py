"""The Chinese and English notebooks are built from one source (course/notebook/nbsource.py), so their code cells
never drift (each keeps its own language's printed lines only); the git clean filter (course/notebook/nbstrip.py)
keeps run notebooks byte-identical to the committed ones, and the save hook (course/notebook/save_hook.py) keeps
`git status` clean after a save; course/notebook/notebook_setup.py ships the widget-state setting, the filter and
the hook."""
import ast
import json
import os
import re
import shlex
import subprocess
import sys
from types import SimpleNamespace

import pytest

from course import problems
from course.notebook import nbsource, nbstrip, notebook_setup, save_hook


@pytest.mark.parametrize("target", nbsource.targets(), ids=lambda t: f"{t[2].parent.name}/{t[2].name}")
def test_committed_notebook_is_what_its_source_builds(target):
    src, lang, path = target
    built = nbsource.build(src.read_text(encoding="utf-8"), lang, path.stem)
    assert path.read_text(encoding="utf-8") == built, \
        f"{path.relative_to(nbsource.ROOT)} is out of sync with {src.relative_to(nbsource.ROOT)}: " \
        "edit the source, then run python -m course.notebook.nbsource"


class _Strings(ast.NodeTransformer):
    """Every string literal (f-strings too) -> "", so two cells compare by their code alone."""

    def visit_JoinedStr(self, node):
        return ast.Constant("")

    def visit_Constant(self, node):
        return ast.Constant("") if isinstance(node.value, str) else node


class _Chosen(ast.NodeTransformer):
    """t("中文", "English") with two string literals -> the one in the language: what localize must write."""

    def __init__(self, lang):
        self.which = 0 if lang == "zh" else 1

    def visit_Call(self, node):
        node = self.generic_visit(node)
        return node.args[self.which] if nbsource.printed_pair(node) else node


def _code_ast(source, transform=None):
    tree = ast.parse(nbsource._without_magics(source.splitlines(True)))
    return ast.dump(transform.visit(tree) if transform else tree)


@pytest.mark.parametrize("lang", nbsource.LANGS)
@pytest.mark.parametrize("src", sorted((nbsource.ROOT / "notebooks" / "src").glob("*.nb")), ids=lambda p: p.stem)
def test_each_code_cell_keeps_the_printed_lines_of_its_language_only(src, lang):
    """localize replaces t("中文", "English") by the line in the notebook's language and changes nothing else: the
    cell parses to what the source's cell parses to with those calls replaced (so it runs the same)."""
    cells = [c[1].replace("{{LANG}}", lang) for c in nbsource.parse(src.read_text(encoding="utf-8")) if c[0] == "code"]
    replaced = 0
    for body in cells:
        out = nbsource.localize(body, lang)
        assert _code_ast(out) == _code_ast(body, _Chosen(lang)), f"{src.name}: localize changed more than t():\n{out}"
        replaced += len(re.findall(r"\bt\(", body)) - len(re.findall(r"\bt\(", out))
    assert replaced > 0, f"{src.name}: no t() call replaced"


def test_localize_keeps_a_multi_line_argument_valid_and_aligned():
    cell = ('print(cw.wrap(t("中文",\n                "English, "\n                "more")))\n'
            'x = t(\n  "甲"\n  "乙", "b")\n')
    assert nbsource.localize(cell, "en") == 'print(cw.wrap("English, "\n              "more"))\nx = "b"\n'
    assert nbsource.localize(cell, "zh") == 'print(cw.wrap("中文"))\nx = ("甲"\n     "乙")\n'
    assert nbsource.localize('%matplotlib inline\nprint(t(*pair), t(f"{n} 个", f"{n} of them"))', "en") == \
        '%matplotlib inline\nprint(t(*pair), f"{n} of them")'


@pytest.mark.parametrize("name", list(problems.problems()))
def test_every_problem_has_both_languages_with_the_same_code_but_for_its_strings(name):
    p = problems.get(name)
    assert p.notebook_en and p.notebook_en.startswith("notebooks/en/")
    zh, en = (json.loads(p.path(which).read_text(encoding="utf-8")) for which in ("notebook", "notebook_en"))
    code = [[(_code_ast("".join(c["source"]), _Strings()) if c["cell_type"] == "code" else c["cell_type"])
             for c in nb["cells"]] for nb in (zh, en)]
    assert code[0] == code[1]
    english = [c for c in en["cells"] if c["cell_type"] == "markdown"]
    assert not [c["id"] for c in english if any("\u4e00" <= ch <= "\u9fff" for ch in "".join(c["source"]))], \
        "Chinese text in the English notebook's prose"


def test_parse_rejects_a_markdown_cell_without_its_english_twin():
    with pytest.raises(ValueError, match="English twin"):
        nbsource.parse("%% md\n中文\n%% code\nx = 1\n")
    with pytest.raises(ValueError, match="does not follow"):
        nbsource.parse("%% en\nEnglish\n")
    cells = nbsource.parse("%% md\n中文\n%% en\nEnglish\n%% code\nLANG = '{{LANG}}'\n")
    assert cells == [("md", "中文", "English"), ("code", "LANG = '{{LANG}}'")]


def test_check_mode_reports_a_stale_notebook(tmp_path, monkeypatch):
    src = tmp_path / "x.nb"
    src.write_text("%% md\n标题\n%% en\nTitle\n%% code\nprint(1)\n", encoding="utf-8")
    out = tmp_path / "x.ipynb"
    monkeypatch.setattr(nbsource, "targets", lambda: [(src, "en", out)])
    monkeypatch.setattr(nbsource, "ROOT", tmp_path)
    assert nbsource.main(["--check"]) == 1 and not out.exists()
    assert nbsource.main([]) == 0 and nbsource.main(["--check"]) == 0
    assert json.loads(out.read_text(encoding="utf-8"))["cells"][0]["source"] == ["Title"]


def test_strip_removes_outputs_widget_state_and_metadata_only():
    clean = nbsource.build("%% md\n标题\n%% en\nTitle\n%% code\nx = 1\nprint(x)\n", "zh", "t")
    nb = json.loads(clean)
    nb["cells"][1].update(execution_count=3, outputs=[{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
                          metadata={"scrolled": True, "execution": {"iopub.status.idle": "2026"}})
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2"}
    nb["cells"][1]["source"] = "x = 1\nprint(x)"                      # a string, as some tools write it
    assert nbstrip.strip_text(json.dumps(nb)) == clean


def test_strip_runs_as_a_git_filter_with_plain_python3():
    clean = nbsource.build("%% code\nx = 1\n", "zh", "t")
    strip = [sys.executable, str(nbsource.ROOT / "course" / "notebook" / "nbstrip.py")]
    run = subprocess.run(strip, input=clean.encode("utf-8"), capture_output=True, check=True)
    assert run.stdout.decode("utf-8") == clean
    broken = subprocess.run(strip, input=b"<<<<<<< HEAD", capture_output=True, check=True)
    assert broken.stdout == b"<<<<<<< HEAD"                            # not JSON: passed through untouched


def test_gitattributes_routes_every_notebook_through_the_filter():
    text = (nbsource.ROOT / ".gitattributes").read_text(encoding="utf-8")
    assert "notebooks/**/*.ipynb filter=nbstrip" in text


def test_setup_writes_the_widget_state_setting_and_keeps_other_overrides(tmp_path):
    path = notebook_setup.overrides_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}))
    notebook_setup.save_widget_state(tmp_path)
    notebook_setup.save_widget_state(tmp_path)                        # idempotent
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data[notebook_setup.WIDGETS_PLUGIN] == {"saveState": True}
    assert data["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}


def test_setup_installs_the_git_filter_in_a_clone(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert notebook_setup.git_filter(tmp_path)
    value = subprocess.run(["git", "-C", str(tmp_path), "config", "filter.nbstrip.clean"], capture_output=True,
                           text=True, check=True).stdout.strip()
    assert value == "python3 course/notebook/nbstrip.py"
    assert not notebook_setup.git_filter(tmp_path / "nowhere")


# ---- the save hook: a notebook saved with only new outputs leaves `git status` clean ------------------------
def git_repo_with_a_notebook(tmp_path):
    """A git repo with the nbstrip filter and one committed (clean) notebook; returns (git, notebook path, text)."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)

    def git(*args):
        return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                               "-c", "commit.gpgsign=false", *args], capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    strip = nbsource.ROOT / "course" / "notebook" / "nbstrip.py"
    git("config", "filter.nbstrip.clean", f"{shlex.quote(sys.executable)} {shlex.quote(str(strip))}")
    (repo / ".gitattributes").write_text("notebooks/**/*.ipynb filter=nbstrip\n", encoding="utf-8")
    (repo / ".gitignore").write_text(".ipynb_checkpoints/\n", encoding="utf-8")      # as the course's .gitignore
    clean = nbsource.build("%% md\n标题\n%% en\nTitle\n%% code\nx = 1\nprint(x)\n", "en", "t")
    path = repo / "notebooks" / "t.ipynb"
    path.write_text(clean, encoding="utf-8")
    git("add", ".")
    git("commit", "-qm", "notebook")
    return git, path, clean


def with_outputs(clean):
    """What JupyterLab writes after a run: outputs, execution counts, widget state."""
    nb = json.loads(clean)
    nb["cells"][1].update(execution_count=1, outputs=[{"output_type": "stream", "name": "stdout", "text": ["1\n"]}])
    nb["metadata"]["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def test_save_hook_keeps_status_clean_after_a_run_and_leaves_a_source_edit_modified(tmp_path):
    git, path, clean = git_repo_with_a_notebook(tmp_path)
    blob = git("ls-files", "--stage").split()[1]
    path.write_text(with_outputs(clean), encoding="utf-8")
    assert git("diff") == ""                                           # the filter strips the outputs ...
    assert git("status", "--porcelain") == " M notebooks/t.ipynb\n"    # ... but git trusts the size change
    save_hook.post_save(model={"type": "notebook"}, os_path=str(path), contents_manager=None)
    assert git("status", "--porcelain") == ""
    assert git("ls-files", "--stage").split()[1] == blob and git("diff", "--cached") == ""   # nothing staged
    path.write_text(with_outputs(clean).replace('"x = 1\\n"', '"x = 2\\n"'), encoding="utf-8")   # a real edit
    save_hook.post_save(model={"type": "notebook"}, os_path=str(path), contents_manager=None)
    assert git("status", "--porcelain") == " M notebooks/t.ipynb\n"
    assert git("ls-files", "--stage").split()[1] == blob and '+    "x = 2\\n",' in git("diff")


def test_save_hook_runs_in_the_jupyter_server_contents_manager(tmp_path):
    from jupyter_server.services.contents.filemanager import FileContentsManager
    git, path, clean = git_repo_with_a_notebook(tmp_path)
    manager = FileContentsManager(root_dir=str(path.parents[1]))
    save_hook._load_jupyter_server_extension(SimpleNamespace(contents_manager=manager))
    model = {"type": "notebook", "format": "json", "content": json.loads(with_outputs(clean))}
    manager.save(model, "notebooks/t.ipynb")
    assert "outputs" in path.read_text(encoding="utf-8") and '"text": [' in path.read_text(encoding="utf-8")
    assert git("status", "--porcelain") == ""


def test_save_hook_does_nothing_outside_git_and_never_fails_a_save(tmp_path, monkeypatch):
    loose = tmp_path / "loose.ipynb"
    loose.write_text("{}", encoding="utf-8")
    assert not save_hook.refresh_index(loose)
    assert not save_hook.refresh_index(tmp_path / "missing.ipynb")
    git, path, clean = git_repo_with_a_notebook(tmp_path)
    untracked = path.with_name("new.ipynb")
    untracked.write_text(clean, encoding="utf-8")
    plain = path.parents[1] / "plain.txt"                              # tracked, but no filter
    plain.write_text("a\n", encoding="utf-8")
    git("add", "plain.txt")
    assert not save_hook.refresh_index(untracked) and not save_hook.refresh_index(plain)
    assert "?? notebooks/new.ipynb" in git("status", "--porcelain")    # never added by the hook
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    save_hook.post_save(model=None, os_path=str(path), contents_manager=None)
    save_hook.post_save(os_path=None)


def test_setup_installs_the_save_hook_where_the_server_finds_it(tmp_path):
    config = notebook_setup.save_hook_config(tmp_path / "etc")
    assert config == tmp_path / "etc" / "jupyter_server_config.d" / "course_save_hook.json"
    assert json.loads(config.read_text(encoding="utf-8")) == \
        {"ServerApp": {"jpserver_extensions": {"course.notebook.save_hook": True}}}
    pth = notebook_setup.root_on_path(tmp_path / "site")
    notebook_setup.root_on_path(tmp_path / "site")                    # idempotent
    assert pth.read_text(encoding="utf-8") == f"{nbsource.ROOT}\n"
    code = "import site, sys; site.addsitedir(sys.argv[1]); import course.notebook.save_hook as h; print(h.__file__)"
    run = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path / "site")], cwd=tmp_path,
                         capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
    assert run.stdout.strip() == str(nbsource.ROOT / "course" / "notebook" / "save_hook.py"), run.stderr
