/*
 * managed_set.c -- sets of field paths in Kubernetes' FieldsV1 form, and
 * the Go-compatible text they are written in (see managed_int.h).
 *
 * Kubernetes clients read managedFields, so the text must be byte for byte
 * what Kubernetes writes:
 *   1. Element keys are Go JSON: k:{"containerPort":80,"protocol":"TCP"}
 *      (keys sorted, compact, HTML characters escaped as json-iterator
 *      does), v:"x", i:0.
 *   2. A FieldsV1 object lists "." first, then its path elements in
 *      fieldpath.PathElement order: fields (by name, bytewise) before keys
 *      (compared as sorted field lists) before values (value.Compare)
 *      before indexes.
 *   3. Paths print as fieldpath.Path's String: .a.b[k="v",n=1][="x"][0],
 *      values with Go's %v (strings %q).
 *
 * Invariants of a set node (managed_int.h): "." means member; every other
 * key is a canonical element key; no node is ever left empty.
 */
#include "apiserver/apply/managed_int.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

/* --- Go-compatible text ----------------------------------------------- */

static int app(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

/* Shortest decimal digits of f (f != 0, finite) and the exponent of the
 * first digit: f = 0.D * 10^(exp+1). */
static void float_digits(double f, char *digits, size_t n, int *exp)
{
    char e[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, f);
        if (strtod(e, NULL) == f) break;
    }
    size_t k = 0;
    const char *p = e + (e[0] == '-');
    for (; *p && *p != 'e' && k + 1 < n; p++)
        if (*p != '.') digits[k++] = *p;
    while (k > 1 && digits[k - 1] == '0')
        k--;
    digits[k] = '\0';
    *exp = (int)strtol(p + 1, NULL, 10);
}

/* Format as Go does: encoding/json (json = 1) or %v (json = 0). Both use
 * the shortest digits; they differ in when they switch to exponent form
 * and how they write the exponent. */
static void gofloat(double f, int json, char *out, size_t n)
{
    if (!isfinite(f)) {
        snprintf(out, n, "%s", isnan(f) ? "NaN" : f > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (f == 0) {
        snprintf(out, n, "%s", signbit(f) ? "-0" : "0");
        return;
    }
    char d[32];
    int exp;
    float_digits(f, d, sizeof d, &exp);
    size_t nd = strlen(d);
    const char *sign = f < 0 ? "-" : "";
    int use_e = json ? (fabs(f) < 1e-6 || fabs(f) >= 1e21) : (exp < -4 || exp >= 21);
    if (use_e) {
        char ex[16];
        int ae = exp < 0 ? -exp : exp;
        if (json && exp < 0 && ae < 10)
            snprintf(ex, sizeof ex, "e-%d", ae); /* json's e-07 -> e-7 */
        else
            snprintf(ex, sizeof ex, "e%c%02d", exp < 0 ? '-' : '+', ae);
        if (nd > 1)
            snprintf(out, n, "%s%c.%s%s", sign, d[0], d + 1, ex);
        else
            snprintf(out, n, "%s%c%s", sign, d[0], ex);
        return;
    }
    int point = exp + 1; /* digits before the decimal point: -5 .. 21 here */
    char body[64];
    size_t k = 0;
    if (point <= 0) {
        body[k++] = '0', body[k++] = '.';
        for (int i = 0; i < -point; i++)
            body[k++] = '0';
        memcpy(body + k, d, nd), k += nd;
    } else if ((size_t)point >= nd) {
        memcpy(body, d, nd), k = nd;
        for (size_t i = nd; i < (size_t)point; i++)
            body[k++] = '0';
    } else {
        memcpy(body, d, (size_t)point), k = (size_t)point;
        body[k++] = '.';
        memcpy(body + k, d + point, nd - (size_t)point), k += nd - (size_t)point;
    }
    body[k] = '\0';
    snprintf(out, n, "%s%s", sign, body);
}

static int gostr(const char *s, size_t len, int stdlib, buf_t *b)
{
    static const char hex[] = "0123456789abcdef";
    int rc = buf_append(b, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < len && !rc; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8] = "";
        size_t skip = 0;
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, esc[2] = '\0';
        } else if (c == '\n') {
            memcpy(esc, "\\n", 3);
        } else if (c == '\r') {
            memcpy(esc, "\\r", 3);
        } else if (c == '\t') {
            memcpy(esc, "\\t", 3);
        } else if (stdlib && c == '\b') {
            memcpy(esc, "\\b", 3);
        } else if (stdlib && c == '\f') {
            memcpy(esc, "\\f", 3);
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            snprintf(esc, sizeof esc, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
        } else if (c == 0xe2 && i + 2 < len && (unsigned char)s[i + 1] == 0x80 &&
                   ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9)) {
            snprintf(esc, sizeof esc, "\\u202%c", (unsigned char)s[i + 2] == 0xa8 ? '8' : '9');
            skip = 2;
        }
        if (!esc[0]) continue;
        rc = buf_append(b, s + start, i - start);
        if (!rc) rc = app(b, esc);
        i += skip;
        start = i + 1;
    }
    if (!rc) rc = buf_append(b, s + start, len - start);
    if (!rc) rc = buf_append(b, "\"", 1);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of object o, sorted bytewise; *out is malloc'd (free it). */
static int sorted_names(const json_t *o, const char ***out, size_t *n)
{
    size_t k = json_object_size(o), i = 0;
    const char **v = calloc(k ? k : 1, sizeof *v);
    if (!v) return KP_ENOMEM;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)o, key, val) v[i++] = key;
    qsort(v, k, sizeof *v, cmp_str);
    *out = v;
    *n = k;
    return 0;
}

