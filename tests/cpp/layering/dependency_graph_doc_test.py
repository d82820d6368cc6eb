"""docs/architecture.md shows the core's dependency graph as Bazel has it.

The block between the markers must equal what tools/dep_graph.py renders from
a genquery of the same roots; regenerate it with
`python3 tools/dep_graph.py --write`.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tools"))
import dep_graph  # noqa: E402  pylint: disable=wrong-import-position

GRAPH_XML = DOC = None


class DependencyGraphDocTest(unittest.TestCase):
    def test_doc_shows_the_built_graph(self):
        with open(GRAPH_XML) as f:
            graph = dep_graph.package_graph(f.read())
        self.assertIn("quadrants/artifact", graph["quadrants/codegen/llvm"])
        with open(DOC) as f:
            shown = dep_graph.doc_block(f.read())
        self.assertEqual(shown, dep_graph.render(graph),
                         "docs/architecture.md's dependency graph is stale: "
                         "run python3 tools/dep_graph.py --write")

    def test_a_new_edge_changes_the_rendering(self):
        graph = {"quadrants/ir": [], "quadrants/common": []}
        before = dep_graph.render(graph)
        graph["quadrants/ir"] = ["quadrants/common"]
        self.assertNotEqual(before, dep_graph.render(graph))


if __name__ == "__main__":
    GRAPH_XML = sys.argv.pop(1)
    DOC = sys.argv.pop(1)
    unittest.main()
