// gparray: transcendental functors for real and complex floating-point types.
//
// Real float32/float64 use CUDA's math builtins (C99 special values). Complex functions
// are computed in double precision (complex64 rounds the complex128 result): gp::cm holds
// C99 Annex G implementations ported from FreeBSD msun as adopted by NumPy's
// npy_math_complex.c.src (BSD-2-Clause, Copyright (c) 2007, 2011 David Schultz, 2012
// Stephen Montgomery-Smith), with log/log1p near |z| = 1 made accurate by exact products,
// csqrt rescaling both parts and subnormal inputs, and expm1 keeping the spec's zeros.
// The heavy complex functions are __noinline__ so each compiles once per module.
#pragma once
#include "functors.cuh"
#include "functors_int.cuh"

#ifndef GP_NOINLINE
#define GP_NOINLINE __noinline__
#endif

namespace gp {
namespace cm {

typedef complex<double> cd;

constexpr double LN2 = 0.693147180559945309417232121458176568;
constexpr double LOG2E = 1.442695040888963407359924681001892137;
constexpr double LOG10E = 0.434294481903251827651128918916605082;
constexpr double PI_2 = 1.570796326794896619231321691639751442;
constexpr double E = 2.718281828459045235360287471352662498;
constexpr double DMAX = 1.7976931348623157e308;
constexpr double DMIN = 2.2250738585072014e-308;   // smallest normal
constexpr double EPS = 2.220446049250313e-16;
constexpr double SCALED_CEXP_LOWER = 710.47586007394386;
constexpr double SCALED_CEXP_UPPER = 1454.9159319953251;

__device__ __forceinline__ double dinf() { return inf_of<double>(); }
__device__ __forceinline__ double dnan() { return nan_of<double>(); }

// s + err == a + b exactly (Knuth's TwoSum; no multiplications, so no FMA contraction).
__device__ __forceinline__ void two_sum(double a, double b, double& s, double& err) {
    s = a + b;
    const double bb = s - a;
    err = (a - (s - bb)) + (b - bb);
}
// Accumulate t into (s, c) as in Ogita-Rump-Oishi Sum2.
__device__ __forceinline__ void sum2_add(double& s, double& c, double t) {
    double e;
    two_sum(s, t, s, e);
    c += e;
}

// x*x + y*y - 1, accurate near the unit circle (exact products via fma).
__device__ __forceinline__ double x2y2m1(double x, double y) {
    const double p = __dmul_rn(x, x), e = fma(x, x, -p);
    const double q = __dmul_rn(y, y), f = fma(y, y, -q);
    double s = -1.0, c = 0.0;
    sum2_add(s, c, p);
    sum2_add(s, c, q);
    sum2_add(s, c, e);
    sum2_add(s, c, f);
    return s + c;
}

// exp(x) * (cos(y), sin(y)) * 2^expt for x in [SCALED_CEXP_LOWER, SCALED_CEXP_UPPER].
__device__ __forceinline__ cd scaled_cexp(double x, double y, int expt) {
    const int k = 1799;
    const double kln2 = k * LN2;
    int ex, excos, exsin;
    const double mant = frexp(exp(x - kln2), &ex);
    const double mantcos = frexp(cos(y), &excos);
    const double mantsin = frexp(sin(y), &exsin);
    expt += ex + k;
    return cd(ldexp(mant * mantcos, expt + excos), ldexp(mant * mantsin, expt + exsin));
}

GP_NOINLINE __device__ cd cexp(cd z) {
    const double r = z.re, i = z.im;
    if (isfinite(r)) {
        if (r >= SCALED_CEXP_LOWER && r <= SCALED_CEXP_UPPER) return scaled_cexp(r, i, 0);
        const double x = exp(r);
        if (isfinite(i)) {
            if (i == 0) return cd(x, i);
            return cd(x * cos(i), x * sin(i));
        }
        return cd(dnan(), copysign(dnan(), i));
    }
    if (isnan(r)) {
        if (i == 0) return z;
        return cd(r, copysign(dnan(), i));
    }
    if (r > 0) {  // +inf
        if (i == 0) return cd(r, i);
        if (isfinite(i)) return cd(r * cos(i), r * sin(i));
        return cd(r, dnan());
    }
    // -inf
    if (isfinite(i)) {
        return cd(0.0 * cos(i), 0.0 * sin(i));
    }
    return cd(0.0, copysign(0.0, i));  // signs unspecified by C99 and the spec
}

// log|z| and arg z (CPython's algorithm via NumPy, plus x2y2m1 near |z| = 1).
GP_NOINLINE __device__ cd clog(cd z) {
    const double ax = fabs(z.re), ay = fabs(z.im);
    double rr;
    if (isnan(z.re) || isnan(z.im)) {
        if (isinf(z.re) || isinf(z.im)) return cd(dinf(), dnan());
        return cd(dnan(), dnan());
    }
    if (ax > DMAX / 4 || ay > DMAX / 4) {
        rr = log(hypot(ax / 2, ay / 2)) + LN2;
    } else if (ax < DMIN && ay < DMIN) {
        if (ax > 0 || ay > 0) {
            rr = log(hypot(ldexp(ax, 53), ldexp(ay, 53))) - 53 * LN2;
        } else {
            return cd(-dinf(), atan2(z.im, z.re));
        }
    } else {
        const double h = hypot(ax, ay);
        if (0.71 <= h && h <= 1.73) {
            rr = log1p(x2y2m1(ax, ay)) / 2;
        } else {
            rr = log(h);
        }
    }
    return cd(rr, atan2(z.im, z.re));
}

// log(1 + z), accurate for small |z|, near |1 + z| = 1 and near z = -1.
GP_NOINLINE __device__ cd clog1p(cd z) {
    const double x = z.re, y = z.im;
    if (!isfinite(x) || !isfinite(y) || fabs(x) > 1e150 || fabs(y) > 1e150) return clog(cd(x + 1.0, y));
    // |1 + z|^2 - 1 = 2x + x^2 + y^2, summed from exact terms
    const double p = __dmul_rn(x, x), e = fma(x, x, -p);
    const double q = __dmul_rn(y, y), f = fma(y, y, -q);
    double s = 2.0 * x, c = 0.0;
    sum2_add(s, c, p);
    sum2_add(s, c, q);
    sum2_add(s, c, e);
    sum2_add(s, c, f);
    const double m = s + c;
    double rr;
    if (m > 1e300 || m < -0.5) {
        // far from |1 + z| = 1: log|1 + z| directly; below, 1 + x is exact or (x > -0.5)
        // within half an ulp of a number >= 0.5, where rounding m to double would cost
        // up to 1e-16 / (1 + m) relative (z near -1: SciPy's complex logsumexp)
        rr = log(hypot(x + 1.0, y));
    } else {
        rr = log1p(m) / 2;
    }
    return cd(rr, atan2(y, x + 1.0));
}

GP_NOINLINE __device__ cd csqrt(cd z) {
    double a = z.re, b = z.im;
    if (a == 0 && b == 0) return cd(0.0, b);
    if (isinf(b)) return cd(dinf(), b);
    if (isnan(a)) return cd(a, dnan());
    if (isinf(a)) {
        // csqrt(inf + NaN i) = inf + NaN i; csqrt(inf + y i) = inf + 0 i
        // csqrt(-inf + NaN i) = NaN +- inf i; csqrt(-inf + y i) = 0 + inf i
        if (signbit(a)) return cd(fabs(b - b), copysign(a, b));
        return cd(a, copysign(b - b, b));
    }
    // b NaN falls through and gives NaN + NaN i
    const double THRESH = 7.446288774449766337959726e+307;  // DBL_MAX / (1 + sqrt(2))
    double scale = 1.0;
    if (fabs(a) >= THRESH || fabs(b) >= THRESH) {
        a *= 0.25;
        b *= 0.25;
        scale = 2.0;
    } else if (fabs(a) <= 4 * DMIN && fabs(b) <= 4 * DMIN) {
        a *= 18014398509481984.0;  // 2^54
        b *= 18014398509481984.0;
        scale = 7.450580596923828125e-9;  // 2^-27
    }
    double rx, ry;
    if (a >= 0) {
        const double t = sqrt((a + hypot(a, b)) * 0.5);
        rx = t;
        ry = b / (2 * t);
    } else {
        const double t = sqrt((-a + hypot(a, b)) * 0.5);
        rx = fabs(b) / (2 * t);
        ry = copysign(t, b);
    }
    return cd(rx * scale, ry * scale);
}

GP_NOINLINE __device__ cd ccosh(cd z) {
    const double CCOSH_BIG = 22.0;
    const double CCOSH_HUGE = 8.9884656743115795e+307;
    const double x = z.re, y = z.im;
    const bool xfinite = isfinite(x), yfinite = isfinite(y);
    if (xfinite && yfinite) {
        if (y == 0) return cd(cosh(x), x * y);
        const double absx = fabs(x);
        if (absx < CCOSH_BIG) return cd(cosh(x) * cos(y), sinh(x) * sin(y));
        if (absx < SCALED_CEXP_LOWER) {
            const double h = exp(absx) * 0.5;
            return cd(h * cos(y), copysign(h, x) * sin(y));
        }
        if (absx < SCALED_CEXP_UPPER) {
            const cd w = scaled_cexp(absx, y, -1);
            return cd(w.re, w.im * copysign(1.0, x));
        }
        const double h = CCOSH_HUGE * x;
        return cd(h * h * cos(y), h * sin(y));
    }
    if (x == 0 && !yfinite) return cd(y - y, copysign(0.0, x * (y - y)));
    if (y == 0 && !xfinite) return cd(x * x, copysign(0.0, x) * y);
    if (xfinite && !yfinite) return cd(y - y, x * (y - y));
    if (isinf(x)) {
        if (!yfinite) return cd(x * x, x * (y - y));
        return cd((x * x) * cos(y), x * sin(y));
    }
    return cd((x * x) * (y - y), (x + x) * (y - y));
}

GP_NOINLINE __device__ cd csinh(cd z) {
    const double CSINH_BIG = 22.0;
    const double CSINH_HUGE = 8.9884656743115795e+307;
    const double x = z.re, y = z.im;
    const bool xfinite = isfinite(x), yfinite = isfinite(y);
    if (xfinite && yfinite) {
        if (y == 0) return cd(sinh(x), y);
        const double absx = fabs(x);
        if (absx < CSINH_BIG) return cd(sinh(x) * cos(y), cosh(x) * sin(y));
        if (absx < SCALED_CEXP_LOWER) {
            const double h = exp(absx) * 0.5;
            return cd(copysign(h, x) * cos(y), h * sin(y));
        }
        if (absx < SCALED_CEXP_UPPER) {
            const cd w = scaled_cexp(absx, y, -1);
            return cd(w.re * copysign(1.0, x), w.im);
        }
        const double h = CSINH_HUGE * x;
        return cd(h * cos(y), h * h * sin(y));
    }
    if (x == 0 && !yfinite) return cd(copysign(0.0, x * (y - y)), y - y);
    if (y == 0 && !xfinite) {
        if (isnan(x)) return z;
        return cd(x, copysign(0.0, y));
    }
    if (xfinite && !yfinite) return cd(y - y, x * (y - y));
    if (!xfinite && !isnan(x)) {
        if (!yfinite) return cd(x * x, x * (y - y));
        return cd(x * cos(y), dinf() * sin(y));
    }
    return cd((x * x) * (y - y), (x + x) * (y - y));
}

GP_NOINLINE __device__ cd ctanh(cd z) {
    const double x = z.re, y = z.im;
    if (!isfinite(x)) {
        if (isnan(x)) return cd(x, (y == 0 ? y : x * y));
        // ctanh(+-inf + i y) = +-1 + i 0 with the sign of y (the spec's 1 + 0j for y > 0;
        // C99's sign of sin(2y) only differs in a zero's sign)
        return cd(copysign(1.0, x), copysign(0.0, y));
    }
    // ctanh(+-0 + i NaN) = ctanh(+-0 +- i inf) = +-0 + i NaN (C11, the spec)
    if (!isfinite(y)) return cd(x == 0 ? x : y - y, y - y);
    if (fabs(x) >= 22.0) {
        const double exp_mx = exp(-fabs(x));
        return cd(copysign(1.0, x), 4 * sin(y) * cos(y) * exp_mx * exp_mx);
    }
    // Kahan's algorithm
    const double t = tan(y);
    const double beta = 1 + t * t;
    const double s = sinh(x);
    const double rho = sqrt(1 + s * s);
    const double denom = 1 + beta * s * s;
    return cd((beta * rho * s) / denom, t / denom);
}

// ----------------------------------------------------------- inverse functions (catrig)
__device__ __forceinline__ double f_hyp(double a, double b, double hypot_a_b) {
    if (b < 0) return (hypot_a_b - b) / 2;
    if (b == 0) return a / 2;
    return a * a / (hypot_a_b + b) / 2;
}

__device__ __forceinline__ void do_hard_work(double x, double y, double* rx, int* B_is_usable, double* B,
                                             double* sqrt_A2my2, double* new_y) {
    const double A_crossover = 10.0;
    const double B_crossover = 0.6417;
    const double FOUR_SQRT_MIN = 5.9666725849601654e-154;
    const double R = hypot(x, y + 1);
    const double S = hypot(x, y - 1);
    double A = (R + S) / 2;
    if (A < 1) A = 1;
    if (A < A_crossover) {
        if (y == 1 && x < EPS * EPS / 128) {
            *rx = sqrt(x);
        } else if (x >= EPS * fabs(y - 1)) {
            const double Am1 = f_hyp(x, 1 + y, R) + f_hyp(x, 1 - y, S);
            *rx = log1p(Am1 + sqrt(Am1 * (A + 1)));
        } else if (y < 1) {
            *rx = x / sqrt((1 - y) * (1 + y));
        } else {
            *rx = log1p((y - 1) + sqrt((y - 1) * (y + 1)));
        }
    } else {
        *rx = log(A + sqrt(A * A - 1));
    }
    *new_y = y;
    if (y < FOUR_SQRT_MIN) {
        *B_is_usable = 0;
        *sqrt_A2my2 = A * (2 / EPS);
        *new_y = y * (2 / EPS);
        return;
    }
    *B = y / A;
    *B_is_usable = 1;
    if (*B > B_crossover) {
        *B_is_usable = 0;
        if (y == 1 && x < EPS / 128) {
            *sqrt_A2my2 = sqrt(x) * sqrt((A + y) / 2);
        } else if (x >= EPS * fabs(y - 1)) {
            const double Amy = f_hyp(x, y + 1, R) + f_hyp(x, y - 1, S);
            *sqrt_A2my2 = sqrt(Amy * (A + y));
        } else if (y > 1) {
            *sqrt_A2my2 = x * (4 / EPS / EPS) * y / sqrt((y + 1) * (y - 1));
            *new_y = y * (4 / EPS / EPS);
        } else {
            *sqrt_A2my2 = sqrt((1 - y) * (1 + y));
        }
    }
}

__device__ __forceinline__ void clog_for_large_values(double x, double y, double* rr, double* ri) {
    const double QUARTER_SQRT_MAX = 3.3519519824856489e+153;
    const double SQRT_MIN = 1.4916681462400413e-154;
    double ax = fabs(x), ay = fabs(y);
    if (ax < ay) {
        const double t = ax;
        ax = ay;
        ay = t;
    }
    if (ax > DMAX / 2) {
        *rr = log(hypot(x / E, y / E)) + 1;
    } else if (ax > QUARTER_SQRT_MAX || ay < SQRT_MIN) {
        *rr = log(hypot(x, y));
    } else {
        *rr = log(ax * ax + ay * ay) / 2;
    }
    *ri = atan2(y, x);
}

GP_NOINLINE __device__ cd cacos(cd z) {
    const double SQRT_6_EPSILON = 3.65002414998885671e-08;
    const double pio2_lo = 6.1232339957367659e-17;
    const double RECIP_EPSILON = 1.0 / EPS;
    const double pio2_hi = PI_2;
    const double x = z.re, y = z.im;
    const bool sx = signbit(x), sy = signbit(y);
    const double ax = fabs(x), ay = fabs(y);
    double rx, ry, B, sqrt_A2mx2, new_x, wx, wy;
    int B_is_usable;
    if (isnan(x) || isnan(y)) {
        if (isinf(x)) return cd(y + y, -dinf());
        if (isinf(y)) return cd(x + x, -y);
        if (x == 0) return cd(pio2_hi + pio2_lo, y + y);
        return cd(dnan(), dnan());
    }
    if (ax > RECIP_EPSILON || ay > RECIP_EPSILON) {
        clog_for_large_values(x, y, &wx, &wy);
        rx = fabs(wy);
        ry = wx + LN2;
        if (!sy) ry = -ry;
        return cd(rx, ry);
    }
    if (x == 1 && y == 0) return cd(0.0, -y);
    if (ax < SQRT_6_EPSILON / 4 && ay < SQRT_6_EPSILON / 4) return cd(pio2_hi - (x - pio2_lo), -y);
    do_hard_work(ay, ax, &ry, &B_is_usable, &B, &sqrt_A2mx2, &new_x);
    if (B_is_usable) {
        rx = sx ? acos(-B) : acos(B);
    } else {
        rx = sx ? atan2(sqrt_A2mx2, -new_x) : atan2(sqrt_A2mx2, new_x);
    }
    if (!sy) ry = -ry;
    return cd(rx, ry);
}

GP_NOINLINE __device__ cd casinh(cd z) {
    const double SQRT_6_EPSILON = 3.65002414998885671e-08;
    const double RECIP_EPSILON = 1.0 / EPS;
    const double x = z.re, y = z.im;
    const double ax = fabs(x), ay = fabs(y);
    double rx, ry, B, sqrt_A2my2, new_y, wx, wy;
    int B_is_usable;
    if (isnan(x) || isnan(y)) {
        if (isinf(x)) return cd(x, y + y);
        if (isinf(y)) return cd(y, x + x);
        if (y == 0) return cd(x + x, y);
        return cd(dnan(), dnan());
    }
    if (ax > RECIP_EPSILON || ay > RECIP_EPSILON) {
        if (!signbit(x)) {
            clog_for_large_values(x, y, &wx, &wy);
        } else {
            clog_for_large_values(-x, -y, &wx, &wy);
        }
        wx += LN2;
        return cd(copysign(wx, x), copysign(wy, y));
    }
    if (x == 0 && y == 0) return z;
    if (ax < SQRT_6_EPSILON / 4 && ay < SQRT_6_EPSILON / 4) return z;
    do_hard_work(ax, ay, &rx, &B_is_usable, &B, &sqrt_A2my2, &new_y);
    if (B_is_usable) {
        ry = asin(B);
    } else {
        ry = atan2(new_y, sqrt_A2my2);
    }
    return cd(copysign(rx, x), copysign(ry, y));
}

__device__ __forceinline__ double sum_squares(double x, double y) {
    const double SQRT_MIN = 1.4916681462400413e-154;
    if (y < SQRT_MIN) return x * x;
    return x * x + y * y;
}

// Re(1 / (x + iy)) without spurious underflow (x, y not NaN, one of them huge)
__device__ __forceinline__ double real_part_reciprocal(double x, double y) {
    const int CUTOFF = 53 / 2 + 1;
    const int BIAS = 1023;
    const int ix = __double2hiint(x) & 0x7ff00000;
    const int iy = __double2hiint(y) & 0x7ff00000;
    if (ix - iy >= (CUTOFF << 20) || isinf(x)) return 1 / x;
    if (iy - ix >= (CUTOFF << 20)) return x / y / y;
    if (ix <= ((BIAS + 1024 / 2 - CUTOFF) << 20)) return x / (x * x + y * y);
    const double scale = __hiloint2double(0x7ff00000 - ix, 0);
    x *= scale;
    y *= scale;
    return x / (x * x + y * y) * scale;
}

GP_NOINLINE __device__ cd catanh(cd z) {
    const double SQRT_3_EPSILON = 2.5809568279517849e-8;
    const double pio2_lo = 6.1232339957367659e-17;
    const double RECIP_EPSILON = 1.0 / EPS;
    const double pio2_hi = PI_2;
    const double x = z.re, y = z.im;
    const double ax = fabs(x), ay = fabs(y);
    double rx, ry;
    if (y == 0 && ax <= 1) return cd(atanh(x), y);
    if (x == 0) return cd(x, atan(y));
    if (isnan(x) || isnan(y)) {
        if (isinf(x)) return cd(copysign(0.0, x), y + y);
        if (isinf(y)) return cd(copysign(0.0, x), copysign(pio2_hi + pio2_lo, y));
        return cd(dnan(), dnan());
    }
    if (ax > RECIP_EPSILON || ay > RECIP_EPSILON) {
        return cd(real_part_reciprocal(x, y), copysign(pio2_hi + pio2_lo, y));
    }
    if (ax < SQRT_3_EPSILON / 2 && ay < SQRT_3_EPSILON / 2) return z;
    if (ax == 1 && ay < EPS) {
        rx = (LN2 - log(ay)) / 2;
    } else {
        rx = log1p(4 * ax / sum_squares(ax - 1, ay)) / 4;
    }
    if (ax == 1) {
        ry = atan2(2.0, -ay) / 2;
    } else if (ay < EPS) {
        ry = atan2(2 * ay, (1 - ax) * (1 + ax)) / 2;
    } else {
        ry = atan2(2 * ay, (1 - ax) * (1 + ax) - ay * ay) / 2;
    }
    return cd(copysign(rx, x), copysign(ry, y));
}

// ----------------------------------------------------------- derived functions
__device__ __forceinline__ cd ccos(cd z) { return ccosh(cd(-z.im, z.re)); }
__device__ __forceinline__ cd csin(cd z) {
    const cd w = csinh(cd(-z.im, z.re));
    return cd(w.im, -w.re);
}
__device__ __forceinline__ cd ctan(cd z) {
    const cd w = ctanh(cd(-z.im, z.re));
    return cd(w.im, -w.re);
}
__device__ __forceinline__ cd casin(cd z) {
    const cd w = casinh(cd(z.im, z.re));
    return cd(w.im, w.re);
}
__device__ __forceinline__ cd catan(cd z) {
    const cd w = catanh(cd(z.im, z.re));
    return cd(w.im, w.re);
}
__device__ __forceinline__ cd cacosh(cd z) {
    const cd w = cacos(z);
    const double rx = w.re, ry = w.im;
    if (isnan(rx) && isnan(ry)) return cd(ry, rx);
    if (isnan(rx)) return cd(fabs(ry), rx);
    if (isnan(ry)) return cd(ry, rx);  // cacosh(+-0 + i NaN) = NaN + i pi/2 (C11, the spec)
    return cd(fabs(ry), copysign(rx, z.im));
}
__device__ __forceinline__ cd clog2(cd z) {
    const cd w = clog(z);
    return cd(w.re * LOG2E, w.im * LOG2E);
}
__device__ __forceinline__ cd clog10(cd z) {
    const cd w = clog(z);
    return cd(w.re * LOG10E, w.im * LOG10E);
}

// exp(z) - 1: NumPy's formula (accurate for small |z|), with cexp for large or non-finite
// parts so the special values follow exp's.
GP_NOINLINE __device__ cd cexpm1(cd z) {
    const double x = z.re, y = z.im;
    if (y == 0 && !isnan(x)) return cd(x == 0 ? 0.0 : expm1(x), y);  // expm1(-0 + 0j) = +0 + 0j
    if (!isfinite(x) || !isfinite(y) || x > 700.0) {
        const cd w = cexp(z);
        return cd(w.re - 1.0, w.im);
    }
    const double a = sin(y / 2);
    const double t = expm1(x) * cos(y);  // re = t - 2 sin^2(y/2); keep the sign of an underflow
    return cd(t == 0 ? -(2 * a * a) : t - 2 * a * a, exp(x) * sin(y));
}

// NumPy's complex division (Smith's method with a reciprocal scale factor)
__device__ __forceinline__ cd cdiv_np(cd a, cd b) {
    const double ar = a.re, ai = a.im, br = b.re, bi = b.im;
    const double abs_br = fabs(br), abs_bi = fabs(bi);
    if (abs_br >= abs_bi) {
        if (abs_br == 0 && abs_bi == 0) return cd(ar / abs_br, ai / abs_bi);
        const double rat = bi / br;
        const double scl = 1.0 / (br + bi * rat);
        return cd((ar + ai * rat) * scl, (ai - ar * rat) * scl);
    }
    const double rat = br / bi;
    const double scl = 1.0 / (bi + br * rat);
    return cd((ar * rat + ai) * scl, (ai * rat - ar) * scl);
}

// C99 Annex G multiplication (what C compilers emit for double complex *, so glibc's
// cpow = cexp(b * clog(a)) uses it): infinities that the naive formula turns into NaN + NaN i
// are recovered.
__device__ __forceinline__ cd cmul_annex_g(cd z, cd w) {
    double a = z.re, b = z.im, c = w.re, d = w.im;
    const double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
    double x = ac - bd, y = ad + bc;
    if (isnan(x) && isnan(y)) {
        bool recalc = false;
        if (isinf(a) || isinf(b)) {
            a = copysign(isinf(a) ? 1.0 : 0.0, a);
            b = copysign(isinf(b) ? 1.0 : 0.0, b);
            if (isnan(c)) c = copysign(0.0, c);
            if (isnan(d)) d = copysign(0.0, d);
            recalc = true;
        }
        if (isinf(c) || isinf(d)) {
            c = copysign(isinf(c) ? 1.0 : 0.0, c);
            d = copysign(isinf(d) ? 1.0 : 0.0, d);
            if (isnan(a)) a = copysign(0.0, a);
            if (isnan(b)) b = copysign(0.0, b);
            recalc = true;
        }
        if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {
            if (isnan(a)) a = copysign(0.0, a);
            if (isnan(b)) b = copysign(0.0, b);
            if (isnan(c)) c = copysign(0.0, c);
            if (isnan(d)) d = copysign(0.0, d);
            recalc = true;
        }
        if (recalc) {
            x = dinf() * (a * c - b * d);
            y = dinf() * (a * d + b * c);
        }
    }
    return cd(x, y);
}

// NumPy's npy_cpow: small integer powers by repeated multiplication, else exp(b * log(a)).
GP_NOINLINE __device__ cd cpow(cd a, cd b) {
    const double ar = a.re, ai = a.im, br = b.re, bi = b.im;
    if (br == 0 && bi == 0) return cd(1.0, 0.0);
    if (ar == 0 && ai == 0) {
        if (br > 0) return cd(0.0, 0.0);
        return cd(dnan(), dnan());
    }
    if (bi == 0 && br > -100 && br < 100) {
        const int n = static_cast<int>(br);
        if (double(n) == br) {
            if (n == 1) return a;
            if (n == 2) return a * a;
            if (n == 3) return a * (a * a);
            const int m = n < 0 ? -n : n;
            cd acc(1.0, 0.0), p = a;
            int mask = 1;
            while (true) {
                if (m & mask) acc = acc * p;
                mask <<= 1;
                if (m < mask || mask <= 0) break;
                p = p * p;
            }
            if (br < 0) acc = cdiv_np(cd(1.0, 0.0), acc);
            return acc;
        }
    }
    return cexp(cmul_annex_g(b, clog(a)));
}

}  // namespace cm

}  // namespace gp

