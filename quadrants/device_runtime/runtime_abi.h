// The data the host shares with generated code: the runtime (one per
// Program) and the launch context (one per launch). Plain C so the same
// layout compiles into the host library and into the runtime bitcode for
// every target; generated code reaches fields only through the accessor
// functions in runtime.cpp, so this file is the single source of layout.
#ifndef QUADRANTS_RUNTIME_LLVM_RUNTIME_MODULE_RUNTIME_ABI_H_
#define QUADRANTS_RUNTIME_LLVM_RUNTIME_MODULE_RUNTIME_ABI_H_

typedef __INT8_TYPE__ qd_i8;
typedef __INT32_TYPE__ qd_i32;
typedef __INT64_TYPE__ qd_i64;
typedef __UINT32_TYPE__ qd_u32;
typedef __UINT64_TYPE__ qd_u64;

#define QD_MAX_ARGS 64
#define QD_MAX_NDIM 12  // ir::kMaxAxes

// Error codes recorded in QdRuntime::error_code (first error wins).
#define QD_ERROR_NONE 0
#define QD_ERROR_OUT_OF_BOUND 1
#define QD_ERROR_ASSERTION 2
#define QD_ERROR_POOL_EXHAUSTED 4

typedef struct QdRuntime {
  // Written by the host; a GPU host uploads this part, in queue order,
  // when it changes.
  char* root;  // the SNode tree's root buffer

  // Adstack storage: one heap sliced per thread, with per-stack offsets and
  // capacities published by the host before each launch.
  char* adstack_heap;
  qd_i64 adstack_per_thread_stride;
  qd_i64 adstack_threads;  // threads the heap is laid out for (interleaved)
  qd_i64* adstack_offsets;
  qd_i64* adstack_max_sizes;
  // > 0: the heap holds this many slices (rows), one per iteration that
  // passes the task's adstack gate, each claimed from adstack_rows_claimed
  // (reset by the host) as the iteration starts; 0: one per thread.
  qd_i64 adstack_rows;
  qd_i64 adstack_rows_claimed;

  // print() records, appended by qd_print and drained by the host after
  // each launch: an i32 site id, an i32 value count, then the values as
  // i64 slots. `print_used` counts the bytes asked for, which may exceed
  // the capacity; records that do not fit are counted in `print_dropped`.
  char* print_buffer;
  qd_i64 print_capacity;

  // Written by kernels; the host reads this part at sync points and
  // clears it, so uploads of the part above never overwrite it.
  qd_i32 error_code;
  qd_i32 error_site;       // index into the kernel's table of error sites
  qd_i64 error_launch;     // the launch_id of the launch that recorded it
  qd_i64 error_values[4];  // site-specific: axis, index, extent, ...
  qd_i32 adstack_overflow;  // first overflowing stack id + 1, or 0
  qd_i32 reserved;
  qd_i64 print_used;
  qd_i64 print_dropped;

  // Where an access whose bounds check failed goes instead, so a bad index
  // neither corrupts nor reads other elements.
  qd_i64 scratch[8];
} QdRuntime;

// Bytes of QdRuntime the host writes (the part before error_code).
#define QD_RUNTIME_HOST_BYTES ((qd_i64)(__builtin_offsetof(QdRuntime, error_code)))
// Bytes from error_code to the end of the kernel-written counters.
#define QD_RUNTIME_RECORD_BYTES                                 \
  ((qd_i64)(__builtin_offsetof(QdRuntime, scratch) -           \
            __builtin_offsetof(QdRuntime, error_code)))

typedef struct QdLaunchContext {
  QdRuntime* runtime;
  // Selects this launch's random streams (from the seed and a launch count).
  qd_u64 random_key;
  // Names the launch in the error record (QdRuntime::error_launch).
  qd_i64 launch_id;
  // Scalar arguments as 64-bit slots: integers sign/zero-extended, f64 as
  // its bits, f32/f16 bits in the low half.
  qd_i64 args[QD_MAX_ARGS];
  void* ndarray_data[QD_MAX_ARGS];
  // Last, so a launch uploads only the rows of its own parameters.
  qd_i64 ndarray_shape[QD_MAX_ARGS][QD_MAX_NDIM];
} QdLaunchContext;

// Bytes of QdLaunchContext a kernel of `num_params` parameters reads.
#define QD_LAUNCH_CONTEXT_BYTES(num_params)                    \
  ((qd_i64)(__builtin_offsetof(QdLaunchContext, ndarray_shape) + \
            (qd_i64)(num_params) * QD_MAX_NDIM * 8))

// The SplitMix64 output function (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", 2014): a bijective 64-bit mix that
// decorrelates nearby inputs. Shared by the host, which derives launch keys,
// and the runtime, which derives per-iteration streams.
static inline qd_u64 qd_mix64(qd_u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The Weyl increment of the streams (2^64 over the golden ratio, odd).
#define QD_RANDOM_GAMMA 0x9e3779b97f4a7c15ULL

#endif  // QUADRANTS_RUNTIME_LLVM_RUNTIME_MODULE_RUNTIME_ABI_H_
