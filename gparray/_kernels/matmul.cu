// gparray kernel family "matmul": integer and boolean matrix products (floating and complex
// products go to cuBLAS). gparray/_engine/_matmul_int.py plans and launches them.
//
// C = A @ B for every matrix of a broadcast stack, with NumPy's semantics: integers are
// computed exactly in the result type and wrap around (int8 @ int8 is int8 modulo 2^8),
// booleans are OR over k of AND. Both operands are read through their element strides
// (sa0, sa1: A's row and column strides; sb0, sb1: B's), so transposed, sliced, stepped,
// negative-stride and broadcast (stride 0) operands need no copy. The batch index of a
// matrix is its C-order position in the broadcast batch shape; `batch` holds that shape
// (merged on the host) and the batch strides of A and B (elements; 0 where an operand is
// broadcast). C is C-contiguous: matrix bi starts at bi * m * n. All offsets are 64-bit.
//
// Arithmetic is unsigned: no signed overflow (undefined behaviour in C++). The low w bits
// of a sum of products do not depend on how wide the unsigned type holding it is, so 8-,
// 16- and 32-bit types accumulate in 32 bits, 64-bit types in 64, and the sum is truncated
// to the result's width once, at the store (then reinterpreted as the signed type).
//
//   gp_matmul_int      one 64 x 64 tile of C per block iteration (blocks loop over the
//                      tiles of every matrix of the stack): 16-deep slices of A and B staged
//                      in shared memory (loaded so that neighbouring threads read along the
//                      operand's unit stride), each of 256 threads accumulates 4 x 4 outputs
//                      (rows ty + 16 i, columns tx + 16 j: C is written along rows).
//   gp_matmul_int_dot  one output element per block iteration, for products with few
//                      outputs and a long k (dot products, matrix @ vector with few rows):
//                      the 256 threads stride over k, then a block reduction.
#include "gp/types.cuh"
#include "gp/indexer.cuh"

#define GP_MM_THREADS 256
#define GP_MM_BM 64
#define GP_MM_BN 64
#define GP_MM_BK 16
#define GP_MM_TX 16                                  // threads along n
#define GP_MM_TY (GP_MM_THREADS / GP_MM_TX)          // threads along m
#define GP_MM_RM (GP_MM_BM / GP_MM_TY)               // rows per thread (4)
#define GP_MM_RN (GP_MM_BN / GP_MM_TX)               // columns per thread (4)

namespace gp {
namespace mm {

template <int N>
struct unsigned_of;
template <>
struct unsigned_of<1> { typedef unsigned char type; };
template <>
struct unsigned_of<2> { typedef unsigned short type; };
template <>
struct unsigned_of<4> { typedef unsigned int type; };
template <>
struct unsigned_of<8> { typedef unsigned long long type; };

// Integers: U accumulates modulo 2^32 (2^64 for 64-bit types).
template <class T>
struct ops {
    typedef typename unsigned_of<(sizeof(T) < 4 ? 4 : sizeof(T))>::type U;
    // conversion to an unsigned type is modular: a negative value sign-extends
    static __device__ __forceinline__ U load(T v) { return static_cast<U>(v); }
    static __device__ __forceinline__ void mac(U& c, U a, U b) { c += a * b; }
    static __device__ __forceinline__ U combine(U a, U b) { return a + b; }
    static __device__ __forceinline__ T store(U c) {
        typedef typename unsigned_of<sizeof(T)>::type W;
        const W w = static_cast<W>(c);  // modular: the low bits
        T t;
        memcpy(&t, &w, sizeof(T));       // two's complement bits of the signed result
        return t;
    }
};

// Booleans: OR of ANDs on 0/1 words.
template <>
struct ops<bool> {
    typedef unsigned int U;
    static __device__ __forceinline__ U load(bool v) { return v ? 1u : 0u; }
    static __device__ __forceinline__ void mac(U& c, U a, U b) { c |= a & b; }
    static __device__ __forceinline__ U combine(U a, U b) { return a | b; }
    static __device__ __forceinline__ bool store(U c) { return c != 0u; }
};

}  // namespace mm
}  // namespace gp

