// The device-side runtime: compiled to LLVM bitcode per target, linked into
// every kernel module and inlined. Generated code calls only the qd_*
// functions below, never the structs' fields, so the layout lives in
// runtime_abi.h alone.
#include "quadrants/device_runtime/runtime_abi.h"

#define QD_EXPORT extern "C" __attribute__((always_inline))

// ---- Launch context and runtime accessors ----------------------------------

QD_EXPORT char* qd_root(QdLaunchContext* ctx) {
  return ctx->runtime->root;
}

QD_EXPORT qd_i64 qd_arg(QdLaunchContext* ctx, qd_i32 i) {
  return ctx->args[i];
}

QD_EXPORT void* qd_ndarray_data(QdLaunchContext* ctx, qd_i32 i) {
  return ctx->ndarray_data[i];
}

QD_EXPORT qd_i64 qd_ndarray_shape(QdLaunchContext* ctx, qd_i32 i, qd_i32 axis) {
  return ctx->ndarray_shape[i][axis];
}

// Records an error for the host to raise at the next sync. The first error
// wins; later ones (from other threads too) are dropped.
QD_EXPORT void qd_report_error(QdLaunchContext* ctx, qd_i32 code, qd_i32 site,
                               qd_i64 v0, qd_i64 v1, qd_i64 v2) {
  QdRuntime* rt = ctx->runtime;
  qd_i32 expected = QD_ERROR_NONE;
  if (__atomic_compare_exchange_n(&rt->error_code, &expected, code, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    rt->error_site = site;
    rt->error_launch = ctx->launch_id;
    rt->error_values[0] = v0;
    rt->error_values[1] = v1;
    rt->error_values[2] = v2;
  }
}

// Checks 0 <= index < extent; on failure records the error and returns 0,
// and the access is redirected to qd_scratch.
QD_EXPORT qd_i32 qd_check_index(QdLaunchContext* ctx, qd_i32 site, qd_i32 axis,
                                qd_i64 index, qd_i64 extent) {
  if (__builtin_expect(index >= 0 && index < extent, 1))
    return 1;
  qd_report_error(ctx, QD_ERROR_OUT_OF_BOUND, site, axis, index, extent);
  return 0;
}

QD_EXPORT void* qd_scratch(QdLaunchContext* ctx) {
  return ctx->runtime->scratch;
}

QD_EXPORT void qd_assert(QdLaunchContext* ctx, qd_i32 cond, qd_i32 site,
                         qd_i64 v0, qd_i64 v1, qd_i64 v2) {
  if (__builtin_expect(cond != 0, 1))
    return;
  qd_report_error(ctx, QD_ERROR_ASSERTION, site, v0, v1, v2);
}

// ---- print()
// -----------------------------------------------------------------

// Appends one record; reservations are atomic, so records of parallel
// iterations interleave whole. Reservations only grow, so the records that
// fit form a prefix of the buffer.
QD_EXPORT void qd_print(QdLaunchContext* ctx, qd_i32 site, qd_i32 count,
                        const qd_i64* values) {
  QdRuntime* rt = ctx->runtime;
  const qd_i64 bytes = 8 + 8 * (qd_i64)count;
  const qd_i64 offset =
      __atomic_fetch_add(&rt->print_used, bytes, __ATOMIC_RELAXED);
  if (offset + bytes > rt->print_capacity) {
    __atomic_fetch_add(&rt->print_dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  char* record = rt->print_buffer + offset;
  ((qd_i32*)record)[0] = site;
  ((qd_i32*)record)[1] = count;
  qd_i64* slots = (qd_i64*)(record + 8);
  for (qd_i32 k = 0; k < count; ++k)
    slots[k] = values[k];
}

// ---- qd.random()
// --------------------------------------------------------------- Each
// iteration of a task (the one run of a serial task) has its own stream: a
// SplitMix64 sequence whose start mixes the launch key, the task and the
// iteration index. Numbers therefore depend on the seed, the launch count and
// where they are drawn, never on which thread runs the iteration.

QD_EXPORT qd_u64 qd_random_seed(QdLaunchContext* ctx, qd_i32 task,
                                qd_i64 iteration) {
  return qd_mix64(ctx->random_key ^
                  qd_mix64((qd_u64)iteration ^ ((qd_u64)task << 48)));
}

// Advances the stream and returns 64 uniformly distributed bits.
QD_EXPORT qd_u64 qd_random_next(qd_u64* state) {
  *state += QD_RANDOM_GAMMA;
  return qd_mix64(*state);
}

// The streams of n consecutive iterations run in SIMD lanes: lane l seeds
// and draws exactly what iteration iterations[l] does alone, so numbers do
// not depend on whether a task runs in lanes. Every lane advances; the
// caller keeps the states of idle lanes.
#define QD_RANDOM_LANES(n)                                              \
  QD_EXPORT void qd_random_seed_x##n(QdLaunchContext* ctx, qd_i32 task, \
                                     const qd_i64* iterations,          \
                                     qd_u64* states) {                  \
    for (int l = 0; l < n; ++l)                                         \
      states[l] = qd_random_seed(ctx, task, iterations[l]);             \
  }                                                                     \
  QD_EXPORT void qd_random_next_x##n(qd_u64* states, qd_u64* bits) {    \
    for (int l = 0; l < n; ++l)                                         \
      bits[l] = qd_random_next(&states[l]);                             \
  }
QD_RANDOM_LANES(4)
QD_RANDOM_LANES(8)
QD_RANDOM_LANES(16)
QD_RANDOM_LANES(32)
QD_RANDOM_LANES(64)
#undef QD_RANDOM_LANES

// ---- Adstack metadata
// --------------------------------------------------------- Published by the
// host before each task that uses adstacks: the heap, the bytes each thread
// owns in it, and each stack's offset and capacity.

QD_EXPORT char* qd_adstack_heap(QdLaunchContext* ctx) {
  return ctx->runtime->adstack_heap;
}

QD_EXPORT qd_i64 qd_adstack_stride(QdLaunchContext* ctx) {
  return ctx->runtime->adstack_per_thread_stride;
}

QD_EXPORT qd_i64 qd_adstack_threads(QdLaunchContext* ctx) {
  return ctx->runtime->adstack_threads;
}

QD_EXPORT qd_i64 qd_adstack_offset(QdLaunchContext* ctx, qd_i32 stack) {
  return ctx->runtime->adstack_offsets[stack];
}

QD_EXPORT qd_i64 qd_adstack_max_size(QdLaunchContext* ctx, qd_i32 stack) {
  return ctx->runtime->adstack_max_sizes[stack];
}

// Records the first stack that a push found full (debug builds only).
QD_EXPORT void qd_adstack_overflow(QdLaunchContext* ctx, qd_i32 stack) {
  qd_i32 expected = 0;
  __atomic_compare_exchange_n(&ctx->runtime->adstack_overflow, &expected,
                              stack + 1, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
}

// The heap row of an iteration's adstacks (see QdRuntime::adstack_rows): a
// fresh row for an iteration that passes the gate, row 0 for one that
// pushes nothing, the thread's slice when the heap is not gated. More
// claims than rows cannot happen while the gate's array is unchanged
// since the launch counted it; they would share the last row and report
// an overflow rather than write past the heap.
QD_EXPORT qd_i32 qd_adstack_row(QdLaunchContext* ctx, qd_i32 passes,
                                qd_i32 thread) {
  QdRuntime* rt = ctx->runtime;
  if (rt->adstack_rows == 0)
    return thread;
  if (!passes)
    return 0;
  qd_i64 row =
      __atomic_fetch_add(&rt->adstack_rows_claimed, 1, __ATOMIC_RELAXED);
  if (row >= rt->adstack_rows) {
    qd_adstack_overflow(ctx, 0);
    row = rt->adstack_rows - 1;
  }
  return (qd_i32)row;
}

// ---- Sparse SNode pools ----------------------------------------------------
// A pointer or dynamic level's pool: `blocks` blocks of `block_bytes`, every
// free block all zeros. Block 0 is never handed out (an inactive cell reads
// it), nor is block 1 (writes that may not activate land there). The state
// words: [0] blocks handed out fresh so far, [1] freed blocks available,
// then one bit per block, set while the block is free. Only relaxed
// read-modify-writes and sequentially consistent compare-exchanges are
// used: what every target's backend lowers.

static __attribute__((noinline)) qd_i32 qd_pool_take(qd_i32* state,
                                                      qd_i64 blocks) {
  qd_i32* available = state + 1;
  qd_u32* bits = (qd_u32*)(state + 2);
  if (*(volatile qd_i32*)available > 0) {
    // Claiming one of the counted free blocks first guarantees that a set
    // bit is there to find: a block's bit is set before it is counted.
    if (__atomic_sub_fetch(available, 1, __ATOMIC_RELAXED) >= 0) {
      const qd_i64 words = (blocks + 31) / 32;
      for (;;) {
        for (qd_i64 w = 0; w < words; ++w) {
          qd_u32 seen = ((volatile qd_u32*)bits)[w];
          while (seen != 0) {
            const qd_u32 bit = seen & (0u - seen);
            const qd_u32 old =
                __atomic_fetch_and(&bits[w], ~bit, __ATOMIC_RELAXED);
            if (old & bit)
              return (qd_i32)(w * 32 + __builtin_ctz(bit));
            seen = old & ~bit;
          }
        }
      }
    }
    __atomic_add_fetch(available, 1, __ATOMIC_RELAXED);
  }
  qd_i32 fresh = *(volatile qd_i32*)state;
  while (fresh + 2 < blocks) {
    if (__atomic_compare_exchange_n(state, &fresh, fresh + 1, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      return fresh + 2;
    }
  }
  return 0;
}

static void qd_pool_give(qd_i32* state, qd_i32 block) {
  qd_u32* bits = (qd_u32*)(state + 2);
  __atomic_fetch_or(&bits[block / 32], 1u << (block % 32), __ATOMIC_RELAXED);
  __atomic_add_fetch(state + 1, 1, __ATOMIC_RELAXED);
}

// Activates the cell of table entry `entry`: the thread that moves it from
// 0 to 1 (block 1: "being activated") takes a block and publishes it; the
// others wait for it. So every activation takes exactly one block, however
// many threads write the cell at once.
static __attribute__((noinline)) qd_i32 qd_pool_acquire_slow(
    QdLaunchContext* ctx, qd_i32* entry, qd_i32* state, qd_i64 blocks,
    qd_i32 site) {
  for (;;) {
    qd_i32 expected = 0;
    if (__atomic_compare_exchange_n(entry, &expected, 1, false,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      const qd_i32 block = qd_pool_take(state, blocks);
      qd_i32 claimed = 1;
      __atomic_compare_exchange_n(entry, &claimed, block, false,
                                  __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
      if (block == 0) {
        qd_report_error(ctx, QD_ERROR_POOL_EXHAUSTED, site, blocks - 2, 0, 0);
        return 1;
      }
      return block;
    }
    while (expected == 1)
      expected = *(volatile qd_i32*)entry;
    if (expected != 0)
      return expected;
  }
}

// The block of the cell whose table entry is `entry`, taking a free one
// from the pool when the cell is inactive.
QD_EXPORT qd_i32 qd_pool_acquire(QdLaunchContext* ctx, qd_i32* entry,
                                 char* state, char* pool, qd_i64 blocks,
                                 qd_i64 block_bytes, qd_i32 site) {
  (void)pool;
  (void)block_bytes;
  const qd_i32 block = *(volatile qd_i32*)entry;
  if (__builtin_expect(block > 1, 1))
    return block;
  return qd_pool_acquire_slow(ctx, entry, (qd_i32*)state, blocks, site);
}

// Deactivates the cell whose table entry is `entry`: its block is zeroed
// and returned to the pool.
QD_EXPORT void qd_pool_release(qd_i32* entry, char* state, char* pool,
                               qd_i64 block_bytes) {
  const qd_i32 block = __atomic_exchange_n(entry, 0, __ATOMIC_RELAXED);
  if (block < 2)
    return;
  char* data = pool + (qd_i64)block * block_bytes;
  if (block_bytes % 8 == 0) {
    for (qd_i64 k = 0; k < block_bytes / 8; ++k)
      ((qd_i64*)data)[k] = 0;
  } else {
    for (qd_i64 k = 0; k < block_bytes; ++k)
      data[k] = 0;
  }
  // The bit's acq_rel update orders the zeroing before the block's reuse.
  qd_pool_give((qd_i32*)state, block);
}

// ---- Integer arithmetic with the language's semantics ----------------------
// Division and modulo follow Python (floor toward -inf; remainder has the
// divisor's sign). Division by zero yields 0 instead of trapping.

#define QD_SIGNED_DIVISION(T, name)           \
  QD_EXPORT T qd_floordiv_##name(T a, T b) {  \
    if (b == 0)                               \
      return 0;                               \
    if (b == -1)                              \
      return (T)(0 - (qd_u64)a);              \
    T q = a / b;                              \
    if ((a % b != 0) && ((a < 0) != (b < 0))) \
      --q;                                    \
    return q;                                 \
  }                                           \
  QD_EXPORT T qd_mod_##name(T a, T b) {       \
    if (b == 0 || b == -1)                    \
      return 0;                               \
    T r = a % b;                              \
    if (r != 0 && ((r < 0) != (b < 0)))       \
      r += b;                                 \
    return r;                                 \
  }

#define QD_UNSIGNED_DIVISION(T, name)        \
  QD_EXPORT T qd_floordiv_##name(T a, T b) { \
    return b == 0 ? 0 : a / b;               \
  }                                          \
  QD_EXPORT T qd_mod_##name(T a, T b) {      \
    return b == 0 ? 0 : a % b;               \
  }

QD_SIGNED_DIVISION(qd_i32, i32)
QD_SIGNED_DIVISION(qd_i64, i64)
QD_UNSIGNED_DIVISION(qd_u32, u32)
QD_UNSIGNED_DIVISION(qd_u64, u64)

// Integer power by squaring; negative exponents give 0 unless the base is
// 1 or -1 (the integer part of the real result).
#define QD_INTEGER_POW(T, U, name)                \
  QD_EXPORT T qd_pow_##name(T base, T exponent) { \
    if (exponent < 0) {                           \
      if (base == 1)                              \
        return 1;                                 \
      if (base == (T)-1)                          \
        return (exponent & 1) ? (T)-1 : 1;        \
      return 0;                                   \
    }                                             \
    U result = 1, b = (U)base;                    \
    for (U e = (U)exponent; e != 0; e >>= 1) {    \
      if (e & 1)                                  \
        result *= b;                              \
      b *= b;                                     \
    }                                             \
    return (T)result;                             \
  }