int api__gojson(const json_t *v, int stdlib, buf_t *b)
{
    char num[64];
    int rc = 0;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char **keys;
        size_t n;
        if ((rc = sorted_names(v, &keys, &n))) return rc;
        rc = buf_append(b, "{", 1);
        for (size_t i = 0; i < n && !rc; i++) {
            if (i) rc = buf_append(b, ",", 1);
            if (!rc) rc = gostr(keys[i], strlen(keys[i]), stdlib, b);
            if (!rc) rc = buf_append(b, ":", 1);
            if (!rc) rc = api__gojson(json_object_get(v, keys[i]), stdlib, b);
        }
        free(keys);
        return rc ? rc : buf_append(b, "}", 1);
    }
    case JSON_ARRAY:
        rc = buf_append(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v) && !rc; i++) {
            if (i) rc = buf_append(b, ",", 1);
            if (!rc) rc = api__gojson(json_array_get(v, i), stdlib, b);
        }
        return rc ? rc : buf_append(b, "]", 1);
    case JSON_STRING:
        return gostr(json_string_value(v), json_string_length(v), stdlib, b);
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return app(b, num);
    case JSON_REAL:
        gofloat(json_real_value(v), 1, num, sizeof num);
        return app(b, num);
    case JSON_TRUE:
        return app(b, "true");
    case JSON_FALSE:
        return app(b, "false");
    default:
        return app(b, "null");
    }
}

int api__goquote(const char *s, buf_t *b)
{
    int rc = buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        char esc[8] = "";
        switch (*p) {
        case '"':
            memcpy(esc, "\\\"", 3);
            break;
        case '\\':
            memcpy(esc, "\\\\", 3);
            break;
        case '\a':
            memcpy(esc, "\\a", 3);
            break;
        case '\b':
            memcpy(esc, "\\b", 3);
            break;
        case '\f':
            memcpy(esc, "\\f", 3);
            break;
        case '\n':
            memcpy(esc, "\\n", 3);
            break;
        case '\r':
            memcpy(esc, "\\r", 3);
            break;
        case '\t':
            memcpy(esc, "\\t", 3);
            break;
        case '\v':
            memcpy(esc, "\\v", 3);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) snprintf(esc, sizeof esc, "\\x%02x", *p);
        }
        rc = esc[0] ? app(b, esc) : buf_append(b, p, 1);
    }
    return rc ? rc : buf_append(b, "\"", 1);
}

