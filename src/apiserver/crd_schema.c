/*
 * crd_schema.c -- CustomResourceDefinition schemas: is a version's
 * openAPIV3Schema acceptable, and what does it make of a custom object.
 *
 * Kubernetes splits the work in three, and so does this file:
 *
 *   CRD write     --> api_crd_schema_check(): the schema is structural
 *                     (pkg/apiserver/schema ValidateStructural), uses only the
 *                     supported OpenAPI subset (apiextensions validation.go)
 *                     and carries defaults that are pruned and valid.
 *   object write  --> api_crd_prune_and_default(): pruning.Prune, then
 *                     defaulting.PruneNonNullableNullsWithoutDefaults and
 *                     defaulting.Default on the decoded object,
 *                 --> api_crd_validate(): kube-openapi's SchemaValidator, then
 *                     listtype.ValidateListSetsAndMaps.
 *
 * Invariants:
 *   1. Messages are Kubernetes' own: kube-openapi's "<name> in body ..." text
 *      inside a field.Error body ("Invalid value: <value>: ..."), with Go's
 *      value printing (%q strings, shortest floats, %#v maps) reproduced by
 *      the go_*() printers. Field paths are printed as field.Path prints them.
 *   2. A value is checked in kube-openapi's order (type, allOf/anyOf/oneOf/not,
 *      string, format, number, array, enum, object), so causes come in the
 *      order Kubernetes lists them; where Go iterates a map (an object's
 *      properties) we use the schema's order, which is stable.
 *   3. The schema is only read and nothing outlives a call: patterns are
 *      compiled per use, there is no cache and no mutable global.
 *
 * Regular expressions: Kubernetes compiles `pattern` with Go's RE2. We
 * translate RE2 syntax to a POSIX ERE (re_translate) for regcomp/regexec;
 * what has no POSIX form fails to compile, and the schema check reports it as
 * Kubernetes reports a bad pattern. Matching is bytewise ('.' is one byte).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/crd_schema.h"
#include "strategy.h"

#define PATH_CAP 1024 /* a field path; longer ones are truncated */
#define MSG_CAP 2048  /* one message */

/* ---- JSON helpers ---- */

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static int jtrue(const json_t *o, const char *k) { return json_is_true(json_object_get(o, k)); }

static const json_t *jobj(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_object(v) ? v : NULL;
}

/* A schema integer keyword (maxLength, minItems, ...); 0 when absent. */
static int jint(const json_t *o, const char *k, long long *out)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) return 0;
    *out = json_is_integer(v) ? (long long)json_integer_value(v) : (long long)json_real_value(v);
    return 1;
}

static int has_default(const json_t *s)
{
    const json_t *d = json_object_get(s, "default");
    return d && !json_is_null(d);
}

static int is_meta_field(const char *k)
{
    return !strcmp(k, "apiVersion") || !strcmp(k, "kind") || !strcmp(k, "metadata");
}

/* ---- bounded strings: field paths and messages ---- */

typedef struct {
    char s[PATH_CAP];
    size_t n;
} path_t;

