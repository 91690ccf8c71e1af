/*
 * crd_schema.c -- CustomResourceDefinition schemas: is a version's
 * openAPIV3Schema acceptable, and what does it make of a custom object.
 *
 * Kubernetes splits the work in three, and so does this code:
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
 * Files: this one holds the object side (validating, pruning, defaulting)
 * and the helpers all three share through crd_schema_int.h (bounded
 * strings, Go's printing of values); crd_schema_check.c holds
 * api_crd_schema_check(); crd_schema_re.c holds the pattern translation
 * and the string formats.
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
 * translate RE2 syntax to a POSIX ERE (re_translate, crd_schema_re.c) for
 * regcomp/regexec; what has no POSIX form fails to compile, and the schema
 * check reports it as Kubernetes reports a bad pattern. Matching is bytewise
 * ('.' is one byte).
 */
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/schema/crd_schema_int.h"
#include "apiserver/schema/object.h"

/* ---- JSON helpers (the shared ones are in crd_schema_int.h) ---- */

/* A schema integer keyword (maxLength, minItems, ...); 0 when absent. */
static int jint(const json_t *o, const char *k, long long *out)
{
    const json_t *v = json_object_get(o, k);
    if (!json_is_number(v)) return 0;
    *out = json_is_integer(v) ? (long long)json_integer_value(v) : (long long)json_real_value(v);
    return 1;
}

/* ---- bounded strings: field paths and messages ---- */

size_t api__crd_path_add(api__crd_path_t *p, const char *fmt, ...)
{
    size_t old = p->n;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(p->s + p->n, sizeof p->s - p->n, fmt, ap);
    va_end(ap);
    if (w > 0) p->n = p->n + (size_t)w < sizeof p->s ? p->n + (size_t)w : sizeof p->s - 1;
    return old;
}

void api__crd_sb_add(api__crd_sb_t *b, const char *fmt, ...)
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
    size_t n = c >= 0xc2 && c < 0xe0   ? 2
               : c >= 0xe0 && c < 0xf0 ? 3
               : c >= 0xf0 && c < 0xf5 ? 4
                                       : 0;
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
void api__crd_go_quote(api__crd_sb_t *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    api__crd_sb_add(b, "\"");
    while (*p) {
        unsigned c = *p;
        uint32_t r;
        size_t n;
        if (c == '"' || c == '\\')
            api__crd_sb_add(b, "\\%c", c);
        else if (c >= 7 && c <= 13)
            api__crd_sb_add(b, "\\%c", "abtnvfr"[c - 7]);
        else if (c < 0x20 || c == 0x7f)
            api__crd_sb_add(b, "\\x%02x", c);
        else if (c < 0x80)
            api__crd_sb_add(b, "%c", c);
        else if (!(n = utf8_dec(p, &r)))
            api__crd_sb_add(b, "\\x%02x", c);
        else {
            if (r < 0xa0 || r == 0xad)
                api__crd_sb_add(b, "\\u%04x", (unsigned)r);
            else
                api__crd_sb_add(b, "%.*s", (int)n, (const char *)p);
            p += n;
            continue;
        }
        p++;
    }
    api__crd_sb_add(b, "\"");
}

/* A %q rendering of s in buf (for composing messages). */
const char *api__crd_q(char *buf, size_t cap, const char *s)
{
    api__crd_sb_t b = {buf, cap, 0};
    buf[0] = '\0';
    api__crd_go_quote(&b, s);
    return buf;
}

/* A float64 as Go prints it: %v (shortest digits, exponent when exp < -4 or
 * exp >= 6... as strconv 'g' -1 does), or encoding/json ('e' only outside
 * [1e-6, 1e21)). */
