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
#define GP_UNROLL 2
#define GP_STRIDED_ITEMS 4

namespace gp {

template <class T, int N>
struct alignas(sizeof(T) * N) vec_t {
    T v[N];
};

template <class A, class B = A, class C = A>
struct vec_width {
    static constexpr int big = sizeof(A) > sizeof(B) ? (sizeof(A) > sizeof(C) ? sizeof(A) : sizeof(C))
                                                     : (sizeof(B) > sizeof(C) ? sizeof(B) : sizeof(C));
    static constexpr int value = big >= 16 ? 1 : 16 / big;
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
// (sa0, sa1), (sb0, sb1), which may be 0 (broadcast), negative or > 1 (slices). One block
// covers GP_BLOCK * V consecutive columns of one row; stores are 16-byte vectors.
template <class Op, class TO, class CT, class TA, class TB>
__global__ void __launch_bounds__(GP_BLOCK) gp_binary_rows(TO* __restrict__ out, const TA* __restrict__ a,
                                                         const TB* __restrict__ b, long long R, long long C,
                                                         long long sa0, long long sa1, long long sb0, long long sb1) {
    constexpr int V = gp::vec_width<TO>::value;
    const long long chunks = (C + GP_BLOCK * V - 1) / (GP_BLOCK * V);
    const long long row = static_cast<long long>(blockIdx.x) / chunks;
    if (row >= R) return;
    const long long cb = (static_cast<long long>(blockIdx.x) - row * chunks) * (GP_BLOCK * V);
    const TA* ar = a + row * sa0;
    const TB* br = b + row * sb0;
    TO* orow = out + row * C;
    Op op;
    const bool full = cb + GP_BLOCK * V <= C;
    const long long c0 = cb + threadIdx.x * V;
    // broadcast of one operand along the row, the other contiguous: 16-byte vectors throughout
    if (full && sa1 == 0 && sb1 == 1 && gp::aligned_for<V>(orow + cb) && gp::aligned_for<V>(br + cb)) {
        const CT av = gp::cast<CT>(ar[0]);
        const gp::vec_t<TB, V> vb = *reinterpret_cast<const gp::vec_t<TB, V>*>(br + c0);
        gp::vec_t<TO, V> vo;
#pragma unroll
        for (int j = 0; j < V; ++j) vo.v[j] = gp::cast<TO>(op(av, gp::cast<CT>(vb.v[j])));
        *reinterpret_cast<gp::vec_t<TO, V>*>(orow + c0) = vo;
        return;
    }
    if (full && sa1 == 1 && sb1 == 0 && gp::aligned_for<V>(orow + cb) && gp::aligned_for<V>(ar + cb)) {
        const CT bv = gp::cast<CT>(br[0]);
        const gp::vec_t<TA, V> va = *reinterpret_cast<const gp::vec_t<TA, V>*>(ar + c0);
        gp::vec_t<TO, V> vo;
#pragma unroll
        for (int j = 0; j < V; ++j) vo.v[j] = gp::cast<TO>(op(gp::cast<CT>(va.v[j]), bv));
        *reinterpret_cast<gp::vec_t<TO, V>*>(orow + c0) = vo;
        return;
    }
    // general strides: consecutive threads take consecutive columns (coalesced per instruction),
    // all V loads issued before the stores
    CT xa[V], xb[V];
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const long long c = cb + threadIdx.x + j * GP_BLOCK;
        if (c < C) {
            xa[j] = gp::cast<CT>(ar[c * sa1]);
            xb[j] = gp::cast<CT>(br[c * sb1]);
        }
    }
#pragma unroll
    for (int j = 0; j < V; ++j) {
        const long long c = cb + threadIdx.x + j * GP_BLOCK;
        if (c < C) orow[c] = gp::cast<TO>(op(xa[j], xb[j]));
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
