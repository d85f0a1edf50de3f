"""The template's Jinja filters embed any text as valid Python, TOML and Markdown."""

from __future__ import annotations

import ast
import importlib.util
import sys
from types import ModuleType

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from mosaic_sdk.scaffold import TEMPLATE_DIR

HOSTILE = [
    "",
    'O"Brien',
    "it's",
    "\"\"\"triple\"\"\" and '''single'''",
    "back\\slash \\n \\u0041 \\",
    "new\nline\r\nand\ttab",
    "nul\x00 bell\x07 del\x7f esc\x1b",
    "unicode: Zo\u00eb \u4e16\u754c \U0001f600 \u200b \u2028 \u2029",
    "lone surrogate \ud800",
    "{{ cookiecutter.author }} {% raw %} {# c #}",
    "# not a comment; ] } [table]",
    "\\",
    '"',
]


def load_extensions() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "scaffold_local_extensions", TEMPLATE_DIR / "local_extensions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


extensions = load_extensions()


@pytest.mark.parametrize("text", HOSTILE)
def test_py_str_is_a_literal_of_exactly_the_text(text: str) -> None:
    literal = extensions.python_string_literal(text)
    assert ast.literal_eval(literal) == text
    assert "\n" not in literal and "\r" not in literal  # stays on one source line
    compile(f"x = {literal}\n", "<baked>", "exec")


@pytest.mark.parametrize("text", [t for t in HOSTILE if "\ud800" not in t])
def test_toml_str_parses_back_to_the_text(text: str) -> None:
    literal = extensions.toml_string_literal(text)
    assert tomllib.loads(f"key = {literal}\n")["key"] == text
    assert tomllib.loads(f"[t]\n{literal} = 1\n")["t"] == {text: 1}  # also valid as a key


def test_toml_str_escapes_lone_surrogates_instead_of_writing_them() -> None:
    literal = extensions.toml_string_literal("a\ud800")
    assert literal == '"a\\ud800"'
    literal.encode("utf-8")  # writable to a file


@pytest.mark.parametrize("text", HOSTILE)
def test_md_text_is_one_line_with_markup_escaped(text: str) -> None:
    rendered = extensions.markdown_text(text)
    assert "\n" not in rendered
    for ch in "*_`[]<>#|{}":
        assert rendered.count(ch) == rendered.count("\\" + ch)


def test_the_filters_are_registered_on_a_jinja_environment() -> None:
    from jinja2 import Environment

    env = Environment(extensions=[extensions.EmbedExtension])
    out = env.from_string("{{ v|py_str }} {{ v|toml_str }} {{ v|md_text }}").render(v='a"b')
    assert out == '"a\\"b" "a\\"b" a"b'
