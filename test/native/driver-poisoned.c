/* A context in the sticky fatal state: every call but close answers OMNI_E_FATAL with the message
 * that made it fatal, and close still releases every byte (weights, workspaces, stream). */
#include <string.h>

#include "driver.h"

static void poison_and_close(int with_weights, int with_workspace, int with_armed_faults) {
  const uint64_t start = omni_fixture_live_bytes();
  omni_ctx *ctx = NULL;
  CHECK_STATUS(NULL, omni_open(0, NULL, &ctx), OMNI_OK);
  float x[2 * 4], y[2 * 3];
  driver_fill(x, 8, 7);
  if (with_weights) CHECK_STATUS(ctx, driver_upload(ctx, 3, 4, 1), OMNI_OK);
  if (with_workspace) CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 8, 2, y, 6), OMNI_OK);
  if (with_armed_faults) CHECK_STATUS(ctx, omni_fixture_fail_copy_after(ctx, 1), OMNI_OK);
  /* Armed on close's own sync too: close ignores it and still releases. */
  if (with_armed_faults) CHECK_STATUS(ctx, omni_fixture_fail_sync_after(ctx, 1), OMNI_OK);

  CHECK_STATUS(ctx, omni_fixture_inject_fatal(ctx), OMNI_OK);
  char message[FX_MESSAGE_LEN];
  CHECK(driver_message_terminated(ctx));
  strcpy(message, omni_last_error(ctx));
  CHECK(strstr(message, "fatal") != NULL);

  omni_stats_t untouched;
  memset(&untouched, 0xa5, sizeof untouched);
  const omni_stats_t pattern = untouched;
  if (with_armed_faults) omni_fixture_fail_alloc_after(1);
  CHECK_STATUS(ctx, omni_stats(ctx, &untouched), OMNI_E_FATAL);
  CHECK(memcmp(&untouched, &pattern, sizeof pattern) == 0);
  CHECK_STATUS(ctx, omni_stats(ctx, NULL), OMNI_E_FATAL);
  CHECK_STATUS(ctx, driver_upload(ctx, 3, 4, 2), OMNI_E_FATAL);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, 8, 2, y, 6), OMNI_E_FATAL);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, NULL, 0, 0, NULL, 0), OMNI_E_FATAL);
  CHECK_STATUS(ctx, omni_fixture_fail_copy_after(ctx, 2), OMNI_E_FATAL);
  CHECK_STATUS(ctx, omni_fixture_fail_sync_after(ctx, 2), OMNI_E_FATAL);
  CHECK_STATUS(ctx, omni_fixture_inject_fatal(ctx), OMNI_E_FATAL);
  /* Sticky: still the message that made it fatal. */
  CHECK(strcmp(omni_last_error(ctx), message) == 0);
  /* Close allocates nothing, so an armed allocation fault cannot stop it releasing; its failed
   * sync (armed above) is ignored as on CUDA, without a word in the thread's message slot. */
  char thread_message[FX_MESSAGE_LEN];
  strcpy(thread_message, omni_last_error(NULL));
  driver_close_checked(ctx);
  CHECK(strcmp(omni_last_error(NULL), thread_message) == 0);
  omni_fixture_fail_alloc_after(0);
  CHECK(omni_fixture_live_bytes() == start);
}

void section_poisoned(void) {
  for (int mask = 0; mask < 8; ++mask) {
    if ((mask & 2) && !(mask & 1)) continue; /* a call needs weights */
    poison_and_close(mask & 1, mask & 2, mask & 4);
  }
}
