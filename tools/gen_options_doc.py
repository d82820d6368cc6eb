"""Prints the table of qd.init options and environment variables, generated
from the registry (quadrants/common/options.def). The user guide's Options
page includes it (tools/build_docs.py writes it at every site build), so a
new option needs no edit of any document.

    python3 tools/gen_options_doc.py
    bazel run //tools:gen_options_doc

It reads the registry through the built package: run `./qd build` first
when running it from the checkout.
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _registry():
    try:
        from quadrants.lang import options  # pylint: disable=import-outside-toplevel
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "quadrants", "python"))
        from quadrants.lang import options  # pylint: disable=import-outside-toplevel
    return options


def _code(items):
    return ", ".join(f"`{item}`" for item in items)


def _type_cell(spec):
    values = spec.choice_values
    limits = {"non_negative": " >= 0", "positive": " > 0", "fraction": " in (0, 1]"}
    if spec.type == "enum":
        return "one of " + _code(values)
    if spec.type == "list":
        return "comma-separated list" + (" of " + _code(values) if values else "")
    if spec.type in ("float_type", "int_type"):
        return "type: " + _code(values)
    return spec.type + limits.get(spec.check, "")


def _default_cell(spec):
    if spec.is_init_option:
        if spec.default is None:
            return "—"
        return f"`qd.{spec.default}`" if spec.type.endswith("_type") else f"`{spec.default!r}`"
    return f"`{spec.default_text}`" if spec.default_text else "—"


def _doc_cell(spec):
    parts = [spec.doc]
    if spec.scope == "init" and spec.env:
        parts.append(f"`{spec.env}` sets the default; an argument wins.")
    if spec.scope == "init_env_off":
        parts.append(f"`{spec.env}=0` turns it off whatever qd.init asks.")
    if spec.type == "enum":
        parts.append("; ".join(f"`{value}`: {meaning}" for value, meaning in spec.choices) + ".")
    return " ".join(parts).replace("|", "\\|")


def render():
    """The table of every declared option (Markdown)."""
    rows = ["| qd.init option | Environment variable | Type | Default | Description |",
            "|---|---|---|---|---|"]
    for spec in _registry().SPECS:
        option = f"`{spec.name}`" if spec.is_init_option else "—"
        env = f"`{spec.env}`" if spec.env else "—"
        rows.append(f"| {option} | {env} | {_type_cell(spec)} | {_default_cell(spec)} "
                    f"| {_doc_cell(spec)} |")
    return "\n".join(rows) + "\n"


def main(argv):
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
