"""Kernel locals that the serial code and a top-level parallel loop share.

A kernel's top-level code runs serially and each of its outermost loops is
a parallel task, so a local variable lives in one of them. A variable the
serial code defines and a parallel loop writes (`total = 0.0; for i in x:
total += x[i]`, or `qd.atomic_add(total, x[i])`), that the serial code
assigns more than once and a loop reads, or that the serial code changes
before a loop and uses after it (the serial code on each side of a loop is
a task of its own), is kept in global memory instead:
a hidden one-element buffer per
launch (hidden_params.HiddenParams.temporary), where `+=` and the other
augmented assignments in a parallel loop are atomic. Upstream calls these
global temporaries. A local assigned once and only read by the loops stays
a plain local, whose value the offload pass copies into each task.
"""
import ast


def _is_static_iter(node):
    """Whether a for loop iterates qd.static(...) (unrolled at compile time)."""
    call = node.iter
    if not isinstance(call, ast.Call):
        return False
    fn = call.func
    name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
    return name == "static"


def _is_static_test(node):
    """Whether an if's test is qd.static(...) (decided at compile time)."""
    if not isinstance(node, ast.Call):
        return False
    fn = node.func
    return (fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)) == "static"


def _top_level(body):
    """The ids of the statements that run at the kernel's top level: the
    body's own, and those under qd.static ifs and loops, which unroll."""
    ids = set()
    for stmt in body:
        ids.add(id(stmt))
        if isinstance(stmt, ast.If) and _is_static_test(stmt.test):
            ids |= _top_level(stmt.body) | _top_level(stmt.orelse)
        elif isinstance(stmt, ast.For) and _is_static_iter(stmt):
            ids |= _top_level(stmt.body)
    return ids


def _resolve(node, names):
    """The object a call's callee names (`f`, `qd.atomic_add`), if `names`
    resolves it; else None."""
    if isinstance(node, ast.Name):
        return names[node.id] if names is not None and node.id in names else None
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, names)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def _is_atomic_op(obj):
    """qd.atomic_add and its siblings (also under another name): they update
    their first argument."""
    return (getattr(obj, "__module__", None) == "quadrants.lang.ops"
            and getattr(obj, "__name__", "").startswith("atomic_"))


class _Scan(ast.NodeVisitor):
    def __init__(self, names=None):
        self.names = names         # the kernel's globals and closure
        self.serial_stores = {}    # name -> number of stores in serial code
        self.first_store = {}      # name -> line of its first store in serial code
        self.serial_uses = {}      # name -> lines where serial code reads or writes it
        self.serial_changed = set()  # names serial code writes elements of
        self.loops = []            # (line, end line, names stored, names read) per loop
        self.loop_targets = set()  # names a parallel loop binds
        self.top_level = None      # ids of the kernel body's own statements
        self.in_loop = 0

    def _serial_store(self, node, name, count):
        self.serial_stores[name] = self.serial_stores.get(name, 0) + count
        self.first_store.setdefault(name, node.lineno)

    def visit_For(self, node):
        if self.in_loop or _is_static_iter(node):
            self.generic_visit(node)
            return
        # An outermost run-time loop: its header runs in the serial code,
        # its body in the task.
        for leaf in ast.walk(node.target):
            if isinstance(leaf, ast.Name):
                self.loop_targets.add(leaf.id)
        self.visit(node.iter)
        # Serial code runs as one task around a loop nested in a run-time
        # if or while; only a loop at the top level splits it.
        end = node.end_lineno if id(node) in (self.top_level or ()) else None
        self.loops.append((node.lineno, end, set(), set()))
        self.in_loop += 1
        for stmt in node.body:
            self.visit(stmt)
        self.in_loop -= 1

    def visit_FunctionDef(self, node):
        if self.top_level is None:
            self.top_level = _top_level(node.body)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Lambda(self, node):
        pass  # a lambda's names are its own

    def visit_Subscript(self, node):
        self._element_store(node)
        self.generic_visit(node)

    def visit_Attribute(self, node):
        self._element_store(node)
        self.generic_visit(node)

    def _element_store(self, node):
        """v[i] = ... and v.x = ... store into the variable v."""
        if isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name):
            if self.in_loop:
                self.loops[-1][2].add(node.value.id)
            else:
                self.serial_changed.add(node.value.id)

    def visit_Name(self, node):
        stored = isinstance(node.ctx, ast.Store)
        if self.in_loop:
            _, _, stores, reads = self.loops[-1]
            (stores if stored else reads).add(node.id)
            return
        self.serial_uses.setdefault(node.id, []).append(node.lineno)
        if stored:
            self._serial_store(node, node.id, 1)

    def visit_Call(self, node):
        # qd.atomic_add(x, v) in a parallel loop updates the local x, as
        # x += v does.
        if self.in_loop and node.args and isinstance(node.args[0], ast.Name) and \
                _is_atomic_op(_resolve(node.func, self.names)):
            _, _, stores, reads = self.loops[-1]
            stores.add(node.args[0].id)
            reads.add(node.args[0].id)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        # x += v reads x too, and counts as a second store in serial code.
        if isinstance(node.target, ast.Name):
            name = node.target.id
            if self.in_loop:
                _, _, stores, reads = self.loops[-1]
                stores.add(name)
                reads.add(name)
            else:
                self._serial_store(node, name, 2)
                self.serial_uses.setdefault(name, []).append(node.lineno)
            self.visit(node.value)
            return
        self.generic_visit(node)


def shared_locals(function_node, names=None):
    """The names of the kernel's locals to keep in global memory. `names`
    (the kernel's globals and closure) tells which calls are atomic ops."""
    scan = _Scan(names)
    scan.visit(function_node)
    shared = set()
    for name, count in scan.serial_stores.items():
        if name in scan.loop_targets:
            continue
        # Only loops after the serial definition share it; a loop before it
        # has a local of its own by that name.
        changed = count > 1 or name in scan.serial_changed
        for line, end, stores, reads in scan.loops:
            if line <= scan.first_store[name]:
                continue
            if name in stores or (count > 1 and name in reads):
                shared.add(name)
            # A value assigned once is recomputed where it is needed; one that
            # changes lives in memory both serial tasks reach.
            if changed and end is not None and \
                    any(use > end for use in scan.serial_uses.get(name, ())):
                shared.add(name)
    return shared