static void go_float(api__crd_sb_t *b, double v, int json)
{
    if (v != v) {
        api__crd_sb_add(b, "NaN");
        return;
    }
    if (v - v != 0) {
        api__crd_sb_add(b, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        api__crd_sb_add(b, signbit(v) ? "-0" : "0");
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
        api__crd_sb_add(b, "-");
        p++;
    }
    for (; *p && *p != 'e' && nd < (int)sizeof digs; p++)
        if (*p != '.') digs[nd++] = *p;
    int x = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
    while (nd > 1 && digs[nd - 1] == '0')
        nd--;
    double a = v < 0 ? -v : v;
    int use_e = json ? (a < 1e-6 || a >= 1e21) : (x < -4 || x >= 6);
    if (use_e) {
        api__crd_sb_add(b, "%c", digs[0]);
        if (nd > 1) api__crd_sb_add(b, ".%.*s", nd - 1, digs + 1);
        int ax = x < 0 ? -x : x;
        if (json && x < 0 && ax < 10)
            api__crd_sb_add(b, "e-%d", ax);
        else
            api__crd_sb_add(b, "e%c%02d", x < 0 ? '-' : '+', ax);
        return;
    }
    int dp = x + 1;
    if (dp <= 0)
        api__crd_sb_add(b, "0.%.*s%.*s", -dp, "000000", nd, digs);
    else if (dp >= nd)
        api__crd_sb_add(b, "%.*s%.*s", nd, digs, dp - nd, "00000000000000000000");
    else
        api__crd_sb_add(b, "%.*s.%.*s", dp, digs, nd - dp, digs + dp);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* %#v of a decoded JSON value: map[string]interface {}{"k":v, ...} with the
 * keys sorted, []interface {}{...}, interface {}(nil) for null. */
static void go_sharp(api__crd_sb_t *b, const json_t *v)
{
    size_t i, n = json_is_object(v) ? json_object_size(v) : 0;
    if (!v || json_is_null(v)) {
        api__crd_sb_add(b, "interface {}(nil)");
    } else if (json_is_array(v)) {
        json_t *e;
        api__crd_sb_add(b, "[]interface {}{");
        json_array_foreach(v, i, e) {
            if (i) api__crd_sb_add(b, ", ");
            go_sharp(b, e);
        }
        api__crd_sb_add(b, "}");
    } else if (json_is_object(v)) {
        const char **keys = malloc((n ? n : 1) * sizeof *keys);
        const char *k;
        json_t *e;
        api__crd_sb_add(b, "map[string]interface {}{");
        i = 0;
        if (keys) {
            json_object_foreach((json_t *)v, k, e)
                keys[i++] = k;
            qsort(keys, n, sizeof *keys, cmp_str);
            for (i = 0; i < n; i++) {
                api__crd_sb_add(b, "%s", i ? ", " : "");
                api__crd_go_quote(b, keys[i]);
                api__crd_sb_add(b, ":");
                go_sharp(b, json_object_get(v, keys[i]));
            }
            free(keys);
        }
        api__crd_sb_add(b, "}");
    } else {
        api__crd_go_value(b, v);
    }
}

/* A field.Error's bad value: strings %q, numbers and booleans %v, null
 * "null", maps and slices %#v. */
void api__crd_go_value(api__crd_sb_t *b, const json_t *v)
{
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_STRING:
        api__crd_go_quote(b, json_string_value(v));
        break;
    case JSON_INTEGER:
        api__crd_sb_add(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        go_float(b, json_real_value(v), 0);
        break;
    case JSON_TRUE:
        api__crd_sb_add(b, "true");
        break;
    case JSON_FALSE:
        api__crd_sb_add(b, "false");
        break;
    case JSON_NULL:
        api__crd_sb_add(b, "null");
        break;
    default:
        go_sharp(b, v);
        break;
    }
}

/* ---- a node's types and format ---- */

/* The node's types: x-kubernetes-int-or-string is ["integer","string"]. */
static int node_types(const json_t *s, const char *t[2])
{
    if (api__crd_jtrue(s, "x-kubernetes-int-or-string")) {
        t[0] = "integer", t[1] = "string";
        return 2;
    }
    t[0] = api__crd_jstr(s, "type");
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
    static const char known[] =
        " bsonobjectid uri email hostname ipv4 ipv6 cidr mac uuid uuid3 uuid4 "
        "uuid5 isbn isbn10 isbn13 creditcard ssn hexcolor rgbcolor byte "
        "password date duration datetime ";
    const char *f = api__crd_jstr(s, "format"), *type = nt == 1 ? t[0] : "";
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
    double g = (double)(long long)f, d = f > g ? f - g : g - f,
           sum = (f < 0 ? -f : f) + (g < 0 ? -g : g);
    return f == g || d / sum < 1e-9;
}

/* ---- validating a value (kube-openapi SchemaValidator) ---- */

typedef struct vctx {
    json_t *causes;
    const char *prefix;   /* the field of the validated document; "" for an object */
    api__crd_path_t name; /* kube-openapi's name of the current value */
} vctx_t;

/* One cause at the current value: "<kind>[: <value>][: <detail>]", the value
 * printed from `val` (Go's way) or given as text in `raw`. */
static void __attribute__((noinline, format(printf, 6, 7)))
v_err(vctx_t *c, const char *reason, const char *kind, const json_t *val, const char *raw,
      const char *fmt, ...)
{
    char field[API__CRD_PATH_CAP * 2], m[API__CRD_MSG_CAP];
    api__crd_sb_t b = {m, sizeof m, 0};
    if (!*c->prefix)
        snprintf(field, sizeof field, "%s", c->name.s);
    else if (!c->name.n)
        snprintf(field, sizeof field, "%s", c->prefix);
    else
        snprintf(field, sizeof field, "%s.%s", c->prefix, c->name.s);
    m[0] = '\0';
    api__crd_sb_add(&b, "%s", kind);
    if (val)
        api__crd_sb_add(&b, ": "), api__crd_go_value(&b, val);
    else if (raw)
        api__crd_sb_add(&b, ": %s", raw);
    if (fmt) {
        va_list ap;
        api__crd_sb_add(&b, ": ");
        va_start(ap, fmt);
        vsnprintf(m + b.n, sizeof m - b.n, fmt, ap);
        va_end(ap);
    }
    api_cause(c->causes, reason, field, "%s", m);
}

/* A failed allOf/anyOf/oneOf/not: reported at the document's own field with
 * the value's name quoted in the message (kube-openapi's composite errors). */
static void __attribute__((noinline)) v_junctor(vctx_t *c, const char *what)
{
    char m[API__CRD_MSG_CAP];
    api__crd_sb_t b = {m, sizeof m, 0};
    m[0] = '\0';
    api__crd_sb_add(&b, "Invalid value: \"\": ");
    api__crd_go_quote(&b, c->name.s);
    api__crd_sb_add(&b, " %s", what);
    api_cause(c->causes, "FieldValueInvalid", c->prefix, "%s", m);
}

static void type_err(vctx_t *c, const char *want, const char *got)
{
    char g[64];
    api__crd_q(g, sizeof g, got);
    v_err(c, "FieldValueTypeInvalid", "Invalid value", NULL, g, "%s in body must be of type %s: %s",
          c->name.s, want, g);
}

static size_t v_child(vctx_t *c, const char *k)
{
    return c->name.n ? api__crd_path_add(&c->name, ".%s", k) : api__crd_path_add(&c->name, "%s", k);
}

static void validate(vctx_t *c, const json_t *s, const json_t *v, int root);

/* kube-openapi's typeValidator, format-aware quirks included. */
static void check_type(vctx_t *c, const json_t *s, const json_t *v)
{
    const char *t[2], *dt = "boolean", *df = "";
    char norm[32], joined[32];
    int nt = node_types(s, t);
    const char *f = node_format(s, t, nt, norm);
    if (!nt && !f) return;
    snprintf(joined, sizeof joined, nt == 2 ? "%s,%s" : "%s", t[0], nt == 2 ? t[1] : "");
    if (json_is_null(v)) {
        if (nt && !api__crd_jtrue(s, "nullable") && !has_type(t, nt, "null"))
            type_err(c, joined, "null");
        return;
    }
    if (json_is_string(v))
        dt = "string";
    else if (json_is_integer(v))
        dt = "integer", df = "int64";
    else if (json_is_real(v))
        dt = "number", df = "float64";
    else if (json_is_array(v))
        dt = "array";
    else if (json_is_object(v))
        dt = "object";
    int ok = has_type(t, nt, dt);
    ok |= json_is_real(v) && json_int_like(json_real_value(v)) && has_type(t, nt, "integer");
    ok |= json_is_integer(v) && has_type(t, nt, "number");
    int strarr = json_is_string(v) || json_is_array(v);
    if (!strarr && f && !ok && strcmp(df, f))
        type_err(c, f, df);
    else if (f && strarr && !has_type(t, nt, "number") && !has_type(t, nt, "integer"))
        return;
    else if (!ok)
        type_err(c, joined, dt);
}

/* Validate v against branch b into a fresh array (the caller's); NULL when
 * out of memory, which counts as a failure. */
static json_t *run_branch(vctx_t *c, const json_t *b, const json_t *v)
{
    json_t *saved = c->causes, *out = json_array();
    if (!out) return NULL;
    c->causes = out;
    validate(c, b, v, 0);
    c->causes = saved;
    return out;
}

static size_t nerr(const json_t *a)
{
    return a ? json_array_size(a) : (size_t)-1;
}

/* allOf, anyOf, oneOf, not. A failed anyOf/oneOf also reports the causes of
 * its closest branch (kube-openapi picks by match count; we take the branch
 * with the fewest causes, the first on a tie). */
static void check_junctors(vctx_t *c, const json_t *s, const json_t *v)
{
    const json_t *any = json_object_get(s, "anyOf"), *one = json_object_get(s, "oneOf");
    const json_t *all = json_object_get(s, "allOf"), *not = api__crd_jobj(s, "not"), *b;
    json_t *best = NULL, *r;
    size_t i, valid = 0;
    char what[96];
    json_array_foreach(any, i, b) {
        r = run_branch(c, b, v);
        if (!nerr(r)) {
            json_decref(r), json_decref(best), best = NULL, valid = 1;
            break;
        }
        if (!best || nerr(r) < nerr(best))
            json_decref(best), best = r;
        else
            json_decref(r);
    }
    if (json_array_size(any) && !valid) v_junctor(c, "must validate at least one schema (anyOf)");
    if (best) json_array_extend(c->causes, best), json_decref(best), best = NULL;
    valid = 0;
    json_array_foreach(one, i, b) {
        r = run_branch(c, b, v);
        if (!nerr(r))
            valid++, json_decref(best), best = NULL, json_decref(r);
        else if (!valid && (!best || nerr(r) < nerr(best)))
            json_decref(best), best = r;
        else
            json_decref(r);
    }
    if (json_array_size(one) && valid != 1) {
        if (valid)
            snprintf(what, sizeof what,
                     "must validate one and only one schema (oneOf). Found %zu valid alternatives",
                     valid);
        else
            snprintf(what, sizeof what,
                     "must validate one and only one schema (oneOf). Found none valid");
        v_junctor(c, what);
        if (best) json_array_extend(c->causes, best);
    }
    json_decref(best);
    valid = 0;
    json_array_foreach(all, i, b) {
        r = run_branch(c, b, v);
        valid += !nerr(r);
        if (r) json_array_extend(c->causes, r);
        json_decref(r);
    }
    if (valid != json_array_size(all))
        v_junctor(c, valid ? "must validate all the schemas (allOf)"
                           : "must validate all the schemas (allOf). None validated");
    if (not ) {
        r = run_branch(c, not, v);
        if (!nerr(r)) v_junctor(c, "must not validate the schema (not)");
        json_decref(r);
    }
}

/* maxLength, minLength, pattern (the first failure only), then format. */
static void __attribute__((noinline)) check_string(vctx_t *c, const json_t *s, const json_t *v)
{
    const char *str = json_string_value(v), *pat = api__crd_jstr(s, "pattern"), *t[2], *f;
    long long lim, runes = 0;
    char norm[32], err[512];
    regex_t re;
    for (const unsigned char *p = (const unsigned char *)str; *p; p++)
        runes += (*p & 0xc0) != 0x80;
    if (jint(s, "maxLength", &lim) && runes > lim) {
        v_err(c, "FieldValueTooLong", "Too long", NULL, NULL, "may not be longer than %lld", lim);
    } else if (jint(s, "minLength", &lim) && runes < lim) {
        v_err(c, "FieldValueInvalid", "Invalid value", v, NULL,
              "%s in body should be at least %lld chars long", c->name.s, lim);
    } else if (*pat && api__crd_re_compile(pat, &re, err, sizeof err)) {
        v_err(c, "FieldValueInvalid", "Invalid value", v, NULL,
              "%s in body should match '%s, but pattern is invalid: %s'", c->name.s, pat, err);
    } else if (*pat) {
        if (regexec(&re, str, 0, NULL, 0))
            v_err(c, "FieldValueInvalid", "Invalid value", v, NULL, "%s in body should match '%s'",
                  c->name.s, pat);
        regfree(&re);
    }
    int nt = node_types(s, t);
    if ((f = node_format(s, t, nt, norm)) && !api__crd_format_ok(norm, str)) {
        char m[API__CRD_MSG_CAP] = "";
        api__crd_sb_t b = {m, sizeof m, 0};
        api__crd_go_quote(&b, str);
        v_err(c, "FieldValueTypeInvalid", "Invalid value", NULL, m,
              "%s in body must be of type %s: %s", c->name.s, f, m);
    }
}

/* multipleOf, minimum, maximum. Against an integer value kube-openapi
 * truncates the bound to int64 and prints it so. */
static void __attribute__((noinline)) check_number(vctx_t *c, const json_t *s, const json_t *v)
{
    static const char *const keys[] = {"minimum", "maximum"};
    const json_t *mo = json_object_get(s, "multipleOf");
    int isint = json_is_integer(v);
    long long iv = isint ? (long long)json_integer_value(v) : 0;
    double dv = json_number_value(v);
    char t[64];
    api__crd_sb_t b = {t, sizeof t, 0};
    if (json_is_number(mo)) {
        double f = json_number_value(mo);
        long long fi = f >= 9.2e18 || f <= -9.2e18 ? 0 : (long long)f;
        int as_int = isint && fi != 0; /* Go would divide by zero; use floats */
        if (as_int)
            api__crd_sb_add(&b, "%lld", fi);
        else
            go_float(&b, f, 0);
        if (f < 0)
            v_err(c, "FieldValueInvalid", "Invalid value", NULL, t,
                  "factor MultipleOf declared for %s must be positive: %s", c->name.s, t);
        else if (as_int ? iv % fi != 0 : !json_int_like(f < 1 ? 1 / f * dv : dv / f))
            v_err(c, "FieldValueInvalid", "Invalid value", v, NULL,
                  "%s in body should be a multiple of %s", c->name.s, t);
    }
    for (int k = 0; k < 2; k++) {
        const json_t *bound = json_object_get(s, keys[k]);
        if (!json_is_number(bound)) continue;
        double x = json_number_value(bound);
        long long xi = x >= 9.2e18 ? LLONG_MAX : x <= -9.2e18 ? LLONG_MIN : (long long)x;
        int excl = api__crd_jtrue(s, k ? "exclusiveMaximum" : "exclusiveMinimum");
        int cmp = isint ? (iv > xi) - (iv < xi) : (dv > x) - (dv < x);
        if (!(k ? cmp > 0 || (excl && !cmp) : cmp < 0 || (excl && !cmp))) continue;
        b.n = 0, t[0] = '\0';
        if (isint)
            api__crd_sb_add(&b, "%lld", xi);
        else
            go_float(&b, x, 0);
        v_err(c, "FieldValueInvalid", "Invalid value", v, NULL, "%s in body should be %s than %s%s",
              c->name.s, k ? "less" : "greater", excl ? "" : "or equal to ", t);
    }
}

/* items, then minItems, maxItems, uniqueItems. */
static void check_array(vctx_t *c, const json_t *s, const json_t *v)
{
    const json_t *items = api__crd_jobj(s, "items"), *e;
    size_t i, n = json_array_size(v);
    long long lim;
    char cnt[32];
    json_array_foreach(v, i, e) {
        if (!items) break;
        size_t mark = api__crd_path_add(&c->name, "[%zu]", i);
        validate(c, items, e, 0);
        api__crd_path_cut(&c->name, mark);
    }
    snprintf(cnt, sizeof cnt, "%zu", n);
    if (jint(s, "minItems", &lim) && (long long)n < lim)
        v_err(c, "FieldValueInvalid", "Invalid value", NULL, cnt,
              "%s in body should have at least %lld items", c->name.s, lim);
    if (jint(s, "maxItems", &lim) && (long long)n > lim)
        v_err(c, "FieldValueTooMany", "Too many", NULL, cnt, "must have at most %lld items", lim);
    int dup = 0;
    for (i = 1; api__crd_jtrue(s, "uniqueItems") && i < n && !dup; i++)
        for (size_t j = 0; j < i && !dup; j++)
            dup = json_equal(json_array_get(v, i), json_array_get(v, j));
    if (dup)
        v_err(c, "FieldValueInvalid", "Invalid value", NULL, "\"\"",
              "%s in body shouldn't contain duplicates", c->name.s);
}

/* Go's reflect conversion then DeepEqual, as kube-openapi compares enums. */
static int enum_eq(const json_t *v, const json_t *e)
{
    if (json_is_integer(v) && json_is_real(e))
        return (double)json_integer_value(v) == json_real_value(e);
    if (json_is_real(v) && json_is_integer(e)) {
        double d = json_real_value(v);
        return d > -9.2e18 && d < 9.2e18 && (json_int_t)(long long)d == json_integer_value(e);
    }
    return json_equal(v, e);
}

/* enum: a null value never matches (kube-openapi skips nil). The allowed
 * values are listed quoted: strings as they are, others as JSON. */
static void __attribute__((noinline)) check_enum(vctx_t *c, const json_t *s, const json_t *v)
{
    const json_t *en = json_object_get(s, "enum"), *e;
    size_t i;
    if (!json_array_size(en)) return;
    json_array_foreach(en, i, e)
        if (!json_is_null(v) && enum_eq(v, e)) return;
    char list[API__CRD_MSG_CAP] = "", one[API__CRD_MSG_CAP / 2];
    api__crd_sb_t b = {list, sizeof list, 0};
    json_array_foreach(en, i, e) {
        api__crd_sb_t ob = {one, sizeof one, 0};
        char *d = json_is_string(e) || json_is_real(e)
                      ? NULL
                      : json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        one[0] = '\0';
        if (json_is_real(e))
            go_float(&ob, json_real_value(e), 1);
        else
            api__crd_sb_add(&ob, "%s", json_is_string(e) ? json_string_value(e) : d ? d : "");
        free(d);
        api__crd_sb_add(&b, "%s", i ? ", " : "");
        api__crd_go_quote(&b, one);
    }
    v_err(c, "FieldValueNotSupported", "Unsupported value", v, NULL, "supported values: %s", list);
}

/* The name/generateName restrictions a root schema may place on metadata. */
static void check_root_meta(vctx_t *c, const json_t *ps, const json_t *x)
{
    static const char *const names[] = {"name", "generateName"};
    for (int i = 0; i < 2 && json_is_object(x); i++) {
        const json_t *sub = api__crd_jobj(api__crd_jobj(ps, "properties"), names[i]);
        const json_t *val = json_object_get(x, names[i]);
        if (!sub || !val) continue;
        size_t mark = v_child(c, names[i]);
        validate(c, sub, val, 0);
        api__crd_path_cut(&c->name, mark);
    }
}

/* min/maxProperties (which end the object's checks, as in kube-openapi),
 * additionalProperties, properties, required. */
static void check_object(vctx_t *c, const json_t *s, const json_t *v, int root)
{
    const json_t *props = api__crd_jobj(s, "properties"),
                 *ap = json_object_get(s, "additionalProperties");
    const json_t *x;
    size_t n = json_object_size(v), i;
    long long lim;
    const char *k;
    char cnt[32];
    snprintf(cnt, sizeof cnt, "%zu", n);
    if (jint(s, "minProperties", &lim) && (long long)n < lim) {
        v_err(c, "FieldValueInvalid", "Invalid value", NULL, cnt,
              "%s in body should have at least %lld properties", c->name.s, lim);
        return;
    }
    if (jint(s, "maxProperties", &lim) && (long long)n > lim) {
        v_err(c, "FieldValueTooMany", "Too many", NULL, cnt, "must have at most %lld items", lim);
        return;
    }
    json_object_foreach((json_t *)v, k, x) {
        if (json_object_get(props, k)) continue;
        if (json_is_false(ap)) {
            json_t *key = json_string(k);
            v_err(c, "FieldValueInvalid", "Invalid value", key, NULL,
                  "%s.%s in body is a forbidden property", c->name.s, k);
            json_decref(key);
        } else if (json_is_object(ap)) {
            size_t mark = v_child(c, k);
            validate(c, ap, x, 0);
            api__crd_path_cut(&c->name, mark);
        }
    }
    json_object_foreach((json_t *)props, k, x) {
        const json_t *val = json_object_get(v, k);
        if (!val) continue;
        size_t mark = v_child(c, k);
        if (root && !strcmp(k, "metadata"))
            check_root_meta(c, x, val);
        else
            validate(c, x, val, 0);
        api__crd_path_cut(&c->name, mark);
    }
    json_array_foreach(json_object_get(s, "required"), i, x) {
        if (!json_is_string(x) || json_object_get(v, json_string_value(x))) continue;
        size_t mark = v_child(c, json_string_value(x));
        v_err(c, "FieldValueRequired", "Required value", NULL, NULL, NULL);
        api__crd_path_cut(&c->name, mark);
    }
}

/* One value against one schema node, in kube-openapi's validator order. */
static void validate(vctx_t *c, const json_t *s, const json_t *v, int root)
{
    if (!json_is_object(s) || !v) return;
    check_type(c, s, v);
    if (!json_is_null(v)) check_junctors(c, s, v);
    if (json_is_string(v)) check_string(c, s, v);
    if (json_is_number(v)) check_number(c, s, v);
    if (json_is_array(v)) check_array(c, s, v);
    check_enum(c, s, v);
    if (json_is_object(v)) check_object(c, s, v, root);
}

/* ---- x-kubernetes-list-type set/map uniqueness (listtype validation) ---- */

static void __attribute__((noinline))
dup_cause(json_t *causes, const api__crd_path_t *p, size_t i, const json_t *val, const char *detail)
{
    char field[API__CRD_PATH_CAP + 32], m[API__CRD_MSG_CAP] = "";
    api__crd_sb_t b = {m, sizeof m, 0};
    snprintf(field, sizeof field, "%s[%zu]", p->s, i);
    api__crd_sb_add(&b, detail ? "Invalid value: " : "Duplicate value: ");
    api__crd_go_value(&b, val);
    if (detail) api__crd_sb_add(&b, ": %s", detail);
    api_cause(causes, detail ? "FieldValueInvalid" : "FieldValueDuplicate", field, "%s", m);
}

/* The key of a map-list item: {k: v} for the keys it has. */
static json_t *map_key(const json_t *item, const json_t *keys)
{
    json_t *key = json_object(), *k;
    size_t i;
    json_array_foreach(keys, i, k) {
        const json_t *v = json_object_get(item, json_string_value(k));
        if (v && json_is_string(k)) json_object_set(key, json_string_value(k), (json_t *)v);
    }
    return key;
}

/* Duplicates of a set, or of a map's keys: each value's second appearance. */
static void list_dups(json_t *causes, const api__crd_path_t *p, const json_t *v, const json_t *keys)
{
    size_t n = json_array_size(v);
    json_t *ks = keys ? json_array() : NULL;
    for (size_t i = 0; keys && ks && i < n; i++)
        json_array_append_new(ks, map_key(json_array_get(v, i), keys));
    const json_t *all = keys ? ks : v;
    for (size_t i = 1; i < json_array_size(all); i++) {
        size_t seen = 0;
        for (size_t j = 0; j < i; j++)
            seen += json_equal(json_array_get(all, i), json_array_get(all, j));
        if (seen == 1) dup_cause(causes, p, i, json_array_get(all, i), NULL);
    }
    json_decref(ks);
}

static void lists(json_t *causes, const json_t *s, const json_t *v, api__crd_path_t *p)
{
    const json_t *props = api__crd_jobj(s, "properties"),
                 *ap = api__crd_jobj(s, "additionalProperties"), *x;
    const char *k, *lt = api__crd_jstr(s, "x-kubernetes-list-type");
    size_t i, mark;
    if (!s) return;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, k, x) {
            if (!ap) break;
            mark = api__crd_path_add(p, "[%s]", k);
            lists(causes, ap, x, p);
            api__crd_path_cut(p, mark);
        }
        json_object_foreach((json_t *)v, k, x) {
            if (!json_object_get(props, k)) continue;
            mark = p->n ? api__crd_path_add(p, ".%s", k) : api__crd_path_add(p, "%s", k);
            lists(causes, api__crd_jobj(props, k), x, p);
            api__crd_path_cut(p, mark);
        }
        return;
    }
    if (!json_is_array(v)) return;
    if (!strcmp(lt, "set")) list_dups(causes, p, v, NULL);
    if (!strcmp(lt, "map")) {
        int ok = 1;
        json_array_foreach(v, i, x) {
            if (!ok || json_is_null(x) || json_is_object(x)) continue;
            dup_cause(causes, p, i, x, "must be an object for an array of list-type map");
            ok = 0;
        }
        if (ok) list_dups(causes, p, v, json_object_get(s, "x-kubernetes-list-map-keys"));
    }
    json_array_foreach(v, i, x) {
        if (!api__crd_jobj(s, "items")) break;
        mark = api__crd_path_add(p, "[%zu]", i);
        lists(causes, api__crd_jobj(s, "items"), x, p);
        api__crd_path_cut(p, mark);
    }
}

