/* Every injected allocation failure position of omni_open, omni_upload_weights and omni_linear_gelu
 * (the thread-local countdown, omni_fixture_fail_alloc_after), every copy failure and every stream
 * sync failure (OMNI_E_DEVICE, not sticky): each leaves the documented status, a message, the bytes
 * it started with, and a context that keeps serving. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { IN = 16, OUT = 8 };

static void fill_x(float *x, uint32_t rows) { driver_fill(x, (size_t)rows * IN, 500 + rows); }

void section_open_faults(void) {
  const omni_open_options one = {.workspace_count = 1, .reserved = 0, .workspace_bytes = 0};
  const omni_open_options most = {.workspace_count = OMNI_MAX_WORKSPACE_COUNT, .reserved = 0, .workspace_bytes = 0};
  const omni_open_options *variants[] = {NULL, &one, &most};
  for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
    const uint64_t start = omni_fixture_live_bytes();
    int failures = 0;
    for (uint32_t n = 1;; ++n) {
      omni_ctx *ctx = (omni_ctx *)&failures; /* not NULL: a failed open must clear it */
      omni_fixture_fail_alloc_after(n);
      const int rc = omni_open(0, variants[v], &ctx);
      if (rc == OMNI_OK) {
        omni_fixture_fail_alloc_after(0);
        /* The countdown outlived open's three allocations without firing. */
        CHECK(n == 4 && driver_stats(ctx).allocations == 3);
        driver_close_checked(ctx);
        break;
      }
      CHECK_STATUS(NULL, rc, OMNI_E_OUT_OF_MEMORY);
      CHECK(ctx == NULL);
      CHECK(omni_fixture_live_bytes() == start);
      ++failures;
    }
    /* Context, stream, workspace table: the second and third fail part-way. */
    CHECK(failures == 3);
    CHECK(omni_fixture_live_bytes() == start);
  }
}

/* Fails the nth allocation of an upload until one succeeds; returns how many failed. */
static int failing_uploads(omni_ctx *ctx, uint32_t out_f, uint32_t in_f, uint32_t seed) {
  const omni_stats_t base = driver_stats(ctx);
  uint64_t allocations = base.allocations;
  int failures = 0;
  for (uint32_t n = 1;; ++n) {
    omni_fixture_fail_alloc_after(n);
    const int rc = driver_upload(ctx, out_f, in_f, seed);
    omni_fixture_fail_alloc_after(0);
    if (rc == OMNI_OK) return failures;
    CHECK_STATUS(ctx, rc, OMNI_E_OUT_OF_MEMORY);
    const omni_stats_t now = driver_stats(ctx);
    CHECK(now.live_bytes == base.live_bytes);
    /* n - 1 buffers were really taken (and given back) before the nth failed. */
    CHECK(now.allocations == allocations + n - 1);
    allocations = now.allocations;
    ++failures;
  }
}

void section_upload_faults(void) {
  omni_ctx *ctx = NULL;
  CHECK_STATUS(NULL, omni_open(0, NULL, &ctx), OMNI_OK);
  float x[2 * IN], y[2 * OUT], before[2 * OUT];
  fill_x(x, 2);
  /* No weights yet: a failed first upload leaves none. */
  omni_fixture_fail_alloc_after(1);
  CHECK_STATUS(ctx, driver_upload(ctx, OUT, IN, 1), OMNI_E_OUT_OF_MEMORY);
  omni_fixture_fail_alloc_after(2);
  CHECK_STATUS(ctx, driver_upload(ctx, OUT, IN, 1), OMNI_E_OUT_OF_MEMORY);
  omni_fixture_fail_alloc_after(0);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 2 * IN, 2, y, 2 * OUT), OMNI_E_NOT_INITIALISED);
  /* Packed weights, then bias: two positions, then success. */
  CHECK(failing_uploads(ctx, OUT, IN, 1) == 2);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 2 * IN, 2, before, 2 * OUT), OMNI_OK);
  /* A failed replacement, of the same shape or another, keeps the old weights and shape. */
  const omni_stats_t base = driver_stats(ctx);
  for (uint32_t n = 1; n <= 2; ++n) {
    for (int other_shape = 0; other_shape < 2; ++other_shape) {
      omni_fixture_fail_alloc_after(n);
      CHECK_STATUS(ctx, driver_upload(ctx, other_shape ? 3 : OUT, other_shape ? 5 : IN, 9), OMNI_E_OUT_OF_MEMORY);
      omni_fixture_fail_alloc_after(0);
      CHECK(driver_stats(ctx).live_bytes == base.live_bytes);
      CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 2 * IN, 2, y, 2 * OUT), OMNI_OK);
      CHECK(memcmp(y, before, sizeof y) == 0);
    }
  }
  /* A failed bias copy: the same, and the stream was synchronized before it was reported. */
  CHECK_STATUS(ctx, omni_fixture_fail_copy_after(ctx, 1), OMNI_OK);
  const uint64_t syncs = driver_stats(ctx).stream_syncs;
  CHECK_STATUS(ctx, driver_upload(ctx, OUT, IN, 9), OMNI_E_COPY_FAILED);
  CHECK(driver_stats(ctx).stream_syncs > syncs);
  CHECK(driver_stats(ctx).live_bytes == base.live_bytes);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 2 * IN, 2, y, 2 * OUT), OMNI_OK);
  CHECK(memcmp(y, before, sizeof y) == 0);
  /* A failed sync after the copies, of the same shape or another: the new buffers go back, the
   * old weights and shape stay. */
  for (int other_shape = 0; other_shape < 2; ++other_shape) {
    CHECK_STATUS(ctx, omni_fixture_fail_sync_after(ctx, 1), OMNI_OK);
    const uint64_t synced = driver_stats(ctx).stream_syncs;
    CHECK_STATUS(ctx, driver_upload(ctx, other_shape ? 3 : OUT, other_shape ? 5 : IN, 9), OMNI_E_DEVICE);
    CHECK(driver_stats(ctx).stream_syncs == synced + 1);
    CHECK(driver_stats(ctx).live_bytes == base.live_bytes);
    CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 2 * IN, 2, y, 2 * OUT), OMNI_OK);
    CHECK(memcmp(y, before, sizeof y) == 0);
  }
  /* A successful replacement frees the old weights: the bytes held stay the same. */
  CHECK(failing_uploads(ctx, OUT, IN, 9) == 2);
  CHECK(driver_stats(ctx).live_bytes == base.live_bytes);
  driver_close_checked(ctx);
}