static size_t path_add(path_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_add(path_t *p, const char *fmt, ...)
{
    size_t old = p->n;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(p->s + p->n, sizeof p->s - p->n, fmt, ap);
    va_end(ap);
    if (w > 0) p->n = p->n + (size_t)w < sizeof p->s ? p->n + (size_t)w : sizeof p->s - 1;
    return old;
}

static void path_cut(path_t *p, size_t n)
{
    p->n = n;
    p->s[n] = '\0';
}

typedef struct {
    char *s;
    size_t cap, n;
} sb_t;

static void sb_add(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(sb_t *b, const char *fmt, ...)
{
    if (b->n + 1 >= b->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (w > 0) b->n = b->n + (size_t)w < b->cap ? b->n + (size_t)w : b->cap - 1;
}

/* ---- Go's printing of values (fmt %q, %v, %#v; encoding/json floats) ---- */

/* One UTF-8 sequence at p: its length (0 if invalid) and rune. */
static size_t utf8_dec(const unsigned char *p, uint32_t *r)
{
    unsigned c = p[0];
    size_t n = c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (!n) return 0;
    uint32_t v = c & (0x3fu >> (n - 1));
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    if ((n == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
        (n == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    *r = v;
    return n;
}

/* strconv.Quote: printable UTF-8 kept, the rest escaped. */
static void go_quote(sb_t *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    sb_add(b, "\"");
    while (*p) {
        unsigned c = *p;
        uint32_t r;
        size_t n;
        if (c == '"' || c == '\\') sb_add(b, "\\%c", c);
        else if (c >= 7 && c <= 13) sb_add(b, "\\%c", "abtnvfr"[c - 7]);
        else if (c < 0x20 || c == 0x7f) sb_add(b, "\\x%02x", c);
        else if (c < 0x80) sb_add(b, "%c", c);
        else if (!(n = utf8_dec(p, &r))) sb_add(b, "\\x%02x", c);
        else {
            if (r < 0xa0 || r == 0xad) sb_add(b, "\\u%04x", (unsigned)r);
            else sb_add(b, "%.*s", (int)n, (const char *)p);
            p += n;
            continue;
        }
        p++;
    }
    sb_add(b, "\"");
}

/* A %q rendering of s in buf (for composing messages). */
static const char *q(char *buf, size_t cap, const char *s)
{
    sb_t b = {buf, cap, 0};
    buf[0] = '\0';
    go_quote(&b, s);
    return buf;
}

/* A float64 as Go prints it: %v (shortest digits, exponent when exp < -4 or
 * exp >= 6... as strconv 'g' -1 does), or encoding/json ('e' only outside
 * [1e-6, 1e21)). */
static void go_float(sb_t *b, double v, int json)
{
    if (v != v) {
        sb_add(b, "NaN");
        return;
    }
    if (v - v != 0) {
        sb_add(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        sb_add(b, signbit(v) ? "-0" : "0");
        return;
    }
    char e[48], digs[24];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    const char *p = e;
    int nd = 0;
    if (*p == '-') {
        sb_add(b, "-");
        p++;
    }
    for (; *p && *p != 'e' && nd < (int)sizeof digs; p++)
        if (*p != '.') digs[nd++] = *p;
    int x = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
    while (nd > 1 && digs[nd - 1] == '0') nd--;
    double a = v < 0 ? -v : v;
    int use_e = json ? (a < 1e-6 || a >= 1e21) : (x < -4 || x >= 6);
    if (use_e) {
        sb_add(b, "%c", digs[0]);
        if (nd > 1) sb_add(b, ".%.*s", nd - 1, digs + 1);
        int ax = x < 0 ? -x : x;
        if (json && x < 0 && ax < 10) sb_add(b, "e-%d", ax);
        else sb_add(b, "e%c%02d", x < 0 ? '-' : '+', ax);
        return;
    }
    int dp = x + 1;
    if (dp <= 0) sb_add(b, "0.%0*d%.*s", -dp, 0, nd, digs);
    else if (dp >= nd) sb_add(b, "%.*s%0*d", nd, digs, dp - nd, 0);
    else sb_add(b, "%.*s.%.*s", dp, digs, nd - dp, digs + dp);
}

static void go_value(sb_t *b, const json_t *v);

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* %#v of a decoded JSON value: map[string]interface {}{"k":v, ...} with the
 * keys sorted, []interface {}{...}, interface {}(nil) for null. */
static void go_sharp(sb_t *b, const json_t *v)
{
    size_t i, n = json_is_object(v) ? json_object_size(v) : 0;
    if (!v || json_is_null(v)) {
        sb_add(b, "interface {}(nil)");
    } else if (json_is_array(v)) {
        json_t *e;
        sb_add(b, "[]interface {}{");
        json_array_foreach(v, i, e) {
            if (i) sb_add(b, ", ");
            go_sharp(b, e);
        }
        sb_add(b, "}");
    } else if (json_is_object(v)) {
        const char **keys = malloc((n ? n : 1) * sizeof *keys);
        const char *k;
        json_t *e;
        sb_add(b, "map[string]interface {}{");
        i = 0;
        if (keys) {
            json_object_foreach((json_t *)v, k, e) keys[i++] = k;
            qsort(keys, n, sizeof *keys, cmp_str);
            for (i = 0; i < n; i++) {
                sb_add(b, "%s", i ? ", " : "");
                go_quote(b, keys[i]);
                sb_add(b, ":");
                go_sharp(b, json_object_get(v, keys[i]));
            }
            free(keys);
        }
        sb_add(b, "}");
    } else {
        go_value(b, v);
    }
}

/* A field.Error's bad value: strings %q, numbers and booleans %v, null
 * "null", maps and slices %#v. */
static void go_value(sb_t *b, const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_STRING: go_quote(b, json_string_value(v)); break;
    case JSON_INTEGER: sb_add(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: go_float(b, json_real_value(v), 0); break;
    case JSON_TRUE: sb_add(b, "true"); break;
    case JSON_FALSE: sb_add(b, "false"); break;
    case JSON_NULL: sb_add(b, "null"); break;
    default: go_sharp(b, v); break;
    }
}

/* ---- regular expressions: Go RE2 syntax on POSIX regcomp ---- */

static int re_err(char *err, size_t errlen, const char *code, const char *frag, size_t n)
{
    snprintf(err, errlen, "error parsing regexp: %s: `%.*s`", code, (int)n, frag);
    return -1;
}

/* Append byte c to out, escaped to stand for itself outside brackets. */
static void re_lit(char *out, size_t *o, unsigned char c)
{
    if (c && strchr(".[]()*+?{}|^$\\", c)) out[(*o)++] = '\\';
    out[(*o)++] = (char)c;
}

/* \xHH or \x{H..} at p (p[0] == '\\'): the rune, the bytes used; 0 if bad. */
static size_t re_hex(const char *p, uint32_t *r)
{
    char *end;
    if (p[2] == '{') {
        unsigned long v = strtoul(p + 3, &end, 16);
        if (end == p + 3 || *end != '}' || v > 0x10ffff) return 0;
        *r = (uint32_t)v;
        return (size_t)(end - p) + 1;
    }
    if (!isxdigit((unsigned char)p[2]) || !isxdigit((unsigned char)p[3])) return 0;
    char h[3] = {p[2], p[3], 0};
    *r = (uint32_t)strtoul(h, NULL, 16);
    return 4;
}

/* The UTF-8 bytes of rune r. */
static size_t utf8_enc(uint32_t r, unsigned char *o)
{
    if (r < 0x80) return o[0] = (unsigned char)r, 1;
    if (r < 0x800) return o[0] = 0xc0 | r >> 6, o[1] = 0x80 | (r & 0x3f), 2;
    if (r < 0x10000)
        return o[0] = 0xe0 | r >> 12, o[1] = 0x80 | (r >> 6 & 0x3f), o[2] = 0x80 | (r & 0x3f), 3;
    o[0] = 0xf0 | r >> 18, o[1] = 0x80 | (r >> 12 & 0x3f), o[2] = 0x80 | (r >> 6 & 0x3f);
    o[3] = 0x80 | (r & 0x3f);
    return 4;
}

/* The one-character escapes both sides of a bracket share. */
static int re_ctl(char d)
{
    switch (d) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'a': return '\a';
    default: return 0;
    }
}

/* A bracket expression at p (p[0] == '['): emitted to out as a POSIX one,
 * where a backslash is literal and ']' '^' '-' are placed by position. */
static int re_bracket(const char *p, char *out, size_t *o, size_t *used, char *err, size_t errlen)
{
    size_t j = 1, start;
    int neg = 0, rb = 0, dash = 0, caret = 0, body = 0;
    if (p[j] == '^') neg = 1, j++;
    if (p[j] == ']') rb = 1, j++;
    start = j;
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            if (!neg && !rb && !dash && !body && caret) {
                out[(*o)++] = '\\', out[(*o)++] = '^';
                return 0;
            }
            out[(*o)++] = '[';
            if (neg) out[(*o)++] = '^';
            if (rb) out[(*o)++] = ']';
        }
        for (j = start; p[j] != ']';) {
            if (!p[j]) return re_err(err, errlen, "missing closing ]", p, strlen(p));
            if (p[j] == '[' && p[j + 1] == ':') {
                const char *end = strstr(p + j + 2, ":]");
                if (!end) return re_err(err, errlen, "missing closing ]", p, strlen(p));
                size_t n = (size_t)(end - (p + j)) + 2;
                if (pass) memcpy(out + *o, p + j, n), *o += n;
                body = 1, j += n;
                continue;
            }
            if (p[j] != '\\') {
                if (pass) out[(*o)++] = p[j];
                body = 1, j++;
                continue;
            }
            char d = p[j + 1];
            const char *rep = d == 'd' ? "0-9" : d == 'w' ? "0-9A-Za-z_" : d == 's' ? "\t\n\f\r " : NULL;
            uint32_t r;
            size_t n = 2;
            if (rep) {
                if (pass) memcpy(out + *o, rep, strlen(rep)), *o += strlen(rep);
            } else if (d == ']' || d == '-' || d == '^') {
                rb |= d == ']', dash |= d == '-', caret |= d == '^';
                j += 2;
                continue;
            } else if (re_ctl(d)) {
                if (pass) out[(*o)++] = (char)re_ctl(d);
            } else if (d == 'x') {
                unsigned char u[4];
                if (!(n = re_hex(p + j, &r)))
                    return re_err(err, errlen, "invalid escape sequence", p + j, 2);
                size_t k = utf8_enc(r, u);
                if (pass) memcpy(out + *o, u, k), *o += k;
            } else if (d && (unsigned char)d < 0x80 && !isalnum((unsigned char)d)) {
                if (pass) out[(*o)++] = d;
            } else if (d == 'D' || d == 'W' || d == 'S') {
                return re_err(err, errlen, "unsupported negated class in brackets", p + j, 2);
            } else {
                return re_err(err, errlen, "invalid escape sequence", p + j, d ? 2 : 1);
            }
            body = 1, j += n;
        }
        if (pass) {
            if (caret) out[(*o)++] = '^';
            if (dash) out[(*o)++] = '-';
            out[(*o)++] = ']';
        }
    }
    *used = j + 1;
    return 0;
}

/* An escape outside brackets at p (p[0] == '\\'). */
static int re_escape(const char *p, char *out, size_t *o, size_t *used, char *err, size_t errlen)
{
    static const char *const classes[][2] = {
        {"d", "[0-9]"},         {"D", "[^0-9]"},        {"w", "[0-9A-Za-z_]"},
        {"W", "[^0-9A-Za-z_]"}, {"s", "[\t\n\f\r ]"},   {"S", "[^\t\n\f\r ]"},
        {"b", "\\b"},           {"B", "\\B"},           {"A", "^"},
        {"z", "$"},
    };
    char d = p[1];
    *used = 2;
    for (size_t k = 0; k < sizeof classes / sizeof *classes; k++) {
        if (d == classes[k][0][0]) {
            size_t n = strlen(classes[k][1]);
            memcpy(out + *o, classes[k][1], n);
            *o += n;
            return 0;
        }
    }
    if (re_ctl(d)) {
        out[(*o)++] = (char)re_ctl(d);
    } else if (d == 'x') {
        uint32_t r;
        unsigned char u[4];
        if (!(*used = re_hex(p, &r))) return re_err(err, errlen, "invalid escape sequence", p, 2);
        size_t k = utf8_enc(r, u);
        for (size_t i = 0; i < k; i++) re_lit(out, o, u[i]);
    } else if (d == 'Q') {
        const char *end = strstr(p + 2, "\\E");
        size_t n = end ? (size_t)(end - (p + 2)) : strlen(p + 2);
        for (size_t i = 0; i < n; i++) re_lit(out, o, (unsigned char)p[2 + i]);
        *used = 2 + n + (end ? 2 : 0);
    } else if (d && (unsigned char)d < 0x80 && !isalnum((unsigned char)d)) {
        re_lit(out, o, (unsigned char)d);
    } else {
        return re_err(err, errlen, "invalid escape sequence", p, d ? 2 : 1);
    }
    return 0;
}

/* A counted repetition {n}, {n,} or {n,m} at p: its length, 0 if p is a
 * literal '{' (as in RE2). *lo/*hi get the counts (hi -1 when open). */
static size_t re_rep(const char *p, long *lo, long *hi)
{
    char *end;
    if (!isdigit((unsigned char)p[1])) return 0;
    *lo = strtol(p + 1, &end, 10);
    *hi = *lo;
    if (*end == ',') {
        if (isdigit((unsigned char)end[1])) *hi = strtol(end + 1, &end, 10);
        else *hi = -1, end++;
    }
    return *end == '}' ? (size_t)(end - p) + 1 : 0;
}

/* Translate the RE2 pattern p to a POSIX ERE in out (room for 16 bytes per
 * byte of p, plus 32). 0, or -1 with the problem in err as Go words it. */
static int re_translate(const char *p, char *out, int *icase, char *err, size_t errlen)
{
    size_t i = 0, o = 0, used;
    *icase = 0;
    if (!strncmp(p, "(?i)", 4)) *icase = 1, i = 4;
    while (p[i]) {
        char c = p[i];
        long lo, hi;
        if (c == '\\') {
            if (!p[i + 1])
                return re_err(err, errlen, "trailing backslash at end of expression", "", 0);
            if (re_escape(p + i, out, &o, &used, err, errlen)) return -1;
            i += used;
        } else if (c == '[') {
            if (re_bracket(p + i, out, &o, &used, err, errlen)) return -1;
            i += used;
        } else if (c == '(' && p[i + 1] == '?') {
            if (p[i + 2] == ':') {
                i += 3;
            } else if ((p[i + 2] == 'P' && p[i + 3] == '<') ||
                       (p[i + 2] == '<' && isalpha((unsigned char)p[i + 3]))) {
                const char *gt = strchr(p + i, '>');
                if (!gt) return re_err(err, errlen, "invalid named capture", p + i, strlen(p + i));
                i = (size_t)(gt - p) + 1;
            } else {
                size_t n = strnlen(p + i, 3);
                return re_err(err, errlen, "invalid or unsupported Perl syntax", p + i, n);
            }
            out[o++] = '(';
        } else if (c == '*' || c == '+' || c == '?') {
            out[o++] = c, i++;
            if (p[i] == '?') i++; /* lazy: the same strings match */
        } else if (c == '{' && (used = re_rep(p + i, &lo, &hi))) {
            if (lo > 1000 || hi > 1000 || (hi >= 0 && hi < lo))
                return re_err(err, errlen, "invalid repeat count", p + i, used);
            memcpy(out + o, p + i, used), o += used, i += used;
            if (p[i] == '?') i++;
        } else if (c == '{') {
            out[o++] = '\\', out[o++] = '{', i++;
        } else {
            out[o++] = c, i++;
        }
    }
    out[o] = '\0';
    return 0;
}

/* Compile pattern p into re; 0, or -1 with Go-style wording in err. */
static int re_compile(const char *p, regex_t *re, char *err, size_t errlen)
{
    size_t cap = strlen(p) * 16 + 32;
    char *out = malloc(cap);
    int icase, rc = -1;
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!re_translate(p, out, &icase, err, errlen)) {
        int r = regcomp(re, out, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0));
        if (!r) {
            rc = 0;
        } else {
            char msg[256];
            regerror(r, re, msg, sizeof msg);
            re_err(err, errlen, msg, p, strlen(p));
        }
    }
    free(out);
    return rc;
}

/* 1 if s matches the POSIX ERE `ere`, 0 if not (or it will not compile). */
static int rx(const char *ere, const char *s, int icase)
{
    regex_t re;
    if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0))) return 0;
    int ok = !regexec(&re, s, 0, NULL, 0);
    regfree(&re);
    return ok;
}

