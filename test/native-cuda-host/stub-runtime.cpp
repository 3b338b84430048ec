// A host-only stand-in for the CUDA runtime, linked with the CUDA backend's host code (context.cu,
// linear.cu, workspace.cu built as C++ against the real CUDA headers) so that its failure paths,
// which a GPU cannot be made to take on demand, run on any machine with the headers.
// Copies and the "kernel" run at once, but every buffer they touch stays pending on its stream
// until a synchronization: a free of a pending buffer is recorded, and the driver checks that no
// entry point returns with work pending. Faults: the nth call of one API fails with a code; a
// sticky code poisons the whole "device", as an illegal address does on a real one.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "stub-runtime.h"

stub_state g_stub;
static thread_local cudaError_t tl_last = cudaSuccess;

struct stub_stream {
  std::vector<const void *> pending; // buffers touched by not-yet-synchronized operations
  int device;
};

static std::map<void *, size_t> g_dev, g_pinned;
static std::set<stub_stream *> g_streams;

void stub_reset(void) {
  g_stub = stub_state{};
  // Memory a poisoned "device" held until "process exit".
  for (auto &kv : g_dev) free(kv.first);
  for (auto &kv : g_pinned) free(kv.first);
  g_dev.clear();
  g_pinned.clear();
  for (auto *s : g_streams) delete s;
  g_streams.clear();
  tl_last = cudaSuccess;
}

size_t stub_live_device(void) {
  size_t n = 0;
  for (auto &kv : g_dev) n += kv.second;
  return n;
}
size_t stub_live_pinned(void) {
  size_t n = 0;
  for (auto &kv : g_pinned) n += kv.second;
  return n;
}
size_t stub_pending(void) {
  size_t n = 0;
  for (auto *s : g_streams) n += s->pending.size();
  return n;
}
size_t stub_streams(void) { return g_streams.size(); }

static bool is_sticky(cudaError_t e) {
  switch (e) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorContained:
  case cudaErrorTensorMemoryLeak:
  case cudaErrorMpsClientTerminated:
  case cudaErrorExternalDevice:
  case STUB_UNLISTED_STICKY:
    return true;
  default:
    return false;
  }
}

// Returns the error this call of `api` must fail with, or cudaSuccess.
static cudaError_t fault(stub_api api) {
  if (g_stub.poison != cudaSuccess) return g_stub.poison;
  g_stub.calls[api] += 1;
  const bool any = api == STUB_MALLOC || api == STUB_HOST_ALLOC;
  if (any) g_stub.calls[STUB_ANY_ALLOC] += 1;
  if ((g_stub.fail_api == api && g_stub.calls[api] == g_stub.fail_nth) ||
      (any && g_stub.fail_api == STUB_ANY_ALLOC && g_stub.calls[STUB_ANY_ALLOC] == g_stub.fail_nth)) {
    cudaError_t e = g_stub.fail_code;
    if (is_sticky(e)) g_stub.poison = e;
    if (g_stub.poison_with_fault != cudaSuccess) g_stub.poison = g_stub.poison_with_fault;
    if (g_stub.fail_drain) g_stub.drain_armed = true;
    return e;
  }
  return cudaSuccess;
}

static cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) tl_last = e;
  return e;
}

static void check_not_pending(const void *p) {
  for (auto *s : g_streams)
    for (const void *q : s->pending)
      if (q == p) g_stub.free_while_pending += 1;
}

// cudaFree's and cudaFreeHost's work on their own map: a poisoned "device" holds the memory until
// "exit" (stub_reset); a pointer the map never gave is counted as a bad free.
static cudaError_t release(std::map<void *, size_t> &held, void *p) {
  check_not_pending(p);
  if (g_stub.poison != cudaSuccess) return ret(g_stub.poison);
  auto it = held.find(p);
  if (it == held.end()) {
    g_stub.bad_frees += 1;
    return ret(cudaErrorInvalidValue);
  }
  held.erase(it);
  free(p);
  return cudaSuccess;
}

extern "C" {

cudaError_t cudaGetLastError(void) {
  if (g_stub.poison != cudaSuccess) return g_stub.poison;
  cudaError_t e = tl_last;
  tl_last = cudaSuccess;
  return e;
}

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "stub error"; }
// One string per code, made before main and never written again, as the real runtime's are: a
// message naming two errors reads both names (one shared buffer printed the last one twice).
static char g_names[1000][12];
static const bool g_names_made = [] {
  for (int i = 0; i < 1000; ++i) snprintf(g_names[i], sizeof g_names[i], "stub%d", i);
  return true;
}();
const char *cudaGetErrorName(cudaError_t e) {
  return (int)e >= 0 && (int)e < 1000 ? g_names[(int)e] : "stub-other";
}

