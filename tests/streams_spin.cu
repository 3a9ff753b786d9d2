// A kernel for tests/test_streams_gpu.py (compiled there with gparray.cuda.compile_kernel):
// every thread waits until `ns` nanoseconds of the GPU's global timer have passed, then
// writes y = a * x + b (y = b when a == 0, without reading x). Work queued behind it on its
// stream runs long after the host has queued everything else, so a missing stream order
// shows up as wrong values.
extern "C" __global__ void spin_axpb(const double* x, double* y, long long n, double a, double b,
                                     long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < (unsigned long long)ns);
    long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = a == 0.0 ? b : a * x[i] + b;
}