void api_crd_validate(const json_t *schema, const json_t *obj, json_t *causes)
{
    vctx_t *c;
    api__crd_path_t *p;
    if (!json_is_object(schema) || !obj || !causes) return;
    c = calloc(1, sizeof *c);
    p = calloc(1, sizeof *p);
    if (!c || !p) {
        api_cause(causes, "InternalError", "", "Internal error: out of memory");
        goto done;
    }
    c->causes = causes;
    c->prefix = "";
    validate(c, schema, obj, 1);
    lists(causes, schema, obj, p);
done:
    free(p);
    free(c);
}

void api__crd_validate_at(const json_t *s, const json_t *v, const char *field, json_t *causes)
{
    vctx_t *c = calloc(1, sizeof *c);
    if (!c) return;
    c->causes = causes, c->prefix = field;
    validate(c, s, v, 0);
    free(c);
}

/* ---- pruning and defaulting ---- */

/* pruning.Prune: drop the object fields s does not declare (every one when s
 * is NULL). A preserve-unknown-fields node keeps its unknown fields but still
 * prunes inside declared ones, and inside its items when it declares them. */
void api__crd_prune(json_t *x, const json_t *s, int embedded)
{
    int keep = api__crd_jtrue(s, "x-kubernetes-preserve-unknown-fields");
    const json_t *props = api__crd_jobj(s, "properties"),
                 *ap = json_object_get(s, "additionalProperties");
    const char *k;
    json_t *v;
    void *tmp;
    size_t i;
    embedded |= api__crd_jtrue(s, "x-kubernetes-embedded-resource");
    if (json_is_object(x) && !s) json_object_clear(x);
    json_object_foreach_safe(s ? x : NULL, tmp, k, v) {
        if (embedded && api__crd_is_meta_field(k)) continue;
        if (api__crd_jobj(props, k))
            api__crd_prune(v, api__crd_jobj(props, k), 0);
        else if (ap && !json_is_null(ap))
            api__crd_prune(v, api__crd_jobj(s, "additionalProperties"), 0);
        else if (!keep)
            json_object_del(x, k);
    }
    if (keep && !api__crd_jobj(s, "items")) return;
    json_array_foreach(x, i, v)
        api__crd_prune(v, api__crd_jobj(s, "items"), 0);
}

