// The kernel of the user-kernel launch row of bench/runtime_rows.py (and of the user-kernel
// record in tests/test_profile_gpu.py): x[i] += 1 for i < n, one thread per element.
extern "C" __global__ void gp_bench_add_one(float* x, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
