/*
 * omni native ABI: the single contract shared by the CPU fixture (native/fixture) and the CUDA
 * backend (native/cuda). The TypeScript loader (src/native/library.ts) refuses a library whose
 * omni_abi_version() differs from its own constant, so bump OMNI_ABI_VERSION on any change to a
 * signature, a struct layout, a status code or a limit below.
 *
 * Operation: y = GELU(x W^T + b) with the exact erf GELU 0.5 v (1 + erf(v / sqrt 2)), all float32,
 *   x: rows x in_features, W: out_features x in_features, b: out_features, y: rows x out_features,
 *   every matrix row-major and densely packed.
 *
 * Threading: contexts are independent; different threads may use different contexts at the same
 * time. One context must not be used by two threads at once (each worker thread opens its own).
 * On CUDA, omni_open, omni_close, omni_upload_weights and omni_linear_gelu make the context's
 * device current on the calling thread (cudaSetDevice) and never restore the previous one: a
 * thread that runs CUDA work of its own sets its device again after them. On purpose: restoring
 * "device 0" on a thread that had none would create a context on device 0.
 *
 * Errors: every entry point validates its own arguments (the C side never trusts the caller),
 * returns an omni_status and leaves a readable message in omni_last_error(ctx), or in the calling
 * thread's message slot (omni_last_error(NULL)) when there is no context. Nothing aborts the process.
 * Signatures use plain integers, size_t and pointers so FFI layers (koffi) can bind them directly.
 *
 * Workspaces (the same rule in both backends): a call needs scratch for its rows of the uploaded
 * (in, out) shape: device x/y plus pinned host staging x/y, 2 * capacity * (in + out) * 4 bytes.
 *   - Lookup: the smallest cached workspace of that (in, out) whose row capacity is >= rows is
 *     reused (it becomes the most recently used); no allocation, no synchronization.
 *   - Miss: a new workspace gets capacity = rows rounded up to a power of two (at most
 *     OMNI_MAX_ROWS), or exactly rows when the rounded size would exceed workspace_bytes; a call
 *     whose exact rows exceed workspace_bytes fails with OMNI_E_WORKSPACE_LIMIT.
 *   - Bounds: at most workspace_count entries holding at most workspace_bytes together. Before a
 *     miss allocates, least recently used entries are evicted (after one stream synchronization)
 *     until the new one fits, so the limits hold even transiently. An allocation that fails
 *     part-way frees what it took and leaves the cache as eviction left it.
 *   So batch sizes drawn from 1..16 cost at most five workspace allocations (capacities 1, 2, 4, 8,
 *   16; once 16 is cached every such call hits) instead of an eviction, on CUDA a cudaFree and with
 *   it a device-wide sync, on nearly every call.
 *
 * Fatal errors: once a call returns OMNI_E_FATAL, every later call on that context (omni_stats
 * included) returns it too; omni_close still releases. On CUDA a sticky error (illegal address...)
 * poisons the process's context for that device, so every omni context on it turns fatal at its
 * next device call (omni_stats makes none: it reports the last counters until then), and
 * omni_open on that device returns OMNI_E_FATAL too, for the sticky codes the CUDA headers it was
 * built with define (open has no stream to probe: a code a newer driver adds reads as NO_DEVICE
 * or DEVICE there, while contexts already open still turn fatal). Device and pinned memory of a
 * poisoned context cannot be freed (cudaFree fails) and stays held until the process exits,
 * though live_bytes then reads 0.
 *
 * Device selection: omni_open's `device` argument is the only input the C side takes; it never
 * picks a device itself. The TypeScript side resolves it in this order (src/native/device.ts):
 *   1. the `device` option (NativeContext.open, LinearRuntime.start), else
 *   2. the OMNI_CUDA_DEVICE environment variable (a whole number 0..1023 in decimal notation, as
 *      the CLI's --device reads it; a malformed value is an OMNI_ERR_INVALID_ARGUMENT, never a
 *      silent fallback), else
 *   3. device 0.
 * The backend itself comes from the `backend` option, else OMNI_BACKEND, else 'auto' (CUDA when its
 * library loads with this ABI version and the resolved device opens, else the CPU fixture).
 */
#ifndef OMNI_H
#define OMNI_H

#include <stddef.h>
#include <stdint.h>

/* Overridable so a test can build a deliberately mismatching library. */
#ifndef OMNI_ABI_VERSION
#define OMNI_ABI_VERSION 1
#endif

#if defined(_WIN32)
#define OMNI_API __declspec(dllexport)
#else
#define OMNI_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Limits, checked by every entry point. They keep every size product far from size_t overflow on
 * 64-bit targets and bound a single request's scratch; products are still checked explicitly. */
#define OMNI_MAX_ROWS 65536u
#define OMNI_MAX_FEATURES 16384u
#define OMNI_MAX_WORKSPACE_COUNT 64u
#define OMNI_DEFAULT_WORKSPACE_COUNT 4u
#define OMNI_DEFAULT_WORKSPACE_BYTES ((uint64_t)512u << 20)

