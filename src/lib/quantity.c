/*
 * quantity.c -- resource.Quantity strings as integers, for the scheduler's
 * fit and the apiserver's pod QoS class. Pure functions.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"
#include "lib/quantity.h"

static const struct suffix {
    const char *s;
    int b2;  /* a factor of 2^b2 */
    int e10; /* and of 10^e10 */
} suffixes[] = {
    {"", 0, 0},    {"Ki", 10, 0}, {"Mi", 20, 0}, {"Gi", 30, 0}, {"Ti", 40, 0}, {"Pi", 50, 0},
    {"Ei", 60, 0}, {"n", 0, -9},  {"u", 0, -6},  {"m", 0, -3},  {"k", 0, 3},   {"K", 0, 3},
    {"M", 0, 6},   {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15},  {"E", 0, 18},
};

int kp_quantity_parse(const char *s, int milli, int64_t *out)
{
    if (!s || !out) return KP_EINVAL;
    const char *p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    /* The mantissa keeps 19 significant digits (all a uint64 holds);
     * further integer digits count as powers of ten, further fraction
     * digits are dropped. */
    uint64_t v = 0;
    int digits = 0, sig = 0, e10 = 0;
    for (; isdigit((unsigned char)*p); p++, digits++) {
        if (sig < 19) {
            v = v * 10 + (uint64_t)(*p - '0');
            if (v) sig++;
        } else {
            e10++;
        }
    }
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++, digits++) {
            if (sig < 19) {
                v = v * 10 + (uint64_t)(*p - '0');
                if (v) sig++;
                e10--;
            }
        }
    }
    if (!digits) return KP_EINVAL;
    int b2 = -1;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (!strcmp(p, suffixes[i].s)) {
            b2 = suffixes[i].b2;
            e10 += suffixes[i].e10;
            break;
        }
    }
    if (b2 < 0) {
        /* An exponent: e or E, an optional sign, digits ("E" alone is exa). */
        if ((*p != 'e' && *p != 'E') || !p[1]) return KP_EINVAL;
        const char *q = p + 1;
        if (*q == '+' || *q == '-') q++;
        if (!isdigit((unsigned char)*q)) return KP_EINVAL;
        errno = 0;
        char *end;
        long x = strtol(p + 1, &end, 10);
        if (*end || errno || x > 100 || x < -100) return KP_EINVAL;
        e10 += (int)x;
        b2 = 0;
    }
    if (neg && v) return KP_EINVAL;
    if (milli) e10 += 3;
    if (v && b2) {
        if (v > (UINT64_MAX >> b2)) return KP_ETOOLARGE;
        v <<= b2;
    }
    if (e10 >= 0) {
        for (int i = 0; v && i < e10; i++) {
            if (v > UINT64_MAX / 10) return KP_ETOOLARGE;
            v *= 10;
        }
    } else if (-e10 > 19) {
        v = v ? 1 : 0; /* a positive sliver rounds up to one */
    } else {
        uint64_t p10 = 1;
        for (int i = 0; i < -e10; i++)
            p10 *= 10;
        v = v / p10 + (v % p10 != 0);
    }
    if (v > (uint64_t)INT64_MAX) return KP_ETOOLARGE;
    *out = (int64_t)v;
    return 0;
}

int kp_quantity_json(const json_t *v, int milli, int64_t *out)
{
    if (json_is_string(v)) return kp_quantity_parse(json_string_value(v), milli, out);
    int64_t f = milli ? 1000 : 1;
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0) return KP_EINVAL;
        if (x > INT64_MAX / f) return KP_ETOOLARGE;
        *out = (int64_t)x * f;
        return 0;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v) * (double)f;
        if (!(x >= 0)) return KP_EINVAL;
        if (x >= 9.2e18) return KP_ETOOLARGE;
        int64_t i = (int64_t)x;
        *out = (double)i < x ? i + 1 : i; /* rounded up */
        return 0;
    }
    return KP_EINVAL;
}
