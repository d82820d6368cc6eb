"""Where a function's source lives, as the fastcache keys and validates it."""
import dataclasses
import inspect


@dataclasses.dataclass(frozen=True)
class FunctionSourceInfo:
    """A function's source: its file and the 0-based first and last line
    (inclusive, decorators included) of its definition."""

    function_name: str
    filepath: str
    start_lineno: int
    end_lineno: int


def get_source_info_and_src(func):
    """(FunctionSourceInfo, the source lines) of a Python function; raises
    OSError or TypeError when its source cannot be read."""
    func = getattr(func, "fn", func)  # a kernel or func object: its function
    lines, start = inspect.getsourcelines(func)
    filepath = inspect.getsourcefile(func) or inspect.getfile(func)
    first = max(start - 1, 0)
    info = FunctionSourceInfo(function_name=func.__name__, filepath=filepath,
                              start_lineno=first, end_lineno=first + len(lines) - 1)
    return info, lines


def info_of(source):
    """The FunctionSourceInfo of a parsed kernel.FunctionSource."""
    first = source.line_offset
    return FunctionSourceInfo(function_name=source.name, filepath=source.file,
                              start_lineno=first,
                              end_lineno=first + len(source.lines) - 1)