QD_INTEGER_POW(qd_i32, qd_u32, i32)
QD_INTEGER_POW(qd_i64, qd_u64, i64)
QD_INTEGER_POW(qd_u32, qd_u32, u32)
QD_INTEGER_POW(qd_u64, qd_u64, u64)

// ---- Float math
// --------------------------------------------------------------- Host targets
// call the C library; GPU targets provide their own definitions of these names
// (libdevice, ocml) in their runtime builds.
#if defined(__x86_64__) || defined(__aarch64__)
#define QD_MATH1(name, fn)                     \
  QD_EXPORT float qd_##name##_f32(float x) {   \
    return __builtin_##fn##f(x);               \
  }                                            \
  QD_EXPORT double qd_##name##_f64(double x) { \
    return __builtin_##fn(x);                  \
  }

QD_MATH1(sin, sin)
QD_MATH1(cos, cos)
QD_MATH1(tan, tan)
QD_MATH1(exp, exp)
QD_MATH1(log, log)
QD_MATH1(asin, asin)
QD_MATH1(acos, acos)

// glibc's tanhf is up to ~1.7 ulps off; its f64 tanh, rounded to f32, is
// within 0.5 ulp + 2^-29.
QD_EXPORT float qd_tanh_f32(float x) {
  return (float)__builtin_tanh((double)x);
}
QD_EXPORT double qd_tanh_f64(double x) {
  return __builtin_tanh(x);
}

