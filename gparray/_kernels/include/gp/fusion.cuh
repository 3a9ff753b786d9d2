// gparray: fused elementwise kernels. A tree of elementwise operations is one C++ type built
// from the same functors as the unfused kernels (functors*.cuh); the kernel evaluates the
// tree per element and stores once, so a chain reads its inputs once and writes one result.
//
//   gp::fuse::In<I, T>               input array I, elements of type T
//   gp::fuse::Sc<S, T>               scalar slot S of the parameters, held as T
//   gp::fuse::Un<Op, TO, CT, A>      TO(Op(CT(A)))          (what gp_unary_* computes)
//   gp::fuse::Bin<Op, TO, CT, A, B>  TO(Op(CT(A), CT(B)))   (what gp_binary_* computes)
//
// Every node rounds to its own result type TO, exactly as the unfused launch would store
// it, so a fused tree gives bit-identical results (no reassociation, no wider
// intermediates). Instances are named by name expressions built in
// gparray/_engine/_fusion.py; the name holds the tree's structure and dtypes, never sizes or
// scalar values (those travel in the parameters).
#pragma once
#include "types.cuh"

#ifndef GP_BLOCK
#define GP_BLOCK 256
#endif

namespace gp {
namespace fuse {

// one scalar by value: the host writes the value's bytes as T (at most 16: complex128)
struct alignas(16) Slot {
    unsigned char b[16];
};

template <int NIN, int NSC>
struct Params {
    const void* in[NIN];
    Slot sc[NSC > 0 ? NSC : 1];
};

template <int I, class T>
struct In {
    using type = T;
    template <class P>
    __device__ __forceinline__ static T eval(const P& p, long long i) {
        return static_cast<const T*>(p.in[I])[i];
    }
};

template <int S, class T>
struct Sc {
    using type = T;
    template <class P>
    __device__ __forceinline__ static T eval(const P& p, long long) {
        T v;
        memcpy(&v, p.sc[S].b, sizeof(T));
        return v;
    }
};

template <class Op, class TO, class CT, class A>
struct Un {
    using type = TO;
    template <class P>
    __device__ __forceinline__ static TO eval(const P& p, long long i) {
        return gp::cast<TO>(Op()(gp::cast<CT>(A::eval(p, i))));
    }
};

template <class Op, class TO, class CT, class A, class B>
struct Bin {
    using type = TO;
    template <class P>
    __device__ __forceinline__ static TO eval(const P& p, long long i) {
        return gp::cast<TO>(Op()(gp::cast<CT>(A::eval(p, i)), gp::cast<CT>(B::eval(p, i))));
    }
};

}  // namespace fuse
}  // namespace gp

// ---------------------------------------------------------------- out[i] = E(inputs[i], scalars)
// All inputs and the output C-contiguous and of one shape (the planner's "contig" layout
// class); a grid-stride loop over the flat index.
template <class TO, class E, int NIN, int NSC>
__global__ void __launch_bounds__(GP_BLOCK) gp_fused_contig(TO* __restrict__ out, gp::fuse::Params<NIN, NSC> p,
                                                          long long n) {
    const long long stride = static_cast<long long>(gridDim.x) * GP_BLOCK;
    for (long long i = static_cast<long long>(blockIdx.x) * GP_BLOCK + threadIdx.x; i < n; i += stride)
        out[i] = gp::cast<TO>(E::eval(p, i));
}
