"""qd_embed_file: a header holding a file's bytes as a constexpr array."""

def qd_embed_file(name, src, symbol, out = None, visibility = None):
    """Generates <name>.h declaring `inline constexpr unsigned char symbol[]`.

    Args:
      name: the cc_library's name.
      src: the file to embed (text or binary).
      symbol: the C++ identifier; `symbol_size` holds the byte count.
      out: the header's file name (default <name>.h).
      visibility: as for cc_library.
    """
    header = out or (name + ".h")
    native.genrule(
        name = name + "_gen",
        srcs = [src],
        outs = [header],
        cmd = "/usr/bin/python3 $(location //tools:embed_file.py) $(SRCS) $@ " + symbol,
        tools = ["//tools:embed_file.py"],
    )
    native.cc_library(
        name = name,
        hdrs = [header],
        visibility = visibility,
    )
