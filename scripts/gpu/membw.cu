// dyno-membw: the GPU's memory bandwidth as a kernel can use it, measured,
// for the GPU check's roofline (scripts/gpu/check.sh).
//
// NVML gives a theoretical figure (bus width × memory clock); no kernel
// reaches it, so "decode moves N% of the theoretical bandwidth" says little
// about how close llama.cpp is to the card's limit. Decode of a dense model
// reads every weight once per token and writes almost nothing, so the
// figure that matters is streaming *reads*: a kernel that loads a buffer much
// larger than the L2 cache, 16 bytes per load, and keeps only a fold of what
// it read (written out only on a condition no real data meets, so the loads
// cannot be optimised away). A device-to-device copy is measured beside it
// (read plus write, counted as 2 × bytes) because that is the figure most
// tools print.
//
// Timing: CUDA events around each pass, after warm-up passes, on a buffer of
// DYNO_MEMBW_MIB (default 4096 MiB, less when the device has less free);
// the best and the median pass are printed as one JSON object on stdout.
// Built by scripts/gpu/kit.sh with the CUDA wheels' nvcc; needs the CUDA
// runtime (libcudart.so.13) where it runs, as the CUDA module does.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void fail(const char *what, cudaError_t err) {
  std::printf("{\"error\": \"%s: %s\"}\n", what, cudaGetErrorString(err));
  std::exit(1);
}

#define CHECK(call)                       \
  do {                                    \
    cudaError_t e_ = (call);              \
    if (e_ != cudaSuccess) fail(#call, e_); \
  } while (0)

// Four independent 16-byte loads per step keep enough requests in flight
// per thread to saturate HBM without a huge grid.
__global__ void read_stream(const uint4 *__restrict__ data, size_t n, unsigned *sink) {
  unsigned acc = 0;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = data[i], b = data[i + stride], c = data[i + 2 * stride], d = data[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    uint4 a = data[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  // The buffer is filled with a byte pattern whose fold is never this value.
  if (acc == 0x9e3779b9u) *sink = acc;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  size_t free_b = 0, total_b = 0;
  CHECK(cudaMemGetInfo(&free_b, &total_b));

  size_t mib = 4096;
  if (const char *s = std::getenv("DYNO_MEMBW_MIB")) mib = std::strtoull(s, nullptr, 10);
  // Two buffers for the copy, together at most three quarters of what is free.
  size_t bytes = std::min(mib << 20, free_b / 8 * 3);
  bytes &= ~static_cast<size_t>((1 << 20) - 1);
  if (bytes < (64u << 20)) {
    std::printf("{\"error\": \"only %zu MiB free on the device\"}\n", free_b >> 20);
    return 1;
  }
  const size_t n = bytes / sizeof(uint4);

  uint4 *a = nullptr, *b = nullptr;
  unsigned *sink = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemset(a, 0x5a, bytes));
  CHECK(cudaMemset(b, 0, bytes));

  int threads = 512, per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_stream, threads, 0));
  const int blocks = prop.multiProcessorCount * std::max(per_sm, 1);

  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  const int warmup = 3, passes = 20;
  std::vector<double> read_gbs, copy_gbs;
  for (int i = 0; i < warmup + passes; i++) {
    CHECK(cudaEventRecord(t0));
    read_stream<<<blocks, threads>>>(a, n, sink);
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaGetLastError());
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    if (i >= warmup) read_gbs.push_back(bytes / (ms * 1e-3) / 1e9);
  }
  for (int i = 0; i < warmup + passes; i++) {
    CHECK(cudaEventRecord(t0));
    CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(t1));
    CHECK(cudaEventSynchronize(t1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, t0, t1));
    if (i >= warmup) copy_gbs.push_back(2.0 * bytes / (ms * 1e-3) / 1e9);
  }

  int runtime = 0, driver = 0;
  CHECK(cudaRuntimeGetVersion(&runtime));
  CHECK(cudaDriverGetVersion(&driver));
  std::printf(
      "{\"device\": \"%s\", \"sm_count\": %d, \"l2_bytes\": %d, \"buffer_bytes\": %zu, \"passes\": %d, "
      "\"blocks\": %d, \"threads_per_block\": %d, "
      "\"read_bytes_per_s_best\": %.0f, \"read_bytes_per_s_median\": %.0f, "
      "\"copy_bytes_per_s_best\": %.0f, \"copy_bytes_per_s_median\": %.0f, "
      "\"cuda_runtime\": %d, \"cuda_driver\": %d}\n",
      prop.name, prop.multiProcessorCount, prop.l2CacheSize, bytes, passes, blocks, threads,
      *std::max_element(read_gbs.begin(), read_gbs.end()) * 1e9, median(read_gbs) * 1e9,
      *std::max_element(copy_gbs.begin(), copy_gbs.end()) * 1e9, median(copy_gbs) * 1e9, runtime, driver);
  cudaFree(a);
  cudaFree(b);
  cudaFree(sink);
  return 0;
}