/* Every position of a workspace allocation failing, with `rows` a miss on ctx. */
static void failing_workspace(omni_ctx *ctx, uint32_t rows, uint64_t ws_bytes_after_eviction) {
  float *x = malloc((size_t)rows * IN * sizeof *x), *y = malloc((size_t)rows * OUT * sizeof *y);
  CHECK(x && y);
  fill_x(x, rows);
  for (uint32_t n = 1; n <= 4; ++n) {
    const omni_stats_t base = driver_stats(ctx);
    omni_fixture_fail_alloc_after(n);
    CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, (size_t)rows * IN, rows, y, (size_t)rows * OUT), OMNI_E_OUT_OF_MEMORY);
    omni_fixture_fail_alloc_after(0);
    const omni_stats_t now = driver_stats(ctx);
    /* The n - 1 buffers taken were given back; eviction (if any) happened before them. */
    CHECK(now.allocations == base.allocations + n - 1);
    CHECK(now.workspace_bytes == ws_bytes_after_eviction);
    CHECK(now.live_bytes == base.live_bytes - (base.workspace_bytes - now.workspace_bytes));
    CHECK(now.calls == base.calls);
  }
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, (size_t)rows * IN, rows, y, (size_t)rows * OUT), OMNI_OK);
  free(x);
  free(y);
}