/* ---- string formats (kube-openapi strfmt's registry) ---- */

static int is_date(const char *s)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (!rx("^[0-9]{4}-[0-9]{2}-[0-9]{2}$", s, 0)) return 0;
    int y = (int)strtol(s, NULL, 10), m = (int)strtol(s + 5, NULL, 10);
    int d = (int)strtol(s + 8, NULL, 10);
    if (m < 1 || m > 12 || d < 1) return 0;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= days[m - 1] + (m == 2 && leap);
}

static int is_datetime(const char *s)
{
    char low[128], *t, *t2;
    size_t n = strlen(s);
    if (n < 4 || n >= sizeof low) return 0;
    for (size_t i = 0; i <= n; i++) low[i] = (char)tolower((unsigned char)s[i]);
    if (!(t = strchr(low, 't'))) return 0;
    *t++ = '\0';
    if ((t2 = strchr(t, 't'))) *t2 = '\0';
    if (!is_date(low) ||
        !rx("^[0-9]{2}:[0-9]{2}:[0-9]{2}(.[0-9]+)?(z|[+-][0-9]{2}:[0-9]{2})$", t, 0))
        return 0;
    return strncmp(t, "23", 2) <= 0 && strncmp(t + 3, "59", 2) <= 0 && strncmp(t + 6, "59", 2) <= 0;
}

