"""Reading an algorithm script's command-line arguments without running it.

CleanRL scripts declare their arguments either with ``argparse`` (``parser.add_argument(
"--learning-rate", type=float, ...)``, CleanRL 1.x) or with a ``tyro`` dataclass
(``@dataclass class Args: learning_rate: float = 2.5e-4``, newer CleanRL and our PPO). This
module parses the script's source with :mod:`ast` (nothing is imported or executed), so the
worker can check ``algo_params`` (names and value types) before launch and turn them into
``--kebab-case=value`` flags the script understands.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mosaic_worker_cleanrl import source_parse

#: Kinds of value an argument takes.
KINDS = ("int", "float", "str", "bool", "list", "any")


@dataclass(frozen=True)
class ArgumentSpec:
    """One argument of a script: its snake_case name, kind, whether None is allowed."""

    name: str
    kind: str
    optional: bool = False
    style: str = "argparse"  # or "tyro"
    #: The default as a JSON value, when the source gives one that can be read without
    #: running anything; else None with ``default_source`` holding its expression.
    default: Any = None
    default_source: str | None = None
    help: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class ScriptArguments:
    """The arguments a script declares (``style`` is ``argparse``, ``tyro`` or ``unknown``)."""

    style: str
    arguments: dict[str, ArgumentSpec]

    def __contains__(self, name: str) -> bool:
        return normalise_name(name) in self.arguments


def normalise_name(name: str) -> str:
    """``--learning-rate``, ``learning-rate`` and ``learning_rate`` all become ``learning_rate``."""
    return name.lstrip("-").replace("-", "_")


def _kind_of_annotation(node: ast.expr | None) -> tuple[str, bool]:
    """Map a type annotation (``int``, ``float | None``, ``Optional[str]``...) to a kind."""
    if node is None:
        return "any", False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "int" as a string
        try:
            node = source_parse.parse(node.value, mode="eval").body
        except SyntaxError:
            return "any", False
    if isinstance(node, ast.Name):
        return (node.id if node.id in ("int", "float", "str", "bool") else "any"), False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        parts = [node.left, node.right]
        non_none = [p for p in parts if not (isinstance(p, ast.Constant) and p.value is None)]
        if len(non_none) == 1:
            return _kind_of_annotation(non_none[0])[0], True
        return "any", True
    if isinstance(node, ast.Subscript):
        base = ast.unparse(node.value).split(".")[-1]
        if base == "Optional":
            return _kind_of_annotation(node.slice)[0], True
        if base in ("list", "List", "tuple", "Tuple", "Sequence"):
            return "list", False
    return "any", False


def _literal(node: ast.expr | None, kind: str) -> tuple[Any, str | None]:
    """(value, None) for a default readable without running anything (``1e-3``,
    ``int(1e6)``, ``"x" + "y"``), else (None, its source)."""
    if node is None:
        return None, None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = _simple_call(node)
        if value is _UNREADABLE:
            return None, ast.unparse(node)
    if kind == "int" and isinstance(value, float) and value.is_integer():
        value = int(value)  # argparse keeps `default=5e3` as given; the script uses it as int
    if isinstance(value, tuple):
        value = list(value)
    if value is not None and not isinstance(value, (str, int, float, bool, list)):
        return None, ast.unparse(node)
    return value, None


_UNREADABLE = object()


def _simple_call(node: ast.expr) -> Any:
    """``int(1e6)``, ``float("inf")``: one builtin conversion of a literal."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("int", "float", "str", "bool")
        and len(node.args) == 1
        and not node.keywords
    ):
        try:
            return {"int": int, "float": float, "str": str, "bool": bool}[node.func.id](
                ast.literal_eval(node.args[0])
            )
        except (ValueError, TypeError, SyntaxError):
            return _UNREADABLE
    return _UNREADABLE


