"""qd.FieldsBuilder: a group of layout levels under the root, built like
qd.root (dense, pointer, bitmasked, dynamic, place, lazy_grad) and closed by
finalize(), which returns the group as an SNodeTree. Destroying the tree
retires its fields: using one afterwards raises QuadrantsRuntimeError. The
fields' memory stays reserved until the session ends (qd.reset() or a new
qd.init()), since every field shares one growing allocation here."""
import warnings

from quadrants.lang import runtime
from quadrants.lang.exception import QuadrantsRuntimeError
from quadrants.lang.field import Field, SNode, live_fields


class SNodeTree:
    """The levels and fields one FieldsBuilder made."""

    def __init__(self, root_children, root_fields):
        self._root_children = frozenset(root_children)
        self._root_fields = list(root_fields)
        self._destroyed = False

    def _fields(self):
        prog = runtime.program()
        for f in live_fields():
            if not f.placed:
                continue
            if f in self._root_fields:
                yield f
                continue
            node = f._place  # pylint: disable=protected-access
            while node != 0 and node not in self._root_children:
                node = prog.parent_of(node)
            if node != 0:
                yield f

    def destroy(self):
        """Retires the tree's fields; a second call raises."""
        if self._destroyed:
            raise QuadrantsRuntimeError("SNodeTree.destroy(): this tree was already destroyed")
        for f in list(self._fields()):
            f._retire("its FieldsBuilder's tree was destroyed")  # pylint: disable=protected-access
        self._destroyed = True


class FieldsBuilder(SNode):
    """Builds layout levels under the root; finalize() closes the group."""

    def __init__(self):
        runtime.program()
        super().__init__(0, ())
        self._finalized = False
        self._root_children = []
        self._root_fields = []

    def _check_not_finalized(self):
        if self._finalized:
            raise QuadrantsRuntimeError("FieldsBuilder finalized: build a new FieldsBuilder "
                                        "for more fields")

    def _child(self, node):
        self._root_children.append(node._id)  # pylint: disable=protected-access
        return node

    def dense(self, axes, dimensions):
        self._check_not_finalized()
        return self._child(super().dense(axes, dimensions))

    def pointer(self, axes, dimensions):
        self._check_not_finalized()
        return self._child(super().pointer(axes, dimensions))

    def bitmasked(self, axes, dimensions):
        self._check_not_finalized()
        return self._child(super().bitmasked(axes, dimensions))

    def dynamic(self, axis, dimension, chunk_size=None):
        self._check_not_finalized()
        return self._child(super().dynamic(axis, dimension, chunk_size))

    def place(self, *fields, offset=None):
        self._check_not_finalized()
        super().place(*fields, offset=offset)
        for f in fields:
            leaves = f._leaf_fields() if hasattr(f, "_leaf_fields") else [f]
            self._root_fields.extend(leaf for leaf in leaves if isinstance(leaf, Field))
        return self

    def lazy_grad(self):
        self._check_not_finalized()
        super().lazy_grad()

    def lazy_dual(self):
        self._check_not_finalized()
        super().lazy_dual()

    @property
    def empty(self):
        """Whether nothing was built yet."""
        return not self._root_children and not self._root_fields

    def finalize(self, raise_warning=True):
        """Closes the builder and returns its SNodeTree; warns when it is
        empty (unless raise_warning=False)."""
        self._check_not_finalized()
        if self.empty and raise_warning:
            warnings.warn("Finalizing an empty FieldsBuilder!", stacklevel=2)
        self._finalized = True
        return SNodeTree(self._root_children, self._root_fields)
