/* Invalid arguments to every entry point: the documented status, a NUL-terminated message in the
 * right slot (the context's, or the thread's without one), nothing taken, and the context's weights
 * untouched. Plus the inputs that are valid but unusual: aliased x/y, NaN and infinities. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { IN = 16, OUT = 8, ROWS = 3, SQ = 8 };

static void null_context(void) {
  float v[IN * OUT] = {0};
  omni_stats_t s;
  CHECK_STATUS(NULL, omni_upload_weights(NULL, v, IN * OUT, v, OUT, OUT, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_linear_gelu(NULL, v, IN, 1, v, OUT), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_stats(NULL, &s), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_fixture_fail_copy_after(NULL, 1), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_fixture_fail_sync_after(NULL, 1), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_fixture_inject_fatal(NULL), OMNI_E_INVALID_ARGUMENT);
  CHECK(strstr(omni_last_error(NULL), "ctx is NULL") != NULL);
}

static void bad_open(void) {
  omni_ctx *ctx = (omni_ctx *)&ctx; /* not NULL: a failed open must clear it */
  CHECK_STATUS(NULL, omni_open(0, NULL, NULL), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_open(-1, NULL, &ctx), OMNI_E_INVALID_ARGUMENT);
  CHECK(ctx == NULL);
  const omni_open_options reserved = {.workspace_count = 0, .reserved = 1, .workspace_bytes = 0};
  const omni_open_options too_many = {.workspace_count = OMNI_MAX_WORKSPACE_COUNT + 1, .reserved = 0, .workspace_bytes = 0};
  ctx = (omni_ctx *)&ctx;
  CHECK_STATUS(NULL, omni_open(0, &reserved, &ctx), OMNI_E_INVALID_ARGUMENT);
  CHECK(ctx == NULL);
  ctx = (omni_ctx *)&ctx;
  CHECK_STATUS(NULL, omni_open(0, &too_many, &ctx), OMNI_E_INVALID_ARGUMENT);
  CHECK(ctx == NULL);
}

static void bad_upload(omni_ctx *ctx, const float *w, const float *b) {
  const size_t wn = (size_t)IN * OUT;
  CHECK_STATUS(ctx, omni_upload_weights(ctx, NULL, wn, b, OUT, OUT, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, wn, NULL, OUT, OUT, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, 0, b, 0, 0, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, 0, b, OUT, OUT, 0), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, wn, b, OMNI_MAX_FEATURES + 1, OMNI_MAX_FEATURES + 1, 1),
               OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, wn, b, 1, 1, UINT32_MAX), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, wn - 1, b, OUT, OUT, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, SIZE_MAX, b, OUT, OUT, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, wn, b, OUT + 1, OUT, IN), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, wn, b, SIZE_MAX, OUT, IN), OMNI_E_INVALID_ARGUMENT);
}

static void bad_call(omni_ctx *ctx, const float *x, float *y) {
  const size_t xn = (size_t)ROWS * IN, yn = (size_t)ROWS * OUT;
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, NULL, xn, ROWS, y, yn), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, xn, ROWS, NULL, yn), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 0, 0, y, 0), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, (size_t)(OMNI_MAX_ROWS + 1) * IN, OMNI_MAX_ROWS + 1, y, yn),
               OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, xn, UINT32_MAX, y, yn), OMNI_E_INVALID_ARGUMENT);
  /* The most rows allowed, with lengths that do not match them: refused before any workspace. */
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, xn, OMNI_MAX_ROWS, y, yn), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, xn - 1, ROWS, y, yn), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, xn, ROWS, y, yn + 1), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, SIZE_MAX, ROWS, y, yn), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, xn, ROWS, y, SIZE_MAX), OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(ctx, omni_stats(ctx, NULL), OMNI_E_INVALID_ARGUMENT);
}

