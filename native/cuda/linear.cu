// Weight upload and the staged linear call: caller memory -> pinned staging -> device, kernel,
// device -> pinned staging -> caller memory, all on the context's own non-blocking stream.
#include <cstring>

#include "internal.cuh"

// Shared preamble: a usable context on the current thread, or the code that says why not.
static int cu_enter(omni_ctx *ctx, const char *fn) {
  if (ctx == nullptr) return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "%s: ctx is NULL", fn);
  if (ctx->magic != CU_CTX_MAGIC) return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "%s: ctx is not an open context", fn);
  // Sticky: the message that made it fatal stays the one reported.
  if (ctx->fatal) return OMNI_E_FATAL;
  // The current device is per thread; this context may be used from a thread that last used another.
  return cu_error(ctx, cudaSetDevice(ctx->device), OMNI_E_DEVICE, fn);
}

// After a failed copy or launch the stream is still drained before reporting, so no queued work
// outlives the call and a later free cannot race it. The first error (code and message) wins over
// the drain's, unless the drain found the context poisoned: then fatal, with its message.
static int cu_drain_after(omni_ctx *ctx, int rc, const char *what) {
  char first[CU_MESSAGE_LEN];
  memcpy(first, ctx->message, sizeof first);
  int sync_rc = cu_sync(ctx, what);
  if (sync_rc == OMNI_E_FATAL) return sync_rc;
  if (sync_rc != OMNI_OK) cu_fail(ctx, rc, "%s", first);
  return rc;
}

// A failed copy is COPY_FAILED whatever CUDA's reason, out of staging memory for a pageable source
// included: the status names the step that failed and promises the drain, as the fixture's does.
static int cu_copy(omni_ctx *ctx, void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, const char *what) {
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind, ctx->stream);
  if (err == cudaSuccess) return OMNI_OK;
  return cu_drain_after(ctx, cu_error_as(ctx, err, OMNI_E_COPY_FAILED, what), what);
}

extern "C" int omni_upload_weights(omni_ctx *ctx, const float *w, size_t w_len, const float *b, size_t b_len,
                                   uint32_t out_features, uint32_t in_features) {
  int rc = cu_enter(ctx, "omni_upload_weights");
  if (rc != OMNI_OK) return rc;
  if (w == nullptr || b == nullptr) return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_upload_weights: w or b is NULL");
  if (out_features == 0 || out_features > OMNI_MAX_FEATURES || in_features == 0 || in_features > OMNI_MAX_FEATURES) {
    return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_upload_weights: features %u x %u outside 1..%u", out_features,
                   in_features, OMNI_MAX_FEATURES);
  }
  size_t w_need = 0, w_bytes = 0;
  if (!cu_mul_size(out_features, in_features, &w_need) || !cu_mul_size(w_need, sizeof(float), &w_bytes)) {
    return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_upload_weights: weight size overflows size_t");
  }
  if (w_len != w_need || b_len != out_features) {
    return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT,
                   "omni_upload_weights: w_len %zu (want %zu) or b_len %zu (want %u) does not match %u x %u", w_len,
                   w_need, b_len, out_features, out_features, in_features);
  }
  const size_t b_bytes = (size_t)out_features * sizeof(float);
  float *d_w = nullptr, *d_b = nullptr;
  rc = cu_alloc(ctx, CU_DEVICE, w_bytes, reinterpret_cast<void **>(&d_w), "omni_upload_weights: cudaMalloc");
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_DEVICE, b_bytes, reinterpret_cast<void **>(&d_b), "omni_upload_weights: cudaMalloc");
  if (rc == OMNI_OK) rc = cu_copy(ctx, d_w, w, w_bytes, cudaMemcpyHostToDevice, "omni_upload_weights: weights copy");
  if (rc == OMNI_OK) rc = cu_copy(ctx, d_b, b, b_bytes, cudaMemcpyHostToDevice, "omni_upload_weights: bias copy");
  // The copies read the caller's memory: they must be done before this returns in any case.
  if (rc == OMNI_OK) rc = cu_sync(ctx, "omni_upload_weights: cudaStreamSynchronize");
  if (rc != OMNI_OK) {
    cu_free(ctx, CU_DEVICE, d_w, w_bytes);
    cu_free(ctx, CU_DEVICE, d_b, b_bytes);
    return rc;
  }
  // The stream is idle (synchronized above), so the old weights can go.
  cu_free(ctx, CU_DEVICE, ctx->d_w, (size_t)ctx->out_features * ctx->in_features * sizeof(float));
  cu_free(ctx, CU_DEVICE, ctx->d_b, (size_t)ctx->out_features * sizeof(float));
  ctx->d_w = d_w;
  ctx->d_b = d_b;
  ctx->out_features = out_features;
  ctx->in_features = in_features;
  return OMNI_OK;
}

extern "C" int omni_linear_gelu(omni_ctx *ctx, const float *x, size_t x_len, uint32_t rows, float *y, size_t y_len) {
  int rc = cu_enter(ctx, "omni_linear_gelu");
  if (rc != OMNI_OK) return rc;
  if (ctx->d_w == nullptr) {
    return cu_fail(ctx, OMNI_E_NOT_INITIALISED, "omni_linear_gelu: no weights uploaded (call omni_upload_weights)");
  }
  if (x == nullptr || y == nullptr) return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_linear_gelu: x or y is NULL");
  if (rows == 0 || rows > OMNI_MAX_ROWS) {
    return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_linear_gelu: rows %u outside 1..%u", rows, OMNI_MAX_ROWS);
  }
  size_t x_need = 0, y_need = 0;
  if (!cu_mul_size(rows, ctx->in_features, &x_need) || !cu_mul_size(rows, ctx->out_features, &y_need)) {
    return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_linear_gelu: shape overflows size_t");
  }
  if (x_len != x_need || y_len != y_need) {
    return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT,
                   "omni_linear_gelu: x_len %zu (want %zu) or y_len %zu (want %zu) does not match %u rows of %u -> %u",
                   x_len, x_need, y_len, y_need, rows, ctx->in_features, ctx->out_features);
  }
  omni_workspace *ws = nullptr;
  rc = cu_workspace_acquire(ctx, rows, &ws);
  if (rc != OMNI_OK) return rc;
  const size_t xb = x_need * sizeof(float), yb = y_need * sizeof(float);
  memcpy(ws->h_x, x, xb);
  rc = cu_copy(ctx, ws->d_x, ws->h_x, xb, cudaMemcpyHostToDevice, "omni_linear_gelu: input copy");
  if (rc != OMNI_OK) return rc;
  cudaError_t err = cu_launch_linear_gelu(ws->d_x, ctx->d_w, ctx->d_b, ws->d_y, rows, ctx->out_features,
                                          ctx->in_features, ctx->stream);
  if (err != cudaSuccess) {
    return cu_drain_after(ctx, cu_error(ctx, err, OMNI_E_DEVICE, "omni_linear_gelu: kernel launch"),
                          "omni_linear_gelu: kernel launch");
  }
  rc = cu_copy(ctx, ws->h_y, ws->d_y, yb, cudaMemcpyDeviceToHost, "omni_linear_gelu: output copy");
  if (rc != OMNI_OK) return rc;
  // Asynchronous faults (an illegal address in the kernel) surface here and are mapped to fatal.
  rc = cu_sync(ctx, "omni_linear_gelu: cudaStreamSynchronize");
  if (rc != OMNI_OK) return rc;
  memcpy(y, ws->h_y, yb);
  ctx->stats.calls += 1;
  return OMNI_OK;
}