/* Go's time.ParseDuration, or strfmt's "<n> <unit>" forms anywhere in s. */
static int is_duration(const char *s)
{
    static const char *const units[][3] = {{"ns", "nano", ""},  {"us", "µs", "micro"},
                                           {"ms", "milli", ""}, {"s", "sec", ""},
                                           {"m", "min", ""},    {"h", "hr", "hour"},
                                           {"d", "day", ""},    {"w", "wk", "week"}};
    if (rx("^[-+]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$", s, 0)) return 1;
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > s && isdigit((unsigned char)p[-1]))) continue;
        const char *u = p;
        while (isdigit((unsigned char)*u)) u++;
        while (isspace((unsigned char)*u)) u++;
        char unit[32];
        size_t n = 0;
        while (n + 1 < sizeof unit && (isalpha((unsigned char)u[n]) || (unsigned char)u[n] >= 0x80))
            unit[n] = (char)tolower((unsigned char)u[n]), n++;
        unit[n] = '\0';
        for (size_t k = 0; n && k < sizeof units / sizeof *units; k++) {
            int last = units[k][2][0] ? 2 : 1;
            for (int v = 0; v <= last; v++)
                if (!strcmp(unit, units[k][v]) ||
                    (v == last && !strncmp(unit, units[k][v], strlen(units[k][v]))))
                    return 1;
        }
    }
    return 0;
}

