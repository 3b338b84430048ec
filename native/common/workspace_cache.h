/* The bounded per-context workspace cache, shared by both backends (not part of the ABI).
 *
 * Keyed by row capacity: a call reuses the smallest cached workspace of its (in, out) features whose
 * capacity is >= its rows; a miss allocates one whose capacity is rows rounded up to a power of two
 * (at most OMNI_MAX_ROWS; exactly rows when the rounded size would not fit the byte limit). LRU
 * eviction keeps both the entry count and the byte total within the limits given at open, and
 * happens before the allocation. Varying batch sizes therefore settle on a few workspaces instead of
 * evicting (on CUDA a cudaFree, a device-wide sync) on nearly every call.
 *
 * One policy, compiled by cc (C11) and nvcc (C++17): the CPU fixture's tests exercise the very code
 * the CUDA library runs. The header has two parts, in the single-header-library style:
 *   - always: the omni_workspace type, for the backend's omni_ctx (fields ws, ws_capacity,
 *     ws_limit_bytes, ws_clock, stats, in_features, out_features);
 *   - with OMNI_WORKSPACE_CACHE_IMPLEMENTATION defined, in exactly one file per backend, after
 *     omni_ctx is complete: ws_acquire and ws_release_all, built on what that file defines first:
 *       WS_FAIL                    the backend's printf-style failure function (sets the message)
 *       static int  ws_backend_sync(omni_ctx *ctx)
 *           drain the stream before the first eviction; returns an omni status
 *       static int  ws_backend_alloc(omni_ctx *ctx, omni_workspace *ws, size_t xb, size_t yb)
 *           all four buffers or none (frees what it got); returns an omni status, message set
 *       static void ws_backend_free(omni_ctx *ctx, omni_workspace *ws, size_t xb, size_t yb)
 *           NULL buffers are skipped
 */
#ifndef OMNI_WORKSPACE_CACHE_H
#define OMNI_WORKSPACE_CACHE_H

#include <stdint.h>

typedef struct omni_workspace {
  int used;
  uint32_t row_capacity; /* rows it holds: a power of two, or exactly the rows that asked */
  uint32_t in_features, out_features;
  uint64_t bytes;
  uint64_t last_use;
  /* Device input/output, and the page-locked staging copies every DMA runs from. */
  float *d_x, *d_y, *h_x, *h_y;
} omni_workspace;

#endif

#if defined(OMNI_WORKSPACE_CACHE_IMPLEMENTATION) && !defined(OMNI_WORKSPACE_CACHE_IMPLEMENTED)
#define OMNI_WORKSPACE_CACHE_IMPLEMENTED

#include <string.h>

/* Bytes of one workspace of `capacity` rows: device x/y plus pinned staging x/y. */
static uint64_t ws_need(uint32_t capacity, uint32_t in, uint32_t outf) {
  return 2u * (uint64_t)capacity * ((uint64_t)in + outf) * sizeof(float);
}

/* The smallest power of two >= rows, capped at OMNI_MAX_ROWS (itself a power of two). */
static uint32_t ws_capacity_for(uint32_t rows) {
  uint32_t cap = 1;
  while (cap < rows && cap < OMNI_MAX_ROWS) cap <<= 1;
  return cap;
}

static size_t ws_x_bytes(const omni_workspace *ws) {
  return (size_t)ws->row_capacity * ws->in_features * sizeof(float);
}

static size_t ws_y_bytes(const omni_workspace *ws) {
  return (size_t)ws->row_capacity * ws->out_features * sizeof(float);
}

static void ws_free(omni_ctx *ctx, omni_workspace *ws) {
  ws_backend_free(ctx, ws, ws_x_bytes(ws), ws_y_bytes(ws));
  ctx->stats.workspace_bytes -= ws->bytes;
  ctx->stats.cached_workspaces -= 1;
  memset(ws, 0, sizeof *ws);
}

