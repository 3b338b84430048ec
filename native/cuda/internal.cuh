// Internal to the CUDA backend: the context layout and helpers shared by its translation units.
#ifndef OMNI_CUDA_INTERNAL_CUH
#define OMNI_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "omni.h"

#define CU_CTX_MAGIC 0x6f6d6e63u /* "omnc": catches a stale or foreign handle, best effort */
#define CU_MESSAGE_LEN 512

// Scratch for up to row_capacity rows of one (in, out) shape: device x/y plus pinned host staging
// for both, so the caller's pageable buffers are only touched by memcpy and every DMA runs from
// page-locked memory. The cache's code is shared with the CPU fixture (see workspace.cu).
#include "workspace_cache.h"

struct omni_ctx {
  uint32_t magic;
  int device;
  bool fatal;
  omni_stats_t stats;
  cudaStream_t stream;
  float *d_w; // resident weights, out_features x in_features, row-major as uploaded
  float *d_b;
  uint32_t out_features, in_features;
  omni_workspace *ws;
  uint32_t ws_capacity;
  uint64_t ws_limit_bytes;
  uint64_t ws_clock;
  char message[CU_MESSAGE_LEN];
};

enum cu_mem { CU_HOST, CU_PINNED, CU_DEVICE };

// context.cu: error plumbing and the one allocator every context byte goes through.
int cu_fail(omni_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// Maps a CUDA error to an omni code (marking ctx fatal when the error is sticky); `fallback` is the
// code a non-sticky, non-memory, non-device error gets (e.g. OMNI_E_DEVICE for a launch).
int cu_error(omni_ctx *ctx, cudaError_t err, int fallback, const char *what);
// The same, but every non-sticky error is `code`, whatever CUDA's reason (the message names it).
int cu_error_as(omni_ctx *ctx, cudaError_t err, int code, const char *what);
int cu_alloc(omni_ctx *ctx, cu_mem kind, size_t bytes, void **out, const char *what);
void cu_free(omni_ctx *ctx, cu_mem kind, void *p, size_t bytes);
// Synchronizes ctx's stream and counts it; returns the omni code of any error it surfaces.
int cu_sync(omni_ctx *ctx, const char *what);
bool cu_mul_size(size_t a, size_t b, size_t *out);

// workspace.cu
int cu_workspace_acquire(omni_ctx *ctx, uint32_t rows, omni_workspace **out);
void cu_workspace_release_all(omni_ctx *ctx);

// kernel.cu
cudaError_t cu_kernel_loadable(void);
cudaError_t cu_launch_linear_gelu(const float *x, const float *w, const float *b, float *y, uint32_t rows,
                                  uint32_t out_features, uint32_t in_features, cudaStream_t stream);

#endif