static int is_mac(const char *s)
{
    size_t n = strlen(s), groups, width;
    char sep;
    if (n < 14) return 0;
    if (s[2] == ':' || s[2] == '-') sep = s[2], width = 2, groups = (n + 1) / 3;
    else if (s[4] == '.') sep = '.', width = 4, groups = (n + 1) / 5;
    else return 0;
    if ((n + 1) % (width + 1)) return 0;
    size_t bytes = width == 2 ? groups : groups * 2;
    if (bytes != 6 && bytes != 8 && bytes != 20) return 0;
    for (size_t g = 0; g < groups; g++) {
        const char *p = s + g * (width + 1);
        for (size_t k = 0; k < width; k++)
            if (!isxdigit((unsigned char)p[k])) return 0;
        if (g + 1 < groups && p[width] != sep) return 0;
    }
    return 1;
}

static int is_cidr(const char *s)
{
    char addr[64];
    unsigned char buf[16];
    const char *slash = strchr(s, '/');
    if (!slash || (size_t)(slash - s) >= sizeof addr) return 0;
    memcpy(addr, s, (size_t)(slash - s));
    addr[slash - s] = '\0';
    int v6 = !!strchr(addr, ':');
    if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, buf) != 1) return 0;
    char *end;
    long bits = strtol(slash + 1, &end, 10);
    return isdigit((unsigned char)slash[1]) && !*end && bits <= (v6 ? 128 : 32);
}