def _text(node: ast.expr | None) -> str:
    """A help string: its value when literal, else its source (an f-string, say)."""
    if node is None:
        return ""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return ast.unparse(node)
    return " ".join(str(value).split())


def _argparse_kind(call: ast.Call, source: str) -> tuple[str, bool]:
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    action = keywords.get("action")
    if isinstance(action, ast.Constant) and action.value in ("store_true", "store_false"):
        return "bool", False
    nargs = keywords.get("nargs")
    if isinstance(nargs, ast.Constant) and nargs.value in ("+", "*"):
        return "list", False
    kind_node = keywords.get("type")
    default = keywords.get("default")
    optional = isinstance(default, ast.Constant) and default.value is None
    if isinstance(kind_node, ast.Name) and kind_node.id in ("int", "float", "str"):
        return kind_node.id, optional
    if kind_node is not None:
        text = ast.get_source_segment(source, kind_node) or ""
        if "strtobool" in text or "bool(" in text:
            return "bool", optional
    return ("str" if kind_node is None else "any"), optional


def read_script_arguments(path: Path) -> ScriptArguments:
    """Parse ``path`` and return the arguments it declares (argparse calls or tyro ``Args``)."""
    source = path.read_text(encoding="utf-8")
    tree = source_parse.parse(source, filename=str(path))
    found: dict[str, ArgumentSpec] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            flags = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            long = [f for f in flags if f.startswith("--")]
            if not long:
                continue
            kind, optional = _argparse_kind(node, source)
            name = normalise_name(long[0])
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            default, default_source = _literal(keywords.get("default"), kind)
            if kind == "bool" and "default" not in keywords:
                action = keywords.get("action")
                default = isinstance(action, ast.Constant) and action.value == "store_false"
            found[name] = ArgumentSpec(
                name, kind, optional, "argparse", default, default_source,
                _text(keywords.get("help")),
            )  # fmt: skip
    if found:
        return ScriptArguments("argparse", found)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Args":
            body = node.body
            for i, item in enumerate(body):
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    kind, optional = _kind_of_annotation(item.annotation)
                    name = item.target.id
                    default, default_source = _literal(item.value, kind)
                    doc = body[i + 1] if i + 1 < len(body) else None  # tyro's field docstring
                    help_text = (
                        _text(doc.value)
                        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
                        else ""
                    )
                    found[name] = ArgumentSpec(
                        name, kind, optional, "tyro", default, default_source, help_text
                    )
            return ScriptArguments("tyro", found)
    return ScriptArguments("unknown", {})


def check_value(spec: ArgumentSpec, value: Any) -> str | None:
    """Return why ``value`` does not fit ``spec`` (None when it fits)."""
    if value is None:
        return None if spec.optional else f"{spec.name} does not accept null"
    kind = spec.kind
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "float": isinstance(value, (int, float)) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "list": isinstance(value, (list, tuple)),
        "any": isinstance(value, (str, int, float, bool)),
    }[kind]
    if ok:
        return None
    wanted = {"any": "a string, number or boolean", "list": "a list", "int": "an int"}.get(
        kind, f"a {kind}"
    )
    return f"{spec.name} expects {wanted}, got {type(value).__name__} {value!r}"


def to_flags(spec: ArgumentSpec, value: Any) -> list[str]:
    """The command-line tokens for one validated value (``--kebab-case=value`` style)."""
    flag = spec.flag
    if value is None:
        return [flag, "None"] if spec.style == "tyro" else []
    if isinstance(value, bool):
        if spec.style == "tyro":
            return [flag] if value else ["--no-" + flag[2:]]
        return [f"{flag}={value}"]
    if isinstance(value, (list, tuple)):
        return [flag, *(str(v) for v in value)]
    return [f"{flag}={value}"]


__all__ = [
    "KINDS",
    "ArgumentSpec",
    "ScriptArguments",
    "check_value",
    "normalise_name",
    "read_script_arguments",
    "to_flags",
]
