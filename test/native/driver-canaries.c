/* Deliberate defects, run only when named on the command line: the test runs each once to prove
 * the sanitizers it relies on are really on and really report (a build or an environment that
 * silently lost one would otherwise pass every section). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "driver.h"

/* Volatile sinks keep the compiler from folding the defects away at -O1. */
static void *volatile leaked;
static volatile int sink;

void canary_leak(void) {
  leaked = malloc(40);
  leaked = NULL;
}

void canary_overflow(void) {
  /* A size UBSan's object-size check cannot see, so the report is ASan's. */
  volatile size_t size = 8;
  volatile char *p = malloc(size);
  CHECK(p != NULL);
  p[size] = 1;
  free((void *)p);
}

void canary_undefined(void) {
  volatile int big = INT_MAX;
  sink = big + 1;
}

static int racy;

static void *race(void *arg) {
  (void)arg;
  racy += 1;
  return NULL;
}

/* Two threads write one int with nothing ordering them: a race whatever the timing. */
void canary_race(void) {
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, race, NULL) == 0);
  CHECK(pthread_create(&b, NULL, race, NULL) == 0);
  CHECK(pthread_join(a, NULL) == 0);
  CHECK(pthread_join(b, NULL) == 0);
}

/* fx_alloc rounds every buffer up to a multiple of 64 bytes: the byte right after the size asked
 * for must still be a report, or an overrun by less than the rounding passes unseen. */
void canary_pad(void) {
  volatile size_t size = 4;
  volatile char *p = fx_alloc(NULL, size);
  CHECK(p != NULL);
  p[size] = 1;
  fx_free(NULL, (void *)p, size);
}
