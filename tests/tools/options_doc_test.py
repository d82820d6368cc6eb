"""The README's table of options and environment variables is what
tools/gen_options_doc.py generates from the registry, so it cannot go stale."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gen_options_doc  # noqa: E402  pylint: disable=wrong-import-position

README = os.path.join(HERE, "..", "..", "README.md")


class OptionsDocTest(unittest.TestCase):

    def test_readme_section_is_generated(self):
        with open(README, encoding="utf-8") as f:
            section = gen_options_doc.section_of(f.read())
        self.assertEqual(section, gen_options_doc.render(),
                         "README.md's options table is stale: run "
                         "`bazel run //tools:gen_options_doc -- --write`")

    def test_every_option_has_a_row(self):
        rows = gen_options_doc.render().splitlines()[2:]
        self.assertEqual(len(rows), len(gen_options_doc._registry().SPECS))

    def test_rewriting_keeps_the_rest(self):
        text = f"before\n{gen_options_doc.BEGIN}\nold\n{gen_options_doc.END}\nafter\n"
        rewritten = gen_options_doc.with_section(text, "new\n")
        self.assertEqual(rewritten,
                         f"before\n{gen_options_doc.BEGIN}\nnew\n{gen_options_doc.END}\nafter\n")
        self.assertEqual(gen_options_doc.section_of(rewritten), "new\n")


if __name__ == "__main__":
    unittest.main()
