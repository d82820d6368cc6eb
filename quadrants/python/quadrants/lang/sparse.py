"""Sparse SNodes (pointer, bitmasked, dynamic): their kernel operations
(qd.activate, qd.deactivate, qd.is_active, qd.append, qd.length,
qd.no_activate). Host-side deactivation and host access to sparse fields
run kernels, so they live above the kernel compiler, in
quadrants.lang.sparse_host.

Each sparse level keeps its bookkeeping in hidden i32 places the core made
for it: a pointer's table of pool blocks (0: inactive), a bitmasked level's
activity flags, a dynamic list's table of chunks and its length. These
operations read and write them like fields; the compiler's sparse lowering
adds the activation of ancestors and the pool blocks."""
import numbers

from quadrants.lang import context, ops, runtime, types
from quadrants.lang.exception import QuadrantsRuntimeError, QuadrantsTypeError
from quadrants.lang.expr import Composite, Expr
from quadrants.lang.matrix import Matrix

_I32 = types.i32


def _node_id(node, what):
    """The SNode id of an SNode or a field (its place). SNodes and fields
    (quadrants.lang.field, which builds on this module) say theirs with
    _qd_snode_id_(); vector, matrix and struct fields through their leaf
    fields."""
    snode_id = getattr(type(node), "_qd_snode_id_", None)
    if snode_id is not None:
        return snode_id(node)
    if hasattr(node, "_leaf_fields"):
        return node._leaf_fields()[0].place_id()
    raise QuadrantsTypeError(f"{what}: expected an SNode (such as x.parent()) or a field, got "
                             f"{type(node).__name__}")


def _info(node_id):
    info = runtime.program().sparse_info(node_id)
    info["id"] = node_id
    return info


def _shape(node_id):
    return tuple(runtime.program().snode_shape(node_id))


def _index_exprs(indices, ndim, what):
    """`indices` (an int, list, tuple or qd.Vector) as ndim i32 Exprs."""
    indices = context.load(indices)
    if isinstance(indices, Matrix):
        items = [indices[k] for k in range(indices.n)]
    elif isinstance(indices, (list, tuple)):
        items = [context.load(v) for v in indices]
    else:
        items = [indices]
    if len(items) != ndim:
        raise QuadrantsTypeError(f"{what}: the SNode has {ndim} axes, got {len(items)} "
                                 f"indices")
    out = []
    for item in items:
        if isinstance(item, numbers.Integral):
            out.append(context.constant(int(item), _I32))
            continue
        e = context.to_expr(item)
        if not e.dtype.is_integral:
            raise QuadrantsTypeError(f"{what}: indices must be integers, got {e.dtype}")
        out.append(ops.cast(e, _I32) if e.dtype != _I32 else e)
    return out


def _ptr(place, indices, label):
    return context.builder().field_ptr(place, [e.stmt for e in indices], label)


def _const(value):
    return context.constant(value, _I32)


def _binary(name, a, b):
    return ops.binary(name, a, b, None)


def _sparse_node(node, what, kinds=("pointer", "bitmasked", "dynamic")):
    node_id = _node_id(node, what)
    info = _info(node_id)
    if info["kind"] not in kinds:
        raise QuadrantsTypeError(f"{what}: expected a {' or '.join(kinds)} SNode, got a "
                                 f"{info['kind']} one (SNode {node_id})")
    return node_id, info


def _in_kernel(what):
    if context.current() is None:
        raise QuadrantsRuntimeError(f"{what} is called in kernels (and qd.func) only")


# ---- kernel operations ----------------------------------------------------------

def is_active(node, indices):
    """1 where the cell of `node` (a pointer, bitmasked or dynamic SNode) at
    `indices` (its own index space) is active, else 0."""
    _in_kernel("qd.is_active()")
    node_id, info = _sparse_node(node, "qd.is_active()")
    idx = _index_exprs(indices, len(_shape(node_id)), "qd.is_active()")
    b = context.builder()
    if info["kind"] == "dynamic":
        axis = info["axes"][0]
        length = Expr(b.global_load(_ptr(info["length"], _parent_index(info, idx),
                                         "qd.length")), _I32)
        return _binary("cmp_lt", idx[axis], length)
    entry = Expr(b.global_load(_ptr(info["table"], idx, "qd.is_active")), _I32)
    return _binary("cmp_ne", entry, 0)


