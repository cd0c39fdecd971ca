"""Mutation testing of the grader: cosmic-ray mutates a solution, the grader is the oracle (for authors).

    python -m course.grader.mutation PROBLEM      (./check.sh mutation PROBLEM does the same)
    ... --resume     go on with an interrupted session;   --recheck   and grade its unlisted survivors again
    ... --report     summarize the last session against the list of equivalent mutants
    ... --module course/x.py             mutate a module the solution imports, graded through the solution

cosmic-ray (installed on first use) makes every mutant of a copy of the solution and runs, for each, a
test command that grades it. A mutant the grader fails is killed; one it passes survives, and must then be
listed, with the reason, in tests/self/equivalent_mutants.toml (a test reads that list). To keep a run to
minutes, the test command asks a fork server (course/grader/mutation_oracle.py): it imports torch and the
checks once, and for each mutant forks a child that runs the checks, cheapest first, stopping at the first failure.
With --workers 2 (the default on 2+ cores) two cosmic-ray http workers, each with its own copy of the file,
grade mutants side by side.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sqlite3
import sys
import time
import tomllib
from pathlib import Path

from course.grader.mutation_oracle import ask, serve
from course.problems import ROOT, get, problems

COSMIC_RAY = "cosmic-ray==8.7.0"
EQUIVALENTS = ROOT / "tests" / "self" / "equivalent_mutants.toml"
CHILD_LIMIT_S = 240   # cosmic-ray's own limit on one mutant is this plus 30 s


# ---- the run -----------------------------------------------------------------------------------------
def ensure_cosmic_ray() -> Path:
    if importlib.util.find_spec("cosmic_ray") is None:
        print(f"installing {COSMIC_RAY} (once)...", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", COSMIC_RAY], check=True)
    return Path(sys.executable).parent


def mutant_key(record: list) -> tuple:
    """(operator, original line, mutated line): names a mutant across runs, whatever its occurrence number."""
    return _key(record[0]["mutations"][0]["operator_name"], record[1].get("diff", ""))


def _key(operator: str, diff: str) -> tuple:
    lines = diff.splitlines()
    def code(sign: str) -> str:
        return next((line[1:].split("#")[0].strip() for line in lines
                     if line.startswith(sign) and not line.startswith(sign * 3)), "")
    before, after = code("-"), code("+")
    return operator, before, after


def equivalents(problem_name: str) -> dict:
    """{(operator, before, after): reason} listed for a problem in tests/self/equivalent_mutants.toml."""
    data = tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))
    return {(e["operator"], e["before"], e["after"]): e["reason"] for e in data.get(problem_name, [])}


def forget_unlisted_survivors(db, listed: dict) -> int:
    """Drop the results of survivors not listed as equivalent from a session, so the next run grades them again."""
    rows = db.execute("SELECT r.job_id, s.operator_name, r.diff FROM work_results r JOIN mutation_specs s "
                      "ON r.job_id = s.job_id WHERE r.test_outcome = 'SURVIVED'").fetchall()
    again = [(job,) for job, op, diff in rows if _key(op, diff) not in listed]
    db.executemany("DELETE FROM work_results WHERE job_id = ?", again)
    return len(again)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def target(problem_name: str, module: str | None = None) -> tuple:
    """(label, slug, source file): what a run mutates. label names its list of equivalents, slug its files.

    module: None for the solution itself, or the path (from the repo root) of a course module the solution
    imports, e.g. course/selection.py; its mutants are graded through the unchanged solution.
    """
    if module is None:
        return problem_name, problem_name, get(problem_name).path("solution")
    return f"{problem_name}:{module}", f"{problem_name}-{Path(module).stem}", ROOT / module


def run(problem_name: str, out_dir: Path, resume: bool = False, workers: int = 1, recheck: bool = False,
        module: str | None = None) -> dict:
    """Mutate a copy of the solution (or of module) in out_dir and grade every mutant; workers > 1 side by side.

    resume: grade only the mutants the last session has not graded; recheck: and its survivors that are not
    listed as equivalent (after a new check).
    """
    bin_dir = ensure_cosmic_ray()
    label, slug, source = target(problem_name, module)
    work = out_dir / f"mutation-{slug}"                          # a fixed place: a resumed session finds its file
    work.mkdir(parents=True, exist_ok=True)
    name = source.name                                           # the session names it relative to a worker's folder
    folders = [work] if workers == 1 else [work / f"worker{i}" for i in range(workers)]
    for folder in [work, *folders]:
        folder.mkdir(exist_ok=True)
        shutil.copy(source, folder / name)
    sock = str(work / "oracle.sock")
    Path(sock).unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    server = subprocess.Popen([sys.executable, "-m", "course.grader.mutation", "--serve", problem_name, sock], cwd=ROOT,
                              env=env)
    while not os.path.exists(sock):
        if server.poll() is not None:
            raise SystemExit("the oracle server did not start")
        time.sleep(0.2)
    ports = [_free_port() for _ in folders] if workers > 1 else []
    distributor = ('name = "local"\n' if workers == 1 else
                   f'name = "http"\n[cosmic-ray.distributor.http]\n'
                   f'worker-urls = {[f"http://127.0.0.1:{p}" for p in ports]}\n')
    config = work / "cr.toml"
    graded = name if module is None else (                      # the solution, with the mutated module in its place
        f"{get(problem_name).path('solution')} --as {module.removesuffix('.py').replace('/', '.')}={name}")
    command = f"{sys.executable} -m course.grader.mutation --ask {sock} {graded}"
    config.write_text(f'[cosmic-ray]\nmodule-path = "{name}"\ntimeout = {CHILD_LIMIT_S + 30}.0\nexcluded-modules = []\n'
                      f'test-command = "{command}"\n[cosmic-ray.distributor]\n{distributor}', encoding="utf-8")
    session, saved = _session_files(out_dir, slug)
    resume = resume and session.exists()
    before = _seconds_so_far(saved) if resume else 0
    if resume:                                                   # sessions from before this layout named it in full
        with sqlite3.connect(session) as db:
            db.execute("UPDATE mutation_specs SET module_path = ?", (name,))
            if recheck:
                forget_unlisted_survivors(db, equivalents(label))
    else:
        session.unlink(missing_ok=True)
    helpers = [subprocess.Popen([bin_dir / "cosmic-ray", "http-worker", "--port", str(port)], cwd=folder, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for port, folder in zip(ports, folders)]
    t0 = time.monotonic()
    try:
        if not resume:
            subprocess.run([bin_dir / "cosmic-ray", "init", config, session], check=True, cwd=work, env=env)
        for port in ports:                                       # the http workers take a moment to listen
            while not _listening(port):
                time.sleep(0.2)
        subprocess.run([bin_dir / "cosmic-ray", "exec", config, session], check=True, cwd=folders[0], env=env)
    finally:
        for helper in helpers:
            helper.terminate()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as quit_:
            quit_.connect(sock)
            quit_.sendall(b"quit")
        server.wait()
    return summarize(label, _records(bin_dir, session), before + time.monotonic() - t0)


def _records(bin_dir: Path, session: Path) -> list:
    dump = subprocess.run([bin_dir / "cosmic-ray", "dump", session], check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in dump.splitlines() if line.strip()]


def report(problem_name: str, out_dir: Path, module: str | None = None) -> dict:
    """The last session of problem_name (or of its module), summarized against today's list of equivalent mutants."""
    label, slug, _ = target(problem_name, module)
    session, saved = _session_files(out_dir, slug)
    return summarize(label, _records(ensure_cosmic_ray(), session), _seconds_so_far(saved))


