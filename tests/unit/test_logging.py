"""No silent catch-alls in txviz/, TXVIZ_LOG_LEVEL sets the level, and a serving failure logs its traceback.

A handler of Exception, BaseException or everything (a bare except) must log what it caught or raise
again: a catch-all that only returns hides the one failure an operator needs to see. Found by walking
the syntax tree of every module.
"""

from __future__ import annotations

import ast
import logging
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from txviz import logs
from txviz.serving.batches import Batcher
from txviz.serving.jobs import JobQueue

ROOT = Path(__file__).resolve().parents[2]
BROAD = {"Exception", "BaseException"}
LOGGERS = {"log", "logger", "logging"}
LOG_METHODS = {"exception", "warning", "error", "info", "debug", "critical", "log"}
NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
TIMEOUT_S = 20

# Silent handlers allowed, as "path::function" (dotted when nested) once per handler: lines move, names
# stay. Empty: a new handler logs or re-raises instead of being added here.
ALLOWED: Counter = Counter()


def _own_nodes(body: list[ast.stmt]):
    """Every node of these statements, not descending into functions, classes or lambdas defined there."""
    todo = [node for node in body if not isinstance(node, NESTED)]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(child for child in ast.iter_child_nodes(node) if not isinstance(child, NESTED))


def _logs_directly(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in LOG_METHODS
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in LOGGERS
    )


def logging_helpers(tree: ast.Module) -> set[str]:
    """The module's functions whose own body calls a logging method (e.g. a give_up(what) that warns)."""
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(_logs_directly(n) for n in _own_nodes(node.body))
    }