/* Go's %v of a value (value.ToString). */
static int tostring(const json_t *v, buf_t *b)
{
    char num[64];
    int rc = 0;
    switch (json_typeof(v)) {
    case JSON_STRING:
        return api__goquote(json_string_value(v), b);
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return app(b, num);
    case JSON_REAL:
        gofloat(json_real_value(v), 0, num, sizeof num);
        return app(b, num);
    case JSON_TRUE:
        return app(b, "true");
    case JSON_FALSE:
        return app(b, "false");
    case JSON_ARRAY:
        rc = buf_append(b, "[", 1);
        for (size_t i = 0; i < json_array_size(v) && !rc; i++) {
            if (i) rc = buf_append(b, ",", 1);
            if (!rc) rc = tostring(json_array_get(v, i), b);
        }
        return rc ? rc : buf_append(b, "]", 1);
    case JSON_OBJECT: {
        const char **keys;
        size_t n;
        if ((rc = sorted_names(v, &keys, &n))) return rc;
        for (size_t i = 0; i < n && !rc; i++) {
            rc = app(b, keys[i]);
            if (!rc) rc = buf_append(b, "=", 1);
            if (!rc) rc = tostring(json_object_get(v, keys[i]), b);
        }
        free(keys);
        return rc;
    }
    default:
        return app(b, "null");
    }
}

/* --- values ----------------------------------------------------------- */

int api__val_equal(const json_t *a, const json_t *b)
{
    if (!a || !b) return a == b;
    if (json_is_real(a) || json_is_real(b)) {
        if (!json_is_number(a) || !json_is_number(b)) return 0;
        return json_number_value(a) == json_number_value(b);
    }
    if (json_typeof(a) != json_typeof(b)) return 0;
    switch (json_typeof(a)) {
    case JSON_INTEGER:
        return json_integer_value(a) == json_integer_value(b);
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    case JSON_ARRAY:
        if (json_array_size(a) != json_array_size(b)) return 0;
        for (size_t i = 0; i < json_array_size(a); i++)
            if (!api__val_equal(json_array_get(a, i), json_array_get(b, i))) return 0;
        return 1;
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)a, k, v)
        {
            if (!api__val_equal(v, json_object_get(b, k))) return 0;
        }
        return 1;
    }
    default:
        return 1; /* true, false, null: the types matched */
    }
}

static int sgn(double d)
{
    return d < 0 ? -1 : d > 0 ? 1 : 0;
}

/* The smallest key of o after `prev` in byte order (prev NULL: the
 * first); NULL when none is left. Quadratic, but allocation-free: it runs
 * inside sort comparators, on keys of a handful of fields. */
static const char *next_name(const json_t *o, const char *prev)
{
    const char *best = NULL, *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (prev && strcmp(k, prev) <= 0) continue;
        if (!best || strcmp(k, best) < 0) best = k;
    }
    return best;
}

static int obj_compare(const json_t *a, const json_t *b);