def activate(node, indices):
    """Activates the cell of `node` at `indices` (and its ancestors)."""
    _in_kernel("qd.activate()")
    node_id, info = _sparse_node(node, "qd.activate()")
    idx = _index_exprs(indices, len(_shape(node_id)), "qd.activate()")
    b = context.builder()
    if info["kind"] == "bitmasked":
        b.global_store(_ptr(info["table"], idx, "qd.activate"), _const(1).stmt)
        return
    if info["kind"] == "dynamic":
        axis = info["axes"][0]
        chunk = list(idx)
        chunk[axis] = _binary("floordiv", idx[axis], info["chunk_size"])
        b.snode_op("acquire", node_id, _ptr(info["table"], chunk, "qd.activate"))
        b.atomic("atomic_max", _ptr(info["length"], _parent_index(info, idx), "qd.activate"),
                 _binary("add", idx[axis], 1).stmt)
        return
    b.snode_op("acquire", node_id, _ptr(info["table"], idx, "qd.activate"))


def deactivate(node, indices):
    """Deactivates the cell of `node` at `indices`: its memory (and that of
    sparse levels inside it) is zeroed and goes back to the pool. For a
    dynamic SNode, `indices` name the list (its parent's cell), which
    becomes empty."""
    _in_kernel("qd.deactivate()")
    node_id, info = _sparse_node(node, "qd.deactivate()")
    if info["kind"] == "dynamic":
        ndim = len(_shape(info["parent"])) if info["parent"] else 0
        idx = _index_exprs(indices, ndim, "qd.deactivate()")
        _clear_list(node_id, info, idx)
        return
    idx = _index_exprs(indices, len(_shape(node_id)), "qd.deactivate()")
    _deactivate_cell(node_id, info, idx)


def append(node, indices, val):
    """Appends `val` to the dynamic list `node` at `indices` (its parent's
    cell) and returns the element's position; a full list keeps its
    elements and returns its capacity or more."""
    _in_kernel("qd.append()")
    node_id, info = _sparse_node(node, "qd.append()", ("dynamic",))
    ndim = len(_shape(info["parent"])) if info["parent"] else 0
    idx = _index_exprs(indices, ndim, "qd.append()")
    places = _places_under(node_id)
    return _append(info, idx, places, _flatten(val, len(places), "qd.append()"))


def _append(info, idx, places, values):
    b = context.builder()
    length_ptr = _ptr(info["length"], idx, "qd.append")
    j = Expr(b.atomic("atomic_add", length_ptr, _const(1).stmt), _I32)
    branch = b.if_(_binary("cmp_lt", j, info["sizes"][0]).stmt)
    b.push_block(branch, 0)
    try:
        element = _element_index(info, idx, j)
        for place, value in zip(places, values):
            _store(place, element, value)
    finally:
        b.pop_block()
    b.push_block(branch, 1)
    try:
        b.atomic("atomic_sub", _ptr(info["length"], idx, "qd.append"), _const(1).stmt)
    finally:
        b.pop_block()
    return j


def length(node, indices):
    """The length of the dynamic list `node` at `indices` (its parent's
    cell)."""
    _in_kernel("qd.length()")
    _, info = _sparse_node(node, "qd.length()", ("dynamic",))
    ndim = len(_shape(info["parent"])) if info["parent"] else 0
    idx = _index_exprs(indices, ndim, "qd.length()")
    return Expr(context.builder().global_load(_ptr(info["length"], idx, "qd.length")), _I32)


def no_activate(*args):
    """Writes of this kernel to the given sparse SNodes (or fields: every
    sparse level above them) do not activate cells: a write to an inactive
    cell is dropped."""
    _in_kernel("qd.no_activate()")
    prog = runtime.program()
    b = context.builder()
    for arg in args:
        for level in prog.sparse_ancestors(_node_id(arg, "qd.no_activate()")):
            b.no_activate(level)


for _fn in (is_active, activate, deactivate, append, length, no_activate):
    _fn._qd_intrinsic = True  # called as it is from kernel code, not inlined


class ListRef:
    """x[i] of a field whose last level is a dynamic list, indexed by the
    list's parent cell: x[i].append(v), x[i].length(), x[i].deactivate()."""

    def __init__(self, field, level, indices):
        self._field = field
        self._level = level
        self._indices = indices

    def _leaves(self):
        f = self._field
        return f._leaf_fields() if hasattr(f, "_leaf_fields") else [f]

    def append(self, val):
        info = _info(self._level)
        places = [leaf.place_id() for leaf in self._leaves()]
        return _append(info, self._indices, places,
                       _flatten(val, len(places), f"{self._field.name}[...].append()"))

    def length(self):
        info = _info(self._level)
        return Expr(context.builder().global_load(
            _ptr(info["length"], self._indices, "length()")), _I32)

    def deactivate(self):
        _clear_list(self._level, _info(self._level), self._indices)

    append._qd_intrinsic = True
    length._qd_intrinsic = True
    deactivate._qd_intrinsic = True


