/*
 * crd_schema_re.c -- the string matching of CRD schemas: `pattern`s, written
 * in Go's RE2 syntax, run on POSIX regcomp/regexec, and the string `format`s
 * of kube-openapi's strfmt registry. Kept apart from crd_schema.c because it
 * is self-contained text work that knows nothing of schemas or causes; the
 * validator (crd_schema.c) and the schema check (crd_schema_check.c, where a
 * pattern must compile) both use it through crd_schema_int.h.
 *
 * Patterns: re_translate() rewrites RE2 as a POSIX ERE: \d \w \s and their
 * negations become bracket expressions, (?:) and named groups plain groups,
 * lazy quantifiers greedy ones (the same strings match), leading (?i) and
 * (?m) regcomp flags. What has no POSIX form is an error worded as Go's
 * regexp/syntax words its errors: for what RE2 rejects too (lookaround,
 * backreferences) that is Kubernetes' own message; \p{..}, which RE2
 * accepts, is a known gap (crd_schema.h). Matching is bytewise ('.' is one
 * byte).
 *
 * Formats: the registry's simple formats are POSIX EREs (format_rx); the
 * others (date, duration, IPs, ISBN, ...) re-implement the Go parsers
 * kube-openapi calls, simplified where a comment says so.
 *
 * Nothing is cached: every pattern is compiled on each use and freed before
 * the call returns (invariant 3 of crd_schema.c).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/crd_schema_int.h"

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

/* The one-character escapes both sides of a bracket share (\n, \t, ...). */
static int re_ctl(char d)
{
    const char *k = d ? strchr("ntrfva", d) : NULL;
    return k ? "\n\t\r\f\v\a"[k - "ntrfva"] : 0;
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
            *used = j + 1; /* j is at the closing ']' found by pass 0 */
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
            const char *rep = d == 'd'   ? "0-9"
                              : d == 'w' ? "0-9A-Za-z_"
                              : d == 's' ? "\t\n\f\r "
                                         : NULL;
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
    return 0;
}

/* An escape outside brackets at p (p[0] == '\\'). */
static int re_escape(const char *p, char *out, size_t *o, size_t *used, char *err, size_t errlen)
{
    static const char *const classes[][2] = {
        {"d", "[0-9]"},
        {"D", "[^0-9]"},
        {"w", "[0-9A-Za-z_]"},
        {"W", "[^0-9A-Za-z_]"},
        {"s", "[\t\n\f\r ]"},
        {"S", "[^\t\n\f\r ]"},
        {"b", "\\b"},
        {"B", "\\B"},
        {"A", "^"},
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
        for (size_t i = 0; i < k; i++)
            re_lit(out, o, u[i]);
    } else if (d == 'Q') {
        const char *end = strstr(p + 2, "\\E");
        size_t n = end ? (size_t)(end - (p + 2)) : strlen(p + 2);
        for (size_t i = 0; i < n; i++)
            re_lit(out, o, (unsigned char)p[2 + i]);
        *used = 2 + n + (end ? 2 : 0);
    } else if (d && (unsigned char)d < 0x80 && !isalnum((unsigned char)d)) {
        re_lit(out, o, (unsigned char)d);
    } else {
        return re_err(err, errlen, "invalid escape sequence", p, d ? 2 : 1);
    }
    return 0;
}

/* A counted repetition {n}, {n,} or {n,m} at p: its length, 0 if p is a
 * literal '{' (as in RE2). lo and hi get the counts (hi -1 when open). */
static size_t re_rep(const char *p, long *lo, long *hi)
{
    char *end;
    if (!isdigit((unsigned char)p[1])) return 0;
    *lo = strtol(p + 1, &end, 10);
    *hi = *lo;
    if (*end == ',') {
        if (isdigit((unsigned char)end[1]))
            *hi = strtol(end + 1, &end, 10);
        else
            *hi = -1, end++;
    }
    return *end == '}' ? (size_t)(end - p) + 1 : 0;
}

/* Translate the RE2 pattern p to a POSIX ERE in out (room for 16 bytes per
 * byte of p, plus 32). 0, or -1 with the problem in err as Go words it. */
