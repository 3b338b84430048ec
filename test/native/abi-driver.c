/* The sanitizer driver's main and helpers: runs every section (or those named on the command line)
 * and prints one line per section and a total, which test/native-sanitizers.test.ts parses. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

atomic_ulong driver_checks;

_Noreturn void driver_fail(const char *file, int line, const char *what, const char *detail) {
  fprintf(stderr, "%s:%d: check failed: %s%s%s\n", file, line, what, detail ? ": " : "", detail ? detail : "");
  fflush(stderr);
  _Exit(1);
}

int driver_message_terminated(omni_ctx *ctx) {
  const char *message = omni_last_error(ctx);
  return message != NULL && memchr(message, '\0', FX_MESSAGE_LEN) != NULL;
}

void driver_check_status(const char *file, int line, const char *what, omni_ctx *ctx, int got, int want) {
  if (got != want) {
    char detail[FX_MESSAGE_LEN + 64];
    snprintf(detail, sizeof detail, "status %d, want %d (last error: %.*s)", got, want, FX_MESSAGE_LEN,
             omni_last_error(ctx));
    driver_fail(file, line, what, detail);
  }
  CHECK(driver_message_terminated(ctx));
  if (want != OMNI_OK) CHECK(omni_last_error(ctx)[0] != '\0');
  atomic_fetch_add(&driver_checks, 1);
}

void driver_fill(float *v, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
  }
}

void driver_check_against_reference(const float *x, uint32_t rows, const float *w, const float *b, uint32_t out_f,
                                    uint32_t in_f, const float *y) {
  float *want = malloc((size_t)rows * out_f * sizeof *want);
  CHECK(want != NULL);
  CHECK_STATUS(NULL,
               omni_fixture_reference_linear_gelu(x, (size_t)rows * in_f, rows, w, (size_t)out_f * in_f, b, out_f,
                                                  out_f, in_f, want, (size_t)rows * out_f),
               OMNI_OK);
  for (uint32_t r = 0; r < rows; ++r) {
    for (uint32_t o = 0; o < out_f; ++o) {
      /* Both sum in k order; they differ only in FMA contraction and where the bias enters, each
       * a rounding per term at most. GELU's slope stays below 1.13. */
      double magnitude = fabs(b[o]);
      for (uint32_t k = 0; k < in_f; ++k) magnitude += fabs((double)x[(size_t)r * in_f + k] * w[(size_t)o * in_f + k]);
      const double tolerance = 2.0 * (in_f + 2) * FLT_EPSILON * magnitude + 1e-6;
      const size_t i = (size_t)r * out_f + o;
      if (!(fabs((double)y[i] - want[i]) <= tolerance)) {
        char detail[128];
        snprintf(detail, sizeof detail, "%u x %u -> %u at [%u][%u]: %.9g vs reference %.9g", rows, in_f, out_f, r, o,
                 y[i], want[i]);
        driver_fail(__FILE__, __LINE__, "blocked kernel matches the reference", detail);
      }
    }
  }
  atomic_fetch_add(&driver_checks, 1);
  free(want);
}

void driver_call_checked(omni_ctx *ctx, uint32_t rows, const float *w, const float *b, uint32_t out_f, uint32_t in_f,
                         uint32_t x_seed) {
  float *x = malloc((size_t)rows * in_f * sizeof *x), *y = malloc((size_t)rows * out_f * sizeof *y);
  CHECK(x && y);
  driver_fill(x, (size_t)rows * in_f, x_seed);
  CHECK_STATUS(ctx, omni_linear_gelu(ctx, x, (size_t)rows * in_f, rows, y, (size_t)rows * out_f), OMNI_OK);
  driver_check_against_reference(x, rows, w, b, out_f, in_f, y);
  free(x);
  free(y);
}

int driver_upload(omni_ctx *ctx, uint32_t out_f, uint32_t in_f, uint32_t seed) {
  float *w = malloc((size_t)out_f * in_f * sizeof *w), *b = malloc(out_f * sizeof *b);
  CHECK(w != NULL && b != NULL);
  driver_fill(w, (size_t)out_f * in_f, seed);
  driver_fill(b, out_f, seed + 1);
  const int rc = omni_upload_weights(ctx, w, (size_t)out_f * in_f, b, out_f, out_f, in_f);
  free(w);
  free(b);
  return rc;
}

omni_stats_t driver_stats(omni_ctx *ctx) {
  omni_stats_t s;
  memset(&s, 0, sizeof s);
  CHECK_STATUS(ctx, omni_stats(ctx, &s), OMNI_OK);
  return s;
}

void driver_close_checked(omni_ctx *ctx) {
  const uint64_t before = omni_fixture_live_bytes();
  const fx_sync_record synced = fx_thread_syncs;
  CHECK_STATUS(NULL, omni_close(ctx), OMNI_OK);
  CHECK(fx_thread_syncs.syncs == synced.syncs + 1);
  /* All of it was still held at the sync: a free before it would show as fewer bytes. */
  CHECK(fx_thread_syncs.live_bytes == before - omni_fixture_live_bytes());
}

static const struct {
  const char *name;
  void (*run)(void);
  int canary; /* runs only when named */
} sections[] = {
    {"lifecycle", section_lifecycle, 0},
    {"open-faults", section_open_faults, 0},
    {"upload-faults", section_upload_faults, 0},
    {"call-faults", section_call_faults, 0},
    {"arguments", section_arguments, 0},
    {"poisoned", section_poisoned, 0},
    {"numerics", section_numerics, 0},
    {"threads", section_threads, 0},
    {"canary-leak", canary_leak, 1},
    {"canary-overflow", canary_overflow, 1},
    {"canary-undefined", canary_undefined, 1},
    {"canary-race", canary_race, 1},
    {"canary-pad", canary_pad, 1},
};

/* No arguments: every section but the canaries. */
static int wanted(int argc, char **argv, const char *name, int canary) {
  if (argc < 2) return !canary;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], name) == 0) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  const uint64_t start = omni_fixture_live_bytes();
  for (size_t i = 0; i < sizeof sections / sizeof sections[0]; ++i) {
    if (!wanted(argc, argv, sections[i].name, sections[i].canary)) continue;
    const unsigned long before = atomic_load(&driver_checks);
    sections[i].run();
    /* Every section closes what it opened: no byte may outlive it. */
    CHECK(omni_fixture_live_bytes() == start);
    printf("section %s: %lu checks\n", sections[i].name, atomic_load(&driver_checks) - before);
  }
  printf("driver: %lu checks passed\n", atomic_load(&driver_checks));
  return 0;
}