class ListMethods:
    """x.append(v), x.length() and x.deactivate() in kernels, for a field
    (scalar, vector, matrix or struct) placed in a dynamic list under
    qd.root."""

    def _root_list(self, what):
        ref = list_ref(self, []) if context.current() is not None else None
        if ref is None:
            raise QuadrantsRuntimeError(
                f"{self.name}.{what}() is for a field in a dynamic list under qd.root, in "
                f"kernels; index the list first (x[i].{what}()) when its parent has axes")
        return ref

    def append(self, val):
        """Appends val to the list and returns its position."""
        return self._root_list("append").append(val)

    def length(self):
        """The list's length."""
        return self._root_list("length").length()

    def deactivate(self):
        """Empties the list."""
        self._root_list("deactivate").deactivate()

    append._qd_intrinsic = True
    length._qd_intrinsic = True
    deactivate._qd_intrinsic = True


def list_ref(field, index_stmts):
    """A ListRef when `field` (indexed with `index_stmts`, fewer indices than
    its dimensions) lies in a dynamic list whose parent takes exactly those
    indices; else None."""
    leaf = field._leaf_fields()[0] if hasattr(field, "_leaf_fields") else field
    prog = runtime.program()
    for level in reversed(prog.sparse_ancestors(leaf.place_id())):
        info = prog.sparse_info(level)
        if info["kind"] != "dynamic":
            continue
        dims = len(_shape(info["parent"])) if info["parent"] else 0
        if dims == len(index_stmts):
            indices = [Expr(s) for s in index_stmts]
            return ListRef(field, level, [e if e.dtype == _I32 else _cast_i32(e)
                                          for e in indices])
    return None


def _cast_i32(e):
    return ops.cast(e, _I32)


# ---- helpers --------------------------------------------------------------------

