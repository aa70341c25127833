"""How the test suite reads the docs: the same way MkDocs does.

Sybil reads raw markdown, but a reader sees the page after
``pymdownx.snippets`` has pasted library code into it. ``SnippetDocument``
runs that very preprocessor, configured from ``mkdocs.yml``, before Sybil looks
for code blocks, so the tests execute exactly what the page shows.
"""

from __future__ import annotations

import codeop
import contextlib
import difflib
import importlib.util
import io
import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import markdown
from mkdocs.config import load_config
from site_build import ROOT
from sybil import Document, Example, Region, Sybil
from sybil.document import PythonDocStringDocument
from sybil.parsers.markdown import ClearNamespaceParser, PythonCodeBlockParser, SkipParser
from sybil.parsers.rest import DocTestParser
from sybil.typing import Parser

# The info strings a Python fence might carry. Sybil collects only the plain
# "python" one; tests/docs/test_fences.py flags the rest.
PYTHON_LOOKING_FENCE = re.compile(
    r"^(?P<indent>[ \t]*(?:>[ \t]*)*)(?P<fence>`{3,}|~{3,})[ \t]*"
    r"(?P<info>\{?\.?(?:python3?|py3?|pycon|ipython3?)\b[^\n]*)$",
    re.MULTILINE,
)


@cache
def _mkdocs_markdown(config_file: str) -> markdown.Markdown:
    config = load_config(config_file=config_file)
    return markdown.Markdown(
        extensions=config["markdown_extensions"],
        extension_configs=config["mdx_configs"],
    )


def expand_snippets(text: str, config_file: str | Path = "mkdocs.yml") -> str:
    """Return ``text`` with every ``--8<--`` include expanded as MkDocs expands it."""
    md = _mkdocs_markdown(str(Path(config_file).resolve()))
    md.reset()
    return "\n".join(md.preprocessors["snippet"].run(text.split("\n")))


def render_markdown(text: str, config_file: str | Path = "mkdocs.yml") -> str:
    """``text`` as HTML, with the extensions and settings of ``mkdocs.yml``."""
    md = _mkdocs_markdown(str(Path(config_file).resolve()))
    md.reset()
    html: str = md.convert(text)
    return html


def _config_for(path: str) -> Path:
    """The mkdocs.yml that governs a markdown file: the nearest one above it."""
    for folder in Path(path).resolve().parents:
        if (folder / "mkdocs.yml").is_file():
            return folder / "mkdocs.yml"
    raise FileNotFoundError(f"no mkdocs.yml above {path}")


class SnippetDocument(Document):
    """A markdown document whose snippet includes are expanded before parsing.

    Examples report the line numbers of the file as written, not of the
    expanded text, so a failure points at the right line of the page.
    """

    source_lines: list[int]  # expanded line index -> line number in the file

    @classmethod
    def parse(cls, path: str, *parsers: Any, encoding: str = "utf-8") -> Document:
        text = Path(path).read_text(encoding=encoding)
        document = cls(expand_snippets(text, _config_for(path)), path)
        document.source_lines = _source_lines(text, document.text)
        for parser in parsers:
            for region in parser(document):
                document.add(region)
        return document

    def examples(self) -> Iterator[Example]:
        for example in super().examples():
            example.line = self.source_lines[example.line - 1]
            yield example


def _source_lines(original: str, expanded: str) -> list[int]:
    """For each line of ``expanded``, the number of the ``original`` line it came from.

    Lines pasted in by an include map to the include line.
    """
    before, after = original.split("\n"), expanded.split("\n")
    numbers = [0] * len(after)
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset, j in enumerate(range(j1, j2)):
            same = tag == "equal"
            numbers[j] = (i1 + offset if same else min(i1, i2 - 1, len(before) - 1)) + 1
    return numbers