static int re_translate(const char *p, char *out, int *flags, char *err, size_t errlen)
{
    size_t i = 0, o = 0, used = 0;
    *flags = 0;
    if (!strncmp(p, "(?", 2) && p[2 + strspn(p + 2, "imsU")] == ')' && p[2] != ')') {
        /* Leading flags: i and m have POSIX forms; s and U change nothing
         * about which strings match. */
        i = 2 + strspn(p + 2, "imsU") + 1;
        if (memchr(p, 'i', i)) *flags |= REG_ICASE;
        if (memchr(p, 'm', i)) *flags |= REG_NEWLINE;
    }
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
int api__crd_re_compile(const char *p, regex_t *re, char *err, size_t errlen)
{
    size_t cap = strlen(p) * 16 + 32;
    char *out = malloc(cap);
    int flags, rc = -1;
    if (!out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!re_translate(p, out, &flags, err, errlen)) {
        int r = regcomp(re, out, REG_EXTENDED | REG_NOSUB | flags);
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
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
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
    static const char *const units[][3] = {
        {"ns", "nano", ""}, {"us", "µs", "micro"}, {"ms", "milli", ""}, {"s", "sec", ""},
        {"m", "min", ""},   {"h", "hr", "hour"},   {"d", "day", ""},    {"w", "wk", "week"}};
    if (rx("^[-+]?(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$", s, 0)) return 1;
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > s && isdigit((unsigned char)p[-1]))) continue;
        const char *u = p;
        while (isdigit((unsigned char)*u))
            u++;
        while (isspace((unsigned char)*u))
            u++;
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

/* netutils.ParseIPSloppy for IPv4: four decimal fields, leading zeros allowed. */
static int is_ipv4(const char *s)
{
    if (!rx("^[0-9]+\\.[0-9]+\\.[0-9]+\\.[0-9]+$", s, 0)) return 0;
    for (const char *p = s; p; p = strchr(p, '.'), p = p ? p + 1 : NULL)
        if (strtol(p, NULL, 10) > 255) return 0;
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
    if (v6 ? inet_pton(AF_INET6, addr, buf) != 1 : !is_ipv4(addr)) return 0;
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
        for (int i = 0; i < 9; i++)
            sum += (i + 1) * (d[i] - '0');
        sum += 10 * (d[9] == 'X' ? 10 : d[9] - '0');
        return sum % 11 == 0;
    }
    if (!rx("^[0-9]{13}$", d, 0)) return 0;
    for (int i = 0; i < 12; i++)
        sum += (d[i] - '0') * (i % 2 ? 3 : 1);
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
    return rx(
        "^([a-zA-Z0-9](-?[a-zA-Z0-9]{0,62})?|([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)+"
        "[a-zA-Z]{2,63})$",
        s, 0);
}

#define HEX2 "[0-9a-f]{2}"
#define HEX4 "[0-9a-f]{4}"
#define RGB  "[[:space:]]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[[:space:]]*"

/* The registry's formats a regular expression decides (POSIX ERE). */
static const struct {
    const char *name, *ere;
    int icase;
} format_rx[] = {
    {"bsonobjectid", "^[0-9a-fA-F]{24}$", 0},
    {"uuid", "^" HEX4 HEX4 "-?" HEX4 "-?" HEX4 "-?" HEX4 "-?" HEX4 HEX4 HEX4 "$", 1},
    {"uuid3", "^" HEX4 HEX4 "-?" HEX4 "-?3[0-9a-f]{3}-?" HEX4 "-?" HEX4 HEX4 HEX4 "$", 1},
    {"uuid4", "^" HEX4 HEX4 "-?" HEX4 "-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?" HEX4 HEX4 HEX4 "$", 1},
    {"uuid5", "^" HEX4 HEX4 "-?" HEX4 "-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?" HEX4 HEX4 HEX4 "$", 1},
    {"hexcolor", "^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", 0},
    {"ssn", "^[0-9]{3}[- ][0-9]{2}[- ][0-9]{4}$", 0}, /* 11 bytes: both separators */
    {"byte", "^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$", 0},
    {"rgbcolor", "^rgb\\(" RGB "," RGB "," RGB "\\)$", 0},
    {"mac", /* net.ParseMAC: 6, 8 or 20 bytes */
     "^(" HEX2 "((:" HEX2 "){5}|(:" HEX2 "){7}|(:" HEX2 "){19}|(-" HEX2 "){5}|(-" HEX2
     "){7}|(-" HEX2 "){19})|" HEX4 "((\\." HEX4 "){2}|(\\." HEX4 "){3}|(\\." HEX4 "){9}))$",
     1},
};

/* Does s satisfy the string format f (already without '-')? 1 yes, 0 no,
 * -1 when the registry has no such format (then nothing is checked). */
int api__crd_format_ok(const char *f, const char *s)
{
    unsigned char b[16];
    for (size_t i = 0; i < sizeof format_rx / sizeof *format_rx; i++)
        if (!strcmp(f, format_rx[i].name)) return rx(format_rx[i].ere, s, format_rx[i].icase);
    if (!strcmp(f, "password")) return 1;
    if (!strcmp(f, "date")) return is_date(s);
    if (!strcmp(f, "datetime")) return is_datetime(s);
    if (!strcmp(f, "duration")) return is_duration(s);
    if (!strcmp(f, "ipv4")) return is_ipv4(s) || (strchr(s, '.') && inet_pton(AF_INET6, s, b) == 1);
    if (!strcmp(f, "ipv6")) return strchr(s, ':') && inet_pton(AF_INET6, s, b) == 1;
    if (!strcmp(f, "cidr")) return is_cidr(s);
    if (!strcmp(f, "hostname")) return is_hostname(s);
    if (!strcmp(f, "email")) return is_email(s);
    if (!strcmp(f, "uri")) return is_uri(s);
    if (!strcmp(f, "isbn10")) return is_isbn(s, 10);
    if (!strcmp(f, "isbn13")) return is_isbn(s, 13);
    if (!strcmp(f, "isbn")) return is_isbn(s, 10) || is_isbn(s, 13);
    if (!strcmp(f, "creditcard")) return is_creditcard(s);
    return -1;
}