def _parent_index(info, idx):
    """The indices of a dynamic level's list (its parent's cell) from an
    element's."""
    parent = info["parent"]
    if parent == 0:
        return []
    own, up = _shape(info["id"]), _shape(parent)
    return [_binary("floordiv", i, own[a] // up[a]) if own[a] != up[a] else i
            for a, i in enumerate(idx[:len(up)])]


def _element_index(info, parent_idx, j):
    """A dynamic list's element j as indices of the places under it."""
    axis = info["axes"][0]
    shape = _shape(info["id"])
    out = list(parent_idx) + [None] * (len(shape) - len(parent_idx))
    for a in range(len(shape)):
        if a == axis:
            base = out[a]
            out[a] = j if base is None else _binary(
                "add", _binary("mul", base, info["sizes"][0]), j)
        elif out[a] is None:
            out[a] = _const(0)
    return out


def _places_under(node_id):
    """The fields placed directly in a level (not hidden ones)."""
    prog = runtime.program()
    out = []
    for child in prog.sparse_info(node_id)["children"]:
        child_info = prog.sparse_info(child)
        if child_info["kind"] == "place" and not child_info["hidden"]:
            out.append(child)
    if not out:
        raise QuadrantsRuntimeError(f"qd.append(): SNode {node_id} holds no field")
    return out


def _flatten(val, count, what):
    val = context.load(val)
    if isinstance(val, Composite) and not isinstance(val, Matrix):
        items = val._leaves()
    elif isinstance(val, Matrix):
        items = [val[k] for k in range(val.n)] if val.m == 1 else \
            [val[r, c] for r in range(val.n) for c in range(val.m)]
    elif isinstance(val, (list, tuple)):
        items = list(val)
    else:
        items = [val]
    if len(items) != count:
        raise QuadrantsTypeError(f"{what}: the list holds {count} field(s), got {len(items)} "
                                 f"value(s)")
    return items


def _store(place, indices, value):
    dtype = _place_dtype(place)
    value = ops.cast(context.to_expr(value), dtype)
    context.builder().global_store(_ptr(place, indices, "qd.append"), value.stmt)


def _loop(count, body):
    """for k in range(count): body(k) (a serial loop inside the thread)."""
    b = context.builder()
    loop = b.range_for(_const(0).stmt, _const(count).stmt)
    b.push_block(loop, 0)
    try:
        body(Expr(b.loop_index(loop, 0), _I32))
    finally:
        b.pop_block()


def _decompose(linear, extents):
    out = [None] * len(extents)
    for a in range(len(extents) - 1, -1, -1):
        out[a] = linear if a == 0 else _binary("mod", linear, extents[a])
        if a:
            linear = _binary("floordiv", linear, extents[a])
    return out


def _cells_inside(outer_id, outer_idx, inner_shape, body):
    """Calls body(indices) for every cell of a node of `inner_shape` inside
    the cell `outer_idx` of node `outer_id`."""
    outer = _shape(outer_id) if outer_id else ()
    ratio = [inner_shape[a] // (outer[a] if a < len(outer) else 1)
             for a in range(len(inner_shape))]
    count = 1
    for r in ratio:
        count *= r

    def at(k):
        sub = _decompose(k, ratio)
        idx = []
        for a in range(len(inner_shape)):
            base = outer_idx[a] if a < len(outer_idx) else None
            if base is None:
                idx.append(sub[a])
            elif ratio[a] == 1:
                idx.append(base)
            else:
                idx.append(_binary("add", _binary("mul", base, ratio[a]), sub[a]))
        body(idx)
    if count == 1:
        at(_const(0))
    else:
        _loop(count, at)


def _inside(node_id):
    """(places, sparse levels) stored in `node_id`'s cells, down to the next
    sparse levels."""
    prog = runtime.program()
    places, levels = [], []
    stack = list(prog.sparse_info(node_id)["children"])
    while stack:
        child = stack.pop()
        info = prog.sparse_info(child)
        if info["hidden"]:
            continue
        if info["kind"] == "place":
            places.append(child)
        elif info["kind"] == "dense":
            stack.extend(info["children"])
        else:
            levels.append(child)
    return places, levels


def _deactivate_cell(node_id, info, idx):
    b = context.builder()
    entry = Expr(b.global_load(_ptr(info["table"], idx, "qd.deactivate")), _I32)
    branch = b.if_(_binary("cmp_ne", entry, 0).stmt)
    b.push_block(branch, 0)
    try:
        places, levels = _inside(node_id)
        for level in levels:
            level_info = _info(level)
            if level_info["kind"] == "dynamic":
                parent_shape = _shape(level_info["parent"])
                _cells_inside(node_id, idx, parent_shape,
                              lambda i, lv=level, li=level_info: _clear_list(lv, li, i))
            else:
                _cells_inside(node_id, idx, _shape(level),
                              lambda i, lv=level, li=level_info: _deactivate_cell(lv, li, i))
        if info["kind"] == "pointer":
            b.snode_op("release", node_id, _ptr(info["table"], idx, "qd.deactivate"))
        else:
            for place in places:
                dtype = _place_dtype(place)
                zero = context.constant(0, dtype)
                _cells_inside(node_id, idx, _shape_of_place(place),
                              lambda i, p=place, z=zero: context.builder().global_store(
                                  _ptr(p, i, "qd.deactivate"), z.stmt))
            b.global_store(_ptr(info["table"], idx, "qd.deactivate"), _const(0).stmt)
    finally:
        b.pop_block()


def _place_dtype(place):
    return getattr(types, runtime.program().sparse_info(place)["dtype"])


def _shape_of_place(place):
    return tuple(runtime.program().field_shape(place))


def _clear_list(node_id, info, idx):
    b = context.builder()
    length_ptr = _ptr(info["length"], idx, "qd.deactivate")
    current = Expr(b.global_load(length_ptr), _I32)
    branch = b.if_(_binary("cmp_gt", current, 0).stmt)
    b.push_block(branch, 0)
    try:
        chunks = -(-info["sizes"][0] // info["chunk_size"])
        axis = info["axes"][0]

        def release(c):
            chunk = list(idx) + [None] * (axis + 1 - len(idx))
            base = chunk[axis]
            chunk[axis] = c if base is None else _binary(
                "add", _binary("mul", base, chunks), c)
            chunk = [_const(0) if v is None else v for v in chunk]
            context.builder().snode_op("release", node_id,
                                       _ptr(info["table"], chunk, "qd.deactivate"))
        _loop(chunks, release)
        b.global_store(_ptr(info["length"], idx, "qd.deactivate"), _const(0).stmt)
    finally:
        b.pop_block()


def is_sparse_field(place):
    return bool(runtime.program().sparse_ancestors(place))