# ---------------------------------------------------------------- shown output
#
# A page shows what a block prints in an ```output fence right after it:
#
#     ```python
#     print(1 + 1)
#     ```
#
#     ```output
#     2
#     ```
#
# The block runs with its stdout captured, and the text must equal the fence's
# exactly (trailing spaces and blank lines aside). A block that prints with no
# output fence after it fails too, so a page never hides what its code prints,
# and an output fence that follows no block is flagged by tests/docs/test_fences.py,
# so a page never shows output that nothing compares.

OUTPUT_FENCE = re.compile(
    r"[ \t]*\n(?:[ \t]*\n)*(?P<indent>[ \t]*)(?P<fence>`{3,})output[ \t]*\n"
    r"(?P<body>(?:.*\n)*?)(?P=indent)(?P=fence)[ \t]*(?:\n|\Z)"
)
ANY_OUTPUT_FENCE = re.compile(r"^[ \t]*(?:>[ \t]*)*`{3,}output[ \t]*$", re.MULTILINE)
# What NumPy prints differently in 1.25 and 2.x: print Python floats and lists.
NUMPY_REPR = re.compile(r"\b(?:np\.(?:float|int|bool|str)\w*\(|array\(|dtype=)")


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").split("\n"))


def _dedent(body: str, indent: str) -> str:
    return "".join(line.removeprefix(indent) for line in body.splitlines(keepends=True))


class OutputMismatch(AssertionError):
    """A block printed something other than the output its page shows."""


def checked_output(evaluator: Any, expected: str | None) -> Any:
    """``evaluator`` run with stdout captured and compared with ``expected``."""

    def evaluate(example: Example) -> None:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            evaluator(example)
        shown, got = _normalise(expected or ""), _normalise(printed.getvalue())
        if expected is None and got:
            raise OutputMismatch(
                "this block prints, but the page shows no output: add an ```output "
                f"fence right after it with:\n{got}"
            )
        if expected is not None and got != shown:
            diff = "\n".join(
                difflib.unified_diff(
                    shown.split("\n"), got.split("\n"), "shown", "printed", lineterm=""
                )
            )
            raise OutputMismatch(f"the shown output differs from what the block prints:\n{diff}")
        if NUMPY_REPR.search(got):
            raise OutputMismatch(
                "the output holds a NumPy repr, which NumPy 1.25 and 2.x print differently: "
                f"print Python floats and lists instead (float(x), x.tolist()):\n{got}"
            )

    return evaluate


class PythonWithOutputParser:
    """Sybil's ```python parser, with each block's printed output checked."""

    def __init__(self) -> None:
        self.python = PythonCodeBlockParser()

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.python(document):
            if str(region.parsed).startswith(">>>"):  # a doctest checks its own output
                yield region
                continue
            after = OUTPUT_FENCE.match(document.text, region.end)
            expected = _dedent(after.group("body"), after.group("indent")) if after else None
            end = after.end() if after else region.end
            yield Region(
                region.start,
                end,
                parsed=region.parsed,
                evaluator=checked_output(region.evaluator, expected),
            )


def unchecked_outputs(path: str | Path) -> list[str]:
    """Output fences in ``path`` that follow no Python block, so nothing compares them."""
    document = SnippetDocument.parse(str(path), *MARKDOWN_PARSERS)
    checked = [(region.start, region.end) for _, region in document.regions]
    return [
        f"{Path(path).name}:{_line_of(document.text, match.start())}: {match.group(0).strip()}"
        for match in ANY_OUTPUT_FENCE.finditer(document.text)
        if not any(start < match.start() < end for start, end in checked)
    ]


MARKDOWN_PARSERS: list[Parser] = [PythonWithOutputParser(), SkipParser(), ClearNamespaceParser()]


def docs_sybil() -> Sybil:
    """Every ```python block (and its ``>>>`` examples) in the markdown files."""
    return Sybil(
        parsers=MARKDOWN_PARSERS,
        path=str(ROOT),
        patterns=["*.md"],
        # CONTRIBUTING.md shows page markup, fences inside fences: not code to run.
        excludes=["site/*", ".venv/*", "CONTRIBUTING.md"],
        document_types={".md": SnippetDocument},
        name="docs",
    )


