// Runs the CUDA backend's host code on the stub runtime (stub-runtime.cpp) through every fault the
// stub can inject, and the same sequences on the CPU fixture (dlopen'ed: it exports the same
// symbols) to compare statuses and counters. Usage: driver LIBOMNI_FIXTURE [SECTION...]; prints
// "section NAME: N checks" per section and "driver: N checks passed", or the failures on stderr
// and exits 1.
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "internal.cuh"
#include "stub-runtime.h"

static unsigned long failures = 0, checks = 0;
// Reports the first failures only: one defect fails thousands of runs the same way.
#define EXPECT(cond, ...)                                                                          \
  do {                                                                                             \
    if (cond) {                                                                                    \
      checks++;                                                                                    \
    } else if (++failures <= 40) {                                                                 \
      fprintf(stderr, "FAIL %s:%d %s: ", __FILE__, __LINE__, #cond);                               \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fprintf(stderr, "\n");                                                                       \
    }                                                                                              \
  } while (0)

// The fixture, by dlsym: same ABI, plus its hooks.
struct fixture_api {
  int (*open)(int, const omni_open_options *, omni_ctx **);
  int (*close)(omni_ctx *);
  int (*upload)(omni_ctx *, const float *, size_t, const float *, size_t, uint32_t, uint32_t);
  int (*call)(omni_ctx *, const float *, size_t, uint32_t, float *, size_t);
  int (*stats)(omni_ctx *, omni_stats_t *);
  void (*fail_alloc_after)(uint32_t);
  int (*fail_copy_after)(omni_ctx *, uint32_t);
  int (*fail_sync_after)(omni_ctx *, uint32_t);
} fx;

struct step {
  char kind; // 'u' upload, 'c' call
  uint32_t a, b;
};
// Weights 3x4, calls of growing and shrinking rows (two cached workspaces: evictions), a new shape.
static const step SEQ[] = {{'u', 3, 4}, {'c', 1, 0}, {'c', 3, 0}, {'c', 5, 0}, {'c', 2, 0}, {'c', 9, 0},
                           {'c', 3, 0}, {'u', 5, 3}, {'c', 2, 0}, {'c', 7, 0}, {'c', 1, 0}};
static const int NSEQ = sizeof SEQ / sizeof SEQ[0];

static void fill(float *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = (float)((i * 7 + seed * 13) % 11) / 8.0f - 0.6f;
}

struct result {
  std::vector<int> status;
  std::vector<bool> weights; // whether weights were resident when the step ran
  std::vector<omni_stats_t> stats;
};

static void reference(const float *x, uint32_t rows, const float *w, const float *b, uint32_t outf, uint32_t in,
                      float *y) {
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < outf; ++o) {
      float s = 0;
      for (uint32_t k = 0; k < in; ++k) s += x[r * in + k] * w[o * in + k];
      float v = s + b[o];
      y[r * outf + o] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

// Runs SEQ on the stub-backed CUDA code, the fault armed after step `arm_at` (-1: before open) to
// fire at the nth call of `api` from there (STUB_API_COUNT: none).
static result run_cuda(const char *label, int arm_at, stub_api api, unsigned nth, cudaError_t code) {
  stub_reset();
  auto arm = [&]() {
    if (api == STUB_API_COUNT) return;
    g_stub.fail_api = api;
    g_stub.fail_nth = g_stub.calls[api] + nth;
    g_stub.fail_code = code;
  };
  result res;
  if (arm_at == -1) arm();
  omni_open_options opt = {2, 0, 0};
  omni_ctx *ctx = nullptr;
  int rc = omni_open(0, &opt, &ctx);
  EXPECT(stub_pending() == 0, "%s: pending after open", label);
  if (rc != OMNI_OK) {
    EXPECT(ctx == nullptr, "%s: failed open left *out", label);
    EXPECT(stub_live_device() == 0 && stub_live_pinned() == 0 && stub_streams() == 0,
           "%s: failed open (rc %d) leaked: dev %zu pinned %zu streams %zu", label, rc, stub_live_device(),
           stub_live_pinned(), stub_streams());
    EXPECT(g_stub.bad_streams == 0, "%s: failed open used a stream it never created (%lu)", label,
           g_stub.bad_streams);
    res.status.push_back(rc);
    return res;
  }
  res.status.push_back(rc);
  uint32_t outf = 0, in = 0;
  std::vector<float> w, b;
  for (int i = 0; i < NSEQ; ++i) {
    const step &s = SEQ[i];
    int st;
    if (res.weights.empty()) res.weights.push_back(false); // open
    res.weights.push_back(s.kind == 'u' || outf != 0);
    if (s.kind == 'u') {
      std::vector<float> nw(s.a * s.b), nb(s.a);
      fill(nw.data(), nw.size(), i);
      fill(nb.data(), nb.size(), i + 100);
      st = omni_upload_weights(ctx, nw.data(), nw.size(), nb.data(), nb.size(), s.a, s.b);
      if (st == OMNI_OK) {
        w = nw;
        b = nb;
        outf = s.a;
        in = s.b;
      }
    } else {
      std::vector<float> x(s.a * in), y(s.a * outf, 12345.0f), want(s.a * outf);
      fill(x.data(), x.size(), i + 7);
      st = omni_linear_gelu(ctx, x.data(), x.size(), s.a, y.data(), y.size());
      if (st == OMNI_OK) {
        reference(x.data(), s.a, w.data(), b.data(), outf, in, want.data());
        EXPECT(memcmp(y.data(), want.data(), y.size() * 4) == 0, "%s: step %d wrong output", label, i);
      } else {
        bool untouched = true;
        for (float v : y) untouched = untouched && v == 12345.0f;
        EXPECT(untouched, "%s: step %d failed (%d) but wrote y", label, i, st);
      }
    }
    EXPECT(stub_pending() == 0, "%s: step %d returned %d with %zu operations still pending on the stream", label, i, st,
           stub_pending());
    if (st != OMNI_OK) EXPECT(strlen(omni_last_error(ctx)) > 0, "%s: no message", label);
    res.status.push_back(st);
    omni_stats_t sx;
    memset(&sx, 0, sizeof sx);
    int srs = omni_stats(ctx, &sx);
    if (srs == OMNI_OK && g_stub.poison == cudaSuccess) {
      const uint64_t host = sizeof(omni_ctx) + ctx->ws_capacity * sizeof(omni_workspace);
      EXPECT(sx.live_bytes == host + stub_live_device() + stub_live_pinned(),
             "%s: step %d live_bytes %llu, stub holds %llu", label, i, (unsigned long long)sx.live_bytes,
             (unsigned long long)(host + stub_live_device() + stub_live_pinned()));
    }
    res.stats.push_back(sx);
    if (i == arm_at) arm();
  }
  omni_close(ctx);
  EXPECT(g_stub.free_while_pending == 0, "%s: %lu frees of buffers still in use by the stream", label,
         g_stub.free_while_pending);
  EXPECT(g_stub.destroy_while_pending == 0, "%s: stream destroyed with work pending", label);
  EXPECT(g_stub.bad_frees == 0, "%s: %lu frees of unknown pointers", label, g_stub.bad_frees);
  EXPECT(g_stub.bad_streams == 0, "%s: %lu uses of an unknown stream", label, g_stub.bad_streams);
  EXPECT(stub_streams() == 0, "%s: stream not destroyed", label);
  if (g_stub.poison == cudaSuccess) {
    EXPECT(stub_live_device() == 0 && stub_live_pinned() == 0, "%s: close leaked dev %zu pinned %zu", label,
           stub_live_device(), stub_live_pinned());
  }
  return res;
}

// The same on the fixture, with its hook for `api` armed after step arm_at.
static result run_fixture(int arm_at, stub_api api, unsigned nth) {
  result res;
  omni_open_options opt = {2, 0, 0};
  omni_ctx *ctx = nullptr;
  res.status.push_back(fx.open(0, &opt, &ctx));
  uint32_t outf = 0, in = 0;
  for (int i = 0; i < NSEQ; ++i) {
    const step &s = SEQ[i];
    int st;
    if (s.kind == 'u') {
      std::vector<float> nw(s.a * s.b), nb(s.a);
      fill(nw.data(), nw.size(), i);
      fill(nb.data(), nb.size(), i + 100);
      st = fx.upload(ctx, nw.data(), nw.size(), nb.data(), nb.size(), s.a, s.b);
      if (st == OMNI_OK) {
        outf = s.a;
        in = s.b;
      }
    } else {
      std::vector<float> x(s.a * in), y(s.a * outf);
      fill(x.data(), x.size(), i + 7);
      st = fx.call(ctx, x.data(), x.size(), s.a, y.data(), y.size());
    }
    res.status.push_back(st);
    omni_stats_t sx;
    memset(&sx, 0, sizeof sx);
    fx.stats(ctx, &sx);
    res.stats.push_back(sx);
    if (i == arm_at) {
      if (api == STUB_ANY_ALLOC) fx.fail_alloc_after(nth);
      if (api == STUB_COPY) fx.fail_copy_after(ctx, nth);
      if (api == STUB_SYNC) fx.fail_sync_after(ctx, nth);
    }
  }
  fx.fail_alloc_after(0);
  fx.close(ctx);
  return res;
}

static std::string statuses(const result &r) {
  std::string s;
  for (int v : r.status) s += std::to_string(v) + " ";
  return s;
}

static bool load_fixture(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return false;
  }
  fx.open = (decltype(fx.open))dlsym(lib, "omni_open");
  fx.close = (decltype(fx.close))dlsym(lib, "omni_close");
  fx.upload = (decltype(fx.upload))dlsym(lib, "omni_upload_weights");
  fx.call = (decltype(fx.call))dlsym(lib, "omni_linear_gelu");
  fx.stats = (decltype(fx.stats))dlsym(lib, "omni_stats");
  fx.fail_alloc_after = (decltype(fx.fail_alloc_after))dlsym(lib, "omni_fixture_fail_alloc_after");
  fx.fail_copy_after = (decltype(fx.fail_copy_after))dlsym(lib, "omni_fixture_fail_copy_after");
  fx.fail_sync_after = (decltype(fx.fail_sync_after))dlsym(lib, "omni_fixture_fail_sync_after");
  return fx.open && fx.close && fx.upload && fx.call && fx.stats && fx.fail_alloc_after && fx.fail_copy_after &&
         fx.fail_sync_after;
}

// Every fault, at every position it can take in SEQ, armed before open: non-sticky, sticky (a code
// listed in cu_known_sticky since CUDA 11, one listed since 12.8), and sticky with a code outside
// the list (only the stream probe can tell).
static void section_faults(void) {
  struct fcase {
    stub_api api;
    cudaError_t nonsticky;
    int want; // status of the failing call for the non-sticky code
  } cases[] = {{STUB_SET_DEVICE, cudaErrorInvalidDevice, OMNI_E_NO_DEVICE},
               {STUB_FREE_NULL, cudaErrorInitializationError, OMNI_E_DEVICE},
               {STUB_MALLOC, cudaErrorMemoryAllocation, OMNI_E_OUT_OF_MEMORY},
               {STUB_HOST_ALLOC, cudaErrorMemoryAllocation, OMNI_E_OUT_OF_MEMORY},
               {STUB_STREAM_CREATE, cudaErrorMemoryAllocation, OMNI_E_OUT_OF_MEMORY},
               {STUB_SYNC, cudaErrorInvalidValue, OMNI_E_DEVICE},
               {STUB_COPY, cudaErrorInvalidValue, OMNI_E_COPY_FAILED},
               {STUB_LAUNCH, cudaErrorInvalidConfiguration, OMNI_E_DEVICE},
               // A launch or sync keeps the code CUDA gives its reason (omni.h): a kernel loaded
               // lazily can fail for memory, a device can go.
               {STUB_LAUNCH, cudaErrorMemoryAllocation, OMNI_E_OUT_OF_MEMORY},
               {STUB_SYNC, cudaErrorMemoryAllocation, OMNI_E_OUT_OF_MEMORY},
               {STUB_SYNC, cudaErrorDevicesUnavailable, OMNI_E_NO_DEVICE},
               {STUB_KERNEL, cudaErrorNoKernelImageForDevice, OMNI_E_NO_DEVICE}};
  const cudaError_t sticky[] = {cudaErrorIllegalAddress, cudaErrorContained, STUB_UNLISTED_STICKY};
  for (auto &fc : cases) {
    unsigned fired = 0;
    for (int variant = 0; variant < 4; ++variant) {
      const cudaError_t code = variant == 0 ? fc.nonsticky : sticky[variant - 1];
      for (unsigned nth = 1; nth <= 40; ++nth) {
        char label[96];
        snprintf(label, sizeof label, "api %d code %d nth %u", fc.api, code, nth);
        result c = run_cuda(label, -1, fc.api, nth, code);
        size_t at = 0;
        while (at < c.status.size() && c.status[at] == OMNI_OK) ++at;
        if (at == c.status.size()) continue; // SEQ makes fewer than nth such calls
        fired++;
        if (variant == 0) {
          EXPECT(c.status[at] == fc.want, "%s: first failure %d at step %zu, want %d", label, c.status[at], at, fc.want);
          for (size_t i = at + 1; i < c.status.size(); ++i)
            EXPECT(c.status[i] == (c.weights[i] ? OMNI_OK : OMNI_E_NOT_INITIALISED),
                   "%s: step %zu after a non-sticky failure: %d", label, i, c.status[i]);
        } else {
          // omni_open has no stream to probe: a sticky code it does not know reads as the fallback.
          if (!(at == 0 && code == STUB_UNLISTED_STICKY))
            EXPECT(c.status[at] == OMNI_E_FATAL, "%s: sticky fault gave %d at step %zu", label, c.status[at], at);
          for (size_t i = at + 1; i < c.status.size(); ++i)
            EXPECT(c.status[i] == OMNI_E_FATAL, "%s: step %zu after a sticky fault: %d", label, i, c.status[i]);
        }
      }
    }
    EXPECT(fired > 0, "api %d: no injected fault ever fired", fc.api);
  }
}

// Faults armed after the first upload, on both backends: the same statuses and the same counters
// at every step (live and peak bytes differ by design: packed weights, the fixture's stream).
static void section_compare(void) {
  struct ccase {
    stub_api api;
    cudaError_t code;
    unsigned max_nth;
  } cases[] = {{STUB_API_COUNT, cudaSuccess, 1},
               {STUB_ANY_ALLOC, cudaErrorMemoryAllocation, 30},
               {STUB_SYNC, cudaErrorInvalidValue, 30},
               // CUDA's upload makes two copies, the fixture's one: past the second upload
               // (copy 13 on) the positions shift.
               {STUB_COPY, cudaErrorInvalidValue, 12},
               // A copy the runtime cannot stage, or one it refuses for its device, is still a
               // failed copy: COPY_FAILED, as the fixture reports its own.
               {STUB_COPY, cudaErrorMemoryAllocation, 12},
               {STUB_COPY, cudaErrorInvalidDevice, 12}};
  for (auto &cc : cases) {
    for (unsigned nth = 1; nth <= cc.max_nth; ++nth) {
      char label[96];
      snprintf(label, sizeof label, "compare api %d nth %u", cc.api, nth);
      const unsigned n = cc.api == STUB_API_COUNT ? 0 : nth;
      result c = run_cuda(label, 0, cc.api, n, cc.code);
      result f = run_fixture(0, cc.api, n);
      EXPECT(statuses(c) == statuses(f), "%s: statuses cuda %s, fixture %s", label, statuses(c).c_str(),
             statuses(f).c_str());
      for (size_t i = 0; i < c.stats.size() && i < f.stats.size(); ++i) {
        const omni_stats_t &a = c.stats[i], &b = f.stats[i];
        EXPECT(a.allocations - c.stats[0].allocations == b.allocations - f.stats[0].allocations &&
                   a.stream_syncs == b.stream_syncs && a.cached_workspaces == b.cached_workspaces &&
                   a.workspace_bytes == b.workspace_bytes && a.workspace_evictions == b.workspace_evictions &&
                   a.calls == b.calls,
               "%s step %zu: cuda allocs %llu syncs %llu ws %llu ev %llu calls %llu; fixture %llu %llu %llu %llu %llu",
               label, i, (unsigned long long)(a.allocations - c.stats[0].allocations),
               (unsigned long long)a.stream_syncs, (unsigned long long)a.cached_workspaces,
               (unsigned long long)a.workspace_evictions, (unsigned long long)a.calls,
               (unsigned long long)(b.allocations - f.stats[0].allocations), (unsigned long long)b.stream_syncs,
               (unsigned long long)b.cached_workspaces, (unsigned long long)b.workspace_evictions,
               (unsigned long long)b.calls);
      }
    }
  }
}

// A context open on device 0 with 3 x 4 weights uploaded: the smallest one a call can run on.
static omni_ctx *small_context(const char *label) {
  omni_ctx *ctx = nullptr;
  float w[12], b[3];
  fill(w, 12, 1);
  fill(b, 3, 2);
  EXPECT(omni_open(0, nullptr, &ctx) == OMNI_OK && omni_upload_weights(ctx, w, 12, b, 3, 3, 4) == OMNI_OK,
         "%s: open", label);
  return ctx;
}

// The next call of `api` fails with `code`.
static void arm_next(stub_api api, cudaError_t code) {
  g_stub.fail_api = api;
  g_stub.fail_nth = g_stub.calls[api] + 1;
  g_stub.fail_code = code;
}

// A failed copy or launch whose drain fails too (non-sticky): the first status and message stay,
// in the context and in the thread's slot, and the stream is still drained.
static void section_drain(void) {
  for (stub_api api : {STUB_COPY, STUB_LAUNCH}) {
    unsigned fired = 0;
    for (unsigned nth = 1; nth <= 24; ++nth) {
      char label[96];
      snprintf(label, sizeof label, "drain api %d nth %u", api, nth);
      stub_reset();
      g_stub.fail_drain = true;
      g_stub.fail_api = api;
      g_stub.fail_nth = nth;
      g_stub.fail_code = api == STUB_COPY ? cudaErrorInvalidValue : cudaErrorInvalidConfiguration;
      omni_ctx *ctx = nullptr;
      omni_open_options opt = {2, 0, 0};
      EXPECT(omni_open(0, &opt, &ctx) == OMNI_OK, "%s: open", label);
      float w[12], b[3], x[9 * 4], y[9 * 3];
      fill(w, 12, 1);
      fill(b, 3, 2);
      fill(x, 36, 3);
      int st = omni_upload_weights(ctx, w, 12, b, 3, 3, 4);
      for (uint32_t rows = 1; st == OMNI_OK && rows <= 9; ++rows) st = omni_linear_gelu(ctx, x, rows * 4, rows, y, rows * 3);
      if (st != OMNI_OK) {
        fired++;
        EXPECT(st == (api == STUB_COPY ? OMNI_E_COPY_FAILED : OMNI_E_DEVICE), "%s: status %d", label, st);
        // The stub names a code "stubN": the fault's must be the one reported, not the drain's.
        char fault_name[32], drain_name[32];
        snprintf(fault_name, sizeof fault_name, "%s", cudaGetErrorName(g_stub.fail_code));
        snprintf(drain_name, sizeof drain_name, "%s", cudaGetErrorName(STUB_DRAIN_ERROR));
        const char *message = omni_last_error(ctx);
        EXPECT(strstr(message, api == STUB_COPY ? "copy" : "launch") != nullptr && strstr(message, fault_name) != nullptr &&
                   strstr(message, drain_name) == nullptr,
               "%s: message '%s'", label, message);
        EXPECT(strcmp(omni_last_error(nullptr), omni_last_error(ctx)) == 0, "%s: thread message '%s'", label,
               omni_last_error(nullptr));
        EXPECT(stub_pending() == 0, "%s: returned with work pending", label);
      }
      omni_close(ctx);
      EXPECT(stub_live_device() == 0 && stub_live_pinned() == 0 && g_stub.free_while_pending == 0, "%s: leak", label);
    }
    EXPECT(fired > 0, "drain api %d: no fault fired", api);
  }

  // A call that fails on its own (a workspace allocation out of memory) while the stream holds a
  // sticky error from earlier work: FATAL, and the message names both, the call's and the
  // stream's (a stub returning one buffer for every name could not tell them apart).
  stub_reset();
  float x[4], y[3];
  fill(x, 4, 3);
  omni_ctx *ctx = small_context("poisoned stream");
  arm_next(STUB_MALLOC, cudaErrorMemoryAllocation);
  g_stub.poison_with_fault = cudaErrorIllegalAddress;
  const int st = omni_linear_gelu(ctx, x, 4, 1, y, 3);
  char both[96];
  snprintf(both, sizeof both, "(stub%d); the stream then reported stub error (stub%d)",
           (int)cudaErrorMemoryAllocation, (int)cudaErrorIllegalAddress);
  EXPECT(st == OMNI_E_FATAL && strstr(omni_last_error(ctx), both) != nullptr,
         "poisoned stream: status %d, message '%s'", st, omni_last_error(ctx));
  omni_close(ctx);
}

// An open that fails with a sticky code: FATAL (the device is unusable for this process) when
// cu_known_sticky lists the code, the call's own fallback when it does not (open has no stream to
// probe); either way *out stays NULL, the thread's slot says why, and nothing is left behind.
static void open_sticky(stub_api api, cudaError_t code, int want) {
  stub_reset();
  g_stub.fail_api = api;
  g_stub.fail_nth = 1;
  g_stub.fail_code = code;
  omni_ctx *ctx = reinterpret_cast<omni_ctx *>(&g_stub);
  const int st = omni_open(0, nullptr, &ctx);
  EXPECT(st == want && ctx == nullptr && strstr(omni_last_error(nullptr), "omni_open") != nullptr,
         "open, api %d fails with sticky %d: status %d (want %d), message '%s'", api, code, st, want,
         omni_last_error(nullptr));
  EXPECT(stub_streams() == 0 && g_stub.bad_streams == 0 && stub_live_device() == 0 && stub_live_pinned() == 0,
         "open, api %d fails with sticky %d: left a stream or memory", api, code);
}

// A failed open says why in the thread's slot; a device that does not exist is NO_DEVICE.
static void section_open(void) {
  // The process-fatal codes driver_types.h documents, each where the toolkit's headers define it.
  const cudaError_t listed[] = {cudaErrorIllegalAddress,
#if CUDART_VERSION >= 12000
                                cudaErrorMpsClientTerminated, cudaErrorExternalDevice,
#endif
#if CUDART_VERSION >= 12080
                                cudaErrorContained, cudaErrorTensorMemoryLeak,
#endif
  };
  for (stub_api api : {STUB_SET_DEVICE, STUB_FREE_NULL, STUB_KERNEL, STUB_STREAM_CREATE}) {
    for (cudaError_t code : listed) open_sticky(api, code, OMNI_E_FATAL);
  }
  open_sticky(STUB_SET_DEVICE, STUB_UNLISTED_STICKY, OMNI_E_NO_DEVICE);
  open_sticky(STUB_FREE_NULL, STUB_UNLISTED_STICKY, OMNI_E_DEVICE);
  {
    // A device another context poisoned (its kernel hit an illegal address): opening it again is
    // FATAL, takes nothing, and leaves the poisoned context to its own close.
    stub_reset();
    float x[4], y[3];
    fill(x, 4, 3);
    omni_ctx *first = small_context("poisoned device: first context"), *second = nullptr;
    arm_next(STUB_LAUNCH, cudaErrorIllegalAddress);
    EXPECT(omni_linear_gelu(first, x, 4, 1, y, 3) == OMNI_E_FATAL, "poisoned device: the first context's call");
    const size_t streams = stub_streams(), dev = stub_live_device(), pinned = stub_live_pinned();
    second = reinterpret_cast<omni_ctx *>(&g_stub);
    const int st = omni_open(0, nullptr, &second);
    EXPECT(st == OMNI_E_FATAL && second == nullptr && strstr(omni_last_error(nullptr), "omni_open") != nullptr,
           "open on a poisoned device: status %d, message '%s'", st, omni_last_error(nullptr));
    EXPECT(stub_streams() == streams && stub_live_device() == dev && stub_live_pinned() == pinned &&
               g_stub.bad_streams == 0,
           "open on a poisoned device took something: streams %zu -> %zu", streams, stub_streams());
    omni_close(first);
    EXPECT(stub_streams() == 0 && g_stub.free_while_pending == 0, "poisoned device: close of the first context");
  }

  for (stub_api api : {STUB_SET_DEVICE, STUB_FREE_NULL, STUB_KERNEL, STUB_STREAM_CREATE}) {
    stub_reset();
    g_stub.fail_api = api;
    g_stub.fail_nth = 1;
    g_stub.fail_code = cudaErrorInvalidValue;
    omni_ctx *ctx = nullptr;
    const int st = omni_open(0, nullptr, &ctx);
    EXPECT(st != OMNI_OK && ctx == nullptr && strstr(omni_last_error(nullptr), "omni_open") != nullptr,
           "open fault %d: status %d, message '%s'", api, st, omni_last_error(nullptr));
    EXPECT(stub_streams() == 0 && g_stub.bad_streams == 0, "open fault %d: stream left or misused", api);
  }
  // A failed stream creation that left a handle in its output: open must not sync or destroy it.
  stub_reset();
  g_stub.fail_api = STUB_STREAM_CREATE;
  g_stub.fail_nth = 1;
  g_stub.fail_code = cudaErrorMemoryAllocation;
  g_stub.junk_stream_on_failure = true;
  omni_ctx *ctx = nullptr;
  EXPECT(omni_open(0, nullptr, &ctx) == OMNI_E_OUT_OF_MEMORY && ctx == nullptr, "stream create fails");
  EXPECT(g_stub.bad_streams == 0, "open used the handle a failed stream creation left (%lu uses)",
         g_stub.bad_streams);
  EXPECT(stub_live_device() == 0 && stub_live_pinned() == 0, "open leaked after a failed stream creation");
  stub_reset();
  EXPECT(omni_open(3, nullptr, &ctx) == OMNI_E_NO_DEVICE && ctx == nullptr, "device 3 of 1");
  // What omni.h says open itself allocates: context and workspace table here, the fixture's
  // simulated stream besides.
  omni_stats_t cs, fs;
  stub_reset();
  EXPECT(omni_open(0, nullptr, &ctx) == OMNI_OK && omni_stats(ctx, &cs) == OMNI_OK, "open for stats");
  omni_close(ctx);
  EXPECT(fx.open(0, nullptr, &ctx) == OMNI_OK && fx.stats(ctx, &fs) == OMNI_OK, "fixture open for stats");
  fx.close(ctx);
  EXPECT(cs.allocations == 2 && fs.allocations == 3, "allocations after open: cuda %llu, fixture %llu",
         (unsigned long long)cs.allocations, (unsigned long long)fs.allocations);
  // omni.h: an entry point leaves its context's device current on the calling thread, never
  // restoring the one the thread had (a restore could create a context on device 0).
  stub_reset();
  g_stub.device_count = 2;
  float w[12], b[3];
  fill(w, 12, 1);
  fill(b, 3, 2);
  (void)cudaSetDevice(1);
  EXPECT(omni_open(0, nullptr, &ctx) == OMNI_OK && g_stub.current_device == 0, "open left device %d current",
         g_stub.current_device);
  (void)cudaSetDevice(1);
  EXPECT(omni_upload_weights(ctx, w, 12, b, 3, 3, 4) == OMNI_OK && g_stub.current_device == 0,
         "upload left device %d current", g_stub.current_device);
  (void)cudaSetDevice(1);
  omni_close(ctx);
  EXPECT(g_stub.current_device == 0, "close left device %d current", g_stub.current_device);
}

// A deliberate defect: work left pending on a context's stream, as an entry point that skipped its
// drain would leave it. The check every section makes after each call must catch it.
static void section_canary_undrained(void) {
  stub_reset();
  omni_ctx *ctx = nullptr;
  EXPECT(omni_open(0, nullptr, &ctx) == OMNI_OK, "open");
  float host[4] = {0}, *dev = nullptr;
  EXPECT(cudaMalloc(reinterpret_cast<void **>(&dev), sizeof host) == cudaSuccess, "cudaMalloc");
  EXPECT(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, ctx->stream) == cudaSuccess, "copy");
  EXPECT(stub_pending() == 0, "canary-undrained: %zu operations pending", stub_pending());
  (void)cudaFree(dev);
  EXPECT(g_stub.free_while_pending == 0, "canary-undrained: a pending buffer was freed");
  omni_close(ctx);
}

int main(int argc, char **argv) {
  if (argc < 2 || !load_fixture(argv[1])) {
    fprintf(stderr, "usage: driver LIBOMNI_FIXTURE [SECTION...]\n");
    return 2;
  }
  const struct {
    const char *name;
    void (*run)(void);
    bool by_default;
  } sections[] = {{"faults", section_faults, true},
                  {"compare", section_compare, true},
                  {"drain", section_drain, true},
                  {"open", section_open, true},
                  {"canary-undrained", section_canary_undrained, false}};
  for (const auto &s : sections) {
    bool wanted = argc == 2 ? s.by_default : false;
    for (int i = 2; i < argc; ++i) wanted = wanted || strcmp(argv[i], s.name) == 0;
    if (!wanted) continue;
    const unsigned long before = checks;
    s.run();
    printf("section %s: %lu checks\n", s.name, checks - before);
  }
  stub_reset();
  if (failures != 0) {
    fprintf(stderr, "driver: %lu checks failed\n", failures);
    return 1;
  }
  printf("driver: %lu checks passed\n", checks);
  return 0;
}