static void bad_reference(const float *x, const float *w, const float *b, float *y) {
  const size_t xn = (size_t)ROWS * IN, wn = (size_t)IN * OUT, yn = (size_t)ROWS * OUT;
#define REF(x_, xn_, rows_, w_, wn_, b_, bn_, out_, in_, y_, yn_)                                               \
  CHECK_STATUS(NULL, omni_fixture_reference_linear_gelu(x_, xn_, rows_, w_, wn_, b_, bn_, out_, in_, y_, yn_), \
               OMNI_E_INVALID_ARGUMENT)
  REF(NULL, xn, ROWS, w, wn, b, OUT, OUT, IN, y, yn);
  REF(x, xn, ROWS, NULL, wn, b, OUT, OUT, IN, y, yn);
  REF(x, xn, ROWS, w, wn, NULL, OUT, OUT, IN, y, yn);
  REF(x, xn, ROWS, w, wn, b, OUT, OUT, IN, NULL, yn);
  REF(x, 0, 0, w, wn, b, OUT, OUT, IN, y, 0);
  REF(x, xn, OMNI_MAX_ROWS + 1, w, wn, b, OUT, OUT, IN, y, yn);
  REF(x, xn, ROWS, w, wn, b, 0, 0, IN, y, yn);
  REF(x, xn, ROWS, w, wn, b, OUT, OUT, OMNI_MAX_FEATURES + 1, y, yn);
  REF(x, SIZE_MAX, ROWS, w, wn, b, OUT, OUT, IN, y, yn);
  REF(x, xn, ROWS, w, SIZE_MAX, b, OUT, OUT, IN, y, yn);
  REF(x, xn, ROWS, w, wn, b, OUT - 1, OUT, IN, y, yn);
  REF(x, xn, ROWS, w, wn, b, OUT, OUT, IN, y, yn - 1);
#undef REF
}

/* The reference writes y while reading its inputs, so it refuses any shared byte; the context
 * stages x before it writes y, so it takes x and y aliased, fully or partly, and computes the same. */
static void aliasing(omni_ctx *ctx) {
  const size_t n = (size_t)ROWS * SQ;
  float w[SQ * SQ], b[SQ], x[ROWS * SQ], want[ROWS * SQ], shared[ROWS * SQ + 4];
  driver_fill(w, SQ * SQ, 41);
  driver_fill(b, SQ, 42);
  driver_fill(x, n, 43);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, SQ * SQ, b, SQ, SQ, SQ), OMNI_OK);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, n, ROWS, want, n), OMNI_OK);
  for (size_t xat = 0; xat <= 4; xat += 4) {
    for (size_t yat = 0; yat <= 4; ++yat) {
      memcpy(shared + xat, x, sizeof x);
      CHECK_STATUS(ctx, omni_linear_gelu(ctx, shared + xat, n, ROWS, shared + yat, n), OMNI_OK);
      CHECK(memcmp(shared + yat, want, sizeof want) == 0);
    }
  }
  memcpy(shared, x, sizeof x);
  /* y over x's first float, its last, and w and b. */
  CHECK_STATUS(NULL, omni_fixture_reference_linear_gelu(shared, n, ROWS, w, SQ * SQ, b, SQ, SQ, SQ, shared, n),
               OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_fixture_reference_linear_gelu(x, n, ROWS, w, SQ * SQ, b, SQ, SQ, SQ, x + n - 1, n),
               OMNI_E_INVALID_ARGUMENT);
  float wy[SQ * SQ + ROWS * SQ], by[SQ + ROWS * SQ];
  memcpy(wy, w, sizeof w);
  memcpy(by, b, sizeof b);
  CHECK_STATUS(NULL, omni_fixture_reference_linear_gelu(x, n, ROWS, wy, SQ * SQ, b, SQ, SQ, SQ, wy + 5, n),
               OMNI_E_INVALID_ARGUMENT);
  CHECK_STATUS(NULL, omni_fixture_reference_linear_gelu(x, n, ROWS, w, SQ * SQ, by, SQ, SQ, SQ, by + SQ - 1, n),
               OMNI_E_INVALID_ARGUMENT);
  /* Right after b: no shared byte. */
  CHECK_STATUS(NULL, omni_fixture_reference_linear_gelu(x, n, ROWS, w, SQ * SQ, by, SQ, SQ, SQ, by + SQ, n), OMNI_OK);
}

