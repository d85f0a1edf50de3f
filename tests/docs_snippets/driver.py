"""Runs one page's blocks in order, in this (fresh) interpreter and the current directory.

Usage: python driver.py BLOCKS.json, where BLOCKS.json is a list of
{"where", "language", "kind", "code"}. Python blocks share one namespace, as a reader who
pastes them in order into one interpreter. Exits 1 at the first block that fails, naming it.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import inspect
import json
import re
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transcript import compare, steps  # noqa: E402  (this file runs as a script)

COMMAND_TIMEOUT = 300  # a block may run a dozen `mosaic run`s, ~18 s each on a loaded machine
ERROR_LINE = re.compile(r"^(\S+: )?error: ", re.M)


class BlockFailed(Exception):
    pass


def run_python(block: dict, namespace: dict) -> None:
    code, where = block["code"], block["where"]
    if code.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(code, namespace, where, where, 0)
        runner = doctest.DocTestRunner(
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
        )
        runner.run(test, clear_globs=False)
        if runner.failures:
            raise BlockFailed(f"{runner.failures} doctest example(s) failed (see above)")
        return
    tree = ast.parse(code, where)
    if block["kind"] == "fragment":  # only its imports run: the rest needs the reader's names
        tree.body = [n for n in tree.body if importable(n)]
    exec(compile(tree, where, "exec"), namespace)


SIGNATURE_START = re.compile(r"^([A-Za-z_][\w.]*)\(", re.M)


def check_signatures(block: dict) -> None:
    """Each ``name(params)[ -> type]`` shown has the parameters of the real object.

    The marker's reason starts with the module that has the names (``signature mosaic_sdk.shm``).
    """
    module = importlib.import_module(block["reason"].split()[0])
    code = block["code"]
    starts = [m.start() for m in SIGNATURE_START.finditer(code)] + [len(code)]
    if len(starts) < 2:
        raise BlockFailed("a signature block shows no `name(...)`")
    for begin, end in zip(starts, starts[1:], strict=False):
        text = code[begin:end].strip()
        name = SIGNATURE_START.match(text).group(1)  # type: ignore[union-attr]
        shown = ast.parse(f"def f{text[len(name) :]}: ...").body[0]
        assert isinstance(shown, ast.FunctionDef)
        args = shown.args
        shown_names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        target: object = module
        for part in name.split("."):
            target = getattr(target, part)
        real = inspect.signature(target)  # type: ignore[arg-type]
        real_names = [
            p.name
            for p in real.parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
        ]
        if shown_names != real_names:
            raise BlockFailed(f"{name}: the page shows {shown_names}, the code has {real_names}")


def importable(node: ast.stmt) -> bool:
    """An import of an installed top-level package (not of the reader's own ``my_worker``)."""
    if isinstance(node, ast.ImportFrom):
        names = [node.module or ""] if node.level == 0 else []
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        return False
    return bool(names) and all(importlib.util.find_spec(n.split(".")[0]) for n in names)


def shell(
    command: str, *, check_syntax: bool = False, merge: bool = False
) -> subprocess.CompletedProcess[str]:
    """Runs ``command`` with bash; ``merge`` puts stderr into stdout, in order (as a terminal)."""
    argv = ["bash", "-n", "-c", command] if check_syntax else ["bash", "-e", "-c", command]
    return subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge else subprocess.PIPE,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )


def run_bash(block: dict) -> None:
    done = shell(block["code"], check_syntax=block["kind"] == "fragment")
    if done.returncode != 0:
        raise BlockFailed(f"exit {done.returncode}\n{done.stdout}{done.stderr}")


def run_console(block: dict) -> None:
    """Each ``$ `` line runs; the output shown under it must match (rules in transcript.py).

    A shown ``error:`` line means the command must fail and print one."""
    commands = steps(block["code"])
    if not commands:
        raise BlockFailed("a console block has no `$ ` command line; is it output (text)?")
    for command, shown in commands:
        fails = bool(ERROR_LINE.search("\n".join(shown)))
        if block["kind"] == "fragment":
            done = shell(command, check_syntax=True)
            if done.returncode != 0:
                raise BlockFailed(f"`{command}`: not valid bash\n{done.stdout}{done.stderr}")
            continue
        done = shell(command, merge=True)
        if fails and (done.returncode == 0 or not ERROR_LINE.search(done.stdout)):
            raise BlockFailed(f"`{command}` should fail with an error line, exit {done.returncode}")
        if not fails and done.returncode != 0:
            raise BlockFailed(f"`{command}`: exit {done.returncode}\n{done.stdout}")
        problem = compare(command, shown, done.stdout)
        if problem:
            raise BlockFailed(problem)


def run_sql(block: dict) -> None:
    from mosaic_sdk.runner.storage.store import RunStore

    with RunStore(Path("schema-check.sqlite")):
        pass
    conn = sqlite3.connect("schema-check.sqlite")
    try:
        for statement in filter(str.strip, block["code"].split(";")):
            conn.execute("EXPLAIN " + statement, (None,) * statement.count("?"))
    finally:
        conn.close()


def run(block: dict, namespace: dict) -> None:
    language = block["language"]
    if block["kind"] == "signature":
        check_signatures(block)
    elif language == "python":
        run_python(block, namespace)
    elif language in ("bash", "sh"):
        run_bash(block)
    elif language == "console":
        run_console(block)
    elif language == "json":
        json.loads(block["code"])
    elif language == "toml":
        tomllib.loads(block["code"])
    elif language == "sql":
        run_sql(block)
    else:
        raise BlockFailed(f"no way to run a {language!r} block")


def main(path: str) -> int:
    namespace: dict = {"__name__": "__main__"}
    for block in json.loads(Path(path).read_text(encoding="utf-8")):
        try:
            run(block, namespace)
        except Exception as exc:
            detail = str(exc) if isinstance(exc, BlockFailed) else traceback.format_exc()
            print(f"SNIPPET FAILED at {block['where']} ({block['language']}):\n{detail}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
