// The bounded per-context workspace cache: one entry per (rows, in, out) shape, LRU-evicted so
// that both the entry count and the byte total stay within the limits given at open.
#include "internal.cuh"

static void ws_free(omni_ctx *ctx, cu_workspace *ws) {
  const size_t xb = (size_t)ws->rows * ws->in_features * sizeof(float);
  const size_t yb = (size_t)ws->rows * ws->out_features * sizeof(float);
  cu_free(ctx, CU_DEVICE, ws->d_x, xb);
  cu_free(ctx, CU_DEVICE, ws->d_y, yb);
  cu_free(ctx, CU_PINNED, ws->h_x, xb);
  cu_free(ctx, CU_PINNED, ws->h_y, yb);
  ctx->stats.workspace_bytes -= ws->bytes;
  ctx->stats.cached_workspaces -= 1;
  *ws = cu_workspace{};
}

static cu_workspace *ws_lru(omni_ctx *ctx) {
  cu_workspace *oldest = nullptr;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    cu_workspace *ws = &ctx->ws[i];
    if (ws->used && (oldest == nullptr || ws->last_use < oldest->last_use)) oldest = ws;
  }
  return oldest;
}

int cu_workspace_acquire(omni_ctx *ctx, uint32_t rows, cu_workspace **out) {
  const uint32_t in = ctx->in_features, outf = ctx->out_features;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    cu_workspace *ws = &ctx->ws[i];
    if (ws->used && ws->rows == rows && ws->in_features == in && ws->out_features == outf) {
      ws->last_use = ++ctx->ws_clock;
      *out = ws;
      return OMNI_OK;
    }
  }
  // Limits guarantee these products fit in size_t; the bytes are device x/y plus staging x/y.
  const size_t xb = (size_t)rows * in * sizeof(float);
  const size_t yb = (size_t)rows * outf * sizeof(float);
  const uint64_t need = 2u * ((uint64_t)xb + (uint64_t)yb);
  if (need > ctx->ws_limit_bytes) {
    return cu_fail(ctx, OMNI_E_WORKSPACE_LIMIT,
                   "omni_linear_gelu: %u rows x (%u in + %u out) needs %llu workspace bytes, over the limit %llu",
                   rows, in, outf, (unsigned long long)need, (unsigned long long)ctx->ws_limit_bytes);
  }
  // Evict before allocating, so the cache never holds more than its limits even transiently.
  for (bool synced = false;;) {
    const bool full = ctx->stats.cached_workspaces >= ctx->ws_capacity;
    const bool too_big = ctx->stats.workspace_bytes + need > ctx->ws_limit_bytes;
    if (!full && !too_big) break;
    // Nothing may still be queued against a buffer when it is freed.
    if (!synced) {
      int rc = cu_sync(ctx, "omni_linear_gelu: synchronizing before eviction");
      if (rc != OMNI_OK) return rc;
    }
    synced = true;
    ws_free(ctx, ws_lru(ctx));
    ctx->stats.workspace_evictions += 1;
  }
  cu_workspace *slot = nullptr;
  for (uint32_t i = 0; i < ctx->ws_capacity && slot == nullptr; ++i) {
    if (!ctx->ws[i].used) slot = &ctx->ws[i];
  }
  cu_workspace ws{};
  ws.used = true;
  ws.rows = rows;
  ws.in_features = in;
  ws.out_features = outf;
  ws.bytes = need;
  const char *what = "omni_linear_gelu: workspace allocation";
  int rc = cu_alloc(ctx, CU_DEVICE, xb, reinterpret_cast<void **>(&ws.d_x), what);
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_DEVICE, yb, reinterpret_cast<void **>(&ws.d_y), what);
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_PINNED, xb, reinterpret_cast<void **>(&ws.h_x), what);
  if (rc == OMNI_OK) rc = cu_alloc(ctx, CU_PINNED, yb, reinterpret_cast<void **>(&ws.h_y), what);
  if (rc != OMNI_OK) {
    cu_free(ctx, CU_DEVICE, ws.d_x, xb);
    cu_free(ctx, CU_DEVICE, ws.d_y, yb);
    cu_free(ctx, CU_PINNED, ws.h_x, xb);
    return rc;
  }
  ws.last_use = ++ctx->ws_clock;
  *slot = ws;
  ctx->stats.cached_workspaces += 1;
  ctx->stats.workspace_bytes += need;
  *out = slot;
  return OMNI_OK;
}

// The caller synchronizes first (omni_close does).
void cu_workspace_release_all(omni_ctx *ctx) {
  if (ctx->ws == nullptr) return;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    if (ctx->ws[i].used) ws_free(ctx, &ctx->ws[i]);
  }
}
