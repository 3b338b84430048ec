/* Contexts from four threads at once: the process-wide live-byte counter (atomic) must come back to
 * its start, and the thread-local pieces (fault countdown, message slot) must stay with their
 * thread. Run under TSan too, where any unsynchronized sharing is a report. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { THREADS = 4, ITERATIONS = 12 };

static pthread_barrier_t barrier;

typedef struct worker {
  uint32_t index;
  omni_ctx *handed; /* opened by the main thread, used here, closed there after the join */
} worker;

/* Open, upload, a sweep of calls (some with a workspace allocation failing), close. */
static void one_context(uint32_t index, uint32_t iteration, omni_ctx *ctx) {
  const uint32_t out_f = 5 + index, in_f = 7 + 2 * index, seed = 100 * index + iteration;
  float *w = malloc((size_t)out_f * in_f * sizeof *w), *b = malloc(out_f * sizeof *b);
  float *x = malloc((size_t)12 * in_f * sizeof *x), *y = malloc((size_t)12 * out_f * sizeof *y);
  CHECK(w && b && x && y);
  driver_fill(w, (size_t)out_f * in_f, seed);
  driver_fill(b, out_f, seed + 1);
  CHECK_STATUS(ctx, omni_upload_weights(ctx, w, (size_t)out_f * in_f, b, out_f, out_f, in_f), OMNI_OK);
  for (uint32_t rows = 1; rows <= 12; rows += 1 + (iteration + index) % 3) {
    driver_fill(x, (size_t)rows * in_f, seed + rows);
    const omni_stats_t before = driver_stats(ctx);
    if ((rows + iteration) % 4 == 0) {
      /* Armed in this thread only: the other three keep allocating meanwhile. */
      omni_fixture_fail_alloc_after(1 + iteration % 4);
      const int rc = omni_linear_gelu(ctx, x, (size_t)rows * in_f, rows, y, (size_t)rows * out_f);
      omni_fixture_fail_alloc_after(0);
      if (rc != OMNI_OK) {
        /* Only a miss allocates; a failed one leaves no new bytes. */
        CHECK_STATUS(ctx, rc, OMNI_E_OUT_OF_MEMORY);
        CHECK(driver_stats(ctx).live_bytes <= before.live_bytes);
        continue;
      }
    } else {
      CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, (size_t)rows * in_f, rows, y, (size_t)rows * out_f), OMNI_OK);
    }
    driver_check_against_reference(x, rows, w, b, out_f, in_f, y);
  }
  free(w);
  free(b);
  free(x);
  free(y);
}

static void *run_worker(void *arg) {
  const worker *self = arg;
  const uint32_t i = self->index;
  char expected[64];

  /* Message slots: each thread fails in its own way, all before any reads back. */
  omni_ctx *ctx = NULL;
  CHECK_STATUS(NULL, omni_open(-(int)(i + 1), NULL, &ctx), OMNI_E_INVALID_ARGUMENT);
  pthread_barrier_wait(&barrier);
  snprintf(expected, sizeof expected, "device -%u is negative", i + 1);
  CHECK(strstr(omni_last_error(NULL), expected) != NULL);
  pthread_barrier_wait(&barrier);

  /* Fault countdowns: thread i fails open's (i + 1)th allocation, all at once; the fourth thread's
   * countdown outlives open's three allocations. */
  static const char *const steps[] = {"context", "stream", "workspace table"};
  omni_fixture_fail_alloc_after(i + 1);
  pthread_barrier_wait(&barrier);
  const int rc = omni_open(0, NULL, &ctx);
  omni_fixture_fail_alloc_after(0);
  if (i < 3) {
    CHECK_STATUS(NULL, rc, OMNI_E_OUT_OF_MEMORY);
    CHECK(ctx == NULL && strstr(omni_last_error(NULL), steps[i]) != NULL);
  } else {
    CHECK_STATUS(NULL, rc, OMNI_OK);
    CHECK_STATUS(NULL, omni_close(ctx), OMNI_OK);
  }
  pthread_barrier_wait(&barrier);

  one_context(i, 0, self->handed);
  for (uint32_t it = 1; it <= ITERATIONS; ++it) {
    const omni_open_options options = {.workspace_count = 1 + (i + it) % 3, .reserved = 0, .workspace_bytes = 0};
    CHECK_STATUS(NULL, omni_open((int)i, &options, &ctx), OMNI_OK);
    one_context(i, it, ctx);
    CHECK_STATUS(NULL, omni_close(ctx), OMNI_OK);
  }
  return NULL;
}

void section_threads(void) {
  const uint64_t start = omni_fixture_live_bytes();
  pthread_t threads[THREADS];
  worker workers[THREADS];
  CHECK(pthread_barrier_init(&barrier, NULL, THREADS) == 0);
  for (uint32_t i = 0; i < THREADS; ++i) {
    workers[i].index = i;
    CHECK_STATUS(NULL, omni_open(0, NULL, &workers[i].handed), OMNI_OK);
  }
  for (uint32_t i = 0; i < THREADS; ++i) CHECK(pthread_create(&threads[i], NULL, run_worker, &workers[i]) == 0);
  for (uint32_t i = 0; i < THREADS; ++i) CHECK(pthread_join(threads[i], NULL) == 0);
  CHECK(pthread_barrier_destroy(&barrier) == 0);
  for (uint32_t i = 0; i < THREADS; ++i) {
    CHECK(driver_stats(workers[i].handed).calls > 0);
    CHECK_STATUS(NULL, omni_close(workers[i].handed), OMNI_OK);
  }
  CHECK(omni_fixture_live_bytes() == start);
}