int api__val_compare(const json_t *a, const json_t *b)
{
    if (json_is_real(a)) {
        if (json_is_number(b)) return sgn(json_real_value(a) - json_number_value(b));
        return -1;
    }
    if (json_is_real(b))
        return json_is_integer(a) ? sgn(json_number_value(a) - json_real_value(b)) : 1;
    if (json_is_integer(a) || json_is_integer(b)) {
        if (!json_is_integer(b)) return -1;
        if (!json_is_integer(a)) return 1;
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_string(a) || json_is_string(b)) {
        if (!json_is_string(b)) return -1;
        if (!json_is_string(a)) return 1;
        int c = strcmp(json_string_value(a), json_string_value(b));
        return c < 0 ? -1 : c > 0;
    }
    if (json_is_boolean(a) || json_is_boolean(b)) {
        if (!json_is_boolean(b)) return -1;
        if (!json_is_boolean(a)) return 1;
        return json_is_true(a) - json_is_true(b);
    }
    if (json_is_array(a) || json_is_array(b)) {
        if (!json_is_array(b)) return -1;
        if (!json_is_array(a)) return 1;
        size_t na = json_array_size(a), nb = json_array_size(b);
        for (size_t i = 0; i < na && i < nb; i++) {
            int c = api__val_compare(json_array_get(a, i), json_array_get(b, i));
            if (c) return c;
        }
        return na < nb ? -1 : na > nb;
    }
    if (json_is_object(a) || json_is_object(b)) {
        if (!json_is_object(b)) return -1;
        if (!json_is_object(a)) return 1;
        return obj_compare(a, b);
    }
    return 0; /* both null */
}

/* --- path elements ---------------------------------------------------- */

int api__pe_field(const char *name, buf_t *b)
{
    buf_reset(b);
    int rc = buf_append(b, "f:", 2);
    return rc ? rc : app(b, name);
}

int api__pe_key(const json_t *keys, buf_t *b)
{
    buf_reset(b);
    int rc = buf_append(b, "k:", 2);
    return rc ? rc : api__gojson(keys, 0, b);
}

int api__pe_value(const json_t *v, buf_t *b)
{
    buf_reset(b);
    int rc = buf_append(b, "v:", 2);
    return rc ? rc : api__gojson(v, 0, b);
}

/* A path element taken apart, for ordering and printing. */
typedef struct pek {
    const char *pe; /* the key, borrowed */
    int rank;       /* f 0, k 1, v 2, i 3 */
    json_t *v;      /* k: the key object; v: the value; NULL otherwise */
    long long idx;  /* i: the index */
} pek_t;

/* A JSON syntax check that allocates nothing: jansson reports running out
 * of memory while parsing as a syntax error, so a text this accepts and
 * json_loads() refused means memory ran out. Rejects what jansson rejects:
 * control characters and \u0000 in strings, numbers out of range. */
static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *js_value(const char *p, int depth);

static const char *js_string(const char *p)
{
    for (p++; *p != '"'; p++) {
        if (!*p || (unsigned char)*p < 0x20) return NULL;
        if (*p != '\\') continue;
        p++;
        if (*p == 'u') {
            int zero = 1;
            for (int i = 1; i <= 4; i++) {
                char c = p[i];
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                    return NULL;
                zero &= c == '0';
            }
            if (zero) return NULL;
            p += 4;
        } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
            return NULL;
        }
    }
    return p + 1;
}

static const char *js_number(const char *p)
{
    const char *start = p;
    int real = 0;
    if (*p == '-') p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (*p == '.') {
        real = 1, p++;
        if (*p < '0' || *p > '9') return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        real = 1, p++;
        if (*p == '+' || *p == '-') p++;
        if (*p < '0' || *p > '9') return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    errno = 0;
    if (real) {
        double d = strtod(start, NULL);
        if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) return NULL;
    } else {
        strtoll(start, NULL, 10);
        if (errno == ERANGE) return NULL;
    }
    return p;
}

static const char *js_value(const char *p, int depth)
{
    if (depth > 2048) return NULL; /* jansson's own nesting limit */
    p = js_ws(p);
    switch (*p) {
    case '"':
        return js_string(p);
    case '{':
    case '[': {
        char close = *p == '{' ? '}' : ']';
        p = js_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                if (*p != '"' || !(p = js_string(p))) return NULL;
                p = js_ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = js_value(p, depth + 1))) return NULL;
            p = js_ws(p);
            if (*p == close) return p + 1;
            if (*p++ != ',') return NULL;
            p = js_ws(p);
        }
    }
    case 't':
        return strncmp(p, "true", 4) ? NULL : p + 4;
    case 'f':
        return strncmp(p, "false", 5) ? NULL : p + 5;
    case 'n':
        return strncmp(p, "null", 4) ? NULL : p + 4;
    default:
        return js_number(p);
    }
}

