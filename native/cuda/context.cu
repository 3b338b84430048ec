// The CUDA backend's context lifecycle, stats, allocator and error plumbing.
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "internal.cuh"

static thread_local char tl_message[CU_MESSAGE_LEN] = "no error";

extern "C" int omni_abi_version(void) { return OMNI_ABI_VERSION; }

extern "C" const char *omni_backend_name(void) { return "cuda"; }

int cu_fail(omni_ctx *ctx, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tl_message, sizeof tl_message, fmt, ap);
  va_end(ap);
  // The context keeps its own copy: its message must survive calls on other contexts.
  if (ctx != nullptr) memcpy(ctx->message, tl_message, sizeof ctx->message);
  return code;
}

// Errors that poison the whole CUDA context: every later runtime call fails the same way. Inside a
// context the probe in cu_error catches any sticky code, listed or not; omni_open has no stream to
// probe, so there only this list turns a poisoned device into OMNI_E_FATAL. The newer codes are
// guarded by the first toolkit known to define them (12.0, 12.8), so older headers still build.
static bool cu_known_sticky(cudaError_t err) {
  switch (err) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
#if CUDART_VERSION >= 12000
  case cudaErrorMpsClientTerminated:
  case cudaErrorExternalDevice:
#endif
#if CUDART_VERSION >= 12080
  case cudaErrorContained:
  case cudaErrorTensorMemoryLeak:
#endif
    return true;
  default:
    return false;
  }
}

int cu_error_as(omni_ctx *ctx, cudaError_t err, int code, const char *what) {
  if (err == cudaSuccess) return OMNI_OK;
  // Clears a non-sticky error; a sticky one survives, which the stream probe below detects.
  (void)cudaGetLastError();
  bool sticky = cu_known_sticky(err);
  cudaError_t probe = cudaSuccess;
  if (!sticky && ctx != nullptr && ctx->stream != nullptr) {
    // A non-sticky error was just cleared, so a stream that still reports one is poisoned.
    probe = cudaStreamQuery(ctx->stream);
    sticky = probe != cudaSuccess && probe != cudaErrorNotReady;
    if (sticky) (void)cudaGetLastError();
  }
  if (sticky) {
    if (ctx != nullptr) ctx->fatal = true;
    // When the probe found it, the poison is the probe's error, not err: name both.
    if (probe != cudaSuccess && probe != err) {
      return cu_fail(ctx, OMNI_E_FATAL,
                     "%s: %s (%s); the stream then reported %s (%s): sticky error, the CUDA context is unusable",
                     what, cudaGetErrorString(err), cudaGetErrorName(err), cudaGetErrorString(probe),
                     cudaGetErrorName(probe));
    }
    return cu_fail(ctx, OMNI_E_FATAL, "%s: %s (%s); sticky error, the CUDA context is unusable", what,
                   cudaGetErrorString(err), cudaGetErrorName(err));
  }
  return cu_fail(ctx, code, "%s: %s (%s)", what, cudaGetErrorString(err), cudaGetErrorName(err));
}

int cu_error(omni_ctx *ctx, cudaError_t err, int fallback, const char *what) {
  int code = fallback;
  if (err == cudaErrorMemoryAllocation) code = OMNI_E_OUT_OF_MEMORY;
  if (err == cudaErrorNoDevice || err == cudaErrorInvalidDevice || err == cudaErrorInsufficientDriver ||
      err == cudaErrorDevicesUnavailable || err == cudaErrorStubLibrary) {
    code = OMNI_E_NO_DEVICE;
  }
  return cu_error_as(ctx, err, code, what);
}

