// gparray kernel family "linalg_small": inverses of stacks of small real matrices, one
// thread per matrix with the whole matrix in registers (gparray/_engine/_solver.py,
// ``inv_small``; gparray.linalg.inv takes it for float32/float64 matrices up to
// GP_INV_SMALL_MAX x GP_INV_SMALL_MAX).
//
// gp_inv_small<T, N>: matrix b of the stack is read through element strides (x + b * sb,
// row stride s0, column stride s1: any layout, no copy) and its inverse written
// C-contiguous at out + b * N * N. The algorithm is LAPACK's unblocked one, on the matrix
// as NumPy hands it to LAPACK (row i, column j of the logical matrix):
//   getf2  LU with partial pivoting: in column j the first entry of largest magnitude on or
//          below the diagonal is the pivot; rows are swapped only for a nonzero pivot, the
//          column below it is scaled by its reciprocal (divided when it is below the
//          smallest normal number), then the rank-1 update. A matrix with an exactly zero
//          pivot is singular: its inverse is not written, and it is counted in status[0..1]
//          (zeroed by the caller): status[0] = max over singular b of count - b (so the
//          first singular matrix is count - status[0]), status[1] = how many. The host
//          reads these 16 bytes, not a status per matrix.
//   trti2  the inverse of U in place;
//   getri  solve inv(A) L = inv(U) column by column from the right, then undo the row
//          interchanges as column interchanges in reverse order.
// Every loop bound is a compile-time constant and pivots are selected by comparisons, so
// the matrix stays in registers (no runtime index into a local array).
//
// gp_lu_perm: the row permutation of getrf's pivot sequence (gparray/_engine/_solver.py,
// ``lu_perm``; gparray.linalg.solve of one large matrix), so that the right-hand sides are
// gathered once (P B = B[perm]) instead of getrs' row interchanges, which run one after
// another in global memory.
#include "gp/types.cuh"

#define GP_INV_SMALL_THREADS 128
#define GP_LU_PERM_MAX 8192    // largest order gp_lu_perm takes (its permutation in shared memory)
#define GP_LU_PERM_CHUNK 2048  // pivots staged in shared memory at a time
#define GP_LU_PERM_THREADS 256

namespace gp {
namespace ls {
template <class T>
struct limits;
template <>
struct limits<float> {
    static __device__ __forceinline__ float sfmin() { return 1.17549435e-38f; }
    static __device__ __forceinline__ float mag(float v) { return fabsf(v); }
};
template <>
struct limits<double> {
    static __device__ __forceinline__ double sfmin() { return 2.2250738585072014e-308; }
    static __device__ __forceinline__ double mag(double v) { return fabs(v); }
};
}  // namespace ls
}  // namespace gp

