// gparray: reducers (the per-op half of reductions and scans) and warp/block combine helpers.
//
// A reducer R is a small struct built inside the kernel from one double parameter
// (`R r(param)`: the correction of var/std, unused elsewhere) with
//   in_t, out_t, acc_t                         element, result and accumulator types
//   acc_t identity()                           neutral state
//   acc_t map(in_t v, long long j)             state of one element at reduced index j
//   acc_t combine(acc_t a, acc_t b)            associative merge (a holds the lower indices)
//   acc_t fold(acc_t a, in_t v, long long j)   combine(a, map(v, j))
//   acc_t chunk<K>(const in_t (&v)[K], j, dj)  state of K loaded elements at j, j + dj, ...
//   indexed                                    map() uses j (argmax/argmin)
//   out_t finalize(acc_t a, long long n)       result from the state of n elements
// (fold and chunk serve `base`'s defaults below), and for the loop of one thread (defaults
// in `base`: thread_t = acc_t; op_var keeps its own thread_t):
//   thread_t tstart()                           empty per-thread state
//   thread_t tchunk<K>(t, v[K], j, dj)          add K loaded elements at j, j + dj, ...
//   thread_t tchunk_uv<U, V>(t, v[U*V], j, du)  add U runs of V elements at j + u*du + e
//   thread_t tfold(t, v, j)                     add one element
//   acc_t tfinish(thread_t t)                   the state to combine across threads
// Accumulators: float32/float64 -> double, complex -> complex128, integers -> 64-bit of
// the same signedness (wrapping, so the final cast gives NumPy's modular result).
#pragma once
#include "types.cuh"
#include "complex_ops.cuh"

