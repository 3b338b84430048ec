// The bounded per-context workspace cache, keyed by row capacity: a call reuses the smallest cached
// workspace of its (in, out) features whose capacity is >= its rows; a miss allocates one whose
// capacity is rows rounded up to a power of two (at most OMNI_MAX_ROWS; exactly rows when the
// rounded size would not fit the byte limit). LRU eviction keeps both the entry count and the byte
// total within the limits given at open, and happens before the allocation. Varying batch sizes
// therefore settle on a few workspaces instead of evicting (cudaFree: a device-wide sync) per call.
#include "internal.cuh"

// Bytes of one workspace of `capacity` rows: device x/y plus pinned staging x/y.
static uint64_t ws_need(uint32_t capacity, uint32_t in, uint32_t outf) {
  return 2u * (uint64_t)capacity * ((uint64_t)in + outf) * sizeof(float);
}

// The smallest power of two >= rows, capped at OMNI_MAX_ROWS (itself a power of two).
static uint32_t ws_capacity_for(uint32_t rows) {
  uint32_t cap = 1;
  while (cap < rows && cap < OMNI_MAX_ROWS) cap <<= 1;
  return cap;
}

static void ws_free(omni_ctx *ctx, cu_workspace *ws) {
  const size_t xb = (size_t)ws->row_capacity * ws->in_features * sizeof(float);
  const size_t yb = (size_t)ws->row_capacity * ws->out_features * sizeof(float);
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
  // The smallest fit wastes the least and leaves the big ones for big calls.
  cu_workspace *best = nullptr;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    cu_workspace *ws = &ctx->ws[i];
    if (ws->used && ws->row_capacity >= rows && ws->in_features == in && ws->out_features == outf &&
        (best == nullptr || ws->row_capacity < best->row_capacity)) {
      best = ws;
    }
  }
  if (best != nullptr) {
    best->last_use = ++ctx->ws_clock;
    *out = best;
    return OMNI_OK;
  }
  // Limits guarantee these products fit in size_t and uint64_t.
  if (ws_need(rows, in, outf) > ctx->ws_limit_bytes) {
    return cu_fail(ctx, OMNI_E_WORKSPACE_LIMIT,
                   "omni_linear_gelu: %u rows x (%u in + %u out) needs %llu workspace bytes, over the limit %llu",
                   rows, in, outf, (unsigned long long)ws_need(rows, in, outf),
                   (unsigned long long)ctx->ws_limit_bytes);
  }
  uint32_t capacity = ws_capacity_for(rows);
  if (ws_need(capacity, in, outf) > ctx->ws_limit_bytes) capacity = rows;
  const uint64_t need = ws_need(capacity, in, outf);
  const size_t xb = (size_t)capacity * in * sizeof(float);
  const size_t yb = (size_t)capacity * outf * sizeof(float);
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
  ws.row_capacity = capacity;
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
