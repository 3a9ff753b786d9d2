// gparray: the radix keys and the pass routing of the "sort" family (gparray/_kernels/sort.cu).
// Host-compilable (plain C++17 once __host__/__device__ are defined away): the CPU tier
// builds it with g++ and checks the key mapping and the routing against NumPy.
//
// Keys travel through every pass as their raw storage bits (U = uint8/16/32/64 of the
// element's size), so sort() returns the input's exact bits (-0.0 stays -0.0, NaN payloads
// stay). Only the digit a pass looks at is computed from the radix key
//     radix(u) ^ flip        (flip = all ones for descending, else 0)
// where radix maps the element's order to unsigned order:
//   unsigned (bool, uint*):  u
//   signed (int*):           u ^ sign bit
//   float (float16/32/64):   any NaN -> all ones (after +inf; first when flipped);
//                            +-0.0 -> the key of +0.0 (equal keys: input order kept);
//                            negative -> ~u; positive -> u | sign bit.
// Equal radix keys keep their input order in every pass (LSD radix sort is stable), so
// descending is stable in the spec's sense, not the reverse of an ascending sort.
//
// Tile shape (mirrored by gparray/_engine/_sort.py; a CPU test parses these constants).
#pragma once
#include "types.cuh"

#define GP_SORT_THREADS 256    // threads of a onesweep / histogram block (== GP_SORT_RADIX)
#ifndef GP_SORT_ITEMS
#define GP_SORT_ITEMS 16       // keys per thread of a onesweep tile (tools/tune.py --groups sort)
#endif
#ifndef GP_SORT_HIST_ITEMS
#define GP_SORT_HIST_ITEMS 16  // keys each histogram thread loads before counting them (a tile: THREADS x this)
#endif
#ifndef GP_SORT_OS_THREADS
#define GP_SORT_OS_THREADS GP_SORT_THREADS  // threads of a onesweep block: RADIX, or more (384: CUB's
                                            // tile shape with ITEMS=18; tools/tune.py --groups sort)
#endif
// Keys-only sorts of 4-byte keys take a wider tile (CUB's shape: 384 x 18 keys, 3 blocks per
// SM). H200, 2^26 float32: 2.29 ms against 2.45-2.66 ms for every 256 x 16 variant; 2^24
// int32 in [0, 2^20): 0.388 ms against 0.41 ms (tools/tune.py --groups sort). Pairs of 4-byte
// keys and 32-bit values take it too (GP_SORT_WIDE_PAIRS); keys-only sorts of 8-byte keys
// take the K8 tile below; the other pairs keep 256 x 16, whose 384 x 18 tile would need more
// than 48 KB of static shared memory.
#ifndef GP_SORT_WIDE_THREADS
#define GP_SORT_WIDE_THREADS 384
#endif
#ifndef GP_SORT_WIDE_ITEMS
#define GP_SORT_WIDE_ITEMS 18
#endif
// Keys-only sorts of 8-byte keys: their own tile, 384 threads x 11 keys at 3 blocks per SM
// (CUB's 384 x 9 shape needs MIN_BLOCKS 3 too, and is slower). H200, 2^26 int64 (full range):
// 4.36 ms against 4.62-4.63 ms for 256 x 16, 4.58 for 384 x 9, CuPy 4.56 (tools/tune.py
// --groups sort, TUNE_SORT="K8_THREADS=384,K8_ITEMS=11,K8_MIN_BLOCKS=3"). 384 x 11 is the
// largest 384-thread tile of 8-byte keys under 48 KB of static shared memory.
#ifndef GP_SORT_K8_THREADS
#define GP_SORT_K8_THREADS 384
#endif
#ifndef GP_SORT_K8_ITEMS
#define GP_SORT_K8_ITEMS 11
#endif
#ifndef GP_SORT_K8_MIN_BLOCKS
#define GP_SORT_K8_MIN_BLOCKS 3
#endif
#ifndef GP_SORT_WIDE_PAIRS
#define GP_SORT_WIDE_PAIRS 1   // 1: pairs of 4-byte keys and 32-bit values (tile slots of 4 bytes) take it too
#endif
#define GP_SORT_BITS 8         // bits per digit
#define GP_SORT_RADIX 256      // buckets per digit
#define GP_SORT_MAX_PASSES 16  // up to 8 key digits + up to 8 row-id digits
#define GP_SORT_ROUTE 8        // ints per pass in the route table