/* Luhn over the digits of s (after the issuer check govalidator makes). */
static int is_creditcard(const char *s)
{
    char d[64];
    size_t n = 0;
    for (; *s; s++)
        if (isdigit((unsigned char)*s) && n + 1 < sizeof d) d[n++] = *s;
    d[n] = '\0';
    if (!rx("^(4[0-9]{12}([0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|"
            "27[01][0-9]|2720)[0-9]{12}|6(011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
            "3(0[0-5]|[68][0-9])[0-9]{11}|(2131|1800|35[0-9]{3})[0-9]{11}|6[27][0-9]{14})$",
            d, 0))
        return 0;
    int sum = 0;
    for (size_t i = 0; i < n; i++) {
        int v = d[n - 1 - i] - '0';
        if (i % 2) v = v * 2 > 9 ? v * 2 - 9 : v * 2;
        sum += v;
    }
    return sum % 10 == 0;
}

static int is_isbn(const char *s, int len)
{
    char d[32];
    size_t n = 0;
    for (; *s; s++)
        if (*s != ' ' && *s != '-' && n + 1 < sizeof d) d[n++] = *s;
    d[n] = '\0';
    int sum = 0;
    if (len == 10) {
        if (!rx("^([0-9]{9}X|[0-9]{10})$", d, 0)) return 0;
        for (int i = 0; i < 9; i++) sum += (i + 1) * (d[i] - '0');
        sum += 10 * (d[9] == 'X' ? 10 : d[9] - '0');
        return sum % 11 == 0;
    }
    if (!rx("^[0-9]{13}$", d, 0)) return 0;
    for (int i = 0; i < 12; i++) sum += (d[i] - '0') * (i % 2 ? 3 : 1);
    return d[12] - '0' == (10 - sum % 10) % 10;
}

