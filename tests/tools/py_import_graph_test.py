"""The quadrants Python package is layered: no import cycle among its
modules and no function-local import of its own modules (see
tools/py_import_graph.py). Also tests the tool on small synthetic packages,
and that every module of the package can be the first one imported.

usage: python3 tests/tools/py_import_graph_test.py
"""
import concurrent.futures
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import py_import_graph  # noqa: E402  pylint: disable=wrong-import-position

PACKAGE_DIR = os.path.join(ROOT, "quadrants", "python", "quadrants")
DOC = os.path.join(ROOT, "docs", "architecture.md")


class PackageIsLayeredTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.graph = py_import_graph.Graph(PACKAGE_DIR)

    def test_reads_the_package(self):
        self.assertIn("quadrants.lang.field", self.graph.files)
        self.assertIn("quadrants.lang.kernel", self.graph.edges()["quadrants"])

    def test_no_import_cycle(self):
        cycles = self.graph.cycles()
        self.assertEqual(cycles, [], "import cycles among the package's modules:\n" + "\n".join(
            "  " + " -> ".join(py_import_graph.short(m) for m in c) for c in cycles))

    def test_no_function_local_import_of_the_package(self):
        sites = self.graph.local_imports()
        self.assertEqual(
            sites, [], "function-local imports of the package's own modules (import them at "
            "module level, or register the implementation from the higher module):\n" +
            "\n".join("  %s:%d -> %s" % (os.path.relpath(self.graph.files[s.module], ROOT),
                                         s.line, ", ".join(s.targets)) for s in sites))

    def test_architecture_doc_shows_the_current_layers(self):
        with open(DOC, encoding="utf-8") as f:
            shown = py_import_graph.doc_section(f.read())
        self.assertEqual(shown, py_import_graph.doc_block(self.graph),
                         "docs/architecture.md's Python layers are stale: run "
                         "`python3 tools/py_import_graph.py --write`")

    def test_layers_list_every_module(self):
        layers = self.graph.layers()
        self.assertEqual(set(layers), set(self.graph.files))
        listing = py_import_graph.layer_listing(self.graph)
        self.assertTrue(listing.startswith("layer 0\n"))


def _write_package(root, files):
    """files: path relative to root -> source."""
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))


class ToolTest(unittest.TestCase):
    """py_import_graph on synthetic packages named like the real one (the
    tool knows its package by name)."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.pkg = os.path.join(self.tmp, py_import_graph.PACKAGE)

    def graph(self, files):
        _write_package(self.pkg, files)
        return py_import_graph.Graph(self.pkg)

    def test_cycle_is_detected(self):
        g = self.graph({
            "__init__.py": "",
            "a.py": "from quadrants import b\n",
            "b.py": "import quadrants.c\n",
            "c.py": "from quadrants.a import thing\n",
            "d.py": "from quadrants import a\n",
        })
        self.assertEqual(g.cycles(), [["quadrants.a", "quadrants.b", "quadrants.c"]])
        self.assertIn("largest import cycle: 3 modules", py_import_graph.summary(g))
        with self.assertRaises(ValueError):
            g.layers()

    def test_acyclic_package_has_layers(self):
        g = self.graph({
            "__init__.py": "from quadrants import top\n",
            "low.py": "X = 1\n",
            "mid.py": "from quadrants.low import X\n",
            "top.py": "from quadrants import low, mid\n",
        })
        self.assertEqual(g.cycles(), [])
        self.assertEqual(g.layers(), {"quadrants.low": 0, "quadrants.mid": 1, "quadrants.top": 2,
                                      "quadrants": 3})

    def test_function_local_import_is_detected(self):
        g = self.graph({
            "__init__.py": "",
            "a.py": "X = 1\n",
            "b.py": """\
                import json


                def f():
                    import torch
                    from quadrants.a import X
                    return X


                class C:
                    def m(self):
                        from . import a
                        return a
            """,
        })
        local = sorted((s.module, s.line, s.targets) for s in g.local_imports())
        self.assertEqual(local, [("quadrants.b", 6, ["quadrants.a"]),
                                 ("quadrants.b", 12, ["quadrants.a"])])
        # Local imports are edges too: a cycle through them is a cycle.
        self.assertEqual(g.edges()["quadrants.b"], {"quadrants.a"})

    def test_reexporting_init_is_not_an_edge_to_itself(self):
        g = self.graph({
            "__init__.py": "",
            "sub/__init__.py": '''\
                """Re-exports."""
                from quadrants.sub.impl import thing
                from .other import *

                __all__ = ["thing"]
            ''',
            "sub/impl.py": "thing = 1\n",
            "sub/other.py": "other_thing = 2\n",
            "user.py": "from quadrants.sub import thing, other_thing\nimport quadrants.sub.impl\n",
        })
        self.assertEqual(g.edges()["quadrants.user"], {"quadrants.sub.impl", "quadrants.sub.other"})

    def test_init_with_code_is_an_edge(self):
        g = self.graph({
            "__init__.py": "VALUE = 1\nfrom quadrants import user\n",
            "user.py": "from quadrants import VALUE\n",
        })
        self.assertEqual(g.edges()["quadrants.user"], {"quadrants"})
        self.assertEqual(g.cycles(), [["quadrants", "quadrants.user"]])

    def test_from_package_import_submodule_is_an_edge_to_the_submodule(self):
        g = self.graph({
            "__init__.py": "VALUE = 1\n",
            "lang/__init__.py": "VALUE = 2\n",
            "lang/field.py": "X = 1\n",
            "user.py": "from quadrants.lang import field\nfrom .lang import field as f2\n",
        })
        self.assertEqual(g.edges()["quadrants.user"], {"quadrants.lang.field"})

    def test_extension_module_is_no_edge(self):
        g = self.graph({
            "__init__.py": "from quadrants import _core\n",
            "_core.py": "from quadrants import _quadrants_core as core\n",
        })
        self.assertEqual(g.edges()["quadrants._core"], set())
        self.assertEqual(g.cycles(), [])


def _package_importable():
    """Whether `import quadrants` can work here: the package is on sys.path
    (under Bazel) or in the source tree, and its C++ core is built."""
    if importlib.util.find_spec("quadrants") is None:
        sys.path.insert(0, os.path.dirname(PACKAGE_DIR))
    try:
        import quadrants._core  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    except ImportError:
        return False
    return True


class EachModuleImportsFirstTest(unittest.TestCase):
    """Every module can be the first module of the package a program imports:
    `python3 -c 'import quadrants.lang.field'` works."""

    def test_each_module_imports_first(self):
        if not _package_importable():
            self.skipTest("the C++ core (_quadrants_core) is not built")
        graph = py_import_graph.Graph(PACKAGE_DIR)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

        def run(module):
            proc = subprocess.run([sys.executable, "-c", f"import {module}"], env=env,
                                  capture_output=True, text=True, timeout=120, check=False)
            return module, proc.returncode, proc.stderr

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(run, sorted(graph.files)))
        failed = [(m, err.strip().splitlines()[-1:]) for m, rc, err in results if rc != 0]
        self.assertEqual(failed, [], "modules that fail when imported first")


if __name__ == "__main__":
    unittest.main()
