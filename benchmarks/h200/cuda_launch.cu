// CUDA launch cost on the same machine as the OpenCL floor (benchmarks/h200/run_latency.sh):
// a one-thread kernel launched back to back on one stream, as replay.cpp --floor does in
// OpenCL.  Prints JSON: host time per launch call and wall time per launch (to the stream
// drained), medians of ROUNDS rounds of N launches, and the round trip of one launch
// followed by cudaStreamSynchronize (median of N).
//   nvcc -O2 -o cuda_launch cuda_launch.cu && ./cuda_launch
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void tiny(unsigned* a) { a[threadIdx.x] += 1u; }

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main() {
    using clk = std::chrono::steady_clock;
    const int N = 1000, ROUNDS = 30;
    unsigned* d = nullptr;
    if (cudaMalloc(&d, 256) != cudaSuccess) return 1;
    cudaStream_t s;
    cudaStreamCreate(&s);
    for (int i = 0; i < 2000; ++i) tiny<<<1, 1, 0, s>>>(d);
    cudaStreamSynchronize(s);
    std::vector<double> host, wall, trip;
    for (int r = 0; r < ROUNDS; ++r) {
        auto t0 = clk::now();
        for (int i = 0; i < N; ++i) tiny<<<1, 1, 0, s>>>(d);
        auto t1 = clk::now();
        cudaStreamSynchronize(s);
        auto t2 = clk::now();
        host.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / N);
        wall.push_back(std::chrono::duration<double, std::nano>(t2 - t0).count() / N);
    }
    for (int i = 0; i < N; ++i) {
        auto t0 = clk::now();
        tiny<<<1, 1, 0, s>>>(d);
        cudaStreamSynchronize(s);
        trip.push_back(std::chrono::duration<double, std::nano>(clk::now() - t0).count());
    }
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    std::printf("{\"device\": \"%s\", \"cuda_driver\": %d, \"cuda_runtime\": %d, \"launches\": %d, "
                "\"rounds\": %d, \"host_ns_per_launch\": %.1f, \"wall_ns_per_launch\": %.1f, "
                "\"launch_sync_round_trip_ns\": %.1f}\n",
                p.name, drv, rt, N, ROUNDS, median(host), median(wall), median(trip));
    cudaFree(d);
    return 0;
}