/* NaN and infinities are values, not errors: they flow through to exactly the outputs they reach. */
static void non_finite(omni_ctx *ctx) {
  float w[OUT * IN], b[OUT], x[ROWS * IN], y[ROWS * OUT];
  driver_fill(w, OUT * IN, 51);
  driver_fill(b, OUT, 52);
  driver_fill(x, ROWS * IN, 53);
  x[1 * IN + 2] = NAN;
  x[2 * IN + 0] = INFINITY;
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, OUT * IN, b, OUT, OUT, IN), OMNI_OK);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, ROWS * IN, ROWS, y, ROWS * OUT), OMNI_OK);
  for (uint32_t o = 0; o < OUT; ++o) {
    CHECK(isfinite(y[o]));
    CHECK(isnan(y[OUT + o]));
    /* +inf times the weight: GELU(+inf) = +inf; GELU(-inf) = -0, its limit (not -inf * 0 = NaN). */
    const float wv = w[o * IN + 0], v = y[2 * OUT + o];
    if (wv > 0.0f) CHECK(isinf(v) && v > 0.0f);
    else if (wv < 0.0f) CHECK(v == 0.0f && signbit(v));
    else CHECK(isnan(v));
  }
  driver_check_against_reference(x, 1, w, b, OUT, IN, y);
  /* A NaN weight poisons its output column; an infinite bias makes its column +inf. */
  w[3 * IN + 7] = NAN;
  b[5] = INFINITY;
  driver_fill(x, ROWS * IN, 54);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, OUT * IN, b, OUT, OUT, IN), OMNI_OK);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, ROWS * IN, ROWS, y, ROWS * OUT), OMNI_OK);
  for (uint32_t r = 0; r < ROWS; ++r) {
    for (uint32_t o = 0; o < OUT; ++o) {
      const float v = y[r * OUT + o];
      if (o == 3) CHECK(isnan(v));
      else if (o == 5) CHECK(isinf(v) && v > 0);
      else CHECK(isfinite(v));
    }
  }
}

void section_arguments(void) {
  const uint64_t start = omni_fixture_live_bytes();
  null_context();
  bad_open();
  CHECK(omni_fixture_live_bytes() == start);

  omni_ctx *ctx = NULL;
  CHECK_STATUS(NULL, omni_open(0, NULL, &ctx), OMNI_OK);
  float w[OUT * IN], b[OUT], x[ROWS * IN], y[ROWS * OUT], want[ROWS * OUT];
  driver_fill(w, OUT * IN, 1);
  driver_fill(b, OUT, 2);
  driver_fill(x, ROWS * IN, 3);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, ROWS * IN, ROWS, y, ROWS * OUT), OMNI_E_NOT_INITIALISED);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, OUT * IN, b, OUT, OUT, IN), OMNI_OK);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, ROWS * IN, ROWS, want, ROWS * OUT), OMNI_OK);
  const omni_stats_t base = driver_stats(ctx);
  bad_upload(ctx, w, b);
  bad_call(ctx, x, y);
  bad_reference(x, w, b, y);
  const omni_stats_t after = driver_stats(ctx);
  CHECK(after.live_bytes == base.live_bytes && after.allocations == base.allocations);
  CHECK(after.calls == base.calls);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, ROWS * IN, ROWS, y, ROWS * OUT), OMNI_OK);
  CHECK(memcmp(y, want, sizeof y) == 0);
  aliasing(ctx);
  non_finite(ctx);
  driver_close_checked(ctx);
}
