// gparray: elementwise kernel templates. One functor type `Op` is applied to values loaded
// as TA/TB, converted to the compute type CT, and the result converted to TO on store.
// Variants: contig (flat loop, 16-byte vector loads when aligned), strided (N-d indexer),
// and *_as / *_sa forms whose second/first operand is a scalar passed by value.
#pragma once
#include "types.cuh"
#include "indexer.cuh"

#ifndef GP_BLOCK
#define GP_BLOCK 256
#endif
#ifndef GP_UNROLL
#define GP_UNROLL 1
#endif
#define GP_STRIDED_ITEMS 4

namespace gp {

template <class T, int N>
struct alignas(sizeof(T) * N) vec_t {
    T v[N];
};

// Elements per thread access: 16 bytes of the narrowest type (so its loads/stores are
// 16-byte vectors), but at most 64 bytes of the widest (e.g. float32 -> bool: 16 elements,
// float32 -> float16: 8, complex128 -> bool: 4, one type of n bytes: 16 / n).
template <class A, class B = A, class C = A>
struct vec_width {
    static constexpr int big = sizeof(A) > sizeof(B) ? (sizeof(A) > sizeof(C) ? sizeof(A) : sizeof(C))
                                                     : (sizeof(B) > sizeof(C) ? sizeof(B) : sizeof(C));
    static constexpr int small = sizeof(A) < sizeof(B) ? (sizeof(A) < sizeof(C) ? sizeof(A) : sizeof(C))
                                                       : (sizeof(B) < sizeof(C) ? sizeof(B) : sizeof(C));
    static constexpr int by_small = small >= 16 ? 1 : 16 / small;
    static constexpr int by_big = big >= 64 ? 1 : 64 / big;
    static constexpr int value = by_small < by_big ? by_small : by_big;
};

template <int V, class T>
__device__ __forceinline__ bool aligned_for(const T* p) {
    return (reinterpret_cast<unsigned long long>(p) % (sizeof(T) * V)) == 0;
}

}  // namespace gp

// ---------------------------------------------------------------- unary: out = Op(a)
template <class Op, class TO, class CT, class TA>
__global__ void __launch_bounds__(GP_BLOCK) gp_unary_contig(TO* __restrict__ out, const TA* __restrict__ a, long long n) {
    constexpr int V = gp::vec_width<TO, TA>::value;
    constexpr int TILE = GP_BLOCK * V * GP_UNROLL;
    const long long base = static_cast<long long>(blockIdx.x) * TILE;
    Op op;
    if (base + TILE <= n && gp::aligned_for<V>(out) && gp::aligned_for<V>(a)) {
        gp::vec_t<TA, V> va[GP_UNROLL];
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u)
            va[u] = reinterpret_cast<const gp::vec_t<TA, V>*>(a + base)[threadIdx.x + u * GP_BLOCK];
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) {
            gp::vec_t<TO, V> vo;
#pragma unroll
            for (int j = 0; j < V; ++j) vo.v[j] = gp::cast<TO>(op(gp::cast<CT>(va[u].v[j])));
            reinterpret_cast<gp::vec_t<TO, V>*>(out + base)[threadIdx.x + u * GP_BLOCK] = vo;
        }
    } else {
        const long long end = base + TILE < n ? base + TILE : n;
        for (long long i = base + threadIdx.x; i < end; i += GP_BLOCK) out[i] = gp::cast<TO>(op(gp::cast<CT>(a[i])));
    }
}

template <class Op, class TO, class CT, class TA, int ND, class IdxT>
__global__ void __launch_bounds__(GP_BLOCK) gp_unary_strided(TO* __restrict__ out, const TA* __restrict__ a,
                                                           gp::StridedParams<2, ND> prm, IdxT n) {
    Op op;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_BLOCK * GP_STRIDED_ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < GP_STRIDED_ITEMS; ++j) {
        const IdxT i = base + j * GP_BLOCK;
        if (i < n) {
            IdxT off[2];
            gp::strided_offsets<2, ND, IdxT>(prm, i, off);
            out[off[0]] = gp::cast<TO>(op(gp::cast<CT>(a[off[1]])));
        }
    }
}