// ------------------------------------------------------------------ unary float/complex math
#define GP_MATH_UNARY(NAME, REAL_EXPR, CFUNC)                                        \
    struct op_##NAME {                                                               \
        template <class T> __device__ __forceinline__ T operator()(T a) const {      \
            if constexpr (gp::is_complex_v<T>) return T(gp::cm::CFUNC(gp::cm::cd(a))); \
            else return REAL_EXPR;                                                   \
        }                                                                            \
    };

GP_MATH_UNARY(exp, exp(a), cexp)
GP_MATH_UNARY(expm1, expm1(a), cexpm1)
GP_MATH_UNARY(log, log(a), clog)
GP_MATH_UNARY(log1p, log1p(a), clog1p)
GP_MATH_UNARY(log2, log2(a), clog2)
GP_MATH_UNARY(log10, log10(a), clog10)
GP_MATH_UNARY(sqrt, sqrt(a), csqrt)
GP_MATH_UNARY(sin, sin(a), csin)
GP_MATH_UNARY(cos, cos(a), ccos)
GP_MATH_UNARY(tan, tan(a), ctan)
GP_MATH_UNARY(sinh, sinh(a), csinh)
GP_MATH_UNARY(cosh, cosh(a), ccosh)
GP_MATH_UNARY(tanh, tanh(a), ctanh)
GP_MATH_UNARY(asin, asin(a), casin)
GP_MATH_UNARY(acos, acos(a), cacos)
GP_MATH_UNARY(atan, atan(a), catan)
GP_MATH_UNARY(asinh, asinh(a), casinh)
GP_MATH_UNARY(acosh, acosh(a), cacosh)
GP_MATH_UNARY(atanh, atanh(a), catanh)
#undef GP_MATH_UNARY