typedef enum omni_status {
  OMNI_OK = 0,
  OMNI_E_INVALID_ARGUMENT = 1, /* null pointer, bad shape, length mismatch, limit exceeded */
  OMNI_E_OUT_OF_MEMORY = 2,    /* host, pinned or device allocation failed; nothing was leaked
                                  (on CUDA, also a launch or sync that the runtime failed as
                                  cudaErrorMemoryAllocation, such as a kernel loaded lazily) */
  OMNI_E_COPY_FAILED = 3,      /* a host<->device copy failed, whatever the cause (on CUDA, out
                                  of staging memory included); the stream was synchronized first */
  OMNI_E_NO_DEVICE = 4,        /* the requested device does not exist, cannot be selected, or
                                  has no kernel this library can load (CUDA, at omni_open); on
                                  CUDA, also any later call the runtime fails for want of a
                                  usable device (cudaErrorNoDevice, ...DevicesUnavailable...) */
  OMNI_E_DEVICE = 5,           /* any other non-sticky device/runtime error (launch, stream,
                                  sync) */
  OMNI_E_NOT_INITIALISED = 6,  /* omni_linear_gelu before omni_upload_weights */
  OMNI_E_WORKSPACE_LIMIT = 7,  /* one request needs more scratch than the workspace byte limit */
  OMNI_E_FATAL = 8             /* sticky: the context is unusable; every later call returns this */
} omni_status;

typedef struct omni_ctx omni_ctx;

/* Zero in a field means "the default" (OMNI_DEFAULT_WORKSPACE_*). */
typedef struct omni_open_options {
  uint32_t workspace_count; /* cached workspaces, at most OMNI_MAX_WORKSPACE_COUNT */
  uint32_t reserved;        /* must be 0 */
  uint64_t workspace_bytes; /* total bytes the cached workspaces may hold */
} omni_open_options;

/* Every byte a context holds goes through one allocator, so these are exact for the context. */
typedef struct omni_stats_s {
  uint64_t live_bytes;          /* bytes held now: context, weights, workspaces, staging (and the
                                   fixture's simulated stream; a CUDA stream is the driver's memory) */
  uint64_t peak_bytes;          /* highest live_bytes since open */
  uint64_t allocations;         /* successful allocations since open (cumulative), open's own
                                   included: 2 after open on CUDA (context, workspace table), 3 on
                                   the fixture (and its simulated stream); compare differences */
  uint64_t stream_syncs;        /* stream synchronizations since open */
  uint64_t cached_workspaces;   /* workspaces in the cache now */
  uint64_t workspace_bytes;     /* bytes those workspaces hold (device + pinned staging) */
  uint64_t workspace_evictions; /* workspaces evicted to make room (cumulative) */
  uint64_t calls;               /* successful omni_linear_gelu calls */
} omni_stats_t;

OMNI_API int omni_abi_version(void);
/* "fixture" or "cuda"; static storage. */
OMNI_API const char *omni_backend_name(void);

/* device: index of the device to use (the CPU fixture accepts any non-negative index).
 * options: NULL for defaults. On failure *out is set to NULL and nothing is leaked. Fails with
 * INVALID_ARGUMENT, NO_DEVICE, OUT_OF_MEMORY or DEVICE, and on CUDA with FATAL when a sticky error
 * (from an omni context or other code in the process) has already poisoned the device's context:
 * no context opens there until the process exits. */
OMNI_API int omni_open(int device, const omni_open_options *options, omni_ctx **out);
/* Synchronizes, then frees everything. NULL is a no-op. Always releases, even after a fatal error. */
OMNI_API int omni_close(omni_ctx *ctx);

/* Copies W (w_len == out_features * in_features) and b (b_len == out_features) into the context;
 * they stay resident until replaced or closed. A failed upload keeps the previous weights. */
OMNI_API int omni_upload_weights(omni_ctx *ctx, const float *w, size_t w_len, const float *b, size_t b_len,
                                 uint32_t out_features, uint32_t in_features);

/* y = GELU(x W^T + b): x_len == rows * in_features, y_len == rows * out_features,
 * 1 <= rows <= OMNI_MAX_ROWS. Synchronous: y is complete when it returns OMNI_OK. x is read whole
 * (staged) before y is written, so x and y may be the same or overlapping memory. */
OMNI_API int omni_linear_gelu(omni_ctx *ctx, const float *x, size_t x_len, uint32_t rows, float *y,
                              size_t y_len);

OMNI_API int omni_stats(omni_ctx *ctx, omni_stats_t *out);

/* The message of the last failure on ctx, or of the calling thread's last failure without a
 * context when ctx is NULL. Never NULL; owned by the library, valid until the next call. */
OMNI_API const char *omni_last_error(omni_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif /* OMNI_H */