// ---------------------------------------------------------------- binary: out = Op(a, b)
template <class Op, class TO, class CT, class TA, class TB>
__global__ void __launch_bounds__(GP_BLOCK) gp_binary_contig(TO* __restrict__ out, const TA* __restrict__ a,
                                                           const TB* __restrict__ b, long long n) {
    constexpr int V = gp::vec_width<TO, TA, TB>::value;
    constexpr int TILE = GP_BLOCK * V * GP_UNROLL;
    const long long base = static_cast<long long>(blockIdx.x) * TILE;
    Op op;
    if (base + TILE <= n && gp::aligned_for<V>(out) && gp::aligned_for<V>(a) && gp::aligned_for<V>(b)) {
        gp::vec_t<TA, V> va[GP_UNROLL];
        gp::vec_t<TB, V> vb[GP_UNROLL];
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) {
            va[u] = reinterpret_cast<const gp::vec_t<TA, V>*>(a + base)[threadIdx.x + u * GP_BLOCK];
            vb[u] = reinterpret_cast<const gp::vec_t<TB, V>*>(b + base)[threadIdx.x + u * GP_BLOCK];
        }
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) {
            gp::vec_t<TO, V> vo;
#pragma unroll
            for (int j = 0; j < V; ++j)
                vo.v[j] = gp::cast<TO>(op(gp::cast<CT>(va[u].v[j]), gp::cast<CT>(vb[u].v[j])));
            reinterpret_cast<gp::vec_t<TO, V>*>(out + base)[threadIdx.x + u * GP_BLOCK] = vo;
        }
    } else {
        const long long end = base + TILE < n ? base + TILE : n;
        for (long long i = base + threadIdx.x; i < end; i += GP_BLOCK)
            out[i] = gp::cast<TO>(op(gp::cast<CT>(a[i]), gp::cast<CT>(b[i])));
    }
}

template <class Op, class TO, class CT, class TA, class TB, int ND, class IdxT>
__global__ void __launch_bounds__(GP_BLOCK) gp_binary_strided(TO* __restrict__ out, const TA* __restrict__ a,
                                                            const TB* __restrict__ b, gp::StridedParams<3, ND> prm,
                                                            IdxT n) {
    Op op;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_BLOCK * GP_STRIDED_ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < GP_STRIDED_ITEMS; ++j) {
        const IdxT i = base + j * GP_BLOCK;
        if (i < n) {
            IdxT off[3];
            gp::strided_offsets<3, ND, IdxT>(prm, i, off);
            out[off[0]] = gp::cast<TO>(op(gp::cast<CT>(a[off[1]]), gp::cast<CT>(b[off[2]])));
        }
    }
}

// ------------------------------------------- binary with a scalar operand passed by value
// SWAP=false: out = Op(a, s); SWAP=true: out = Op(s, a).
template <class Op, class TO, class CT, class TA, bool SWAP>
__global__ void __launch_bounds__(GP_BLOCK) gp_scalar_contig(TO* __restrict__ out, const TA* __restrict__ a, CT s,
                                                           long long n) {
    constexpr int V = gp::vec_width<TO, TA>::value;
    constexpr int TILE = GP_BLOCK * V * GP_UNROLL;
    const long long base = static_cast<long long>(blockIdx.x) * TILE;
    Op op;
    if (base + TILE <= n && gp::aligned_for<V>(out) && gp::aligned_for<V>(a)) {
        gp::vec_t<TA, V> va[GP_UNROLL];
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u)
            va[u] = reinterpret_cast<const gp::vec_t<TA, V>*>(a + base)[threadIdx.x + u * GP_BLOCK];
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) {
            gp::vec_t<TO, V> vo;
#pragma unroll
            for (int j = 0; j < V; ++j) {
                const CT x = gp::cast<CT>(va[u].v[j]);
                vo.v[j] = gp::cast<TO>(SWAP ? op(s, x) : op(x, s));
            }
            reinterpret_cast<gp::vec_t<TO, V>*>(out + base)[threadIdx.x + u * GP_BLOCK] = vo;
        }
    } else {
        const long long end = base + TILE < n ? base + TILE : n;
        for (long long i = base + threadIdx.x; i < end; i += GP_BLOCK) {
            const CT x = gp::cast<CT>(a[i]);
            out[i] = gp::cast<TO>(SWAP ? op(s, x) : op(x, s));
        }
    }
}