template <class T, int N>
__global__ void __launch_bounds__(GP_INV_SMALL_THREADS)
    gp_inv_small(T* __restrict__ out, const T* __restrict__ x, unsigned long long* __restrict__ status,
                 long long count, long long sb, long long s0, long long s1) {
    typedef gp::ls::limits<T> L;
    const long long b = static_cast<long long>(blockIdx.x) * GP_INV_SMALL_THREADS + threadIdx.x;
    if (b >= count) return;
    const T* xb = x + b * sb;
    T a[N][N];
#pragma unroll
    for (int i = 0; i < N; ++i) {
#pragma unroll
        for (int j = 0; j < N; ++j) a[i][j] = xb[i * s0 + j * s1];
    }
    int piv[N];
    int bad = 0;
    // ---------------------------------------------------------------- getf2
#pragma unroll
    for (int j = 0; j < N; ++j) {
        int p = j;
        T pv = a[j][j];
        T m = L::mag(pv);
#pragma unroll
        for (int i = j + 1; i < N; ++i) {
            const T v = L::mag(a[i][j]);
            if (v > m) {
                m = v;
                p = i;
                pv = a[i][j];
            }
        }
        piv[j] = p;
        if (pv != T(0)) {
#pragma unroll
            for (int i = j + 1; i < N; ++i) {
                if (i == p) {
#pragma unroll
                    for (int k = 0; k < N; ++k) {
                        const T t = a[j][k];
                        a[j][k] = a[i][k];
                        a[i][k] = t;
                    }
                }
            }
            if (L::mag(pv) >= L::sfmin()) {
                const T r = T(1) / pv;
#pragma unroll
                for (int i = j + 1; i < N; ++i) a[i][j] *= r;
            } else {
#pragma unroll
                for (int i = j + 1; i < N; ++i) a[i][j] /= pv;
            }
        } else if (bad == 0) {
            bad = j + 1;
        }
#pragma unroll
        for (int i = j + 1; i < N; ++i) {
#pragma unroll
            for (int k = j + 1; k < N; ++k) a[i][k] -= a[i][j] * a[j][k];
        }
    }
    if (bad) {
        atomicMax(status, static_cast<unsigned long long>(count - b));
        atomicAdd(status + 1, 1ULL);
        return;
    }
    // ---------------------------------------------------------------- trti2: inv(U) in place
#pragma unroll
    for (int j = 0; j < N; ++j) {
        a[j][j] = T(1) / a[j][j];
        const T ajj = -a[j][j];
#pragma unroll
        for (int i = 0; i < j; ++i) {       // x = inv(U)[0:j, 0:j] x, x = a[0:j][j] (x_k, k > i, still unchanged)
            T t = a[i][i] * a[i][j];
#pragma unroll
            for (int k = i + 1; k < j; ++k) t += a[i][k] * a[k][j];
            a[i][j] = t;
        }
#pragma unroll
        for (int i = 0; i < j; ++i) a[i][j] *= ajj;
    }
    // ---------------------------------------------------------------- getri
#pragma unroll
    for (int j = N - 1; j >= 0; --j) {
        T w[N];
#pragma unroll
        for (int i = j + 1; i < N; ++i) {
            w[i] = a[i][j];
            a[i][j] = T(0);
        }
#pragma unroll
        for (int i = 0; i < N; ++i) {
            T t = a[i][j];
#pragma unroll
            for (int k = j + 1; k < N; ++k) t -= a[i][k] * w[k];
            a[i][j] = t;
        }
    }
#pragma unroll
    for (int j = N - 2; j >= 0; --j) {
        const int p = piv[j];
#pragma unroll
        for (int c = j + 1; c < N; ++c) {
            if (c == p) {
#pragma unroll
                for (int i = 0; i < N; ++i) {
                    const T t = a[i][j];
                    a[i][j] = a[i][c];
                    a[i][c] = t;
                }
            }
        }
    }
    T* ob = out + b * (N * N);
#pragma unroll
    for (int i = 0; i < N; ++i) {
#pragma unroll
        for (int j = 0; j < N; ++j) ob[i * N + j] = a[i][j];
    }
}

// perm[i] (i < m) = the row of the original matrix that getrf's interchanges bring to row i:
// ipiv (1-based, LAPACK's) says row i was swapped with row ipiv[i] - 1, for i = 0 ... m - 1
// in that order. One block: the identity in shared memory, the pivots staged a chunk at a
// time by every thread, the swaps made in order by thread 0 (each depends on the ones
// before it), the permutation written out by every thread. A pivot outside [0, m) (getrf
// never writes one) is skipped, so no input reads or writes outside the arrays.
// m <= GP_LU_PERM_MAX; one block of GP_LU_PERM_THREADS threads.
__global__ void __launch_bounds__(GP_LU_PERM_THREADS)
    gp_lu_perm(long long* __restrict__ perm, const int* __restrict__ ipiv, int m) {
    __shared__ int s_perm[GP_LU_PERM_MAX];
    __shared__ unsigned int s_piv[GP_LU_PERM_CHUNK];
    if (m > GP_LU_PERM_MAX) return;
    for (int i = threadIdx.x; i < m; i += GP_LU_PERM_THREADS) s_perm[i] = i;
    for (int c0 = 0; c0 < m; c0 += GP_LU_PERM_CHUNK) {
        const int len = m - c0 < GP_LU_PERM_CHUNK ? m - c0 : GP_LU_PERM_CHUNK;
        __syncthreads();   // (the previous chunk's swaps done before its pivots are replaced)
        for (int i = threadIdx.x; i < len; i += GP_LU_PERM_THREADS)
            s_piv[i] = static_cast<unsigned int>(ipiv[c0 + i]) - 1u;   // (0 and negatives: >= m)
        __syncthreads();
        if (threadIdx.x == 0) {
            // the next pivot is loaded before this step's swap, and a pivot outside the
            // matrix becomes a swap of the row with itself: the only wait per step is the
            // two loads of the rows being swapped (the plain loop: 161 us for 4096 rows, H200)
            unsigned int pn = s_piv[0];
            for (int i = 0; i < len; ++i) {
                const unsigned int g = static_cast<unsigned int>(c0 + i);
                const unsigned int p = pn < static_cast<unsigned int>(m) ? pn : g;
                if (i + 1 < len) pn = s_piv[i + 1];
                const int a = s_perm[g], b = s_perm[p];
                s_perm[g] = b;
                s_perm[p] = a;
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < m; i += GP_LU_PERM_THREADS) perm[i] = s_perm[i];
}
