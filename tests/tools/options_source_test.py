"""Environment variables are read through the option registry, and every
QD_* name in the sources is one the registry declares
(quadrants/common/options.def).

What is checked, over the repository's own files:

Reads, in quadrants/, tools/, examples/ and benchmarks/:
  - C and C++: no `getenv(` at all outside quadrants/common/options.cc.
    Every variable the library reads (QD_* or not) is declared and read
    through options.h.
  - Python: no read of a QD_* variable (`os.environ.get("QD_...")`,
    `os.environ["QD_..."]`, `os.getenv(...)`, `"QD_..." in os.environ`),
    and no read whose name is not a string literal, outside the files in
    RUN_WITHOUT_PACKAGE. Python reads through quadrants.lang.options. Other
    variables (Bazel's BUILD_WORKING_DIRECTORY, RUNFILES_DIR) may be read.
  - Shell scripts and files in RUN_WITHOUT_PACKAGE cannot import the
    package: they may read QD_* variables, whose names the next check
    still requires to be declared.
  Allowed everywhere: setting variables and passing the environment on to
  child processes (`dict(os.environ, QD_X=...)`, `env["QD_X"] = ...`,
  `env.pop("QD_X")`, `monkeypatch.setenv`, `--test_env=QD_X`). tests/ is
  not checked for reads: tests inspect and set the environment freely.

Names, in quadrants/, tools/, examples/, benchmarks/, tests/ and the
repository's top-level scripts and .bazelrc:
  - every `QD_[A-Z0-9_]+` in a string literal (Python, Starlark, C, C++)
    and every QD_* word in a shell script or .bazelrc is a variable the
    registry declares, or listed in NOT_VARIABLES. C++ macros (QD_LOG,
    QD_RETURN_IF_ERROR) are code, not literals, and are not checked.

Each offender is listed as path:line.
"""
import ast
import io
import os
import re
import sys
import tokenize
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

READ_DIRS = ("quadrants", "tools", "examples", "benchmarks")
NAME_DIRS = READ_DIRS + ("tests",)
TOP_LEVEL_FILES = (".bazelrc", "qd", os.path.join(".ci", "run"), "BUILD.bazel", "conftest.py")
# The registry, and its Python side, which reads the declared variables by
# their declared names from os.environ (so code that replaces it is seen).
REGISTRY_FILES = {os.path.join("quadrants", "common", "options.cc"),
                  os.path.join("quadrants", "common", "options.def"),
                  os.path.join("quadrants", "python", "quadrants", "lang", "options.py")}
# This file names offenders on purpose, in its examples.
SELF = os.path.relpath(os.path.realpath(__file__), ROOT)
# Scripts that run before the package is built or importable.
RUN_WITHOUT_PACKAGE = {
    os.path.join("tools", "run_tests.py"): "./qd test runs it with the system Python first",
}
# QD_* strings that are no environment variables.
NOT_VARIABLES = {
    "QD_EMBED_": "the include-guard prefix of headers tools/embed_file.py writes",
}
C_SUFFIXES = (".cc", ".h", ".cpp", ".c", ".mm")
SHELL_SUFFIXES = (".sh", ".bazelrc")
SHELL_NAMES = {"qd", "run"}
STARLARK_NAMES = {"BUILD", "BUILD.bazel", "WORKSPACE"}
QD_NAME = re.compile(r"\bQD_[A-Z0-9_]+")
GETENV = re.compile(r"\b(?:secure_)?getenv\s*\(")


def _declared():
    try:
        from quadrants.lang import options  # pylint: disable=import-outside-toplevel
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "quadrants", "python"))
        from quadrants.lang import options  # pylint: disable=import-outside-toplevel
    return options.declared_env_names()


# ---- C and C++ ---------------------------------------------------------------------

_C_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"'
                      r"|'(?:\\.|[^'\\\n])*'", re.S)


def c_code_and_strings(text):
    """(code with comments and literals blanked, [(line, string literal)])."""
    code, strings, last = [], [], 0
    for match in _C_TOKEN.finditer(text):
        token = match.group(0)
        code.append(text[last:match.start()])
        code.append(re.sub(r"[^\n]", " ", token))
        last = match.end()
        if token.startswith(('"', 'R"')):
            strings.append((text.count("\n", 0, match.start()) + 1, token))
    code.append(text[last:])
    return "".join(code), strings


def c_reads(text):
    code, _ = c_code_and_strings(text)
    return [(code.count("\n", 0, m.start()) + 1, "getenv() outside the registry: use "
             "quadrants/common/options.h") for m in GETENV.finditer(code)]


# ---- Python --------------------------------------------------------------------------

def _is_environ(node):
    return ((isinstance(node, ast.Attribute) and node.attr == "environ"
             and isinstance(node.value, ast.Name) and node.value.id == "os")
            or (isinstance(node, ast.Name) and node.id == "environ"))