template <class Op, class TO, class CT, class TA, bool SWAP, int ND, class IdxT>
__global__ void __launch_bounds__(GP_BLOCK) gp_scalar_strided(TO* __restrict__ out, const TA* __restrict__ a, CT s,
                                                            gp::StridedParams<2, ND> prm, IdxT n) {
    Op op;
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_BLOCK * GP_STRIDED_ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < GP_STRIDED_ITEMS; ++j) {
        const IdxT i = base + j * GP_BLOCK;
        if (i < n) {
            IdxT off[2];
            gp::strided_offsets<2, ND, IdxT>(prm, i, off);
            const CT x = gp::cast<CT>(a[off[1]]);
            out[off[0]] = gp::cast<TO>(SWAP ? op(s, x) : op(x, s));
        }
    }
}

// ---------------------------------------------------------------- fill: out[...] = v
template <class T>
__global__ void __launch_bounds__(GP_BLOCK) gp_fill_contig(T* __restrict__ out, T v, long long n) {
    constexpr int V = gp::vec_width<T>::value;
    constexpr int TILE = GP_BLOCK * V * GP_UNROLL;
    const long long base = static_cast<long long>(blockIdx.x) * TILE;
    if (base + TILE <= n && gp::aligned_for<V>(out)) {
        gp::vec_t<T, V> vo;
#pragma unroll
        for (int j = 0; j < V; ++j) vo.v[j] = v;
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) reinterpret_cast<gp::vec_t<T, V>*>(out + base)[threadIdx.x + u * GP_BLOCK] = vo;
    } else {
        const long long end = base + TILE < n ? base + TILE : n;
        for (long long i = base + threadIdx.x; i < end; i += GP_BLOCK) out[i] = v;
    }
}

template <class T, int ND, class IdxT>
__global__ void __launch_bounds__(GP_BLOCK) gp_fill_strided(T* __restrict__ out, T v, gp::StridedParams<1, ND> prm, IdxT n) {
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_BLOCK * GP_STRIDED_ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < GP_STRIDED_ITEMS; ++j) {
        const IdxT i = base + j * GP_BLOCK;
        if (i < n) {
            IdxT off[1];
            gp::strided_offsets<1, ND, IdxT>(prm, i, off);
            out[off[0]] = v;
        }
    }
}

// ---------------------------------------------------------------- where: out = c ? a : b
template <class TO, class TA, class TB>
__global__ void __launch_bounds__(GP_BLOCK) gp_where_contig(TO* __restrict__ out, const bool* __restrict__ c,
                                                          const TA* __restrict__ a, const TB* __restrict__ b,
                                                          long long n) {
    constexpr int V = gp::vec_width<TO, TA, TB>::value;
    constexpr int TILE = GP_BLOCK * V * GP_UNROLL;
    const long long base = static_cast<long long>(blockIdx.x) * TILE;
    if (base + TILE <= n && gp::aligned_for<V>(out) && gp::aligned_for<V>(c) && gp::aligned_for<V>(a) &&
        gp::aligned_for<V>(b)) {
        gp::vec_t<bool, V> vc[GP_UNROLL];
        gp::vec_t<TA, V> va[GP_UNROLL];
        gp::vec_t<TB, V> vb[GP_UNROLL];
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) {
            const int k = threadIdx.x + u * GP_BLOCK;
            vc[u] = reinterpret_cast<const gp::vec_t<bool, V>*>(c + base)[k];
            va[u] = reinterpret_cast<const gp::vec_t<TA, V>*>(a + base)[k];
            vb[u] = reinterpret_cast<const gp::vec_t<TB, V>*>(b + base)[k];
        }
#pragma unroll
        for (int u = 0; u < GP_UNROLL; ++u) {
            gp::vec_t<TO, V> vo;
#pragma unroll
            for (int j = 0; j < V; ++j) vo.v[j] = vc[u].v[j] ? gp::cast<TO>(va[u].v[j]) : gp::cast<TO>(vb[u].v[j]);
            reinterpret_cast<gp::vec_t<TO, V>*>(out + base)[threadIdx.x + u * GP_BLOCK] = vo;
        }
    } else {
        const long long end = base + TILE < n ? base + TILE : n;
        for (long long i = base + threadIdx.x; i < end; i += GP_BLOCK) out[i] = c[i] ? gp::cast<TO>(a[i]) : gp::cast<TO>(b[i]);
    }
}

