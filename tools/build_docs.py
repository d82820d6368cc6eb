#!/usr/bin/python3
"""Builds the user guide website: docs/ -> static HTML (Sphinx + MyST).

usage: build_docs.py [--out DIR] [--skip-figures]

Before Sphinx runs it generates, under docs/_generated/ (ignored by git):
  options.md   the table of every qd.init option and QD_* variable, from the
               option registry (tools/gen_options_doc.py);
  api.md       the API reference: every public qd.* name with its
               signature and docstring;
  figures/     the guide's pictures, drawn by docs/figures/*.py with
               matplotlib (the demo's loss curve, the adstack's heap
               against iterations, the benchmark ratios).
Sphinx runs with -W: a warning fails the build. Needs the package built
(./qd build): the generators import quadrants from quadrants/python.
"""
import argparse
import inspect
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
GENERATED = os.path.join(DOCS, "_generated")
PACKAGE = os.path.join(ROOT, "quadrants", "python")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE, ROOT] + (
        [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def write_options():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import gen_options_doc  # pylint: disable=import-outside-toplevel
    table = gen_options_doc.render()
    with open(os.path.join(GENERATED, "options.md"), "w", encoding="utf-8") as f:
        f.write(table + "\n")


def public_names(qd):
    """Every public name `import quadrants as qd` exports: no leading
    underscore, not a module."""
    return sorted(n for n in dir(qd) if not n.startswith("_")
                  and not inspect.ismodule(getattr(qd, n)))


def _signature(obj):
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return None


def write_api():
    sys.path.insert(0, PACKAGE)
    import quadrants as qd  # pylint: disable=import-outside-toplevel
    lines = ["# API reference", "",
             "Every public name of `import quadrants as qd`, with its docstring. "
             "Generated from the package at build time.", ""]
    for name in public_names(qd):
        obj = getattr(qd, name)
        lines += [f"## qd.{name}", ""]
        kind = "class" if inspect.isclass(obj) else \
            "function" if callable(obj) else type(obj).__name__
        sig = _signature(obj) if callable(obj) else None
        lines += ["```text", f"{kind} qd.{name}{sig or ''}", "```", ""]
        doc = inspect.getdoc(obj) or ""
        if not callable(obj) and not inspect.isclass(obj) and \
                doc == inspect.getdoc(type(obj)):
            doc = f"A value: {obj!r}."
        lines += ["```text", doc.strip() or "(no docstring)", "```", ""]
    with open(os.path.join(GENERATED, "api.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def draw_figures():
    out = os.path.join(GENERATED, "figures")
    os.makedirs(out, exist_ok=True)
    scripts = sorted(p for p in os.listdir(os.path.join(DOCS, "figures")) if p.endswith(".py"))
    for script in scripts:
        subprocess.run([sys.executable, os.path.join(DOCS, "figures", script), out],
                       check=True, env=_env(), cwd=ROOT)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(DOCS, "_build", "html"))
    parser.add_argument("--skip-figures", action="store_true",
                        help="keep the figures drawn by an earlier build")
    args = parser.parse_args(argv)
    os.makedirs(GENERATED, exist_ok=True)
    write_options()
    write_api()
    if not args.skip_figures:
        draw_figures()
    doctrees = os.path.join(os.path.dirname(os.path.abspath(args.out)), "doctrees")
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
               "-d", doctrees, DOCS, args.out]
    result = subprocess.run(command, env=_env(), cwd=ROOT, check=False)
    if result.returncode != 0:
        print("build_docs: sphinx-build failed (warnings count as errors)", file=sys.stderr)
        return result.returncode
    print(f"build_docs: the site is in {args.out} (index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
