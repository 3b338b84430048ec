/*
 * The hardware's floor for one admit/release pair: a checked reservation (compare-exchange) and a
 * release (fetch-sub), two locked read-modify-writes on x86, with no JavaScript around them. The
 * loop runs in C so that the one koffi call per batch is spread over `n` pairs. It keeps the
 * expected word from the last pair rather than loading it (as tryAdmit's Int32 path does). Where
 * any thread may admit and any thread release (BoundedAdmission's contract), both steps must be
 * atomic read-modify-writes of the shared word, so no admission in any language pairs faster.
 */
#include <stdatomic.h>
#include <stdint.h>

static _Atomic int32_t word;

int32_t omni_bench_atomic_pairs(int32_t n, int32_t bound) {
  int32_t expected = atomic_load(&word);
  int32_t admitted = 0;
  for (int32_t i = 0; i < n; i++) {
    int32_t seen = expected;
    if (seen < bound && atomic_compare_exchange_strong(&word, &seen, seen + 1)) {
      admitted++;
      expected = atomic_fetch_sub(&word, 1) - 1;
    } else {
      expected = seen;
    }
  }
  return admitted;
}