template <class TO, class TA, class TB, int ND, class IdxT>
__global__ void __launch_bounds__(GP_BLOCK) gp_where_strided(TO* __restrict__ out, const bool* __restrict__ c,
                                                           const TA* __restrict__ a, const TB* __restrict__ b,
                                                           gp::StridedParams<4, ND> prm, IdxT n) {
    const IdxT base = static_cast<IdxT>(blockIdx.x) * (GP_BLOCK * GP_STRIDED_ITEMS) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < GP_STRIDED_ITEMS; ++j) {
        const IdxT i = base + j * GP_BLOCK;
        if (i < n) {
            IdxT off[4];
            gp::strided_offsets<4, ND, IdxT>(prm, i, off);
            out[off[0]] = c[off[1]] ? gp::cast<TO>(a[off[2]]) : gp::cast<TO>(b[off[3]]);
        }
    }
}

// ------------------------------------------- binary, 2-d "rows" form (no div/mod per element)
// out is a C-contiguous (R, C) matrix; a and b are read through element strides
// (sa0, sa1), (sb0, sb1), which may be 0 (broadcast), negative or > 1 (slices). A block
// covers GP_ROWS_U * GP_BLOCK * V consecutive columns of `rpb` consecutive rows; a thread
// owns GP_ROWS_U vectors of V columns and walks down the rows, reloading an operand only
// when it changes from row to row (a row-broadcast operand stays in registers). Inner
// strides 0, 1 and 2 use 16-byte vector accesses (stride 2: two vectors, even elements);
// other strides, partial chunks and misaligned rows take a per-element path.
#ifndef GP_ROWS_U
#define GP_ROWS_U 2
#endif

namespace gp {

// V values of p[0], p[s], ..., p[(V - 1) s] as CT; s in {0, 1, 2}, p aligned for vectors.
// `last`: the operand's highest element; stride 2 reads its second vector whole only when
// that vector's odd last element (never used) is not past it, so no read leaves the array.
template <class CT, class T, int V>
__device__ __forceinline__ void load_run(CT (&x)[V], const T* p, long long s, const T* last) {
    typedef vec_t<T, V> VT;
    if (s == 1) {
        const VT v = *reinterpret_cast<const VT*>(p);
#pragma unroll
        for (int j = 0; j < V; ++j) x[j] = cast<CT>(v.v[j]);
    } else if (s == 0) {
        const CT v = cast<CT>(*p);
#pragma unroll
        for (int j = 0; j < V; ++j) x[j] = v;
    } else {
        const VT v0 = reinterpret_cast<const VT*>(p)[0];
#pragma unroll
        for (int j = 0; 2 * j < V; ++j) x[j] = cast<CT>(v0.v[2 * j]);
        if (p + (2 * V - 1) <= last) {
            const VT v1 = reinterpret_cast<const VT*>(p)[1];
#pragma unroll
            for (int j = 0; 2 * j < V; ++j) x[(V + 1) / 2 + j] = cast<CT>(v1.v[2 * j]);
        } else {  // the run ends the array: its odd last element is outside it
#pragma unroll
            for (int j = 0; 2 * j < V; ++j) x[(V + 1) / 2 + j] = cast<CT>(p[V + 2 * j]);
        }
    }
}

// The row run starting at p with inner stride s can be read by load_run (stride 2: two
// vectors of <= 16 bytes, the second one element-wise where it would pass the array's end).
template <int V, class T>
__device__ __forceinline__ bool run_ok(const T* p, long long s) {
    return s == 0 || ((s == 1 || (s == 2 && V % 2 == 0 && V * sizeof(T) <= 16)) && aligned_for<V>(p));
}

}  // namespace gp