int cu_alloc(omni_ctx *ctx, cu_mem kind, size_t bytes, void **out, const char *what) {
  *out = nullptr;
  cudaError_t err = cudaSuccess;
  if (kind == CU_HOST) {
    *out = malloc(bytes);
    if (*out == nullptr) return cu_fail(ctx, OMNI_E_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", what, bytes);
  } else if (kind == CU_PINNED) {
    err = cudaHostAlloc(out, bytes, cudaHostAllocDefault);
  } else {
    err = cudaMalloc(out, bytes);
  }
  if (err != cudaSuccess) {
    *out = nullptr;
    return cu_error(ctx, err, OMNI_E_OUT_OF_MEMORY, what);
  }
  if (ctx != nullptr) {
    ctx->stats.live_bytes += bytes;
    ctx->stats.allocations += 1;
    if (ctx->stats.live_bytes > ctx->stats.peak_bytes) ctx->stats.peak_bytes = ctx->stats.live_bytes;
  }
  return OMNI_OK;
}

// Frees ignore errors on purpose: after a sticky error they all fail, and close must still release
// the host side of everything.
void cu_free(omni_ctx *ctx, cu_mem kind, void *p, size_t bytes) {
  if (p == nullptr) return;
  if (kind == CU_HOST) free(p);
  if (kind == CU_PINNED) (void)cudaFreeHost(p);
  if (kind == CU_DEVICE) (void)cudaFree(p);
  if (ctx != nullptr) ctx->stats.live_bytes -= bytes;
}

int cu_sync(omni_ctx *ctx, const char *what) {
  ctx->stats.stream_syncs += 1;
  return cu_error(ctx, cudaStreamSynchronize(ctx->stream), OMNI_E_DEVICE, what);
}

bool cu_mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

static void cu_destroy(omni_ctx *ctx) {
  if (ctx->stream != nullptr) {
    ctx->stats.stream_syncs += 1;
    (void)cudaStreamSynchronize(ctx->stream);
  }
  cu_workspace_release_all(ctx);
  cu_free(ctx, CU_DEVICE, ctx->d_w, (size_t)ctx->out_features * ctx->in_features * sizeof(float));
  cu_free(ctx, CU_DEVICE, ctx->d_b, (size_t)ctx->out_features * sizeof(float));
  cu_free(ctx, CU_HOST, ctx->ws, ctx->ws_capacity * sizeof *ctx->ws);
  if (ctx->stream != nullptr) (void)cudaStreamDestroy(ctx->stream);
  ctx->magic = 0;
  free(ctx);
}

extern "C" int omni_open(int device, const omni_open_options *options, omni_ctx **out) {
  if (out == nullptr) return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_open: out is NULL");
  *out = nullptr;
  if (device < 0) return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_open: device %d is negative", device);
  uint32_t count = OMNI_DEFAULT_WORKSPACE_COUNT;
  uint64_t bytes = OMNI_DEFAULT_WORKSPACE_BYTES;
  if (options != nullptr) {
    if (options->reserved != 0) return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_open: options.reserved must be 0");
    if (options->workspace_count > OMNI_MAX_WORKSPACE_COUNT) {
      return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_open: workspace_count %u exceeds %u",
                     options->workspace_count, OMNI_MAX_WORKSPACE_COUNT);
    }
    if (options->workspace_count != 0) count = options->workspace_count;
    if (options->workspace_bytes != 0) bytes = options->workspace_bytes;
  }
  char what[64];
  snprintf(what, sizeof what, "omni_open: cudaSetDevice(%d)", device);
  cudaError_t set = cudaSetDevice(device);
  int rc = cu_error(nullptr, set, OMNI_E_NO_DEVICE, what);
  if (rc != OMNI_OK) {
    // With the runtime linked statically, "no driver at all" reads as "driver too old": say which.
    int driver = -1;
    if (set == cudaErrorInsufficientDriver && cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0) {
      char first[CU_MESSAGE_LEN];
      memcpy(first, tl_message, sizeof first);
      cu_fail(nullptr, rc, "%.400s; no NVIDIA driver is loaded on this machine", first);
    }
    return rc;
  }
  // cudaSetDevice is lazy on some drivers; touching the context surfaces a broken device here.
  rc = cu_error(nullptr, cudaFree(nullptr), OMNI_E_DEVICE, "omni_open: initialising the device context");
  if (rc != OMNI_OK) return rc;
  // A device the library has no kernel image for (or whose driver cannot JIT its PTX) opens, but
  // every call would fail: refuse it here, so 'auto' falls back to the fixture.
  rc = cu_error(nullptr, cu_kernel_loadable(), OMNI_E_NO_DEVICE, "omni_open: loading the kernel for this device");
  if (rc != OMNI_OK) return rc;

  omni_ctx *ctx = static_cast<omni_ctx *>(calloc(1, sizeof(omni_ctx)));
  if (ctx == nullptr) return cu_fail(nullptr, OMNI_E_OUT_OF_MEMORY, "omni_open: out of host memory for the context");
  ctx->stats.live_bytes = ctx->stats.peak_bytes = sizeof(omni_ctx);
  ctx->stats.allocations = 1;
  ctx->device = device;
  ctx->ws_capacity = count;
  ctx->ws_limit_bytes = bytes;
  strcpy(ctx->message, "no error");
  // Non-blocking: the legacy default stream must not serialize this context against others.
  // Into a local: the runtime does not say what a failed create leaves in its output, and
  // cu_destroy synchronizes and destroys any non-null ctx->stream.
  cudaStream_t stream = nullptr;
  rc = cu_error(nullptr, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), OMNI_E_DEVICE,
                "omni_open: cudaStreamCreateWithFlags");
  if (rc == OMNI_OK) ctx->stream = stream;
  if (rc == OMNI_OK) {
    rc = cu_alloc(ctx, CU_HOST, count * sizeof(omni_workspace), reinterpret_cast<void **>(&ctx->ws),
                  "omni_open: workspace table");
  }
  if (rc != OMNI_OK) {
    cu_destroy(ctx);
    return rc;
  }
  memset(ctx->ws, 0, count * sizeof(omni_workspace));
  ctx->magic = CU_CTX_MAGIC;
  *out = ctx;
  return OMNI_OK;
}

extern "C" int omni_close(omni_ctx *ctx) {
  if (ctx == nullptr) return OMNI_OK;
  if (ctx->magic != CU_CTX_MAGIC) {
    return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_close: ctx is not an open context");
  }
  // Another thread's context may have left a different device current on this thread.
  (void)cudaSetDevice(ctx->device);
  cu_destroy(ctx);
  return OMNI_OK;
}

extern "C" int omni_stats(omni_ctx *ctx, omni_stats_t *out) {
  if (ctx == nullptr) return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_stats: ctx is NULL");
  if (ctx->magic != CU_CTX_MAGIC) {
    return cu_fail(nullptr, OMNI_E_INVALID_ARGUMENT, "omni_stats: ctx is not an open context");
  }
  if (ctx->fatal) return OMNI_E_FATAL;
  if (out == nullptr) return cu_fail(ctx, OMNI_E_INVALID_ARGUMENT, "omni_stats: out is NULL");
  *out = ctx->stats;
  return OMNI_OK;
}

extern "C" const char *omni_last_error(omni_ctx *ctx) {
  if (ctx == nullptr || ctx->magic != CU_CTX_MAGIC) return tl_message;
  return ctx->message;
}