def _read_name(node):
    """The name argument of an environment read at `node`, '' when `node`
    reads none, None when the name is not a literal."""
    key = None
    if isinstance(node, ast.Call):
        func = node.func
        reads = ((isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(func.value))
                 or (isinstance(func, ast.Attribute) and func.attr == "getenv"
                     and isinstance(func.value, ast.Name) and func.value.id == "os")
                 or (isinstance(func, ast.Name) and func.id == "getenv"))
        if not reads:
            return ""
        key = node.args[0] if node.args else None
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        if not _is_environ(node.value):
            return ""
        key = node.slice
    elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn))
                                                for op in node.ops):
        if not any(_is_environ(c) for c in node.comparators):
            return ""
        key = node.left
    else:
        return ""
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def python_reads(text):
    found = []
    for node in ast.walk(ast.parse(text)):
        name = _read_name(node)
        if name is None:
            found.append((node.lineno, "an environment read whose name is not a literal"))
        elif name.startswith("QD_"):
            found.append((node.lineno, f"reads {name} directly: use quadrants.lang.options"))
    return found


def python_strings(text):
    return [(tok.start[0], tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.STRING]


# ---- the scan ------------------------------------------------------------------------

def _files(dirs):
    for top in dirs:
        for base, subdirs, names in os.walk(os.path.join(ROOT, top)):
            subdirs[:] = sorted(d for d in subdirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(names):
                yield os.path.relpath(os.path.join(base, name), ROOT)


def _kind(path):
    name = os.path.basename(path)
    if path.endswith(C_SUFFIXES):
        return "c"
    if path.endswith((".py", ".bzl")) or name in STARLARK_NAMES:
        return "python"
    if path.endswith(SHELL_SUFFIXES) or name in SHELL_NAMES:
        return "shell"
    return None


def _read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def read_offenders():
    found = []
    for path in _files(READ_DIRS):
        if path in REGISTRY_FILES or path in RUN_WITHOUT_PACKAGE:
            continue
        kind = _kind(path)
        reads = (c_reads(_read(path)) if kind == "c"
                 else python_reads(_read(path)) if kind == "python" else [])
        found += [f"{path}:{line}: {what}" for line, what in reads]
    return found


def _names(path):
    """(line, QD_* name) in the literals of `path` (every word of a script)."""
    kind, text = _kind(path), _read(path)
    if kind == "shell":
        pieces = list(enumerate(text.splitlines(), 1))
    elif kind == "c":
        pieces = c_code_and_strings(text)[1]
    elif kind == "python":
        pieces = python_strings(text)
    else:
        return []
    return [(line + piece.count("\n", 0, m.start()), m.group(0))
            for line, piece in pieces for m in QD_NAME.finditer(piece)]


def name_offenders(declared):
    paths = list(_files(NAME_DIRS))
    paths += [p for p in TOP_LEVEL_FILES if os.path.exists(os.path.join(ROOT, p))]
    found = []
    for path in paths:
        if path in REGISTRY_FILES or path == SELF:
            continue
        for line, name in _names(path):
            if name not in declared and name not in NOT_VARIABLES:
                found.append(f"{path}:{line}: {name} is not declared in "
                             "quadrants/common/options.def")
    return found


class ScannerTest(unittest.TestCase):
    """The scanners find what they are meant to, and no more."""

    def test_c_reads_skip_comments_and_strings(self):
        text = ('// std::getenv("QD_X") in a comment\n'
                'const char* s = "getenv(";\n'
                'const char* v = std::getenv("HOME");\n')
        self.assertEqual([line for line, _ in c_reads(text)], [3])
        self.assertEqual([s for _, s in c_code_and_strings(text)[1]],
                         ['"getenv("', '"HOME"'])

    def test_python_reads(self):
        text = ('import os\n'
                'a = os.environ.get("QD_A")\n'
                'b = os.environ["QD_B"]\n'
                'c = os.getenv("QD_C", "")\n'
                'd = "QD_D" in os.environ\n'
                'e = os.environ.get(name)\n'
                'f = os.environ.get("RUNFILES_DIR")\n'
                'env = dict(os.environ, QD_G="1")\n'
                'env["QD_H"] = "1"\n'
                'env.pop("QD_I", None)\n')
        self.assertEqual([line for line, _ in python_reads(text)], [2, 3, 4, 5, 6])

    def test_names_in_literals_only(self):
        self.assertEqual([s for _, s in python_strings('x = f"{QD_A}" + "QD_B"  # QD_C\n')],
                         ['f"{QD_A}"', '"QD_B"'])


class SourceTest(unittest.TestCase):

    def test_the_source_tree_is_there(self):
        # Bazel runs this from its runfiles: the scan follows this file to
        # the checkout, and an empty scan would pass for the wrong reason.
        self.assertTrue(os.path.exists(os.path.join(ROOT, "quadrants", "common", "options.def")),
                        ROOT)
        self.assertGreater(sum(1 for _ in _files(READ_DIRS)), 200)

    def test_environment_is_read_through_the_registry(self):
        found = read_offenders()
        self.assertEqual(found, [], "environment reads outside the registry:\n" + "\n".join(found))

    def test_every_qd_name_is_declared(self):
        found = name_offenders(_declared())
        self.assertEqual(found, [], "undeclared QD_* names:\n" + "\n".join(found))


if __name__ == "__main__":
    unittest.main()