static omni_workspace *ws_lru(omni_ctx *ctx) {
  omni_workspace *oldest = NULL;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    omni_workspace *ws = &ctx->ws[i];
    if (ws->used && (oldest == NULL || ws->last_use < oldest->last_use)) oldest = ws;
  }
  return oldest;
}

/* The smallest fit wastes the least and leaves the big ones for big calls. */
static omni_workspace *ws_best_fit(omni_ctx *ctx, uint32_t rows) {
  omni_workspace *best = NULL;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    omni_workspace *ws = &ctx->ws[i];
    if (ws->used && ws->row_capacity >= rows && ws->in_features == ctx->in_features &&
        ws->out_features == ctx->out_features && (best == NULL || ws->row_capacity < best->row_capacity)) {
      best = ws;
    }
  }
  return best;
}

/* Evicts least recently used workspaces until `need` more bytes and one more entry fit. Evicting
 * before allocating keeps the cache within its limits even transiently. */
static int ws_make_room(omni_ctx *ctx, uint64_t need) {
  for (int synced = 0;;) {
    const int full = ctx->stats.cached_workspaces >= ctx->ws_capacity;
    const int too_big = ctx->stats.workspace_bytes + need > ctx->ws_limit_bytes;
    if (!full && !too_big) return OMNI_OK;
    /* Nothing may still be queued against a buffer when it is freed. */
    if (!synced) {
      const int rc = ws_backend_sync(ctx);
      if (rc != OMNI_OK) return rc;
      synced = 1;
    }
    ws_free(ctx, ws_lru(ctx));
    ctx->stats.workspace_evictions += 1;
  }
}

static int ws_acquire(omni_ctx *ctx, uint32_t rows, omni_workspace **out) {
  const uint32_t in = ctx->in_features, outf = ctx->out_features;
  omni_workspace *best = ws_best_fit(ctx, rows);
  if (best != NULL) {
    best->last_use = ++ctx->ws_clock;
    *out = best;
    return OMNI_OK;
  }
  /* Limits guarantee these products fit in size_t and uint64_t. */
  if (ws_need(rows, in, outf) > ctx->ws_limit_bytes) {
    return WS_FAIL(ctx, OMNI_E_WORKSPACE_LIMIT,
                   "omni_linear_gelu: %u rows x (%u in + %u out) needs %llu workspace bytes, over the limit %llu",
                   rows, in, outf, (unsigned long long)ws_need(rows, in, outf),
                   (unsigned long long)ctx->ws_limit_bytes);
  }
  uint32_t capacity = ws_capacity_for(rows);
  if (ws_need(capacity, in, outf) > ctx->ws_limit_bytes) capacity = rows;
  omni_workspace ws;
  memset(&ws, 0, sizeof ws);
  ws.used = 1;
  ws.row_capacity = capacity;
  ws.in_features = in;
  ws.out_features = outf;
  ws.bytes = ws_need(capacity, in, outf);
  int rc = ws_make_room(ctx, ws.bytes);
  if (rc == OMNI_OK) rc = ws_backend_alloc(ctx, &ws, ws_x_bytes(&ws), ws_y_bytes(&ws));
  if (rc != OMNI_OK) return rc;
  /* ws_make_room left at least one entry free. */
  omni_workspace *slot = NULL;
  for (uint32_t i = 0; i < ctx->ws_capacity && slot == NULL; ++i) {
    if (!ctx->ws[i].used) slot = &ctx->ws[i];
  }
  ws.last_use = ++ctx->ws_clock;
  *slot = ws;
  ctx->stats.cached_workspaces += 1;
  ctx->stats.workspace_bytes += ws.bytes;
  *out = slot;
  return OMNI_OK;
}

/* The caller synchronizes first (omni_close does). */
static void ws_release_all(omni_ctx *ctx) {
  if (ctx->ws == NULL) return;
  for (uint32_t i = 0; i < ctx->ws_capacity; ++i) {
    if (ctx->ws[i].used) ws_free(ctx, &ctx->ws[i]);
  }
}

#endif