int api__json_valid(const char *text, int any)
{
    const char *p = js_ws(text);
    if (!any && *p != '{' && *p != '[') return 0;
    p = js_value(p, 0);
    return p && !*js_ws(p);
}

static int pek_parse(const char *pe, pek_t *k)
{
    memset(k, 0, sizeof *k);
    k->pe = pe;
    if (strlen(pe) < 2 || pe[1] != ':') return KP_EINVAL;
    if (pe[0] == 'f') return 0;
    if (pe[0] == 'i') {
        char *end;
        k->rank = 3;
        k->idx = strtoll(pe + 2, &end, 10);
        return end == pe + 2 || *end ? KP_EINVAL : 0;
    }
    if (pe[0] != 'k' && pe[0] != 'v') return KP_EINVAL;
    k->rank = pe[0] == 'k' ? 1 : 2;
    k->v = json_loads(pe + 2, JSON_DECODE_ANY, NULL);
    if (!k->v && api__json_valid(pe + 2, 1)) return KP_ENOMEM;
    if (!k->v || (k->rank == 1 && !json_is_object(k->v))) {
        json_decref(k->v);
        k->v = NULL;
        return KP_EINVAL;
    }
    return 0;
}

/* The order of sorted field lists and maps: pairwise by name, then by
 * value; the shorter list first. */
static int obj_compare(const json_t *a, const json_t *b)
{
    const char *ka = next_name(a, NULL), *kb = next_name(b, NULL);
    for (; ka && kb; ka = next_name(a, ka), kb = next_name(b, kb)) {
        int c = strcmp(ka, kb);
        if (c) return c < 0 ? -1 : 1;
        if ((c = api__val_compare(json_object_get(a, ka), json_object_get(b, kb)))) return c;
    }
    return ka ? 1 : kb ? -1 : 0;
}

static int pek_cmp(const void *pa, const void *pb)
{
    const pek_t *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    switch (a->rank) {
    case 0:
        return strcmp(a->pe + 2, b->pe + 2);
    case 1:
        return obj_compare(a->v, b->v);
    case 2:
        return api__val_compare(a->v, b->v);
    default:
        return a->idx < b->idx ? -1 : a->idx > b->idx;
    }
}

static void peks_free(pek_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(v[i].v);
    free(v);
}

/* The element keys of a set node (not "."), in PathElement order. */
static int peks_sorted(const json_t *node, pek_t **out, size_t *n)
{
    size_t cap = json_object_size(node), k = 0;
    pek_t *v = calloc(cap ? cap : 1, sizeof *v);
    if (!v) return KP_ENOMEM;
    const char *key;
    json_t *child;
    json_object_foreach((json_t *)node, key, child)
    {
        if (!strcmp(key, ".")) continue;
        int rc = pek_parse(key, &v[k]);
        if (rc == KP_ENOMEM) {
            peks_free(v, k);
            return rc;
        }
        if (rc) v[k].rank = 4; /* cannot happen: keys are canonical */
        k++;
    }
    qsort(v, k, sizeof *v, pek_cmp);
    *out = v;
    *n = k;
    return 0;
}