void section_call_faults(void) {
  /* A cold cache: nothing to evict. */
  omni_ctx *ctx = NULL;
  CHECK_STATUS(NULL, omni_open(0, NULL, &ctx), OMNI_OK);
  CHECK_STATUS(ctx, driver_upload(ctx, OUT, IN, 1), OMNI_OK);
  failing_workspace(ctx, 5, 0);
  CHECK(driver_stats(ctx).cached_workspaces == 1);
  /* A full one-entry cache: the miss evicts first, so a failure leaves it empty. */
  omni_ctx *one = NULL;
  const omni_open_options single = {.workspace_count = 1, .reserved = 0, .workspace_bytes = 0};
  CHECK_STATUS(NULL, omni_open(0, &single, &one), OMNI_OK);
  CHECK_STATUS(one, driver_upload(one, OUT, IN, 1), OMNI_OK);
  float x1[IN], y1[OUT];
  fill_x(x1, 1);
  CHECK_STATUS(one, omni_linear_gelu(one, x1, IN, 1, y1, OUT), OMNI_OK);
  failing_workspace(one, 5, 0);
  CHECK(driver_stats(one).workspace_evictions == 1);
  /* A failed sync before the next eviction (9 rows miss the cached 8): nothing is freed,
   * allocated or written. */
  {
    float x2[9 * IN], y2[9 * OUT];
    fill_x(x2, 9);
    for (size_t i = 0; i < 9 * OUT; ++i) y2[i] = 7.0f;
    const omni_stats_t base = driver_stats(one);
    CHECK_STATUS(one, omni_fixture_fail_sync_after(one, 1), OMNI_OK);
    CHECK_STATUS(one, omni_linear_gelu(one, x2, 9 * IN, 9, y2, 9 * OUT), OMNI_E_DEVICE);
    const omni_stats_t now = driver_stats(one);
    CHECK(now.stream_syncs == base.stream_syncs + 1);
    CHECK(now.live_bytes == base.live_bytes && now.allocations == base.allocations);
    CHECK(now.cached_workspaces == base.cached_workspaces && now.workspace_bytes == base.workspace_bytes);
    CHECK(now.workspace_evictions == base.workspace_evictions && now.calls == base.calls);
    CHECK(y2[0] == 7.0f && y2[9 * OUT - 1] == 7.0f);
    CHECK_STATUS(one, omni_linear_gelu(one, x2, 9 * IN, 9, y2, 9 * OUT), OMNI_OK);
    CHECK(driver_stats(one).workspace_evictions == base.workspace_evictions + 1);
  }
  driver_close_checked(one);

  /* Copy failures: the input copy, then the output copy; each synchronizes, frees nothing, and the
   * workspace stays cached for the next call. */
  float x[3 * IN], y[3 * OUT], want[3 * OUT];
  fill_x(x, 3);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, want, 3 * OUT), OMNI_OK);
  for (uint32_t n = 1; n <= 2; ++n) {
    const omni_stats_t base = driver_stats(ctx);
    CHECK_STATUS(ctx, omni_fixture_fail_copy_after(ctx, n), OMNI_OK);
    CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, y, 3 * OUT), OMNI_E_COPY_FAILED);
    const omni_stats_t now = driver_stats(ctx);
    CHECK(now.stream_syncs > base.stream_syncs);
    CHECK(now.live_bytes == base.live_bytes && now.allocations == base.allocations);
    CHECK(now.calls == base.calls);
    CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, y, 3 * OUT), OMNI_OK);
    CHECK(memcmp(y, want, sizeof y) == 0);
  }
  /* A failed sync after the output copy: nothing written, freed or counted. And a failed copy
   * whose drain sync fails too still reports the copy (the sync countdown is spent on it). */
  for (int with_copy = 0; with_copy < 2; ++with_copy) {
    for (size_t i = 0; i < 3 * OUT; ++i) y[i] = 7.0f;
    const omni_stats_t base = driver_stats(ctx);
    if (with_copy) CHECK_STATUS(ctx, omni_fixture_fail_copy_after(ctx, 2), OMNI_OK);
    CHECK_STATUS(ctx, omni_fixture_fail_sync_after(ctx, 1), OMNI_OK);
    CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, y, 3 * OUT), with_copy ? OMNI_E_COPY_FAILED : OMNI_E_DEVICE);
    const omni_stats_t now = driver_stats(ctx);
    CHECK(now.stream_syncs == base.stream_syncs + 1);
    CHECK(now.live_bytes == base.live_bytes && now.allocations == base.allocations);
    CHECK(now.calls == base.calls);
    for (size_t i = 0; i < 3 * OUT; ++i) CHECK(y[i] == 7.0f);
    CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, y, 3 * OUT), OMNI_OK);
    CHECK(memcmp(y, want, sizeof y) == 0);
  }
  /* A countdown armed past the call's two copies fires in the next call. */
  CHECK_STATUS(ctx, omni_fixture_fail_copy_after(ctx, 3), OMNI_OK);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, y, 3 * OUT), OMNI_OK);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 3 * IN, 3, y, 3 * OUT), OMNI_E_COPY_FAILED);
  driver_close_checked(ctx);

  /* Workspace limits: exact capacity when the power of two would not fit, and the limit itself.
   * A workspace of c rows holds 2 * c * (16 + 8) * 4 = 192 c bytes. */
  omni_ctx *tight = NULL;
  const omni_open_options limit = {.workspace_count = 2, .reserved = 0, .workspace_bytes = 192 * 5};
  CHECK_STATUS(NULL, omni_open(0, &limit, &tight), OMNI_OK);
  CHECK_STATUS(tight, driver_upload(tight, OUT, IN, 1), OMNI_OK);
  fill_x(x, 3);
  CHECK_STATUS(tight, omni_linear_gelu(tight, x, 3 * IN, 3, y, 3 * OUT), OMNI_OK);
  CHECK(driver_stats(tight).workspace_bytes == 192 * 4);
  float x5[5 * IN], y5[5 * OUT], x6[6 * IN], y6[6 * OUT];
  fill_x(x5, 5);
  fill_x(x6, 6);
  CHECK_STATUS(tight, omni_linear_gelu(tight, x5, 5 * IN, 5, y5, 5 * OUT), OMNI_OK);
  CHECK(driver_stats(tight).workspace_bytes == 192 * 5);
  const omni_stats_t before = driver_stats(tight);
  CHECK_STATUS(tight, omni_linear_gelu(tight, x6, 6 * IN, 6, y6, 6 * OUT), OMNI_E_WORKSPACE_LIMIT);
  const omni_stats_t after = driver_stats(tight);
  CHECK(after.live_bytes == before.live_bytes && after.cached_workspaces == before.cached_workspaces);
  driver_close_checked(tight);
}
