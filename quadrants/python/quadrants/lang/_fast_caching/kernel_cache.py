"""What a kernel's compile asks of the fastcache: a key for the call, the
compiled kernel of an earlier process under it, and storing a new one."""
from quadrants import _logging
from quadrants.lang import runtime, session
from quadrants.lang._fast_caching import args_hasher, src_hasher
from quadrants.lang._wrap_inspect import info_of
from quadrants.lang.hidden_params import HiddenParams
from quadrants.lang.kernel_arguments import ArgMetadata


def enabled(kernel):
    return kernel.is_pure and session.option("src_ll_cache", True) and \
        session.option("offline_cache", True)


def cache_key(kernel, args):
    """The key of a call of pure `kernel` with bound `args`, or None (the
    arguments cannot be keyed, or its source cannot be read)."""
    parameters = kernel._signature.parameters
    metas = [ArgMetadata(spec.name, parameters[spec.name].annotation)
             if spec.name in parameters else None for spec in kernel._specs]
    args_hash = args_hasher.hash_args(False, args, metas)
    if args_hash is args_hasher.FastcacheSkip.WARN:
        _logging.warn(f"[FASTCACHE][INVALID_FUNC] The pure function {kernel.name} could not be "
                      f"fast cached, because one or more parameter types were invalid")
    if isinstance(args_hash, args_hasher.FastcacheSkip):
        return None
    # A part of a graph kernel compiles some of its statements: they key it.
    variant = "" if kernel._body is None else \
        ";".join(f"{node.lineno}-{node.end_lineno}" for node in kernel._body)
    key = src_hasher.cache_key_of(info_of(kernel._source), args_hash, variant)
    kernel.src_ll_cache_observations.cache_key_generated = key is not None
    return key


def load(kernel, key, args):
    """(compiled kernel, HiddenParams) stored under `key` by any process,
    for a launch with `args`, or None."""
    value = src_hasher.load(key)
    if value is None:
        return None
    kernel.src_ll_cache_observations.cache_validated = True
    hidden = HiddenParams.restored(value.launch.get("hidden"), kernel._return_type, args)
    if hidden is None:
        return None
    compiled = runtime.program().load_cached(value.frontend_cache_key)
    if compiled is None:
        return None  # evicted or rejected by the offline cache
    kernel.src_ll_cache_observations.cache_loaded = True
    return compiled, hidden


def store(kernel, key, compiled, hidden, ctx):
    """Stores the entry of a kernel just compiled for the call `key` names,
    unless its compiled code depends on more than the key: fields (their
    layout is the whole program's) or ndarrays bound by identity."""
    if not compiled.cache_key or compiled.uses_fields:
        return
    record = hidden.record()
    if record is None:
        return
    sources = []
    for source in ctx.sources:
        info = info_of(source)
        if info not in sources:
            sources.append(info)
    if src_hasher.store(compiled.cache_key, key, sources, set(), {"hidden": record}):
        kernel.src_ll_cache_observations.cache_stored = True