def _reports(body: list[ast.stmt], helpers: set[str]) -> bool:
    """Whether a handler's body raises, calls a logging method, or calls one of the module's helpers that does."""
    for node in _own_nodes(body):
        if isinstance(node, ast.Raise) or _logs_directly(node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            return True
    return False


def _names(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"a bare except"}
    if isinstance(node, ast.Tuple):
        return set().union(*(_names(e) for e in node.elts))
    if isinstance(node, ast.Attribute):  # builtins.Exception
        return {node.attr}
    return {node.id} if isinstance(node, ast.Name) else set()


def _suppressed(node: ast.With | ast.AsyncWith) -> set[str]:
    """What a `with contextlib.suppress(...)` swallows (nothing for any other with)."""
    found = set()
    for item in node.items:
        call = item.context_expr
        if (
            isinstance(call, ast.Call)
            and getattr(call.func, "attr", getattr(call.func, "id", "")) == "suppress"
        ):
            found |= set().union(*(_names(a) for a in call.args)) if call.args else set()
    return found


def silent_handlers(source: str, where: str) -> list[tuple[str, int, str, str]]:
    """(file, line, enclosing function, what) of every catch-all that neither logs nor re-raises."""
    tree = ast.parse(source)
    helpers = logging_helpers(tree)
    found = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = f"{scope}.{child.name}".lstrip(".") if isinstance(child, NESTED[:3]) else scope
            if isinstance(child, ast.ExceptHandler):
                caught = _names(child.type) & (BROAD | {"a bare except"})
                if caught and not _reports(child.body, helpers):
                    found.append((where, child.lineno, scope, f"except {', '.join(sorted(caught))}"))
            elif isinstance(child, ast.With | ast.AsyncWith) and _suppressed(child) & BROAD:
                found.append((where, child.lineno, scope, "contextlib.suppress of everything"))
            visit(child, inner)

    visit(tree, "")
    return found


def test_no_silent_catch_all_in_txviz():
    found = []
    for path in sorted((ROOT / "txviz").rglob("*.py")):
        found += silent_handlers(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    left = ALLOWED.copy()
    new = []
    for where, line, scope, what in found:
        entry = f"{where}::{scope}"
        if left[entry] > 0:
            left[entry] -= 1
        else:
            new.append(f"{where}:{line} ({scope or 'module'}): {what} neither logs nor re-raises")
    assert not new, "log the exception (log.exception / log.warning(..., exc_info=True)) or re-raise:\n" + (
        "\n".join(new)
    )


SILENT = """
def quiet():
    try:
        work()
    except Exception:
        return None
"""


@pytest.mark.parametrize(
    "body",
    [
        "except Exception:\n        return None",
        "except:\n        pass",
        "except (ValueError, BaseException):\n        pass",
        "except builtins.Exception as error:\n        def later():\n            raise error",
    ],
)
def test_the_guard_finds_a_silent_catch_all(body):
    source = f"def quiet():\n    try:\n        work()\n    {body}\n"
    assert [(line, scope) for _, line, scope, _ in silent_handlers(source, "x.py")] == [(4, "quiet")]


def test_the_guard_finds_a_suppress_of_everything():
    source = "import contextlib\nwith contextlib.suppress(Exception):\n    work()\n"
    assert [line for _, line, _, _ in silent_handlers(source, "x.py")] == [2]


@pytest.mark.parametrize(
    "body",
    [
        "except Exception:\n        log.exception('work failed')",
        "except Exception:\n        log.warning('work failed', exc_info=True)\n        return None",
        "except Exception:\n        cleanup()\n        raise",
        "except Exception as error:\n        raise RuntimeError('no') from error",
        "except Exception:\n        give_up('work')",
        "except ValueError:\n        return None",  # narrow: judged by a person, not this guard
    ],
)
def test_the_guard_accepts_a_handler_that_logs_or_raises(body):
    helper = "def give_up(what):\n    log.warning('%s failed', what, exc_info=True)\n"
    source = f"{helper}def loud():\n    try:\n        work()\n    {body}\n"
    assert silent_handlers(source, "x.py") == []


@pytest.fixture
def fresh_txviz_logger():
    """The txviz logger as configure() finds it in a new process, restored afterwards."""
    logger = logging.getLogger("txviz")
    saved = logger.handlers[:], logger.level, logger.propagate
    logger.handlers = [h for h in logger.handlers if not isinstance(h, logs.StderrHandler)]
    logger.setLevel(logging.NOTSET)
    yield logger
    logger.handlers, logger.level, logger.propagate = saved[0], saved[1], saved[2]


def test_the_level_comes_from_txviz_log_level(fresh_txviz_logger):
    configured = logs.configure({"TXVIZ_LOG_LEVEL": "debug"})
    assert configured is fresh_txviz_logger and configured.level == logging.DEBUG
    assert logging.getLogger("txviz.serving.batches").isEnabledFor(logging.DEBUG)
    handlers = [h for h in configured.handlers if isinstance(h, logs.StderrHandler)]
    assert len(handlers) == 1 and handlers[0].formatter._fmt == logs.FORMAT


def test_configure_twice_keeps_one_handler_and_the_first_level(fresh_txviz_logger):
    logs.configure({"TXVIZ_LOG_LEVEL": "ERROR"})
    logs.configure({"TXVIZ_LOG_LEVEL": "DEBUG"})  # app.py calls it on every rerun: nothing changes
    assert sum(isinstance(h, logs.StderrHandler) for h in fresh_txviz_logger.handlers) == 1
    assert fresh_txviz_logger.level == logging.ERROR


def test_no_variable_means_warning_and_says_nothing(fresh_txviz_logger, caplog):
    logs.configure({})
    assert fresh_txviz_logger.level == logging.WARNING and not caplog.records


def test_an_unknown_level_falls_back_to_warning_with_one_warning(fresh_txviz_logger, caplog):
    logs.configure({"TXVIZ_LOG_LEVEL": "verbose"})
    assert fresh_txviz_logger.level == logging.WARNING
    warned = [r for r in caplog.records if r.name == "txviz.logs"]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert "'verbose'" in warned[0].getMessage() and "WARNING" in warned[0].getMessage()


def test_the_handler_writes_the_format_to_stderr(fresh_txviz_logger, capsys):
    logs.configure({})
    logging.getLogger("txviz.example").warning("the store is down")
    line = capsys.readouterr().err.strip()
    assert line.endswith(" WARNING txviz.example: the store is down"), line


def test_a_failed_shared_pass_logs_its_traceback(caplog):
    """Two sessions' traces batched into one pass that fails (not a user error): a warning with the traceback."""

    def run_batch(items):
        if len(items) > 1:
            raise RuntimeError("the padded forward broke")
        return [item.upper() for item in items]

    batcher, out = Batcher(JobQueue(1)), {}
    release = threading.Event()
    blocker = threading.Thread(target=lambda: batcher.queue.run(lambda: release.wait(TIMEOUT_S)), daemon=True)
    blocker.start()

    def session(item):
        out[item] = batcher.run("key", item, run_batch, owner=item, poll_s=0.01)

    threads = [threading.Thread(target=session, args=(item,), daemon=True) for item in ("a", "b")]
    with caplog.at_level(logging.WARNING, logger="txviz"):
        for n, thread in enumerate(threads, start=1):
            thread.start()
            deadline = time.monotonic() + TIMEOUT_S
            while batcher.queue.load()[1] < n:  # both wait behind the blocker, so they ride together
                assert time.monotonic() < deadline, "timed out"
                time.sleep(0.005)
        release.set()
        for thread in [blocker, *threads]:
            thread.join(TIMEOUT_S)
    assert out == {"a": "A", "b": "B"}  # each then ran alone
    [record] = [r for r in caplog.records if r.name == "txviz.serving.batches"]
    assert record.levelno == logging.WARNING and "2 rows" in record.getMessage()
    assert record.exc_info and isinstance(record.exc_info[1], RuntimeError)
    assert "the padded forward broke" in caplog.text and "Traceback" in caplog.text