namespace gp {
namespace red {

// ------------------------------------------------------------------ scalar helpers
template <class T> __device__ __forceinline__ bool is_nan(T) { return false; }
template <> __device__ __forceinline__ bool is_nan<float>(float v) { return v != v; }
template <> __device__ __forceinline__ bool is_nan<double>(double v) { return v != v; }

template <class T> struct limits;
#define GP_LIMITS(T, LO, HI)                                              \
    template <> struct limits<T> {                                        \
        __device__ __forceinline__ static T lowest() { return LO; }       \
        __device__ __forceinline__ static T highest() { return HI; }      \
    };
GP_LIMITS(bool, false, true)
GP_LIMITS(signed char, -128, 127)
GP_LIMITS(short, -32768, 32767)
GP_LIMITS(int, (-2147483647 - 1), 2147483647)
GP_LIMITS(long long, (-9223372036854775807LL - 1), 9223372036854775807LL)
GP_LIMITS(unsigned char, 0, 255)
GP_LIMITS(unsigned short, 0, 65535)
GP_LIMITS(unsigned int, 0u, 4294967295u)
GP_LIMITS(unsigned long long, 0ull, 18446744073709551615ull)
GP_LIMITS(float, __int_as_float(0xff800000), __int_as_float(0x7f800000))
GP_LIMITS(double, __longlong_as_double(0xfff0000000000000ull), __longlong_as_double(0x7ff0000000000000ull))
#undef GP_LIMITS

// a + b and a * b; signed 64-bit wraps (computed unsigned, no undefined overflow).
template <class T> struct arith {
    __device__ __forceinline__ static T add(T a, T b) { return a + b; }
    __device__ __forceinline__ static T mul(T a, T b) { return a * b; }
};
template <> struct arith<long long> {
    __device__ __forceinline__ static long long add(long long a, long long b) {
        return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
    }
    __device__ __forceinline__ static long long mul(long long a, long long b) {
        return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
    }
};

__device__ __forceinline__ double div_count(double a, double n) { return a / n; }
__device__ __forceinline__ complex<double> div_count(complex<double> a, double n) {
    return complex<double>(a.re / n, a.im / n);
}

// ------------------------------------------------------------------ reducer base (CRTP)
template <class R, class A, int K>
__device__ __forceinline__ A tree(const R& r, A (&t)[K]);

template <class D, class TA, class A>
struct base {
    static constexpr bool indexed = false;  // map() ignores j: chunks may mix index runs
    static constexpr bool f32 = false;      // a float32 sum (short runs may add in float32)
    typedef A thread_t;
    __device__ __forceinline__ const D& self() const { return static_cast<const D&>(*this); }
    __device__ __forceinline__ A fold(A a, TA v, long long j) const { return self().combine(a, self().map(v, j)); }
    __device__ __forceinline__ A tstart() const { return self().identity(); }
    __device__ __forceinline__ A tfold(A t, TA v, long long j) const { return self().fold(t, v, j); }
    __device__ __forceinline__ A tfinish(A t) const { return t; }
    template <int K>
    __device__ __forceinline__ A tchunk(A t, const TA (&v)[K], long long j, long long dj) const {
        return self().combine(t, self().template chunk<K>(v, j, dj));
    }
    template <int U, int V>
    __device__ __forceinline__ A tchunk_uv(A t, const TA (&v)[U * V], long long j, long long du) const {
        if constexpr (!D::indexed) return self().combine(t, self().template chunk<U * V>(v, j, 0));
#pragma unroll
        for (int u = 0; u < U; ++u) {
            TA w[V];
#pragma unroll
            for (int e = 0; e < V; ++e) w[e] = v[u * V + e];
            t = self().combine(t, self().template chunk<V>(w, j + u * du, 1));
        }
        return t;
    }
    // pairwise (a tree of depth log2 K: short dependency chains, small rounding error)
    template <int K>
    __device__ __forceinline__ A chunk(const TA (&v)[K], long long j, long long dj) const {
        A t[K];
#pragma unroll
        for (int k = 0; k < K; ++k) t[k] = self().map(v[k], j + k * dj);
        return tree(self(), t);
    }
};

// Pairwise combine of K states in index order; the result is t[0].
template <class R, class A, int K>
__device__ __forceinline__ A tree(const R& r, A (&t)[K]) {
#pragma unroll
    for (int w = 1; w < K; w *= 2)
#pragma unroll
        for (int k = 0; k + w < K; k += 2 * w) t[k] = r.combine(t[k], t[k + w]);
    return t[0];
}

template <class A, class B> struct same_t { static constexpr bool value = false; };
template <class A> struct same_t<A, A> { static constexpr bool value = true; };

// a + b in T, as a reducer-like combiner for tree()
template <class T>
struct plus {
    __device__ __forceinline__ T combine(T a, T b) const { return a + b; }
};

// Sum of K float32 values, pairwise in float32, converted once to CT (a chunk of K <= 32
// values errs by at most log2(K) float32 roundings of its own magnitude).
template <class CT, int K>
__device__ __forceinline__ CT sum_f32(const float (&v)[K]) {
    float t[K];
#pragma unroll
    for (int k = 0; k < K; ++k) t[k] = v[k];
    return static_cast<CT>(tree(plus<float>(), t));
}

// sum: the input is cast to the result type TO first (the spec's dtype= rule), then added in CT.
// A loaded chunk of float32 values is added in float32 and converted once (sum_f32); the
// running sums stay double.
template <class TA, class TO, class CT>
struct op_sum : base<op_sum<TA, TO, CT>, TA, CT> {
    typedef TA in_t;
    typedef TO out_t;
    typedef CT acc_t;
    typedef base<op_sum<TA, TO, CT>, TA, CT> base_t;
    static constexpr bool f32 = same_t<TA, float>::value && same_t<TO, float>::value;
    __device__ explicit op_sum(double) {}
    __device__ __forceinline__ CT identity() const { return CT(0); }
    __device__ __forceinline__ CT map(TA v, long long) const { return cast<CT>(cast<TO>(v)); }
    __device__ __forceinline__ CT combine(CT a, CT b) const { return arith<CT>::add(a, b); }
    __device__ __forceinline__ TO finalize(CT a, long long) const { return cast<TO>(a); }
    template <int K>
    __device__ __forceinline__ CT chunk(const TA (&v)[K], long long j, long long dj) const {
        if constexpr (f32 && K > 1)
            return sum_f32<CT>(v);
        else
            return base_t::template chunk<K>(v, j, dj);
    }
};

template <class TA, class TO, class CT>
struct op_prod : base<op_prod<TA, TO, CT>, TA, CT> {
    typedef TA in_t;
    typedef TO out_t;
    typedef CT acc_t;
    __device__ explicit op_prod(double) {}
    __device__ __forceinline__ CT identity() const { return CT(1); }
    __device__ __forceinline__ CT map(TA v, long long) const { return cast<CT>(cast<TO>(v)); }
    __device__ __forceinline__ CT combine(CT a, CT b) const { return arith<CT>::mul(a, b); }
    __device__ __forceinline__ TO finalize(CT a, long long) const { return cast<TO>(a); }
};

// mean: sum in CT, divided by the count (0 / 0 = NaN for an empty reduction). float32 and
// complex64 divide their rounded sum in their own type, as NumPy, CuPy and PyTorch do: the mean
// stays sum(x) / n, so a sum past the type's range is inf there too (float16 divides in CT:
// NumPy divides its float16 means in float32).
template <class TA, class TO, class CT>
struct op_mean : base<op_mean<TA, TO, CT>, TA, CT> {
    typedef TA in_t;
    typedef TO out_t;
    typedef CT acc_t;
    typedef base<op_mean<TA, TO, CT>, TA, CT> base_t;
    __device__ explicit op_mean(double) {}
    __device__ __forceinline__ CT identity() const { return CT(0); }
    __device__ __forceinline__ CT map(TA v, long long) const { return cast<CT>(v); }
    __device__ __forceinline__ CT combine(CT a, CT b) const { return a + b; }
    template <int K>
    __device__ __forceinline__ CT chunk(const TA (&v)[K], long long j, long long dj) const {
        if constexpr (same_t<TA, float>::value && K > 1)  // as op_sum
            return sum_f32<CT>(v);
        else
            return base_t::template chunk<K>(v, j, dj);
    }
    __device__ __forceinline__ TO finalize(CT a, long long n) const {
        if constexpr (same_t<TO, float>::value) {
            return cast<float>(a) / static_cast<float>(n);
        } else if constexpr (same_t<TO, complex<float>>::value) {
            const TO s = cast<TO>(a);
            return TO(s.re / static_cast<float>(n), s.im / static_cast<float>(n));
        } else {
            return cast<TO>(div_count(a, static_cast<double>(n)));
        }
    }
};

// max / min: NaN propagates (the first NaN met wins, any NaN is a NaN).
template <class TA>
struct op_max : base<op_max<TA>, TA, TA> {
    typedef TA in_t;
    typedef TA out_t;
    typedef TA acc_t;
    __device__ explicit op_max(double) {}
    __device__ __forceinline__ TA identity() const { return limits<TA>::lowest(); }
    __device__ __forceinline__ TA map(TA v, long long) const { return v; }
    __device__ __forceinline__ TA combine(TA a, TA b) const {
        if (is_nan(a)) return a;
        return (b > a || is_nan(b)) ? b : a;
    }
    __device__ __forceinline__ TA finalize(TA a, long long) const { return a; }
};

template <class TA>
struct op_min : base<op_min<TA>, TA, TA> {
    typedef TA in_t;
    typedef TA out_t;
    typedef TA acc_t;
    __device__ explicit op_min(double) {}
    __device__ __forceinline__ TA identity() const { return limits<TA>::highest(); }
    __device__ __forceinline__ TA map(TA v, long long) const { return v; }
    __device__ __forceinline__ TA combine(TA a, TA b) const {
        if (is_nan(a)) return a;
        return (b < a || is_nan(b)) ? b : a;
    }
    __device__ __forceinline__ TA finalize(TA a, long long) const { return a; }
};

// argmax / argmin: (value, index) pairs; ties and NaNs resolve to the lowest index, a NaN
// beats every number (NumPy: the first NaN is the answer). i < 0 marks the empty state.
template <class T>
struct arg_t {
    T v;
    long long i;
};

template <class TA, bool MAX>
struct op_arg : base<op_arg<TA, MAX>, TA, arg_t<TA>> {
    typedef TA in_t;
    typedef long long out_t;
    typedef arg_t<TA> acc_t;
    static constexpr bool indexed = true;
    // b strictly better than a (a NaN is better than any number, nothing beats a NaN)
    __device__ __forceinline__ static bool better(TA b, TA a) {
        return (MAX ? (b > a) : (b < a)) || (is_nan(b) && !is_nan(a));
    }
    __device__ explicit op_arg(double) {}
    __device__ __forceinline__ acc_t identity() const {
        acc_t a;
        a.v = limits<TA>::lowest();
        a.i = -1;
        return a;
    }
    __device__ __forceinline__ acc_t map(TA v, long long j) const {
        acc_t a;
        a.v = v;
        a.i = j;
        return a;
    }
    __device__ __forceinline__ acc_t combine(acc_t a, acc_t b) const {
        if (a.i < 0) return b;
        if (b.i < 0) return a;
        const bool an = is_nan(a.v), bn = is_nan(b.v);
        bool take_b;
        if (an || bn) {
            take_b = (an && bn) ? b.i < a.i : bn;
        } else {
            const bool better = MAX ? (b.v > a.v) : (b.v < a.v);
            take_b = better || (b.v == a.v && b.i < a.i);
        }
        return take_b ? b : a;
    }
    // K elements at ascending indices j, j + dj, ...: the first best one, then one combine
    template <int K>
    __device__ __forceinline__ acc_t chunk(const TA (&v)[K], long long j, long long dj) const {
        TA best = v[0];
        int bk = 0;
#pragma unroll
        for (int k = 1; k < K; ++k)
            if (better(v[k], best)) {
                best = v[k];
                bk = k;
            }
        return map(best, j + bk * dj);
    }
    // U runs of V elements (run u starts at j + u * du, du >= V): values compared first, one
    // combine with the thread's state
    template <int U, int V>
    __device__ __forceinline__ acc_t tchunk_uv(acc_t t, const TA (&v)[U * V], long long j, long long du) const {
        TA best = v[0];
        int bk = 0;
#pragma unroll
        for (int k = 1; k < U * V; ++k)
            if (better(v[k], best)) {
                best = v[k];
                bk = k;
            }
        return combine(t, map(best, j + (bk / V) * du + bk % V));
    }
    __device__ __forceinline__ long long finalize(acc_t a, long long) const { return a.i; }
};
template <class TA> using op_argmax = op_arg<TA, true>;
template <class TA> using op_argmin = op_arg<TA, false>;

// count_nonzero (complex: either part nonzero; bool: True).
template <class TA>
struct op_count_nonzero : base<op_count_nonzero<TA>, TA, long long> {
    typedef TA in_t;
    typedef long long out_t;
    typedef long long acc_t;
    __device__ explicit op_count_nonzero(double) {}
    __device__ __forceinline__ long long identity() const { return 0; }
    __device__ __forceinline__ long long map(TA v, long long) const { return cast<bool>(v) ? 1 : 0; }
    __device__ __forceinline__ long long combine(long long a, long long b) const { return a + b; }
    __device__ __forceinline__ long long finalize(long long a, long long) const { return a; }
};

template <class TA, bool ALL>
struct op_logical : base<op_logical<TA, ALL>, TA, bool> {
    typedef TA in_t;
    typedef bool out_t;
    typedef bool acc_t;
    __device__ explicit op_logical(double) {}
    __device__ __forceinline__ bool identity() const { return ALL; }
    __device__ __forceinline__ bool map(TA v, long long) const { return cast<bool>(v); }
    __device__ __forceinline__ bool combine(bool a, bool b) const { return ALL ? (a && b) : (a || b); }
    __device__ __forceinline__ bool finalize(bool a, long long) const { return a; }
};
template <class TA> using op_all = op_logical<TA, true>;
template <class TA> using op_any = op_logical<TA, false>;

// vector norms (linalg.vector_norm; matrix_norm's 'fro' and its column and row sums):
//   KIND 0  count of nonzeros (a NaN counts)         KIND 3  max |x| (0 for nothing)
//   KIND 1  sum |x|                                  KIND 4  min |x| (+inf for nothing)
//   KIND 2  sqrt(sum |x|^2), |x|^2 = re^2 + im^2     KIND 5  (sum |x|^p)^(1/p), p the parameter
// As NumPy computes them: |x| (hypot for complex), squares and powers in the result's
// precision F (float for float32, complex64 and float16, double otherwise), so they overflow
// and underflow where NumPy's do; states are double, and a sum is rounded to the result type
// TO before the root (a sum beyond TO's range is inf, as NumPy's TO sum). NaN propagates.
template <class TO> struct norm_ft { typedef float type; };
template <> struct norm_ft<double> { typedef double type; };

__device__ __forceinline__ float n_fabs(float v) { return fabsf(v); }
__device__ __forceinline__ double n_fabs(double v) { return fabs(v); }
__device__ __forceinline__ float n_hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double n_hypot(double a, double b) { return hypot(a, b); }
__device__ __forceinline__ float n_sqrt(float v) { return sqrtf(v); }
__device__ __forceinline__ double n_sqrt(double v) { return sqrt(v); }
__device__ __forceinline__ float n_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double n_pow(double a, double b) { return pow(a, b); }

template <class TA, class TO, int KIND>
struct op_norm : base<op_norm<TA, TO, KIND>, TA, double> {
    typedef TA in_t;
    typedef TO out_t;
    typedef double acc_t;
    typedef typename norm_ft<TO>::type F;
    typedef base<op_norm<TA, TO, KIND>, TA, double> base_t;
    static_assert(KIND >= 0 && KIND <= 5, "op_norm: KIND is 0..5");
    F p;
    __device__ explicit op_norm(double param) : p(static_cast<F>(param)) {}
    // |v|, |v|^2 or |v|^p in F
    __device__ __forceinline__ F absval(TA v) const {
        if constexpr (is_complex<TA>::value) return n_hypot(static_cast<F>(v.re), static_cast<F>(v.im));
        else return n_fabs(cast<F>(v));
    }
    __device__ __forceinline__ F term(TA v) const {
        if constexpr (KIND == 2) {
            if constexpr (is_complex<TA>::value) {
                const F a = static_cast<F>(v.re), b = static_cast<F>(v.im);
                return add_rn(mul_rn(a, a), mul_rn(b, b));
            } else {
                const F a = cast<F>(v);
                return mul_rn(a, a);
            }
        } else if constexpr (KIND == 5) {
            return n_pow(absval(v), p);
        } else {
            return absval(v);
        }
    }
    __device__ __forceinline__ double identity() const {
        return KIND == 4 ? limits<double>::highest() : 0.0;
    }
    __device__ __forceinline__ double map(TA v, long long) const {
        if constexpr (KIND == 0) return cast<bool>(v) ? 1.0 : 0.0;
        else return static_cast<double>(term(v));
    }
    __device__ __forceinline__ double combine(double a, double b) const {
        if constexpr (KIND == 3) {
            if (is_nan(a)) return a;
            return (b > a || is_nan(b)) ? b : a;
        } else if constexpr (KIND == 4) {
            if (is_nan(a)) return a;
            return (b < a || is_nan(b)) ? b : a;
        } else {
            return a + b;
        }
    }
    // sums in float precision: a loaded chunk is added in float and converted once (as op_sum)
    template <int K>
    __device__ __forceinline__ double chunk(const TA (&v)[K], long long j, long long dj) const {
        if constexpr ((KIND == 1 || KIND == 2 || KIND == 5) && same_t<F, float>::value && K > 1) {
            float t[K];
#pragma unroll
            for (int k = 0; k < K; ++k) t[k] = term(v[k]);
            return static_cast<double>(tree(plus<float>(), t));
        } else {
            return base_t::template chunk<K>(v, j, dj);
        }
    }
    __device__ __forceinline__ TO finalize(double a, long long) const {
        if constexpr (KIND == 2 || KIND == 5) {
            const F s = cast<F>(cast<TO>(a));  // the sum in TO first: inf beyond its range
            return cast<TO>(KIND == 2 ? n_sqrt(s) : n_pow(s, F(1) / p));
        } else {
            return cast<TO>(a);
        }
    }
};

// var / std: Welford/Chan states (count, mean, sum of squared deviations) in double; states
// merge with Chan's formula, so a large mean never cancels catastrophically.
// One thread's loop keeps shifted sums instead (no division per element or chunk): a chunk
// of K loaded values is shifted by its own first value in the input's precision (float32
// stays float32: s1 = sum(x - x0), s2 = sum((x - x0)^2), pairwise), which bounds the
// chunk's rounding by its own spread; the chunk then adds to double sums about the thread's
// first value C: S1 += K (m - C), S2 += M2_chunk + K (m - C)^2 (parallel axes).
struct welford_t {
    double n, mean, m2;
};
struct var_thread_t {
    double n, c, s1, s2;
};

template <class TA> struct var_ct { typedef double type; };
template <> struct var_ct<float> { typedef float type; };

template <class TA, class TO, bool STD>
struct op_var {
    typedef TA in_t;
    typedef TO out_t;
    typedef welford_t acc_t;
    typedef var_thread_t thread_t;
    typedef typename var_ct<TA>::type F;
    static constexpr bool indexed = false;
    double corr;
    __device__ explicit op_var(double c) : corr(c) {}
    __device__ __forceinline__ welford_t identity() const { return welford_t{0.0, 0.0, 0.0}; }
    __device__ __forceinline__ welford_t map(TA v, long long) const {
        return welford_t{1.0, cast<double>(v), 0.0};
    }
    __device__ __forceinline__ welford_t combine(welford_t a, welford_t b) const {
        if (a.n == 0.0) return b;
        if (b.n == 0.0) return a;
        const double n = a.n + b.n;
        const double d = b.mean - a.mean;
        const double f = b.n / n;
        return welford_t{n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
    }
    // thread loop (op_var has no fold/chunk: only base's thread-loop defaults use those)
    __device__ __forceinline__ thread_t tstart() const { return thread_t{0.0, 0.0, 0.0, 0.0}; }
    __device__ __forceinline__ thread_t tfold(thread_t t, TA v, long long) const {
        const double x = cast<double>(v);
        if (t.n == 0.0) t.c = x;
        const double d = x - t.c;
        return thread_t{t.n + 1.0, t.c, t.s1 + d, t.s2 + d * d};
    }
    template <int K>
    __device__ __forceinline__ thread_t tchunk(thread_t t, const TA (&v)[K], long long, long long) const {
        const F x0 = cast<F>(v[0]);
        F d1[K], d2[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const F d = cast<F>(v[k]) - x0;
            d1[k] = d;
            d2[k] = d * d;
        }
        const double s1 = static_cast<double>(tree(plus<F>(), d1));
        const double s2 = static_cast<double>(tree(plus<F>(), d2));
        const double x0d = static_cast<double>(x0);
        if (t.n == 0.0) t.c = x0d;
        const double dm = (x0d - t.c) + s1 * (1.0 / K);  // chunk mean - C
        const double m2 = s2 - s1 * s1 * (1.0 / K);
        return thread_t{t.n + K, t.c, t.s1 + K * dm, t.s2 + (m2 < 0.0 ? 0.0 : m2) + K * dm * dm};  // a NaN stays NaN
    }
    template <int U, int V>
    __device__ __forceinline__ thread_t tchunk_uv(thread_t t, const TA (&v)[U * V], long long, long long) const {
        return tchunk<U * V>(t, v, 0, 0);
    }
    __device__ __forceinline__ welford_t tfinish(thread_t t) const {
        if (t.n == 0.0) return identity();
        const double m2 = t.s2 - t.s1 * t.s1 / t.n;
        return welford_t{t.n, t.c + t.s1 / t.n, m2 < 0.0 ? 0.0 : m2};
    }
    __device__ __forceinline__ TO finalize(welford_t a, long long) const {
        const double dof = a.n - corr;
        double r = dof > 0.0 ? a.m2 / dof : __longlong_as_double(0x7ff8000000000000ull);
        if (STD) r = sqrt(r);
        return cast<TO>(r);
    }
};

// ------------------------------------------------------------------ warp / block helpers
// Shuffles of any trivially copyable state, word by word (f shuffles one 32-bit word).
template <class T, class F>
__device__ __forceinline__ T shfl_words(T v, F f) {
    constexpr int W = (sizeof(T) + 3) / 4;
    int w[W];
    w[W - 1] = 0;
    memcpy(w, &v, sizeof(T));
#pragma unroll
    for (int i = 0; i < W; ++i) w[i] = f(w[i]);
    T r;
    memcpy(&r, w, sizeof(T));
    return r;
}
template <class T>
__device__ __forceinline__ T shfl_down(T v, int delta) {
    return shfl_words(v, [delta](int x) { return __shfl_down_sync(0xffffffffu, x, delta); });
}
template <class T>
__device__ __forceinline__ T shfl_up(T v, int delta) {
    return shfl_words(v, [delta](int x) { return __shfl_up_sync(0xffffffffu, x, delta); });
}
template <class T>
__device__ __forceinline__ T shfl_idx(T v, int src) {
    return shfl_words(v, [src](int x) { return __shfl_sync(0xffffffffu, x, src); });
}

// Combine of the 32 lanes' states in lane order; the total is valid in lane 0.
template <class R, class A>
__device__ __forceinline__ A warp_reduce(const R& r, A v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = r.combine(v, shfl_down(v, o));
    return v;
}

// Inclusive scan over the 32 lanes (lane order).
template <class R, class A>
__device__ __forceinline__ A warp_inclusive_scan(const R& r, A v, int lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const A u = shfl_up(v, o);
        if (lane >= o) v = r.combine(u, v);
    }
    return v;
}

// Shared storage for N states of a type that may have constructors.
template <class A, int N>
struct smem_slots {
    __align__(16) unsigned char raw[N * sizeof(A)];
    __device__ __forceinline__ A* ptr() { return reinterpret_cast<A*>(raw); }
};

// Combine of every thread's state in a block of NT threads (NT / 32 warps); valid in thread 0.
template <int NT, class R, class A>
__device__ __forceinline__ A block_reduce(const R& r, A v, A* slots) {
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = warp_reduce(r, v);
    if (lane == 0) slots[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < NT / 32 ? slots[lane] : r.identity();
        v = warp_reduce(r, v);
    }
    return v;
}

}  // namespace red
}  // namespace gp
