"""The roots of the core's dependency graph that docs/architecture.md shows:
what the Python extension links, less the binding itself. tools/dep_graph.py
reads this list too."""

DEP_GRAPH_ROOTS = [
    "//quadrants/common:options",
    "//quadrants/program",
    "//quadrants/runtime:backends",
    "//quadrants/runtime/amdgpu:codegen_only",
    "//quadrants/transforms:type_check",
]