cudaError_t cudaSetDevice(int device) {
  cudaError_t e = fault(STUB_SET_DEVICE);
  if (e == cudaSuccess && device >= g_stub.device_count) e = cudaErrorInvalidDevice;
  if (e == cudaSuccess) g_stub.current_device = device;
  return ret(e);
}

cudaError_t cudaDriverGetVersion(int *v) {
  *v = 13000;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) {
  cudaError_t e = fault(STUB_MALLOC);
  if (p == nullptr) return ret(cudaErrorInvalidValue);
  if (bytes == 0 && e == cudaSuccess) {
    *p = nullptr;
    return cudaSuccess;
  }
  if (e != cudaSuccess) return ret(e);
  *p = malloc(bytes);
  g_dev[*p] = bytes;
  return cudaSuccess;
}

cudaError_t cudaFree(void *p) {
  if (p == nullptr) return ret(fault(STUB_FREE_NULL));
  return release(g_dev, p);
}

cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) {
  cudaError_t e = fault(STUB_HOST_ALLOC);
  if (e != cudaSuccess) return ret(e);
  *p = malloc(bytes);
  g_pinned[*p] = bytes;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) { return release(g_pinned, p); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int) {
  cudaError_t e = fault(STUB_STREAM_CREATE);
  if (e != cudaSuccess) {
    if (g_stub.junk_stream_on_failure) *s = reinterpret_cast<cudaStream_t>(0x1);
    return ret(e);
  }
  auto *st = new stub_stream{{}, g_stub.current_device};
  g_streams.insert(st);
  *s = reinterpret_cast<cudaStream_t>(st);
  return cudaSuccess;
}

static stub_stream *find_stream(cudaStream_t s) {
  auto *st = reinterpret_cast<stub_stream *>(s);
  if (g_streams.count(st) == 0) {
    g_stub.bad_streams += 1;
    return nullptr;
  }
  return st;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  stub_stream *st = find_stream(s);
  if (st == nullptr) return ret(cudaErrorInvalidResourceHandle);
  if (!st->pending.empty()) g_stub.destroy_while_pending += 1;
  g_streams.erase(st);
  delete st;
  return g_stub.poison != cudaSuccess ? ret(g_stub.poison) : cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  stub_stream *st = find_stream(s);
  if (st == nullptr) return ret(cudaErrorInvalidResourceHandle);
  cudaError_t e = fault(STUB_SYNC);
  if (e == cudaSuccess && g_stub.drain_armed) {
    g_stub.drain_armed = false;
    e = STUB_DRAIN_ERROR;
  }
  // Even a failed synchronization waited for the stream (the work ended, with an error).
  st->pending.clear();
  return ret(e);
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
  stub_stream *st = find_stream(s);
  if (st == nullptr) return ret(cudaErrorInvalidResourceHandle);
  if (g_stub.poison != cudaSuccess) return g_stub.poison;
  return st->pending.empty() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind, cudaStream_t s) {
  stub_stream *st = find_stream(s);
  if (st == nullptr) return ret(cudaErrorInvalidResourceHandle);
  cudaError_t e = fault(STUB_COPY);
  if (e != cudaSuccess) return ret(e);
  memcpy(dst, src, bytes);
  st->pending.push_back(dst);
  st->pending.push_back(src);
  return cudaSuccess;
}

} // extern "C"

// kernel.cu's load check (kernel.cu itself needs nvcc): fails as a device without a kernel image
// for the library does.
cudaError_t cu_kernel_loadable(void) { return ret(fault(STUB_KERNEL)); }

// kernel.cu's launcher (kernel.cu itself needs nvcc): the naive loop, its buffers pending until the
// next synchronization. Same float expression as the fixture's naive reference.
#include <cmath>
cudaError_t cu_launch_linear_gelu(const float *x, const float *w, const float *b, float *y, uint32_t rows,
                                  uint32_t out_features, uint32_t in_features, cudaStream_t s) {
  (void)cudaGetLastError();
  cudaError_t e = fault(STUB_LAUNCH);
  if (e != cudaSuccess) {
    tl_last = e;
    return cudaGetLastError();
  }
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < out_features; ++o) {
      float sum = 0;
      for (uint32_t k = 0; k < in_features; ++k) sum += x[(size_t)r * in_features + k] * w[(size_t)o * in_features + k];
      float v = sum + b[o];
      y[(size_t)r * out_features + o] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
  stub_stream *st = find_stream(s);
  if (st != nullptr) {
    st->pending.push_back(x);
    st->pending.push_back(w);
    st->pending.push_back(b);
    st->pending.push_back(y);
  }
  return cudaGetLastError();
}

