"""qd_runtime_bitcode: runtime.cpp -> LLVM bitcode for one target, embedded."""

load("//tools:embed.bzl", "qd_embed_file")

def qd_runtime_bitcode(name, triple, symbol, visibility = None):
    """Compiles runtime.cpp for `triple` and embeds it as `symbol`.

    Produces <name>.bc and a cc_library <name> whose header <name>.h holds
    `symbol` / `symbol_size`.
    """
    native.genrule(
        name = name + "_compile",
        srcs = ["runtime.cpp", "runtime_abi.h", "simd_math.h"],
        outs = [name + ".bc"],
        cmd = " ".join([
            "$(location //third_party/llvm:clang)",
            "-target " + triple,
            "-x c++ -std=c++17 -O2 -emit-llvm -c",
            "-ffreestanding -fno-exceptions -fno-rtti -nostdinc",
            # GPU device libraries (libdevice, ROCm) are linked by their
            # backends, not here.
            "-nogpulib" if not triple.startswith("x86_64") else "",
            # Kernels never read errno: host math builtins become LLVM
            # intrinsics, which do not keep a loop from vectorizing (each
            # lane still calls the C library's function).
            "-fno-math-errno" if triple.startswith("x86_64") else "",
            # simd_math.h passes vectors between inlined helpers only.
            "-Wno-psabi",
            # Includes are relative to this repository's root, which lies
            # under external/ when another workspace imports it.
            "-I" + (Label("//:BUILD.bazel").workspace_root or "."),
            "$(location runtime.cpp) -o $@",
        ]),
        tools = ["//third_party/llvm:clang"],
        message = "Compiling the runtime module for " + triple,
    )
    qd_embed_file(
        name = name,
        src = ":" + name + ".bc",
        symbol = symbol,
        visibility = visibility,
    )