QD_EXPORT float qd_atan2_f32(float y, float x) {
  return __builtin_atan2f(y, x);
}
QD_EXPORT double qd_atan2_f64(double y, double x) {
  return __builtin_atan2(y, x);
}
QD_EXPORT float qd_pow_f32(float x, float y) {
  return __builtin_powf(x, y);
}
QD_EXPORT double qd_pow_f64(double x, double y) {
  return __builtin_pow(x, y);
}
#if defined(__x86_64__)
#include "quadrants/device_runtime/simd_math.h"
#endif
#elif defined(__NVPTX__)
// CUDA: libdevice's correctly rounded or few-ulp versions, linked by the CUDA
// backend after this module (NVPTX intrinsics alone are approximations).
#define QD_MATH1(name)                         \
  extern "C" float __nv_##name##f(float);      \
  extern "C" double __nv_##name(double);       \
  QD_EXPORT float qd_##name##_f32(float x) {   \
    return __nv_##name##f(x);                  \
  }                                            \
  QD_EXPORT double qd_##name##_f64(double x) { \
    return __nv_##name(x);                     \
  }

QD_MATH1(sin)
QD_MATH1(cos)
QD_MATH1(tan)
QD_MATH1(tanh)
QD_MATH1(exp)
QD_MATH1(log)
QD_MATH1(asin)
QD_MATH1(acos)