template <class Op, class TO, class CT, class TA, class TB>
__global__ void __launch_bounds__(GP_BLOCK) gp_binary_rows(TO* __restrict__ out, const TA* __restrict__ a,
                                                         const TB* __restrict__ b, long long R, long long C,
                                                         long long sa0, long long sa1, long long sb0, long long sb1,
                                                         int rpb) {
    constexpr int V = gp::vec_width<TO>::value;
    constexpr int U = GP_ROWS_U;
    constexpr long long TC = static_cast<long long>(GP_BLOCK) * V * U;
    const long long chunks = (C + TC - 1) / TC;
    const long long rb = static_cast<long long>(blockIdx.x) / chunks;
    const long long cb = (static_cast<long long>(blockIdx.x) - rb * chunks) * TC;
    const long long r0 = rb * rpb;
    const long long r1 = R - r0 < rpb ? R : r0 + rpb;
    const bool full = cb + TC <= C;
    // the highest element of each operand (load_run's stride-2 reads stay at or below it)
    const TA* a_last = a + (sa0 > 0 ? (R - 1) * sa0 : 0) + (sa1 > 0 ? (C - 1) * sa1 : 0);
    const TB* b_last = b + (sb0 > 0 ? (R - 1) * sb0 : 0) + (sb1 > 0 ? (C - 1) * sb1 : 0);
    Op op;
    CT xa[U][V], xb[U][V];
    bool have_a = false, have_b = false;
    for (long long r = r0; r < r1; ++r) {
        const TA* ar = a + r * sa0;
        const TB* br = b + r * sb0;
        TO* orow = out + r * C;
        if (full && gp::aligned_for<V>(orow + cb) && gp::run_ok<V>(ar + cb * sa1, sa1) &&
            gp::run_ok<V>(br + cb * sb1, sb1)) {
            if (!have_a || sa0 != 0) {
#pragma unroll
                for (int u = 0; u < U; ++u)
                    gp::load_run(xa[u], ar + (cb + static_cast<long long>(u * GP_BLOCK + threadIdx.x) * V) * sa1, sa1, a_last);
                have_a = true;
            }
            if (!have_b || sb0 != 0) {
#pragma unroll
                for (int u = 0; u < U; ++u)
                    gp::load_run(xb[u], br + (cb + static_cast<long long>(u * GP_BLOCK + threadIdx.x) * V) * sb1, sb1, b_last);
                have_b = true;
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                gp::vec_t<TO, V> vo;
#pragma unroll
                for (int j = 0; j < V; ++j) vo.v[j] = gp::cast<TO>(op(xa[u][j], xb[u][j]));
                reinterpret_cast<gp::vec_t<TO, V>*>(orow + cb)[u * GP_BLOCK + threadIdx.x] = vo;
            }
        } else {
            // consecutive threads take consecutive columns (coalesced per instruction),
            // all loads issued before the stores
            CT ya[U * V], yb[U * V];
#pragma unroll
            for (int j = 0; j < U * V; ++j) {
                const long long c = cb + threadIdx.x + j * GP_BLOCK;
                if (c < C) {
                    ya[j] = gp::cast<CT>(ar[c * sa1]);
                    yb[j] = gp::cast<CT>(br[c * sb1]);
                }
            }
#pragma unroll
            for (int j = 0; j < U * V; ++j) {
                const long long c = cb + threadIdx.x + j * GP_BLOCK;
                if (c < C) orow[c] = gp::cast<TO>(op(ya[j], yb[j]));
            }
        }
    }
}

// ------------------------------------------- binary with one transposed operand (tiled)
// out is a C-contiguous (R, C) matrix. Operand T is contiguous down the columns (stride 1
// along rows, st1 along columns): it is read in 32x32 tiles with coalesced loads into
// shared memory and read back transposed. Operand N is read along rows (stride n1, usually
// 1 or 0). T_FIRST says whether T is the op's first argument.
template <class Op, class TO, class CT, class TT, class TN, bool T_FIRST>
__global__ void __launch_bounds__(256) gp_binary_tiled(TO* __restrict__ out, const TT* __restrict__ t,
                                                     const TN* __restrict__ nn, long long R, long long C,
                                                     long long st1, long long n0, long long n1) {
    __shared__ CT tile[32][33];
    const long long tiles_c = (C + 31) / 32;
    const long long tr = static_cast<long long>(blockIdx.x) / tiles_c;
    const long long tc = static_cast<long long>(blockIdx.x) - tr * tiles_c;
    const long long r0 = tr * 32, c0 = tc * 32;
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;  // 32 x 8 threads
    // load: consecutive threads walk down the rows, where T is contiguous
#pragma unroll
    for (int k = 0; k < 32; k += 8) {
        const long long r = r0 + tx, c = c0 + ty + k;
        if (r < R && c < C) tile[ty + k][tx] = gp::cast<CT>(t[r + c * st1]);
    }
    __syncthreads();
    Op op;
#pragma unroll
    for (int k = 0; k < 32; k += 8) {
        const long long r = r0 + ty + k, c = c0 + tx;
        if (r < R && c < C) {
            const CT tv = tile[tx][ty + k];
            const CT nv = gp::cast<CT>(nn[r * n0 + c * n1]);
            out[r * C + c] = gp::cast<TO>(T_FIRST ? op(tv, nv) : op(nv, tv));
        }
    }
}
