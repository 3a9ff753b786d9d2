// gparray kernel family "join": concat and stack in one launch (planned and launched by
// gparray/_engine/_join.py).
//
// The C-contiguous output is seen as `rows` rows of `pitch` bytes. Input ("piece") i fills
// the byte columns [col, col + width) of every row; its own rows start at `src` and are
// `src_pitch` bytes apart (any sign; 0 for rows broadcast by a stride-0 view), each row
// C-contiguous. A piece is moved in units of 2^shift bytes (the largest power of two up to
// 16 that divides its source and destination addresses, width and, over several rows, both
// pitches: the host picks it, so every access is aligned) and cut into tiles of
// GP_JOIN_BLOCK * GP_JOIN_ITEMS units (16-byte units: GP_JOIN_BLOCK * GP_JOIN_ITEMS16, 8 KiB); block b
// copies tile b - start[i] of the piece i with start[i] <= b < start[i + 1].
// Pieces hold at least one byte (the host leaves empty inputs out), so the starts rise
// strictly and every block finds exactly one piece.
//
//   gp_join_params<NV>  the table (at most NV pieces) travels by value in the kernel's
//                       parameters (__grid_constant__: read in place from the constant bank,
//                       binary search with a runtime index, never copied to local memory)
//   gp_join_table       the table lies in device memory (the host copied it there, stream
//                       ordered, before the launch): starts as n + 1 int64, then n pieces;
//                       the block finds its piece by a parallel search (__syncthreads_count)
//                       that reads at most GP_JOIN_BLOCK starts per round (1 round up to 256
//                       pieces, 2 up to 65536)
//
// Bounds: a thread touches unit e of a piece only for e < rows * width / 2^shift, so every
// read lies in the piece's rows and every write in its columns of the output. Offsets are
// 64-bit; the division by the units per row is 32-bit when the piece has fewer than 2^32
// units and is skipped when the output has one row.
#define GP_JOIN_BLOCK 256
#ifndef GP_JOIN_ITEMS
#define GP_JOIN_ITEMS 4    // units per thread for units of up to 8 bytes (tools/tune.py --groups join)
#endif
#ifndef GP_JOIN_ITEMS16
#define GP_JOIN_ITEMS16 2  // units per thread for 16-byte units (tools/tune.py --groups join)
#endif

