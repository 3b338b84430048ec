/* Shared by the sanitizer driver's sections (test/native-sanitizers.test.ts builds them together
 * with the sources of native/fixture under ASan+UBSan, and again under TSan). White-box: it includes the
 * fixture's internal.h for FX_MESSAGE_LEN, the size of every message buffer. */
#ifndef OMNI_DRIVER_H
#define OMNI_DRIVER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "omni_fixture.h"

/* Checks passed so far, all threads together: the test reads the total, so a driver whose checks
 * silently stopped running fails. */
extern atomic_ulong driver_checks;

/* Prints where and why, then exits 1 at once (no atexit, no leak report to bury the cause). */
_Noreturn void driver_fail(const char *file, int line, const char *what, const char *detail);

#define CHECK(cond) ((cond) ? (void)atomic_fetch_add(&driver_checks, 1) : driver_fail(__FILE__, __LINE__, #cond, NULL))

/* `call` must return `want`; on a failure status the message (of ctx, or of the thread when ctx is
 * NULL) must be NUL-terminated within its buffer and say something. */
#define CHECK_STATUS(ctx, call, want) driver_check_status(__FILE__, __LINE__, #call, (ctx), (call), (want))
void driver_check_status(const char *file, int line, const char *what, omni_ctx *ctx, int got, int want);

/* omni_last_error(ctx) ends inside its FX_MESSAGE_LEN buffer. */
int driver_message_terminated(omni_ctx *ctx);

/* Deterministic floats in [-1, 1) from `seed`. */
void driver_fill(float *v, size_t n, uint32_t seed);
/* y from omni_linear_gelu agrees with the naive reference within float rounding of the sums. */
void driver_check_against_reference(const float *x, uint32_t rows, const float *w, const float *b, uint32_t out_f,
                                    uint32_t in_f, const float *y);
/* One omni_linear_gelu of `rows` rows seeded with `x_seed` (exact-size malloc buffers, so ASan's
 * redzones sit right after x and y), expected OMNI_OK and checked against the reference with the
 * weights ctx holds (w, b). */
void driver_call_checked(omni_ctx *ctx, uint32_t rows, const float *w, const float *b, uint32_t out_f, uint32_t in_f,
                         uint32_t x_seed);
/* Uploads seeded weights of out_f x in_f (seed picks them); returns the status. */
int driver_upload(omni_ctx *ctx, uint32_t out_f, uint32_t in_f, uint32_t seed);
omni_stats_t driver_stats(omni_ctx *ctx);
/* omni_close(ctx) on an open context, expected OMNI_OK: it made exactly one stream synchronization
 * (fx_thread_syncs), and made it while ctx still held every byte it then released. Reads the
 * process-wide omni_fixture_live_bytes, so only where no other thread allocates meanwhile. */
void driver_close_checked(omni_ctx *ctx);

/* The sections, each run by abi-driver.c's main. */
void section_lifecycle(void);
void section_open_faults(void);
void section_upload_faults(void);
void section_call_faults(void);
void section_arguments(void);
void section_poisoned(void);
void section_numerics(void);
void section_threads(void);
/* driver-canaries.c: each one defect a sanitizer must report. */
void canary_leak(void);
void canary_overflow(void);
void canary_undefined(void);
void canary_race(void);
void canary_pad(void);

#endif
