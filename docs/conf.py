"""Sphinx configuration of the Quadrants user guide (built by ./qd docs,
which runs tools/build_docs.py)."""
project = "Quadrants"
author = "Quadrants developers"
copyright = "2026, Quadrants developers"  # pylint: disable=redefined-builtin
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
# architecture.md is for the compiler's developers; the generated options
# table is included by user_guide/options.md rather than read on its own.
exclude_patterns = ["_build", "architecture.md", "_generated/options.md", "figures"]
myst_heading_anchors = 3
html_theme = "sphinx_rtd_theme"
html_title = "Quadrants user guide"
html_show_sourcelink = False
html_theme_options = {"navigation_depth": 2}
