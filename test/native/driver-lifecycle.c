/* Contexts opened, used and closed in both orders, with uploads (a shape change included) and calls
 * between: every byte comes back, and one context's close never disturbs another. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* A call of `rows` seeded rows on ctx, checked against the reference with the same weights. */
static void call_and_check(omni_ctx *ctx, uint32_t out_f, uint32_t in_f, uint32_t seed, uint32_t rows) {
  float *w = malloc((size_t)out_f * in_f * sizeof *w), *b = malloc(out_f * sizeof *b);
  CHECK(w && b);
  driver_fill(w, (size_t)out_f * in_f, seed);
  driver_fill(b, out_f, seed + 1);
  driver_call_checked(ctx, rows, w, b, out_f, in_f, seed + 100 + rows);
  free(w);
  free(b);
}

static void both_orders(int a_first) {
  const uint64_t start = omni_fixture_live_bytes();
  omni_ctx *a = NULL, *b = NULL;
  const omni_open_options small = {.workspace_count = 1, .reserved = 0, .workspace_bytes = 1u << 16};
  CHECK_STATUS(NULL, omni_open(0, NULL, &a), OMNI_OK);
  CHECK_STATUS(NULL, omni_open(3, &small, &b), OMNI_OK);
  CHECK(a != NULL && b != NULL && a != b);
  CHECK(strcmp(omni_last_error(a), "no error") == 0);
  /* Exactly what the two contexts hold, no more. */
  CHECK(omni_fixture_live_bytes() - start == driver_stats(a).live_bytes + driver_stats(b).live_bytes);

  CHECK_STATUS(a, driver_upload(a, 8, 16, 1), OMNI_OK);
  CHECK_STATUS(b, driver_upload(b, 5, 3, 2), OMNI_OK);
  for (uint32_t rows = 1; rows <= 9; ++rows) {
    call_and_check(a, 8, 16, 1, rows);
    call_and_check(b, 5, 3, 2, rows); /* one workspace slot: evicts on most misses */
  }
  CHECK(driver_stats(b).workspace_evictions > 0);
  /* A new shape on a: its old-shape workspaces stay cached but never match. */
  CHECK_STATUS(a, driver_upload(a, 24, 7, 3), OMNI_OK);
  for (uint32_t rows = 1; rows <= 5; ++rows) call_and_check(a, 24, 7, 3, rows);
  CHECK(omni_fixture_live_bytes() - start == driver_stats(a).live_bytes + driver_stats(b).live_bytes);

  omni_ctx *first = a_first ? a : b, *second = a_first ? b : a;
  const uint64_t second_holds = driver_stats(second).live_bytes;
  driver_close_checked(first);
  CHECK(omni_fixture_live_bytes() - start == second_holds);
  if (second == a) call_and_check(a, 24, 7, 3, 6);
  else call_and_check(b, 5, 3, 2, 6);
  driver_close_checked(second);
  CHECK(omni_fixture_live_bytes() == start);
}

void section_lifecycle(void) {
  CHECK(omni_abi_version() == OMNI_ABI_VERSION);
  CHECK(strcmp(omni_backend_name(), "fixture") == 0);
  CHECK(driver_message_terminated(NULL));
  CHECK_STATUS(NULL, omni_close(NULL), OMNI_OK);
  both_orders(1);
  both_orders(0);
  /* Open and close with nothing between, and with only an upload between. */
  for (int upload = 0; upload < 2; ++upload) {
    omni_ctx *ctx = NULL;
    CHECK_STATUS(NULL, omni_open(0, NULL, &ctx), OMNI_OK);
    if (upload) CHECK_STATUS(ctx, driver_upload(ctx, 3, 4, 5), OMNI_OK);
    driver_close_checked(ctx);
  }
}