/* The schema of field k of an object of schema s (a property, or the
 * additionalProperties schema); NULL if none. */
static const json_t *field_schema(const json_t *s, const char *k)
{
    const json_t *p = api__crd_jobj(api__crd_jobj(s, "properties"), k);
    return p ? p : api__crd_jobj(s, "additionalProperties");
}

/* defaulting.PruneNonNullableNullsWithoutDefaults. */
static void drop_nulls(json_t *x, const json_t *s)
{
    const char *k;
    json_t *v;
    void *tmp;
    size_t i;
    json_object_foreach_safe(json_is_object(x) ? x : NULL, tmp, k, v) {
        const json_t *fs = field_schema(s, k);
        if (json_is_null(v) && fs && !api__crd_jtrue(fs, "nullable") && !api__crd_has_default(fs))
            json_object_del(x, k);
        else
            drop_nulls(v, fs);
    }
    json_array_foreach(x, i, v)
        drop_nulls(v, api__crd_jobj(s, "items"));
}

/* A null that s neither allows nor leaves alone: replaced by s's default. */
static int null_to_default(const json_t *v, const json_t *s)
{
    return json_is_null(v) && s && !api__crd_jtrue(s, "nullable") && api__crd_has_default(s);
}

/* defaulting.Default: absent (or non-nullable null) declared fields get a
 * copy of their default; then recurse, defaults just set included. */