static int pe_display(const char *pe, buf_t *b)
{
    pek_t k;
    int rc = pek_parse(pe, &k);
    if (rc) return rc == KP_ENOMEM ? rc : app(b, pe);
    char num[32];
    switch (k.rank) {
    case 0:
        rc = buf_append(b, ".", 1);
        if (!rc) rc = app(b, pe + 2);
        break;
    case 1: {
        const char **keys;
        size_t n;
        if ((rc = sorted_names(k.v, &keys, &n))) break;
        rc = buf_append(b, "[", 1);
        for (size_t i = 0; i < n && !rc; i++) {
            if (i) rc = buf_append(b, ",", 1);
            if (!rc) rc = app(b, keys[i]);
            if (!rc) rc = buf_append(b, "=", 1);
            if (!rc) rc = tostring(json_object_get(k.v, keys[i]), b);
        }
        free(keys);
        if (!rc) rc = buf_append(b, "]", 1);
        break;
    }
    case 2:
        rc = app(b, "[=");
        if (!rc) rc = tostring(k.v, b);
        if (!rc) rc = buf_append(b, "]", 1);
        break;
    default:
        snprintf(num, sizeof num, "[%lld]", k.idx);
        rc = app(b, num);
    }
    json_decref(k.v);
    return rc;
}

int api__path_display(const char *const *pev, size_t n, buf_t *b)
{
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = pe_display(pev[i], b);
    return rc;
}

/* --- sets ------------------------------------------------------------- */

int api__mset_insert(json_t *node)
{
    if (json_object_get(node, ".")) return 0;
    return json_object_set_new(node, ".", json_object()) ? KP_ENOMEM : 0;
}

int api__mset_member(const json_t *node)
{
    return json_object_get(node, ".") != NULL;
}

json_t *api__mset_child(json_t *node, const char *pe)
{
    json_t *c = json_object_get(node, pe);
    if (c) return c;
    c = json_object();
    if (!c || json_object_set_new(node, pe, c)) return NULL;
    return c;
}

void api__mset_prune(json_t *node, const char *pe)
{
    json_t *c = json_object_get(node, pe);
    if (c && !json_object_size(c)) json_object_del(node, pe);
}

int api__mset_union(json_t *dst, const json_t *src)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)src, k, v)
    {
        int rc;
        if (!strcmp(k, ".")) {
            rc = api__mset_insert(dst);
        } else {
            json_t *c = api__mset_child(dst, k);
            rc = c ? api__mset_union(c, v) : KP_ENOMEM;
            if (c) api__mset_prune(dst, k);
        }
        if (rc) return rc;
    }
    return 0;
}

void api__mset_diff(json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(a, tmp, k, v)
    {
        const json_t *bv = json_object_get(b, k);
        if (!bv) continue;
        if (!strcmp(k, ".")) {
            json_object_del(a, k);
            continue;
        }
        api__mset_diff(v, bv);
        api__mset_prune(a, k);
    }
}

void api__mset_rdiff(json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(a, tmp, k, v)
    {
        const json_t *bv = json_object_get(b, k);
        if (!bv || !strcmp(k, ".")) continue;
        if (api__mset_member(bv)) {
            json_object_del(a, k);
            continue;
        }
        api__mset_rdiff(v, bv);
        api__mset_prune(a, k);
    }
}

json_t *api__mset_intersect(const json_t *a, const json_t *b)
{
    json_t *out = json_object();
    if (!out) return NULL;
    if (api__mset_member(a) && api__mset_member(b) && api__mset_insert(out)) goto fail;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v)
    {
        const json_t *bv = json_object_get(b, k);
        if (!bv || !strcmp(k, ".")) continue;
        json_t *c = api__mset_intersect(v, bv);
        if (!c) goto fail;
        if (!json_object_size(c)) {
            json_decref(c);
        } else if (json_object_set_new(out, k, c)) {
            goto fail;
        }
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

int api__mset_has(const json_t *set, const char *const *pev, size_t n)
{
    const json_t *node = set;
    for (size_t i = 0; i < n && node; i++)
        node = json_object_get(node, pev[i]);
    return n && api__mset_member(node);
}

size_t api__mset_count(const json_t *set)
{
    size_t n = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)set, k, v) n += strcmp(k, ".") ? api__mset_count(v) : 1;
    return n;
}

/* Rewrite element key `pe` in canonical form into b. KP_EINVAL if it is
 * not one. */
