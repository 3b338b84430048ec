/* The blocked kernel at its block edges (NR = 16 outputs, MR = 4 and MC = 64 rows, KC = 256
 * inputs; kernel.c), where an off-by-one would read or write past a packed panel, a workspace or
 * the caller's y: AddressSanitizer sees those bytes, the reference sees the values. */
#include <stdlib.h>

#include "driver.h"

void section_numerics(void) {
  static const uint32_t ins[] = {1, 3, 16, 255, 256, 257, 300};
  static const uint32_t outs[] = {1, 15, 16, 17, 33};
  static const uint32_t rows_list[] = {1, 3, 4, 5, 63, 64, 65, 70};
  omni_ctx *ctx = NULL;
  /* Two workspaces, so the row sweep keeps evicting and reallocating at each shape. */
  const omni_open_options options = {.workspace_count = 2, .reserved = 0, .workspace_bytes = 0};
  CHECK_STATUS(NULL, omni_open(0, &options, &ctx), OMNI_OK);
  uint32_t seed = 1;
  for (size_t i = 0; i < sizeof ins / sizeof ins[0]; ++i) {
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; ++o) {
      const uint32_t in_f = ins[i], out_f = outs[o];
      /* Exact-size buffers from malloc: ASan's redzones sit right after the last float. */
      float *w = malloc((size_t)out_f * in_f * sizeof *w), *b = malloc(out_f * sizeof *b);
      CHECK(w && b);
      driver_fill(w, (size_t)out_f * in_f, seed);
      driver_fill(b, out_f, seed + 1);
      CHECK_STATUS(ctx, omni_upload_weights(ctx, w, (size_t)out_f * in_f, b, out_f, out_f, in_f), OMNI_OK);
      for (size_t r = 0; r < sizeof rows_list / sizeof rows_list[0]; ++r) {
        driver_call_checked(ctx, rows_list[r], w, b, out_f, in_f, seed + 2 + rows_list[r]);
      }
      free(w);
      free(b);
      seed += 3;
    }
  }
  driver_close_checked(ctx);
}
