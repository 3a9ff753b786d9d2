// gparray kernel family "creation": arange, linspace, eye, the tril/triu mask and the
// triangle copy of a Cholesky factor's working matrix.
#include "gp/types.cuh"

#define GP_BLOCK 256

// out[i] = start + i * step, computed in the accumulation type A (int64 or double or
// complex), then converted, like NumPy's arange fill.
template <class T, class A>
__global__ void __launch_bounds__(GP_BLOCK) gp_arange(T* __restrict__ out, A start, A step, long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * GP_BLOCK + threadIdx.x;
    if (i < n) out[i] = gp::cast<T>(start + static_cast<A>(i) * step);
}

// NumPy's linspace in its computation type A (float when both bounds are float32/float16
// arrays, else double): y = i * step, then y + start, two roundings (never contracted to
// an FMA, so the samples are NumPy's bit for bit); when step is 0 (a span too small for
// the type) y = (i / div) * delta; the last element is exactly `stop` when endpoint.
__device__ __forceinline__ float lin_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double lin_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float lin_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double lin_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float lin_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double lin_div(double a, double b) { return __ddiv_rn(a, b); }

template <class T, class A>
__global__ void __launch_bounds__(GP_BLOCK) gp_linspace(T* __restrict__ out, A start, A stop, A step, A delta, A div,
                                                      long long n, bool endpoint) {
    const long long i = static_cast<long long>(blockIdx.x) * GP_BLOCK + threadIdx.x;
    if (i < n) {
        const A fi = static_cast<A>(i);
        const A y = step != A(0) ? lin_mul(fi, step) : lin_mul(lin_div(fi, div), delta);
        const A v = (endpoint && i == n - 1) ? stop : lin_add(y, start);
        out[i] = gp::cast<T>(v);
    }
}

// Complex linspace: interpolate real and imaginary parts separately.
template <class T, class R>
__global__ void __launch_bounds__(GP_BLOCK) gp_linspace_complex(gp::complex<T>* __restrict__ out, R sr, R si, R er,
                                                              R ei, R dr, R di, long long n, bool endpoint) {
    const long long i = static_cast<long long>(blockIdx.x) * GP_BLOCK + threadIdx.x;
    if (i < n) {
        R re, im;
        if (endpoint && i == n - 1) { re = er; im = ei; }
        else { re = sr + static_cast<R>(i) * dr; im = si + static_cast<R>(i) * di; }
        out[i] = gp::complex<T>(static_cast<T>(re), static_cast<T>(im));
    }
}

// out is an (rows, cols) C-contiguous matrix: 1 on diagonal k, 0 elsewhere.
template <class T>
__global__ void __launch_bounds__(GP_BLOCK) gp_eye(T* __restrict__ out, long long rows, long long cols, long long k) {
    const long long i = static_cast<long long>(blockIdx.x) * GP_BLOCK + threadIdx.x;
    if (i < rows * cols) {
        const long long r = i / cols, c = i - r * cols;
        out[i] = gp::cast<T>(c - r == k ? 1 : 0);
    }
}

// In place on a C-contiguous stack of (rows, cols) matrices: zero the elements above
// (UPPER=false, tril) or below (UPPER=true, triu) diagonal k.
template <class T, bool UPPER>
__global__ void __launch_bounds__(GP_BLOCK) gp_tri_mask(T* __restrict__ out, long long rows, long long cols, long long k,
                                                      long long n) {
    const long long i = static_cast<long long>(blockIdx.x) * GP_BLOCK + threadIdx.x;
    if (i < n) {
        const long long rc = i % (rows * cols);
        const long long r = rc / cols, c = rc - r * cols;
        const bool keep = UPPER ? (c - r >= k) : (c - r <= k);
        if (!keep) out[i] = T();
    }
}

// The working matrix of a looped Cholesky (gparray/linalg/_decompositions.py): out, a
// C-contiguous stack of n x n matrices, gets the upper triangle (j >= i) of x's matrices
// (TRANS: of their transposes) and zeros below it, in one pass that reads only the
// triangle. x: element strides sb (matrix to matrix), s0 (rows), s1 (columns). Blocks of
// 32 x 8 threads own 32 x 32 tiles (blockIdx.x = (matrix * tiles + tile row) * tiles +
// tile column); TRANS tiles go through shared memory so both the loads (along x's rows)
// and the stores are coalesced; tiles wholly below the diagonal only store zeros.
template <class T, bool TRANS>
__global__ void __launch_bounds__(256) gp_tri_copy(T* __restrict__ out, const T* __restrict__ x, long long n,
                                                   long long tiles, long long sb, long long s0, long long s1) {
    __shared__ T tile[32][33];
    const long long bt = static_cast<long long>(blockIdx.x);
    const long long m = bt / (tiles * tiles), tt = bt - m * tiles * tiles;
    const long long i0 = (tt / tiles) * 32, j0 = (tt % tiles) * 32;
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const T* xm = x + m * sb;
    T* om = out + m * n * n;
    const bool below = j0 + 31 < i0;   // every element of the tile has j < i
    if (TRANS && !below) {
        // tile[r][c] = x(j0 + r, i0 + c): out(i, j) = x(j, i) = tile[j - j0][i - i0]
#pragma unroll
        for (int k = 0; k < 32; k += 8) {
            const long long r = j0 + ty + k, c = i0 + tx;
            if (r < n && c < n && r >= c) tile[ty + k][tx] = xm[r * s0 + c * s1];
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < 32; k += 8) {
        const long long i = i0 + ty + k, j = j0 + tx;
        if (i < n && j < n) {
            T v = T();
            if (j >= i) v = TRANS ? tile[tx][ty + k] : xm[i * s0 + j * s1];
            om[i * n + j] = v;
        }
    }
}