static int pe_canon(const char *pe, buf_t *b)
{
    pek_t k;
    int rc = pek_parse(pe, &k);
    if (rc) return rc;
    switch (k.rank) {
    case 0:
        buf_reset(b);
        rc = app(b, pe);
        break;
    case 1:
        rc = api__pe_key(k.v, b);
        break;
    case 2:
        rc = api__pe_value(k.v, b);
        break;
    default: {
        char num[40];
        snprintf(num, sizeof num, "i:%lld", k.idx);
        buf_reset(b);
        rc = app(b, num);
    }
    }
    json_decref(k.v);
    return rc;
}

static int decode_node(const json_t *in, json_t *out, int root, buf_t *tmp, int depth)
{
    if (depth > API__MW_DEPTH) return KP_EINVAL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v)
    {
        int rc;
        if (!json_is_object(v)) return KP_EINVAL;
        if (!strcmp(k, ".")) {
            if (!root && (rc = api__mset_insert(out))) return rc;
            continue;
        }
        if ((rc = pe_canon(k, tmp))) return rc;
        json_t *c = api__mset_child(out, tmp->p);
        if (!c) return KP_ENOMEM;
        rc = json_object_size(v) ? decode_node(v, c, 0, tmp, depth + 1) : api__mset_insert(c);
        if (rc) return rc;
        api__mset_prune(out, tmp->p);
    }
    return 0;
}

int api__mset_decode(const json_t *fields, json_t **out)
{
    *out = NULL;
    if (fields && !json_is_object(fields)) return KP_EINVAL;
    json_t *set = json_object();
    if (!set) return KP_ENOMEM;
    buf_t tmp;
    buf_init(&tmp, API__MSET_BUF_MAX);
    int rc = fields ? decode_node(fields, set, 1, &tmp, 0) : 0;
    buf_free(&tmp);
    if (rc) {
        json_decref(set);
        return rc == KP_ETOOLARGE ? KP_EINVAL : rc;
    }
    *out = set;
    return 0;
}

json_t *api__mset_encode(const json_t *node)
{
    json_t *out = json_object();
    pek_t *keys = NULL;
    size_t n = 0;
    if (!out || peks_sorted(node, &keys, &n)) goto fail;
    if (n && api__mset_member(node) && json_object_set_new(out, ".", json_object())) goto fail;
    for (size_t i = 0; i < n; i++) {
        const json_t *c = json_object_get(node, keys[i].pe);
        json_t *e =
            json_object_size(c) == 1 && api__mset_member(c) ? json_object() : api__mset_encode(c);
        if (!e || json_object_set_new(out, keys[i].pe, e)) goto fail;
    }
    peks_free(keys, n);
    return out;
fail:
    peks_free(keys, n);
    json_decref(out);
    return NULL;
}

static int iter_node(const json_t *node, const char **pev, size_t depth, api__mset_visit_fn fn,
                     void *arg)
{
    if (depth >= API__MW_DEPTH) return KP_EINVAL;
    pek_t *keys = NULL;
    size_t n = 0;
    int rc = peks_sorted(node, &keys, &n);
    for (size_t i = 0; i < n && !rc; i++) {
        if (!api__mset_member(json_object_get(node, keys[i].pe))) continue;
        pev[depth] = keys[i].pe;
        rc = fn(arg, pev, depth + 1);
    }
    for (size_t i = 0; i < n && !rc; i++) {
        const json_t *c = json_object_get(node, keys[i].pe);
        if (json_object_size(c) <= (size_t)api__mset_member(c)) continue;
        pev[depth] = keys[i].pe;
        rc = iter_node(c, pev, depth + 1, fn, arg);
    }
    peks_free(keys, n);
    return rc;
}

int api__mset_iterate(const json_t *set, api__mset_visit_fn fn, void *arg)
{
    const char *pev[API__MW_DEPTH];
    return iter_node(set, pev, 0, fn, arg);
}