def docstring_sybil() -> Sybil:
    """The ``Examples`` sections of the library's docstrings."""
    return Sybil(
        parsers=[DocTestParser()],
        path=str(ROOT / "src"),
        patterns=["*.py"],
        document_types={".py": PythonDocStringDocument},
        name="docstrings",
    )


def uncollected_fences(path: str | Path) -> list[str]:
    """Python-looking fences in ``path`` that Sybil would silently not run.

    A fence counts as collected when Sybil's parsers made a region of it (a
    region marked ``skip`` still counts: the skip carries its reason).
    """
    document = SnippetDocument.parse(str(path), *MARKDOWN_PARSERS)
    collected = {start for start, _ in document.regions}
    return [
        f"{Path(path).name}:{_line_of(document.text, match.start())}: {match.group(0).strip()}"
        for match in PYTHON_LOOKING_FENCE.finditer(document.text)
        if match.start() not in collected
    ]


def _line_of(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


# ---------------------------------------------------------------- pasting
#
# The pages tell readers to paste the blocks into Python in order. Python's
# classic prompt (3.12 and older, fed a paste line by line) compiles one
# statement at a time, and a compound statement (for, try, def...) ends only
# at a blank line. So a dedented line straight after an indented block is a
# SyntaxError there, and a blank line inside a function body ends the
# function early. `codeop` is the prompt's own compiler: a block fed to it
# line by line fails exactly where the prompt would. (A terminal that sends
# the paste in one piece, "bracketed paste", makes the old prompt refuse any
# block of two statements or more; the pages suggest a file, Jupyter or
# Python 3.13's prompt for that reason. Nothing here can fix that case.)


def paste_error(source: str) -> str | None:
    """Where the classic Python prompt rejects ``source`` pasted line by line."""
    compiler = codeop.CommandCompiler()
    statement: list[str] = []
    for number, line in enumerate(source.split("\n"), start=1):
        statement.append(line)
        try:
            complete = compiler("\n".join(statement), "<stdin>", "single")
        except SyntaxError as error:
            return f"block line {number}, {line.strip()!r}: {error.msg}"
        if complete is not None:  # the prompt runs it and starts afresh
            statement = []
    return None


def unpasteable_blocks(path: str | Path) -> list[str]:
    """The ```python blocks of ``path`` that the classic prompt rejects when pasted."""
    document = SnippetDocument.parse(str(path), *MARKDOWN_PARSERS)
    assert isinstance(document, SnippetDocument)
    found = []
    for _, region in document.regions:
        source = region.parsed
        if not isinstance(source, str) or source.startswith(">>>"):
            continue  # a skip directive, or a doctest, which shows its own prompt
        error = paste_error(source)
        if error:
            line = document.source_lines[_line_of(document.text, region.start) - 1]
            found.append(f"{Path(path).name}:{line}: {error}")
    return found


SKIP_WITHOUT_REASON = re.compile(r"<!--\s*skip:\s*(?:next|start)\s*-->")


def skips_without_reason(path: str | Path) -> list[str]:
    """``skip`` directives that do not say why the block does not run."""
    text = Path(path).read_text(encoding="utf-8")
    return [match.group(0) for match in SKIP_WITHOUT_REASON.finditer(text)]


def run_notebook(path: str | Path, timeout: int = 600) -> Any:
    """Execute a jupytext percent-format notebook top to bottom; raise on a failing cell."""
    import jupytext
    from nbclient import NotebookClient

    notebook = jupytext.read(path, fmt="py:percent")
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=timeout,
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    client.execute()
    return notebook


def load_hook(name: str) -> ModuleType:
    """Import ``hooks/<name>.py``, the way MkDocs loads it: as a file, not a package."""
    spec = importlib.util.spec_from_file_location(f"{name}_hook", ROOT / "hooks" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