extern "C" float __nv_atan2f(float, float);
extern "C" double __nv_atan2(double, double);
extern "C" float __nv_powf(float, float);
extern "C" double __nv_pow(double, double);
QD_EXPORT float qd_atan2_f32(float y, float x) {
  return __nv_atan2f(y, x);
}
QD_EXPORT double qd_atan2_f64(double y, double x) {
  return __nv_atan2(y, x);
}
QD_EXPORT float qd_pow_f32(float x, float y) {
  return __nv_powf(x, y);
}
QD_EXPORT double qd_pow_f64(double x, double y) {
  return __nv_pow(x, y);
}
#elif defined(__AMDGPU__)
// AMDGPU: the ROCm device library's (ocml) versions, linked by the AMDGPU
// backend after this module; LLVM's AMDGPU target has no f64
// transcendentals and only approximate f32 ones.
#define QD_MATH1(name)                           \
  extern "C" float __ocml_##name##_f32(float);   \
  extern "C" double __ocml_##name##_f64(double); \
  QD_EXPORT float qd_##name##_f32(float x) {     \
    return __ocml_##name##_f32(x);               \
  }                                              \
  QD_EXPORT double qd_##name##_f64(double x) {   \
    return __ocml_##name##_f64(x);               \
  }

QD_MATH1(sin)
QD_MATH1(cos)
QD_MATH1(tan)
QD_MATH1(tanh)
QD_MATH1(exp)
QD_MATH1(log)
QD_MATH1(asin)
QD_MATH1(acos)

extern "C" float __ocml_atan2_f32(float, float);
extern "C" double __ocml_atan2_f64(double, double);
extern "C" float __ocml_pow_f32(float, float);
extern "C" double __ocml_pow_f64(double, double);
QD_EXPORT float qd_atan2_f32(float y, float x) {
  return __ocml_atan2_f32(y, x);
}
QD_EXPORT double qd_atan2_f64(double y, double x) {
  return __ocml_atan2_f64(y, x);
}
QD_EXPORT float qd_pow_f32(float x, float y) {
  return __ocml_pow_f32(x, y);
}
QD_EXPORT double qd_pow_f64(double x, double y) {
  return __ocml_pow_f64(x, y);
}
#endif