/* net/mail.ParseAddress, simplified: [name] <local@domain> or local@domain
 * with dot-atom parts. */
static int is_email(const char *s)
{
    char a[320];
    const char *lt = strrchr(s, '<');
    size_t n = strlen(s);
    if (lt && n && s[n - 1] == '>') s = lt + 1, n = strlen(s) - 1;
    if (n >= sizeof a) return 0;
    memcpy(a, s, n);
    a[n] = '\0';
    return rx("^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
              "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$",
              a, 0);
}

/* url.ParseRequestURI, simplified: no control bytes; "*", an absolute path,
 * or scheme ":" anything. */
static int is_uri(const char *s)
{
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return 0;
    return !strcmp(s, "*") || s[0] == '/' || rx("^[A-Za-z][A-Za-z0-9+.-]*:", s, 0);
}

static int is_hostname(const char *s)
{
    if (strlen(s) > 255) return 0;
    for (const char *p = s, *dot; *p; p = dot + 1) {
        dot = strchr(p, '.');
        if ((dot ? (size_t)(dot - p) : strlen(p)) > 63) return 0;
        if (!dot) break;
    }
    return rx("^([a-zA-Z0-9](-?[a-zA-Z0-9]{0,62})?|([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)+"
              "[a-zA-Z0-9](-?[a-zA-Z0-9]){1,62})$",
              s, 0);
}

/* Does s satisfy the string format f (already without '-')? 1 yes, 0 no,
 * -1 when the registry has no such format (then nothing is checked). */