def _session_files(out_dir: Path, slug: str) -> tuple:
    """(cosmic-ray's session database, the summary json main writes) of a run."""
    return out_dir / f"{slug}.sqlite", out_dir / f"mutation-{slug}.json"


def _seconds_so_far(saved: Path) -> float:
    """The time the earlier runs of a session took, from its summary (0 without one)."""
    return json.loads(saved.read_text(encoding="utf-8")).get("seconds", 0) if saved.exists() else 0


def summarize(problem_name: str, records: list, seconds: float) -> dict:
    listed = equivalents(problem_name)
    done = [r for r in records if r[1]]
    survived = [r for r in done if r[1].get("test_outcome") == "survived"]
    unexplained = [r for r in survived if mutant_key(r) not in listed]
    return {"problem": problem_name, "mutants": len(records), "run": len(done), "killed": len(done) - len(survived),
            "survived": len(survived), "equivalent": len(survived) - len(unexplained), "seconds": round(seconds),
            "unexplained": [{"key": list(mutant_key(r)), "where": r[0]["mutations"][0]["start_pos"][0]}
                            for r in unexplained]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problem", nargs="?", choices=list(problems()))
    parser.add_argument("--serve", nargs=2, metavar=("PROBLEM", "SOCKET"), help=argparse.SUPPRESS)
    parser.add_argument("--ask", nargs=2, metavar=("SOCKET", "FILE"), help=argparse.SUPPRESS)
    parser.add_argument("--as", dest="as_module", metavar="DOTTED=FILE", help=argparse.SUPPRESS)
    parser.add_argument("--module", metavar="PATH",
                        help="mutate this module of the solution instead (a file the solution imports)")
    parser.add_argument("--out", default=str(ROOT / "bench_out"), help="where the session database goes")
    parser.add_argument("--report", action="store_true", help="re-read the last session against the list, run nothing")
    parser.add_argument("--resume", action="store_true", help="go on with the last session's pending mutants")
    parser.add_argument("--recheck", action="store_true",
                        help="--resume, and grade again the last session's survivors that are not listed as equivalent")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="mutants graded side by side (default: 2, or 1 on a 1-core machine)")
    args = parser.parse_args(argv)
    if args.serve:
        serve(*args.serve)
        return 0
    if args.ask:
        return ask(*args.ask, module=args.as_module)
    if not args.problem:
        parser.error(f"name a problem: {' or '.join(problems())}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.module and not (ROOT / args.module).is_file():
        parser.error(f"--module {args.module}: no such file under {ROOT}")
    result = (report(args.problem, out, args.module) if args.report else
              run(args.problem, out, args.resume or args.recheck, args.workers, args.recheck, args.module))
    score = result["killed"] + result["equivalent"]
    print(f"{result['problem']}: {result['mutants']} mutants, {result['run']} run, "
          f"{result['killed']} killed by the grader, "
          f"{result['equivalent']} equivalent (listed), {len(result['unexplained'])} unexplained survivors; "
          f"mutation score {100 * result['killed'] / max(result['run'], 1):.1f}% "
          f"({100 * score / max(result['run'], 1):.1f}% with the equivalents) in {result['seconds']} s")
    for item in result["unexplained"]:
        op, before, after = item["key"]
        print(f"  survived, line {item['where']}: {op}\n    - {before}\n    + {after}")
    summary_file = _session_files(out, target(args.problem, args.module)[1])[1]
    summary_file.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 1 if result["unexplained"] else 0


if __name__ == "__main__":
    sys.exit(main())
