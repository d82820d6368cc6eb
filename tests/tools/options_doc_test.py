"""The table of options and environment variables is generated from the
registry (tools/gen_options_doc.py): the user guide includes it at every site
build, and the README points there instead of holding a copy that could go
stale."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gen_options_doc  # noqa: E402  pylint: disable=wrong-import-position

README = os.path.join(HERE, "..", "..", "README.md")


class OptionsDocTest(unittest.TestCase):

    def test_every_option_has_a_row(self):
        rows = gen_options_doc.render().splitlines()[2:]
        specs = gen_options_doc._registry().SPECS
        self.assertEqual(len(rows), len(specs))
        for row, spec in zip(rows, specs):
            self.assertIn(spec.env or spec.name, row)

    def test_readme_points_at_the_generated_page_and_copies_no_table(self):
        with open(README, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("docs/user_guide/options.md", text)
        self.assertNotIn("| qd.init option | Environment variable |", text)


if __name__ == "__main__":
    unittest.main()
