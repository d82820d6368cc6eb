"""Compiles the Python AST of a kernel (and the funcs it calls) into IR.

Statements are visited in order and lowered through the C++ builder as
they are met. Compile-time values (numbers, fields, templates, qd.static
results) stay Python objects and fold away; run-time values are Exprs.

FunctionCompiler (compiler.py) combines one mixin per kind of construct:
assignments.py (variables and assignments), statements.py (if, while,
break/continue, assert), loops.py (for loops and their iteration spaces),
directives.py (qd.static, qd.loop_config), expressions.py (names,
subscripts, operators) and calls.py (funcs, intrinsics, Python calls).
"""
from quadrants.lang.transformer.compiler import FunctionCompiler
from quadrants.lang.transformer.directives import LoopConfig, loop_config, static
from quadrants.lang.transformer.loops import Grouped, LoopFrame, NdRange, RuntimeRange, grouped

__all__ = ["FunctionCompiler", "Grouped", "LoopConfig", "LoopFrame", "NdRange", "RuntimeRange",
           "grouped", "loop_config", "static"]
