"""The oracle of a mutation run (course/grader/mutation.py): a fork server that grades mutants, and its client.

The server imports torch and the checks once, times each check on the solution, and for each request forks a
child that runs the checks on the mutant, cheapest first, in process, stopping at the first failure; each check
runs under an alarm on the child's CPU time. cosmic-ray's test command is the client, `ask`.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from course.problems import get

IMPORT_LIMIT_S = 30   # importing the mutant
SLOWDOWN = 10         # a check may take this many times the solution's CPU time, plus 5 s


def _grade_child(problem, impl: str, ids: list, limits: dict) -> int:
    """In a forked child: run the checks on impl, stop at the first that does not pass. 0 = all passed.

    Each check runs under its own alarm on the child's CPU time (limits: seconds per check id), so a busy or
    paused machine cannot set it off; a check that runs past it ends the child, and the mutant counts as
    killed by a timeout, as in mutmut and Stryker.
    """
    from course.grader.worker import run

    failed = []

    def emit(event):
        if event["event"] == "start":
            signal.setitimer(signal.ITIMER_PROF, limits.get(event["id"], IMPORT_LIMIT_S))
        elif "status" in event and event["status"] != "pass":       # other events (the catalogue) carry no status
            failed.append(event["id"])
            raise _Stop

    try:
        run(problem.name, impl, "cpu", "en", ids, emit)
    except _Stop:
        pass
    return 1 if failed else 0


class _Stop(Exception):
    pass


def serve(problem_name: str, sock_path: str) -> None:
    """Answer requests on a unix socket: a FILE to grade, optionally followed by a line 'dotted.module=FILE2'
    (FILE2 stands in for that module); the answer is '0' (passes every check) or '1' (killed).

    Each request is graded in its own forked child, which answers on the connection itself: several
    cosmic-ray workers can ask at once. A child that dies (a crash, an alarm) closes the connection unanswered,
    which the client reads as killed.
    """
    import torch

    from course.grader.checks import checks_for
    from course.grader.runner import grade_in_process

    problem = get(problem_name)
    ids = [c.id for c in checks_for(problem)]
    read, write = os.pipe()                           # time the checks in a child: the server itself never starts
    pid = os.fork()                                   # torch's thread pool, which a forked child could not use
    if pid == 0:
        torch.set_num_threads(1)
        cost = {}
        for cid in ids:                               # cheapest checks first: most mutants die in the first one
            t0 = time.process_time()                  # CPU seconds, like the children's alarms
            grade_in_process(problem, problem.path("solution"), [cid])
            cost[cid] = time.process_time() - t0
        os.write(write, json.dumps(cost).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        cost = json.loads(pipe.read())
    os.waitpid(pid, 0)
    ids = sorted(ids, key=cost.get)
    limits = {cid: min(SLOWDOWN * cost[cid] + 5.0, problem.timeout_s) for cid in ids}
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)     # children are reaped without a wait
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock_path)
    server.listen(8)
    while True:
        conn, _ = server.accept()
        impl, *override = conn.recv(8192).decode().strip().split("\n")
        if impl == "quit":
            conn.close()
            return
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            torch.set_num_threads(1)
            try:
                signal.setitimer(signal.ITIMER_PROF, IMPORT_LIMIT_S)  # a mutated module may loop at import
                for line in override:                 # "course.selection=/path/selection.py": graded in its place
                    _replace_module(*line.split("=", 1))
                code = _grade_child(problem, impl, ids, limits)
            except BaseException:                     # noqa: BLE001 - a mutant that breaks its import is killed
                code = 1
            signal.setitimer(signal.ITIMER_PROF, 0)
            conn.sendall(b"1" if code else b"0")
            os._exit(0)
        conn.close()


def _replace_module(dotted: str, path: str) -> None:
    """Import the file at path as module `dotted`, so whatever imports `dotted` afterwards gets this copy."""
    spec = importlib.util.spec_from_file_location(dotted, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = module
    spec.loader.exec_module(module)
    parent, _, leaf = dotted.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], leaf, module)


def ask(sock_path: str, impl: str, module: str | None = None) -> int:
    """The test command cosmic-ray runs: exit 0 when the grader passes the (mutated) file, 1 when it fails it.

    module: "dotted.name=FILE" grades impl with FILE standing in for that module (a mutated helper of impl).
    """
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(sock_path)
    message = str(Path(impl).resolve())
    if module:
        dotted, path = module.split("=", 1)
        message += f"\n{dotted}={Path(path).resolve()}"
    client.sendall(message.encode())
    return 0 if client.recv(1) == b"0" else 1