static int format_ok(const char *f, const char *s)
{
    unsigned char b[16];
    static const char *const uuids[] = {
        "^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        "^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
        "^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
        "^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
    };
    const char *byte = "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$";
    const char *rgb = "(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    char rgbre[256];
    if (!strcmp(f, "password")) return 1;
    if (!strcmp(f, "byte")) return rx(byte, s, 0);
    if (!strcmp(f, "date")) return is_date(s);
    if (!strcmp(f, "datetime")) return is_datetime(s);
    if (!strcmp(f, "duration")) return is_duration(s);
    if (!strcmp(f, "uuid")) return rx(uuids[0], s, 1);
    if (!strcmp(f, "uuid3")) return rx(uuids[1], s, 1);
    if (!strcmp(f, "uuid4")) return rx(uuids[2], s, 1);
    if (!strcmp(f, "uuid5")) return rx(uuids[3], s, 1);
    if (!strcmp(f, "ipv4"))
        return strchr(s, '.') && (inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1);
    if (!strcmp(f, "ipv6")) return strchr(s, ':') && inet_pton(AF_INET6, s, b) == 1;
    if (!strcmp(f, "cidr")) return is_cidr(s);
    if (!strcmp(f, "mac")) return is_mac(s);
    if (!strcmp(f, "hostname")) return is_hostname(s);
    if (!strcmp(f, "email")) return is_email(s);
    if (!strcmp(f, "uri")) return is_uri(s);
    if (!strcmp(f, "bsonobjectid")) return rx("^[0-9a-fA-F]{24}$", s, 0);
    if (!strcmp(f, "hexcolor")) return rx("^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s, 0);
    if (!strcmp(f, "ssn")) return strlen(s) == 11 && rx("^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$", s, 0);
    if (!strcmp(f, "isbn10")) return is_isbn(s, 10);
    if (!strcmp(f, "isbn13")) return is_isbn(s, 13);
    if (!strcmp(f, "isbn")) return is_isbn(s, 10) || is_isbn(s, 13);
    if (!strcmp(f, "creditcard")) return is_creditcard(s);
    if (!strcmp(f, "rgbcolor")) {
        snprintf(rgbre, sizeof rgbre,
                 "^rgb\\([[:space:]]*%s[[:space:]]*,[[:space:]]*%s[[:space:]]*,[[:space:]]*%s"
                 "[[:space:]]*\\)$",
                 rgb, rgb, rgb);
        return rx(rgbre, s, 0);
    }
    return -1;
}

/* The node's types: x-kubernetes-int-or-string is ["integer","string"]. */
static int node_types(const json_t *s, const char *t[2])
{
    if (jtrue(s, "x-kubernetes-int-or-string")) {
        t[0] = "integer", t[1] = "string";
        return 2;
    }
    t[0] = jstr(s, "type");
    return *t[0] ? 1 : 0;
}

static int has_type(const char *const t[2], int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i], want)) return 1;
    return 0;
}

/* The format kept by StripUnsupportedFormatsPostProcess; NULL if none. */
static const char *node_format(const json_t *s, const char *const t[2], int nt, char norm[32])
{
    static const char known[] = " bsonobjectid uri email hostname ipv4 ipv6 cidr mac uuid uuid3 uuid4 "
                                "uuid5 isbn isbn10 isbn13 creditcard ssn hexcolor rgbcolor byte "
                                "password date duration datetime ";
    const char *f = jstr(s, "format"), *type = nt == 1 ? t[0] : "";
    size_t n = 0;
    if (!*f) return NULL;
    if (!strcmp(type, "integer")) return !strcmp(f, "int32") || !strcmp(f, "int64") ? f : NULL;
    if (!strcmp(type, "number")) return !strcmp(f, "float") || !strcmp(f, "double") ? f : NULL;
    if (*type && strcmp(type, "string")) return NULL;
    norm[n++] = ' ';
    for (const char *p = f; *p && n < 30; p++)
        if (*p != '-') norm[n++] = *p;
    norm[n++] = ' ';
    norm[n] = '\0';
    if (!strstr(known, norm)) return NULL;
    memmove(norm, norm + 1, n - 2);
    norm[n - 2] = '\0';
    return f;
}

/* swag.IsFloat64AJSONInteger. */
static int json_int_like(double f)
{
    const double lim = 9007199254740991.0;
    if (f != f || f < -lim || f > lim) return 0;
    double g = (double)(long long)f, d = f > g ? f - g : g - f, sum = (f < 0 ? -f : f) + (g < 0 ? -g : g);
    return f == g || d / sum < 1e-9;
}