namespace gp {
namespace join {

struct alignas(16) b16 {
    unsigned long long lo, hi;
};

// One input: 40 bytes, five 8-byte fields (the host writes them as int64).
struct Piece {
    unsigned long long src;   // address of the input's first element
    long long src_pitch;      // bytes between the input's rows
    long long col;            // the input's first byte column in every output row
    long long width;          // bytes of each row (> 0)
    long long shift;          // log2 of the unit size in bytes, 0..4
};

// Loads of the sources through the read-only path (the sources' addresses come from the
// table, so the compiler cannot tell they are global: without this it emits generic loads).
// No source is written during the launch: the output is a new allocation.
__device__ __forceinline__ void load(unsigned char& v, const char* p) {
    unsigned short t;
    asm volatile("ld.global.nc.u8 %0, [%1];" : "=h"(t) : "l"(p));
    v = static_cast<unsigned char>(t);
}
__device__ __forceinline__ void load(unsigned short& v, const char* p) {
    asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(p));
}
__device__ __forceinline__ void load(unsigned int& v, const char* p) {
    asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
}
__device__ __forceinline__ void load(unsigned long long& v, const char* p) {
    asm volatile("ld.global.nc.u64 %0, [%1];" : "=l"(v) : "l"(p));
}
__device__ __forceinline__ void load(b16& v, const char* p) {
    asm volatile("ld.global.nc.v2.u64 {%0, %1}, [%2];" : "=l"(v.lo), "=l"(v.hi) : "l"(p));
}

template <int NV>
struct Table {
    long long start[NV + 1];  // first tile of each piece; start[n] = the grid
    Piece piece[NV];
};

template <class U>
struct items {
    static constexpr int value = sizeof(U) == 16 ? GP_JOIN_ITEMS16 : GP_JOIN_ITEMS;
};

// Units per block for units of type U (the host's tile_bytes(shift) / 2^shift).
template <class U>
struct tile_units {
    static constexpr int value = GP_JOIN_BLOCK * items<U>::value;
};

// Copy tile `t` of piece `p` (U: its unit; MODE 0: the output has one row, 1: the piece has
// fewer than 2^32 units (32-bit division), 2: 64-bit division). A thread's units are
// GP_JOIN_BLOCK apart: one division places its first, the others step by the block's
// quotient and remainder (no division per unit).
template <class U, int MODE>
__device__ __forceinline__ void copy_tile(char* __restrict__ out, long long pitch, long long rows, const Piece& p,
                                          long long t) {
    constexpr int IT = items<U>::value;
    constexpr long long S = sizeof(U);
    const long long wu = p.width / S;   // units per row
    const long long n = rows * wu;      // units of the piece
    const long long base = t * tile_units<U>::value + threadIdx.x;
    const char* src = reinterpret_cast<const char*>(p.src);
    char* dst = out + p.col;
    long long r = 0, c = base, qb = 0, rb = GP_JOIN_BLOCK;
    if (MODE == 1) {
        // base < n < 2^32 whenever any unit of this thread is copied (else nothing is used)
        const unsigned int ub = static_cast<unsigned int>(base), uw = static_cast<unsigned int>(wu);
        const unsigned int q = ub / uw;
        r = q;
        c = ub - q * uw;
        const unsigned int qq = GP_JOIN_BLOCK / uw;
        qb = qq;
        rb = GP_JOIN_BLOCK - qq * uw;
    } else if (MODE == 2) {
        r = base / wu;
        c = base - r * wu;
        qb = GP_JOIN_BLOCK / wu;
        rb = GP_JOIN_BLOCK - qb * wu;
    }
    U v[IT];
    long long d[IT];
#pragma unroll
    for (int j = 0; j < IT; ++j) {
        d[j] = -1;
        if (base + static_cast<long long>(j) * GP_JOIN_BLOCK < n) {
            load(v[j], src + r * p.src_pitch + c * S);
            d[j] = r * pitch + c * S;
        }
        if (MODE != 0) {
            c += rb;
            r += qb;
            if (c >= wu) {
                c -= wu;
                ++r;
            }
        } else {
            c += GP_JOIN_BLOCK;
        }
    }
#pragma unroll
    for (int j = 0; j < IT; ++j)
        if (d[j] >= 0) *reinterpret_cast<U*>(dst + d[j]) = v[j];
}

template <class U>
__device__ __forceinline__ void copy_tile_u(char* __restrict__ out, long long pitch, long long rows, const Piece& p,
                                            long long t) {
    if (rows == 1) {
        copy_tile<U, 0>(out, pitch, rows, p, t);
    } else if (rows * (p.width / static_cast<long long>(sizeof(U))) <= 0xffffffffLL) {
        copy_tile<U, 1>(out, pitch, rows, p, t);
    } else {
        copy_tile<U, 2>(out, pitch, rows, p, t);
    }
}

__device__ __forceinline__ void copy_piece_tile(char* __restrict__ out, long long pitch, long long rows,
                                                const Piece& p, long long t) {
    switch (p.shift) {
        case 4: copy_tile_u<b16>(out, pitch, rows, p, t); break;
        case 3: copy_tile_u<unsigned long long>(out, pitch, rows, p, t); break;
        case 2: copy_tile_u<unsigned int>(out, pitch, rows, p, t); break;
        case 1: copy_tile_u<unsigned short>(out, pitch, rows, p, t); break;
        default: copy_tile_u<unsigned char>(out, pitch, rows, p, t); break;
    }
}

}  // namespace join
}  // namespace gp

// The table by value: n <= NV pieces. Block-uniform binary search over t.start.
template <int NV>
__global__ void __launch_bounds__(GP_JOIN_BLOCK)
gp_join_params(char* __restrict__ out, long long pitch, long long rows, int n,
               const __grid_constant__ gp::join::Table<NV> t) {
    const long long b = blockIdx.x;
    int lo = 0, hi = n;  // the piece is in [lo, hi): t.start[lo] <= b < t.start[hi]
    while (hi - lo > 1) {
        const int mid = (lo + hi) >> 1;
        if (t.start[mid] <= b)
            lo = mid;
        else
            hi = mid;
    }
    const gp::join::Piece p = t.piece[lo];
    gp::join::copy_piece_tile(out, pitch, rows, p, b - t.start[lo]);
}

// The table in device memory: `table` holds n + 1 int64 starts, then n pieces.
__global__ void __launch_bounds__(GP_JOIN_BLOCK)
gp_join_table(char* __restrict__ out, long long pitch, long long rows, int n, const long long* __restrict__ table) {
    const long long b = blockIdx.x;
    const long long* start = table;
    int lo = 0, hi = n;  // the piece is in [lo, hi): start[lo] <= b < start[hi]
    while (hi - lo > 1) {  // uniform over the block: every thread reaches each barrier
        const int step = (hi - lo + GP_JOIN_BLOCK - 1) / GP_JOIN_BLOCK;
        const int c = lo + static_cast<int>(threadIdx.x) * step;
        // candidates lo, lo + step, ...: the starts rise, so the ones <= b come first
        const int k = __syncthreads_count(c < hi && start[c] <= b);
        lo += (k - 1) * step;
        hi = min(lo + step, hi);
    }
    const gp::join::Piece* pieces = reinterpret_cast<const gp::join::Piece*>(table + n + 1);
    const gp::join::Piece p = pieces[lo];
    gp::join::copy_piece_tile(out, pitch, rows, p, b - start[lo]);
}
