"""Shrinks a failing kernel: removes statements and loops, and simplifies
expressions, while the failure persists (greedy, to a fixed point)."""
import copy
import re

from tools.gradfuzz import generator as g


def _blocks(spec):
    """Every statement list of the kernel, outermost first."""
    out = []

    def walk(stmts):
        out.append(stmts)
        for s in stmts:
            for block in s.blocks:
                walk(block)
    walk(spec.body)
    return out


def _has_top_level_jump(stmts):
    return any(isinstance(s, g.If) and s.jump for s in stmts)


def _statement_edits(stmt):
    """Replacements (lists of statements) for one statement, smallest first."""
    edits = [[]]
    if isinstance(stmt, g.If):
        edits += [list(stmt.then), list(stmt.orelse)]
        if stmt.jump and stmt.then:
            edits.append([g.If(stmt.cond, [], jump=stmt.jump)])
        if stmt.orelse:
            edits.append([g.If(stmt.cond, stmt.then, [], stmt.jump)])
    if isinstance(stmt, g.Loop) and not stmt.time_loop:
        if not _has_top_level_jump(stmt.body):
            edits.append([g.Raw(f"{stmt.var} = 1")] + list(stmt.body))
        for trips in ("range(1)", "range(2)"):
            if stmt.bound != trips:
                edits.append([g.Loop(stmt.var, trips, "const", stmt.body)])
    return edits


def _expr_edits(expr):
    """Simpler expressions: an operand in place of an op, a constant leaf."""
    out = []
    if isinstance(expr, g.Op):
        out += list(expr.args)
    if not (isinstance(expr, g.Leaf) and expr.text == "0.5"):
        out.append(g.Leaf("0.5"))
    return out


def candidates(spec):
    """Every one-step simplification of spec, as new KernelSpecs."""
    for b_index, block in enumerate(_blocks(spec)):
        for s_index, stmt in enumerate(block):
            for replacement in _statement_edits(stmt):
                new = copy.deepcopy(spec)
                target = _blocks(new)[b_index]
                target[s_index:s_index + 1] = copy.deepcopy(replacement)
                if isinstance(stmt, g.Loop) and stmt.time_loop and not replacement:
                    new.time_bound = None
                yield new
    yield from _expression_candidates(spec)
    yield from _decl_candidates(spec)


def _expression_candidates(spec):
    stmts = spec.all_stmts()
    for s_index, stmt in enumerate(stmts):
        for e_index, expr in enumerate(stmt.exprs()):
            for n_index, node in enumerate(expr.walk()):
                for simpler in _expr_edits(node):
                    new = copy.deepcopy(spec)
                    owner = new.all_stmts()[s_index]
                    _replace_node(owner, e_index, n_index, copy.deepcopy(simpler))
                    yield new


def _replace_node(stmt, e_index, n_index, simpler):
    target = list(stmt.exprs()[e_index].walk())[n_index]
    stmt.expr = _substitute(stmt.expr, target, simpler)


def _substitute(expr, target, new):
    """expr with the node `target` (by identity) replaced by `new`."""
    if expr is target:
        return new
    if isinstance(expr, g.Op):
        expr.args = [_substitute(a, target, new) for a in expr.args]
    return expr


def _decl_candidates(spec):
    if spec.time_bound is not None:
        new = copy.deepcopy(spec)
        new.time_bound = None
        yield new
    body_text = "\n".join(line for s in spec.body for line in s.lines())
    for d_index, (name, init) in enumerate(spec.decls):
        new = copy.deepcopy(spec)
        if not re.search(rf"\b{name}\b", body_text) and name.startswith("k"):
            del new.decls[d_index]     # unused carried index (floats feed the loss)
        elif init not in ("0.3", "0"):
            new.decls[d_index] = (name, "0.3" if name.startswith("v") else "0")
        else:
            continue
        yield new


def shrink(spec, still_fails, log=None):
    """The smallest spec reached by one-step edits that keep still_fails(spec)
    true. Accepts the first failing candidate that is smaller (shorter source,
    then lexicographically smaller: a well-order, so this terminates) and
    restarts, to a fixed point."""
    tried = 0
    progress = True
    while progress:
        progress = False
        for candidate in candidates(spec):
            if _order(candidate) >= _order(spec):
                continue
            tried += 1
            if still_fails(candidate):
                spec, progress = candidate, True
                if log:
                    log(f"shrink: accepted edit {tried}, {_size(spec)} nodes left")
                break
    return spec


def _size(spec):
    return sum(1 + sum(len(list(e.walk())) for e in s.exprs()) for s in spec.all_stmts())


def _order(spec):
    source = spec.source()
    return (len(source), source)
