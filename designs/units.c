/* Physical units (docs/units.md): lengths written as `12.5um` at a `pixel:` pitch.
 *
 * By hand rather than strtod: whether 0.1um at a 100nm pitch is a whole pixel must not depend
 * on binary rounding (0.1 / 0.1 is 1 in double, 0.3 / 0.1 is 2.9999999999999996), so a value
 * and the pitch stay decimal (mantissa, power of ten) and their quotient is taken in 128-bit
 * integers; real-valued lengths get that quotient rounded once to double, by the same
 * integers, so no platform's long double or libm changes a bit. */
#include "designs/designs_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef unsigned __int128 u128;

#define MANT_MAX 10000000000000000000ull /* 10^19: mantissas stay below it */
#define COORD_MAX_U ((u128)1 << 40)

static const struct {
    const char *suffix;
    int e; /* nm per unit, as a power of ten */
} units[] = {{"nm", 0}, {"um", 3}, {"\xc2\xb5m", 3}, {"mm", 6}};

int
tsr_dlen_parse(const char *s, tsr_dlen *out)
{
    size_t n = strlen(s), len = 0;
    int ue = 0;
    bool found = false;
    for (size_t i = 0; i < sizeof units / sizeof units[0] && !found; i++) {
        size_t k = strlen(units[i].suffix);
        if (n >= k && memcmp(s + n - k, units[i].suffix, k) == 0) {
            found = true;
            len = n - k;
            ue = units[i].e;
        }
    }
    if (!found)
        return 0;
    tsr_dlen d = {0, 0, false};
    size_t i = 0, digits = 0, frac = 0;
    bool dot = false;
    if (i < len && s[i] == '-') {
        d.neg = true;
        i++;
    }
    for (; i < len; i++) {
        char ch = s[i];
        if (ch == '.' && !dot) {
            dot = true;
            continue;
        }
        if (ch < '0' || ch > '9')
            return -1;
        digits++;
        if (dot)
            frac++;
        if (d.m == 0 && ch == '0')
            continue; /* leading zeros carry no digit */
        if (d.m >= MANT_MAX / 10)
            return -1;
        d.m = d.m * 10 + (uint64_t)(ch - '0');
    }
    if (digits == 0)
        return -1;
    d.e = ue - (int)frac;
    while (d.m && d.m % 10 == 0) {
        d.m /= 10;
        d.e++;
    }
    if (!d.m) {
        d.e = 0;
        d.neg = false;
    }
    *out = d;
    return 1;
}

static bool
pow10_mul(u128 *x, int k)
{
    for (int i = 0; i < k; i++) {
        if (*x > (~(u128)0) / 10)
            return false;
        *x *= 10;
    }
    return true;
}

/* v / pitch as num / den; false when a side overflows 128 bits. */
static bool
fraction(const tsr_dlen *v, const tsr_dlen *pitch, u128 *num, u128 *den)
{
    int e = v->e - pitch->e;
    *num = v->m;
    *den = pitch->m;
    return e >= 0 ? pow10_mul(num, e) : pow10_mul(den, -e);
}

static int
bits(u128 x)
{
    int b = 0;
    while (x) {
        b++;
        x >>= 1;
    }
    return b;
}

/* n / d (n, d > 0) rounded to nearest double, ties to even: the quotient is brought to 55
 * bits (53 kept, a round bit and one more) with a sticky bit for what was dropped. */
static double
ratio(u128 n, u128 d)
{
    u128 q = n / d, r = n % d;
    int e = 0;
    bool sticky = false;
    int b = bits(q);
    if (b > 55) {
        int x = b - 55;
        sticky = (q & (((u128)1 << x) - 1)) != 0;
        q >>= x;
        e = x;
    } else {
        while (bits(q) < 55) {
            /* r < d: 2r fits unless d needs all 128 bits, where r >= 2^127 is caught first */
            bool carry = r >> 127;
            r <<= 1;
            q <<= 1;
            if (carry || r >= d) {
                r -= d;
                q |= 1;
            }
            e--;
        }
    }
    sticky = sticky || r != 0;
    uint64_t mant = (uint64_t)(q >> 2);
    unsigned low = (unsigned)(q & 3);
    if (low > 2 || (low == 2 && (sticky || (mant & 1))))
        mant++; /* 2^53 after the carry is still exact */
    return ldexp((double)mant, e + 2);
}

bool
tsr_dlen_pixels_int(const tsr_dlen *v, const tsr_dlen *pitch, int64_t *px, double *approx)
{
    u128 num, den;
    if (!v->m) {
        *px = 0;
        *approx = 0;
        return true;
    }
    if (!fraction(v, pitch, &num, &den)) {
        /* a numerator past 128 bits is far past 2^40 px; a denominator past it, far below 1 */
        *approx = v->e >= pitch->e ? (v->neg ? -HUGE_VAL : HUGE_VAL) : 0;
        return false;
    }
    double a = ratio(num, den);
    *approx = v->neg ? -a : a;
    if (num % den != 0 || num / den > COORD_MAX_U)
        return false;
    int64_t q = (int64_t)(num / den);
    *px = v->neg ? -q : q;
    return true;
}

double
tsr_dlen_pixels_real(const tsr_dlen *v, const tsr_dlen *pitch)
{
    u128 num, den;
    if (!v->m)
        return 0;
    double a;
    if (fraction(v, pitch, &num, &den))
        a = ratio(num, den);
    else /* beyond 128 bits either way: no length a design means; double is plenty */
        a = (double)v->m / (double)pitch->m * pow(10, v->e - pitch->e);
    return v->neg ? -a : a;
}

double
tsr_dlen_nm(const tsr_dlen *v)
{
    tsr_dlen one = {1, 0, false};
    return tsr_dlen_pixels_real(v, &one);
}

void
tsr_design_length_text(const tsr_design *d, double px, char *buf, size_t size)
{
    if (!size)
        return;
    buf[0] = 0;
    if (!(d->pixel_nm > 0))
        return;
    double nm = px * d->pixel_nm, a = fabs(nm);
    if (a >= 1e6)
        snprintf(buf, size, "%.6g mm", nm / 1e6);
    else if (a >= 1e3)
        snprintf(buf, size, "%.6g um", nm / 1e3);
    else
        snprintf(buf, size, "%.6g nm", nm);
}