static void apply_defaults(json_t *x, const json_t *s)
{
    const json_t *props = api__crd_jobj(s, "properties"), *ps;
    const char *k;
    json_t *v;
    void *tmp;
    size_t i;
    if (!s) return;
    json_object_foreach((json_t *)(json_is_object(x) ? props : NULL), k, ps) {
        v = json_object_get(x, k);
        if (api__crd_has_default(ps) && (!v || null_to_default(v, ps)))
            json_object_set_new(x, k, json_deep_copy(json_object_get(ps, "default")));
    }
    json_object_foreach_safe(json_is_object(x) ? x : NULL, tmp, k, v) {
        const json_t *fs = field_schema(s, k);
        if (!api__crd_jobj(props, k) && null_to_default(v, fs)) {
            json_object_set_new(x, k, json_deep_copy(json_object_get(fs, "default")));
            v = json_object_get(x, k);
        }
        apply_defaults(v, fs);
    }
    json_array_foreach(x, i, v) {
        const json_t *is = api__crd_jobj(s, "items");
        if (null_to_default(v, is)) {
            json_array_set_new(x, i, json_deep_copy(json_object_get(is, "default")));
            v = json_array_get(x, i);
        }
        apply_defaults(v, is);
    }
}

void api_crd_default(const json_t *schema, json_t *obj)
{
    if (json_is_object(schema) && json_is_object(obj)) apply_defaults(obj, schema);
}

int api_crd_has_defaults(const json_t *schema)
{
    if (json_is_array(schema)) {
        size_t i;
        json_t *v;
        json_array_foreach(schema, i, v) if (api_crd_has_defaults(v)) return 1;
        return 0;
    }
    if (!json_is_object(schema)) return 0;
    if (json_object_get(schema, "default")) return 1;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)schema, k, v) if (api_crd_has_defaults(v)) return 1;
    return 0;
}

void api_crd_prune_and_default(const json_t *schema, json_t *obj)
{
    if (!json_is_object(schema) || !json_is_object(obj)) return;
    api__crd_prune(obj, schema, 1);
    drop_nulls(obj, schema);
    apply_defaults(obj, schema);
}
