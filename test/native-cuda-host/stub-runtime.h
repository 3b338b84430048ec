// The stub CUDA runtime's controls (see stub-runtime.cpp), for the driver.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

// The code a failed drain reports (fail_drain): distinct from every injected fault's, so a message
// can be told apart. Non-sticky.
#define STUB_DRAIN_ERROR cudaErrorNotPermitted
// Sticky in the stub but not in cu_known_sticky, as a newer toolkit's process-fatal code would be:
// only the stream probe can tell it is sticky.
#define STUB_UNLISTED_STICKY cudaErrorUnknown

enum stub_api {
  STUB_SET_DEVICE,
  STUB_FREE_NULL, // cudaFree(NULL): omni_open's context initialisation
  STUB_MALLOC,
  STUB_HOST_ALLOC,
  STUB_STREAM_CREATE,
  STUB_SYNC,
  STUB_COPY,
  STUB_LAUNCH,
  STUB_KERNEL,    // cu_kernel_loadable: omni_open's check that the kernel loads on the device
  STUB_ANY_ALLOC, // cudaMalloc or cudaHostAlloc, counted together as the fixture's alloc hook counts
  STUB_API_COUNT
};

struct stub_state {
  int device_count = 1;
  int current_device = 0;
  // The fail_nth-th call of fail_api (counted from stub_reset) fails with fail_code.
  stub_api fail_api = STUB_API_COUNT;
  unsigned fail_nth = 0;
  cudaError_t fail_code = cudaSuccess;
  // Set by a sticky fail_code: every later call returns it, and frees fail (memory stays held).
  cudaError_t poison = cudaSuccess;
  // Set, the injected fault poisons the device with this (sticky) code as it fires, whatever its
  // own: work queued earlier hit an illegal address while this call failed on its own account,
  // so the stream probe reports another error than the call's.
  cudaError_t poison_with_fault = cudaSuccess;
  // The first synchronization after the injected fault fails too (non-sticky): a failed drain.
  bool fail_drain = false;
  // A failed cudaStreamCreateWithFlags writes a handle it never created into its output: the
  // runtime does not say what a failed call leaves there, so the backend must not read it.
  bool junk_stream_on_failure = false;
  bool drain_armed = false;
  unsigned calls[STUB_API_COUNT] = {};
  // Misuse seen: a buffer freed, or a stream destroyed, while an operation on it was still
  // pending; a free of memory the stub never gave; a stream handle it never created.
  unsigned long free_while_pending = 0;
  unsigned long destroy_while_pending = 0;
  unsigned long bad_frees = 0;
  unsigned long bad_streams = 0;
};

extern stub_state g_stub;
// Forgets every stream and frees what a poisoned "device" held (as a process exit would).
void stub_reset(void);
size_t stub_live_device(void);
size_t stub_live_pinned(void);
// Operations not yet synchronized, over all streams.
size_t stub_pending(void);
size_t stub_streams(void);
