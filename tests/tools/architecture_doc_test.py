"""Every path docs/architecture.md names exists in the repository.

A path is a backticked word holding a '/': a file or folder relative to the
repository root, to quadrants/, to quadrants/python, to the Python package
(quadrants/python/quadrants) or to quadrants/runtime; it may leave out its
suffix (`runtime/adstack/launch_sizer` names launch_sizer.{h,cc}), use
braces (`options.{def,h,cc}`) or name a Bazel target (`//quadrants/runtime:
backends`, `tests/tools:options_doc_test`: its package folder must exist).
Paths git ignores (build outputs such as docs/_generated/) are not checked.
It reads the source tree, not Bazel inputs, so it is tagged external.
"""
import itertools
import os
import re
import unittest

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOC = os.path.join(ROOT, "docs", "architecture.md")
BASES = ("", "quadrants", os.path.join("quadrants", "python"),
         os.path.join("quadrants", "python", "quadrants"), os.path.join("quadrants", "runtime"))
SUFFIXES = ("", ".h", ".cc", ".py", ".md", ".bzl", ".def", ".proto", ".sh")
WORD = re.compile(r"`([^`\s]+)`")
PATH_CHARS = re.compile(r"[\w./{},:+-]+")


def _expand(word):
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return list(itertools.chain.from_iterable(
        _expand(word[:m.start()] + alt + word[m.end():]) for alt in m.group(1).split(",")))


def _ignored_prefixes(root):
    try:
        with open(os.path.join(root, ".gitignore")) as f:
            lines = [line.strip() for line in f]
    except FileNotFoundError:
        return ()
    return tuple(line.strip("/") for line in lines
                 if line.startswith("/") and "*" not in line)


def named_paths(text):
    """(line, word) for each backticked word of `text` that names a path."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for word in WORD.findall(line):
            if "/" not in word or "://" in word or word.startswith(("qd.", "$", "~", "-")):
                continue
            if PATH_CHARS.fullmatch(word):
                found.append((number, word))
    return found


def exists(word, root):
    if word.startswith("//") or (":" in word and not word.startswith(":")):
        return os.path.isdir(os.path.join(root, word.lstrip("/").split(":")[0]))
    for path in _expand(word.rstrip("/")):
        for base in BASES:
            for suffix in SUFFIXES:
                if os.path.exists(os.path.join(root, base, path + suffix)):
                    return True
    return False


def missing_paths(text, root):
    ignored = _ignored_prefixes(root)
    return ["line %d: %s" % (number, word) for number, word in named_paths(text)
            if not word.rstrip("/").startswith(ignored) and not exists(word, root)]


class ArchitectureDocTest(unittest.TestCase):

    def test_every_named_path_exists(self):
        with open(DOC, encoding="utf-8") as f:
            text = f.read()
        self.assertGreater(len(named_paths(text)), 100)
        self.assertEqual(missing_paths(text, ROOT), [],
                         "docs/architecture.md names paths that do not exist")

    def test_the_check_sees_a_missing_path(self):
        text = ("`runtime/gfx/` and `runtime/adstack/launch_sizer`, "
                "`common/options.{def,h}`, `//quadrants/nowhere:x`, `lang/field.py`, "
                "`qd.types.vector/matrix`")
        self.assertEqual(missing_paths(text, ROOT),
                         ["line 1: runtime/gfx/", "line 1: //quadrants/nowhere:x"])


if __name__ == "__main__":
    unittest.main()