template <class T, int ND>
__global__ void __launch_bounds__(GP_MM_THREADS)
gp_matmul_int(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
              gp::StridedParams<2, ND> batch, long long m, long long n, long long k, long long sa0,
              long long sa1, long long sb0, long long sb1, long long tiles_m, long long tiles_n,
              long long total) {
    typedef gp::mm::ops<T> O;
    typedef typename O::U U;
    // one padding column: the k-fast loads write a column of the tile with neighbouring
    // threads, which would otherwise hit one shared-memory bank
    __shared__ U As[GP_MM_BK][GP_MM_BM + 1];
    __shared__ U Bs[GP_MM_BK][GP_MM_BN + 1];
    const int tid = threadIdx.x;
    const int tx = tid % GP_MM_TX, ty = tid / GP_MM_TX;
    // neighbouring threads load along k when that is A's unit stride (or neither is)
    const bool a_kfast = sa1 == 1 || sa0 != 1;
    // ... and along n when that is B's unit stride (or neither is)
    const bool b_nfast = sb1 == 1 || sb0 != 1;
    for (long long t = blockIdx.x; t < total; t += gridDim.x) {
        const long long tn = t % tiles_n;
        const long long r = t / tiles_n;
        const long long tm = r % tiles_m;
        const long long bi = r / tiles_m;
        long long off[2];
        gp::strided_offsets<2, ND, long long>(batch, bi, off);
        const T* A = a + off[0];
        const T* B = b + off[1];
        const long long row0 = tm * GP_MM_BM, col0 = tn * GP_MM_BN;
        U acc[GP_MM_RM][GP_MM_RN];
#pragma unroll
        for (int i = 0; i < GP_MM_RM; ++i)
#pragma unroll
            for (int j = 0; j < GP_MM_RN; ++j) acc[i][j] = U(0);
        for (long long k0 = 0; k0 < k; k0 += GP_MM_BK) {
#pragma unroll
            for (int e0 = 0; e0 < GP_MM_BM * GP_MM_BK; e0 += GP_MM_THREADS) {
                const int e = e0 + tid;
                const int i = a_kfast ? e / GP_MM_BK : e % GP_MM_BM;
                const int kk = a_kfast ? e % GP_MM_BK : e / GP_MM_BM;
                const long long gi = row0 + i, gk = k0 + kk;
                As[kk][i] = (gi < m && gk < k) ? O::load(A[gi * sa0 + gk * sa1]) : U(0);
            }
#pragma unroll
            for (int e0 = 0; e0 < GP_MM_BN * GP_MM_BK; e0 += GP_MM_THREADS) {
                const int e = e0 + tid;
                const int j = b_nfast ? e % GP_MM_BN : e / GP_MM_BK;
                const int kk = b_nfast ? e / GP_MM_BN : e % GP_MM_BK;
                const long long gj = col0 + j, gk = k0 + kk;
                Bs[kk][j] = (gk < k && gj < n) ? O::load(B[gk * sb0 + gj * sb1]) : U(0);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < GP_MM_BK; ++kk) {
                U av[GP_MM_RM], bv[GP_MM_RN];
#pragma unroll
                for (int i = 0; i < GP_MM_RM; ++i) av[i] = As[kk][ty + i * GP_MM_TY];
#pragma unroll
                for (int j = 0; j < GP_MM_RN; ++j) bv[j] = Bs[kk][tx + j * GP_MM_TX];
#pragma unroll
                for (int i = 0; i < GP_MM_RM; ++i)
#pragma unroll
                    for (int j = 0; j < GP_MM_RN; ++j) O::mac(acc[i][j], av[i], bv[j]);
            }
            __syncthreads();
        }
        T* C = c + bi * m * n;
#pragma unroll
        for (int i = 0; i < GP_MM_RM; ++i) {
            const long long gi = row0 + ty + i * GP_MM_TY;
#pragma unroll
            for (int j = 0; j < GP_MM_RN; ++j) {
                const long long gj = col0 + tx + j * GP_MM_TX;
                if (gi < m && gj < n) C[gi * n + gj] = O::store(acc[i][j]);
            }
        }
    }
}

template <class T, int ND>
__global__ void __launch_bounds__(GP_MM_THREADS)
gp_matmul_int_dot(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                  gp::StridedParams<2, ND> batch, long long m, long long n, long long k, long long sa0,
                  long long sa1, long long sb0, long long sb1, long long total) {
    typedef gp::mm::ops<T> O;
    typedef typename O::U U;
    __shared__ U part[GP_MM_THREADS / 32];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    const long long mn = m * n;
    for (long long o = blockIdx.x; o < total; o += gridDim.x) {
        const long long bi = o / mn;
        const long long rem = o - bi * mn;
        const long long i = rem / n, j = rem - (rem / n) * n;
        long long off[2];
        gp::strided_offsets<2, ND, long long>(batch, bi, off);
        const T* A = a + off[0] + i * sa0;
        const T* B = b + off[1] + j * sb1;
        U s = U(0);
        for (long long kk = tid; kk < k; kk += GP_MM_THREADS) O::mac(s, O::load(A[kk * sa1]), O::load(B[kk * sb0]));
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) s = O::combine(s, __shfl_down_sync(0xffffffffu, s, d));
        if (lane == 0) part[w] = s;
        __syncthreads();
        if (tid == 0) {
            U t = part[0];
#pragma unroll
            for (int q = 1; q < GP_MM_THREADS / 32; ++q) t = O::combine(t, part[q]);
            c[o] = O::store(t);
        }
        __syncthreads();  // part[] is reused by the next output
    }
}