namespace gp {
namespace sort {

enum { KIND_UNSIGNED = 0, KIND_SIGNED = 1, KIND_FLOAT = 2 };

// Buffer ids of the route table: keys 0 = input, 1 = output, 2/3 = temporaries, 4 = none
// (not written); values 0 = the element's own index (generated), 1 = output, 2/3 =
// temporaries, 4 = none.
enum { BUF_IN = 0, BUF_OUT = 1, BUF_T0 = 2, BUF_T1 = 3, BUF_NONE = 4 };
// What the last active pass does with keys / values (route_build's modes)
enum { KEYS_FINAL = 0, KEYS_DROP = 1 };                 // write the sorted keys out, or not
enum { VALS_NONE = 0, VALS_FINAL = 1, VALS_CARRY = 2 };  // no values; index out; index carried only

template <int S>
struct uint_of;
template <>
struct uint_of<1> { typedef unsigned char type; };
template <>
struct uint_of<2> { typedef unsigned short type; };
template <>
struct uint_of<4> { typedef unsigned int type; };
template <>
struct uint_of<8> { typedef unsigned long long type; };

// exponent bits (all ones = inf/NaN) of the float format of this size
template <class U>
__host__ __device__ constexpr U exp_mask() {
    return sizeof(U) == 2 ? U(0x7c00u)
         : sizeof(U) == 4 ? U(0x7f800000u)
         : sizeof(U) == 8 ? U(0x7ff0000000000000ull) : U(0);
}

template <class U>
__host__ __device__ __forceinline__ U radix(U u, int kind) {
    constexpr U sign = static_cast<U>(U(1) << (8 * sizeof(U) - 1));
    if (kind == KIND_SIGNED) return static_cast<U>(u ^ sign);
    if (kind == KIND_FLOAT) {
        // selects only, no branch: with an early return per case ptxas branched around every
        // key of a onesweep tile, so each key's load waited for the previous key's branches
        // (H200, Nsight Compute: a third of a float32 pass's stall samples on those uses)
        const U mag = static_cast<U>(u & static_cast<U>(~sign));
        const U neg = static_cast<U>(U(0) - static_cast<U>(u >> (8 * sizeof(U) - 1)));  // all ones if negative
        U r = static_cast<U>(u ^ static_cast<U>(neg | sign));    // negative: ~u; positive: u | sign
        r = mag == U(0) ? sign : r;                              // -0.0 and +0.0
        return mag > exp_mask<U>() ? static_cast<U>(~U(0)) : r;  // NaN (any sign, payload)
    }
    return u;
}

// digit of pass `shift` (a multiple of GP_SORT_BITS below 8 * sizeof(U))
template <class U>
__host__ __device__ __forceinline__ unsigned int digit(U u, int kind, U flip, int shift) {
    return static_cast<unsigned int>((radix<U>(u, kind) ^ flip) >> shift) & (GP_SORT_RADIX - 1u);
}

// The route of a device-wide sort of P passes: which passes run (a pass whose digit is the
// same for all N elements is skipped: constant[p]) and, for each, the buffers it reads and
// writes. The first active pass reads the input (values: generated indices); the last
// writes the outputs (keys when keys_mode == KEYS_FINAL, values when vals_mode ==
// VALS_FINAL); in between the buffers alternate so that the last active pass lands on the
// output: keys_mode KEYS_FINAL alternates output / T0 (one temporary), KEYS_DROP T0 / T1;
// values FINAL output / T0, CARRY T0 / T1. When every digit is constant pass 0 runs (a
// stable copy). route[GP_SORT_ROUTE * p + ...] = {active, key src, key dst, value src,
// value dst, active index, active count, 0}.
__host__ __device__ inline void route_build(const int* constant, int P, int keys_mode, int vals_mode, int* route) {
    int A = 0;
    for (int p = 0; p < P; ++p) A += constant[p] ? 0 : 1;
    const bool none = A == 0;
    if (none) A = 1;
    int a = 0, kprev = BUF_IN, vprev = BUF_IN;
    for (int p = 0; p < P; ++p) {
        int* r = route + GP_SORT_ROUTE * p;
        const bool on = none ? p == 0 : !constant[p];
        for (int i = 0; i < GP_SORT_ROUTE; ++i) r[i] = 0;
        r[1] = r[2] = r[3] = r[4] = BUF_NONE;
        r[6] = A;
        if (!on) continue;
        const bool last = a == A - 1;
        const int left = A - 1 - a;  // active passes after this one
        int kd, vd;
        if (keys_mode == KEYS_FINAL)
            kd = (left % 2 == 0) ? BUF_OUT : BUF_T0;
        else
            kd = last ? BUF_NONE : (a % 2 == 0 ? BUF_T0 : BUF_T1);
        if (vals_mode == VALS_FINAL)
            vd = (left % 2 == 0) ? BUF_OUT : BUF_T0;
        else if (vals_mode == VALS_CARRY)
            vd = last ? BUF_NONE : (a % 2 == 0 ? BUF_T0 : BUF_T1);
        else
            vd = BUF_NONE;
        r[0] = 1;
        r[1] = kprev;
        r[2] = kd;
        r[3] = vals_mode == VALS_NONE ? BUF_NONE : vprev;
        r[4] = vd;
        r[5] = a;
        kprev = kd;
        vprev = vd;
        ++a;
    }
}

}  // namespace sort
}  // namespace gp
