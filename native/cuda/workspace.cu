// The CUDA side of the shared workspace cache (native/common/workspace_cache.h): device buffers for
// the kernel, page-locked staging for the copies, all through cu_alloc/cu_free (stats, errors).
#include "internal.cuh"

#define WS_FAIL cu_fail

// Nothing may still be queued against a buffer when it is freed. Syncing first also turns an error
// of that queued work into a status (cudaFree's own result is ignored).
static int ws_backend_sync(omni_ctx *ctx) {
  return cu_sync(ctx, "omni_linear_gelu: synchronizing before eviction");
}

static void ws_backend_free(omni_ctx *ctx, omni_workspace *ws, size_t xb, size_t yb) {
  cu_free(ctx, CU_DEVICE, ws->d_x, xb);
  cu_free(ctx, CU_DEVICE, ws->d_y, yb);
  cu_free(ctx, CU_PINNED, ws->h_x, xb);
  cu_free(ctx, CU_PINNED, ws->h_y, yb);
}

static int ws_backend_alloc(omni_ctx *ctx, omni_workspace *ws, size_t xb, size_t yb) {
  const char *what = "omni_linear_gelu: workspace allocation";
  int rc = cu_alloc(ctx, CU_DEVICE, xb, reinterpret_cast<void **>(&ws->d_x), what);
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_DEVICE, yb, reinterpret_cast<void **>(&ws->d_y), what);
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_PINNED, xb, reinterpret_cast<void **>(&ws->h_x), what);
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_PINNED, yb, reinterpret_cast<void **>(&ws->h_y), what);
  if (rc != OMNI_OK) ws_backend_free(ctx, ws, xb, yb);
  return rc;
}

#define OMNI_WORKSPACE_CACHE_IMPLEMENTATION
#include "workspace_cache.h"

int cu_workspace_acquire(omni_ctx *ctx, uint32_t rows, omni_workspace **out) { return ws_acquire(ctx, rows, out); }

void cu_workspace_release_all(omni_ctx *ctx) { ws_release_all(ctx); }