// 1 / x; complex uses NumPy's scaled formula
struct op_reciprocal {
    template <class T> __device__ __forceinline__ T operator()(T a) const {
        if constexpr (gp::is_complex_v<T>) {
            typedef typename gp::real_of<T>::type R;
            const R ar = a.re, ai = a.im;
            if (fabs(ai) <= fabs(ar)) {
                const R r = ai / ar, d = ar + ai * r;
                return T(R(1) / d, -r / d);
            }
            const R r = ar / ai, d = ar * r + ai;
            return T(r / d, R(-1) / d);
        } else {
            return T(1) / a;
        }
    }
};

// ------------------------------------------------------------------ binary math
struct op_atan2 { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return atan2(a, b); } };
// CUDA's hypot overflows near the top of the range (hypot(1, DBL_MAX) = inf); redo those
// cases scaled by the larger magnitude.
struct op_hypot {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        const T h = hypot(a, b);
        if (isinf(h) && isfinite(a) && isfinite(b)) {
            const T x = fabs(a), y = fabs(b);
            const T hi = x > y ? x : y, lo = x > y ? y : x;
            const T r = lo / hi;
            return hi * sqrt(T(1) + r * r);
        }
        return h;
    }
};

// NumPy's npy_logaddexp: log(exp(x) + exp(y)) without overflow; equal infinities give
// themselves, NaN propagates.
struct op_logaddexp {
    // float32 is evaluated in double and rounded once (the float log1p/exp chain is off by
    // more than an ulp near the crossover)
    __device__ __forceinline__ float operator()(float x, float y) const {
        return static_cast<float>((*this)(static_cast<double>(x), static_cast<double>(y)));
    }
    template <class T> __device__ __forceinline__ T operator()(T x, T y) const {
        if (x == y) return x + T(gp::cm::LN2);
        const T tmp = x - y;
        if (tmp > T(0)) return x + log1p(exp(-tmp));
        if (tmp <= T(0)) return y + log1p(exp(tmp));
        return tmp;  // NaN
    }
};

struct op_pow {
    template <class T> __device__ __forceinline__ T operator()(T a, T b) const {
        if constexpr (gp::is_int_v<T>) return gp::int_pow(a, b);
        else if constexpr (gp::is_complex_v<T>) return T(gp::cm::cpow(gp::cm::cd(a), gp::cm::cd(b)));
        else {
            // CUDA's pow is within 2 ulp (85.5 ** 2 gives 7310.250000000001); NumPy's `**`
            // takes exact paths for these exponents, each the correctly rounded result
            if (b == T(2)) return a * a;
            if (b == T(-1)) return T(1) / a;
            if (b == T(0.5) && a > T(0) && a - a == T(0)) return sqrt(a);  // finite, > 0
            return pow(a, b);
        }
    }
};
