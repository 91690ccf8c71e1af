/*
 * table_kinds.c -- the Table of a custom kind: NAME, then the columns its
 * CustomResourceDefinition declares (additionalPrinterColumns), each cell the
 * value a JSONPath finds in the object. What kube-apiserver does here is the
 * apiextensions table convertor plus client-go's util/jsonpath; we reproduce
 * the part CRD columns use.
 *
 * CELLS (per the column's type; a value of another JSON type gives null)
 *   string   the value as text: strings as they are, numbers as Go prints
 *            them ("3", "1.5", "1e+06"), true/false, objects and arrays as
 *            compact JSON, a JSON null as "<no value>"
 *   integer  a JSON integer (a real is truncated)
 *   number   a JSON number
 *   boolean  true/false
 *   date     an RFC 3339 string as an age ("5m"); "<invalid>" if it does not
 *            parse, "<unknown>" for "" or "null"
 *   Only the FIRST value found counts (the convertor reads results[0][0]):
 *   ".spec.items[*].name" prints the first item's name. Nothing found, or an
 *   evaluation error, gives null (kubectl shows "<none>").
 *
 * JSONPATH SUBSET
 *   .f  .f\.with\.dots  ['f']  .*  ..f (recursive descent)  $ and @ (no-ops)
 *   [n]  [-n]  [a:b]  [a:b:c]  [*]
 *   [?(L OP R)] with OP one of == != < > <= >=, L and R a relative path
 *   (@.a.b) or a literal ("s", 's', 12, 1.5, true, false); [?(@.a)] (exists)
 * As in client-go: a missing key yields nothing; indexing out of range,
 * indexing or filtering something that is not an array, and comparing values
 * of different types (or ordering booleans) are errors. Unions ([0,1]),
 * ranges and functions are not supported: such a column prints null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/encode/table.h"
#include "lib/buf.h"

#define JP_RESULTS_MAX 100000     /* cap on the values one JSONPath may collect */
#define JP_NAME_MAX    256        /* cap on one field name */
#define TEXT_MAX       (1u << 20) /* cap on the JSON text of one cell */

static const char *jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_is_object(o) ? json_object_get(o, k) : NULL);
    return s ? s : "";
}

/* ---- value lists ------------------------------------------------------------ */

/* Evaluation results: 0, JP_ERR (the path does not parse or fails: the cell is
 * null, as in client-go) or JP_NOMEM (no row: the caller reports KP_ENOMEM). */
#define JP_ERR   (-1)
#define JP_NOMEM (-2)

typedef struct jl {
    const json_t **v; /* borrowed from the object (or a literal the caller owns) */
    size_t n, cap;
} jl_t;

static int jl_push(jl_t *l, const json_t *v)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        if (cap > JP_RESULTS_MAX) return JP_ERR;
        const json_t **nv = realloc(l->v, cap * sizeof *nv);
        if (!nv) return JP_NOMEM;
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}

static int jp_eval(const char *p, size_t n, const json_t *root, jl_t *out);

/* ---- steps ------------------------------------------------------------------- */

/* .name on each value: objects only; "" is the value itself; `star` is .* */
static int jp_field(const jl_t *cur, const char *name, int star, jl_t *nxt)
{
    int rc = 0;
    for (size_t k = 0; !rc && k < cur->n; k++) {
        const json_t *v = cur->v[k], *x;
        const char *key;
        size_t i;
        if (!*name && !star) {
            rc = jl_push(nxt, v);
        } else if (star && json_is_object(v)) {
            json_object_foreach((json_t *)v, key, x) {
                if (!rc) rc = jl_push(nxt, x);
            }
        } else if (star && json_is_array(v)) {
            json_array_foreach(v, i, x) {
                if (!rc) rc = jl_push(nxt, x);
            }
        } else if (json_is_object(v) && (x = json_object_get(v, name))) {
            rc = jl_push(nxt, x);
        }
    }
    return rc;
}

/* ..: every object or array under (and including) v that has children. */
static int jp_descend(const json_t *v, jl_t *nxt)
{
    const json_t *x;
    const char *key;
    size_t i;
    int rc;
    if (!json_object_size(v) && !json_array_size(v)) return 0;
    if ((rc = jl_push(nxt, v))) return rc;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, x) {
            if ((rc = jp_descend(x, nxt))) return rc;
        }
    } else {
        json_array_foreach(v, i, x) {
            if ((rc = jp_descend(x, nxt))) return rc;
        }
    }
    return 0;
}

/* One slice parameter: 0 unknown (empty), 1 known; JP_ERR if not an integer. */
static int jp_param(const char *s, size_t n, long *v)
{
    while (n && *s == ' ')
        s++, n--;
    while (n && s[n - 1] == ' ')
        n--;
    if (!n) return 0;
    char tmp[24], *end;
    if (n >= sizeof tmp) return JP_ERR;
    memcpy(tmp, s, n);
    tmp[n] = 0;
    *v = strtol(tmp, &end, 10);
    return *end || end == tmp ? JP_ERR : 1;
}

/* [a:b:c], [n], [*] on each array, with client-go's bounds rules. */
static int jp_slice(const char *t, size_t n, const jl_t *cur, jl_t *nxt)
{
    long a = 0, b = 0, c = 1;
    int ka, kb, kc = 0, derived = 0, rc;
    const char *c1 = memchr(t, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(t + n - c1 - 1)) : NULL;
    if (n == 1 && *t == '*') {
        ka = kb = 0;
    } else if (!c1) {
        if ((ka = jp_param(t, n, &a)) != 1) return JP_ERR;
        b = a + 1, kb = 1, derived = 1;
    } else {
        const char *bend = c2 ? c2 : t + n;
        if ((ka = jp_param(t, (size_t)(c1 - t), &a)) < 0 ||
            (kb = jp_param(c1 + 1, (size_t)(bend - c1 - 1), &b)) < 0 ||
            (c2 && (kc = jp_param(c2 + 1, (size_t)(t + n - c2 - 1), &c)) < 0) ||
            (c2 && memchr(c2 + 1, ':', (size_t)(t + n - c2 - 1))))
            return JP_ERR;
    }
    for (size_t k = 0; k < cur->n; k++) {
        const json_t *v = cur->v[k];
        if (json_is_null(v)) continue;
        if (!json_is_array(v)) return JP_ERR;
        long len = (long)json_array_size(v);
        long s = ka ? a : 0, e = kb ? b : len;
        if (s < 0) s += len;
        if (e < 0 || (e == 0 && derived)) e += len;
        if (s == e) return 0; /* client-go stops here: zero elements asked for */
        if (s >= len || s < 0 || e > len || e < 0 || s > e) return JP_ERR;
        long step = kc ? c : 1;
        if (step <= 0) return JP_ERR;
        for (long i = s; i < e; i += step)
            if ((rc = jl_push(nxt, json_array_get(v, (size_t)i)))) return rc;
    }
    return 0;
}

/* ---- filters ------------------------------------------------------------------ */

enum { K_BAD, K_BOOL, K_INT, K_REAL, K_STR };

static int kind_of(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_FALSE:
        return K_BOOL;
    case JSON_INTEGER:
        return K_INT;
    case JSON_REAL:
        return K_REAL;
    case JSON_STRING:
        return K_STR;
    default:
        return K_BAD;
    }
}

/* l OP r with the rules of client-go's forked text/template comparisons:
 * 1 true, 0 false, JP_ERR for different kinds, a value that is not a bool,
 * number or string, ordering booleans, or an unknown operator. */
static int jp_compare(const json_t *l, const char *op, size_t opn, const json_t *r)
{
    int k = kind_of(l);
    if (k == K_BAD || k != kind_of(r)) return JP_ERR;
    int c;
    if (k == K_BOOL)
        c = json_is_true(l) != json_is_true(r);
    else if (k == K_INT)
        c = (json_integer_value(l) > json_integer_value(r)) -
            (json_integer_value(l) < json_integer_value(r));
    else if (k == K_REAL)
        c = (json_real_value(l) > json_real_value(r)) - (json_real_value(l) < json_real_value(r));
    else
        c = strcmp(json_string_value(l), json_string_value(r));
    if (opn == 2 && !memcmp(op, "==", 2)) return c == 0;
    if (opn == 2 && !memcmp(op, "!=", 2)) return c != 0;
    if (k == K_BOOL) return JP_ERR;
    if (opn == 1 && *op == '<') return c < 0;
    if (opn == 1 && *op == '>') return c > 0;
    if (opn == 2 && !memcmp(op, "<=", 2)) return c <= 0;
    if (opn == 2 && !memcmp(op, ">=", 2)) return c >= 0;
    return JP_ERR;
}

/* A quoted literal ("..." or '...', backslash escapes) into *out (a new
 * JSON string). 0, JP_ERR (not quoted) or JP_NOMEM. */
static int jp_unquote(const char *t, size_t n, json_t **out)
{
    if (n < 2 || t[n - 1] != t[0]) return JP_ERR;
    char *s = malloc(n);
    if (!s) return JP_NOMEM;
    size_t m = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        char ch = t[i];
        if (ch == '\\' && i + 2 < n) {
            ch = t[++i];
            ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch == 'r' ? '\r' : ch;
        }
        s[m++] = ch;
    }
    *out = json_stringn(s, m);
    free(s);
    return *out ? 0 : JP_NOMEM;
}

/* One side of a filter on element `e`: the values of a relative path, or one
 * literal (*lit then owns it). */
static int jp_operand(const char *t, size_t n, const json_t *e, jl_t *out, json_t **lit)
{
    while (n && *t == ' ')
        t++, n--;
    while (n && t[n - 1] == ' ')
        n--;
    *lit = NULL;
    if (!n) return JP_ERR;
    if (strchr("@$.[", *t)) return jp_eval(t, n, e, out);
    if (*t == '"' || *t == '\'') {
        int rc = jp_unquote(t, n, lit);
        if (rc) return rc;
    } else if (n == 4 && !memcmp(t, "true", 4)) {
        *lit = json_true();
    } else if (n == 5 && !memcmp(t, "false", 5)) {
        *lit = json_false();
    } else {
        char tmp[64], *end;
        if (n >= sizeof tmp) return JP_ERR;
        memcpy(tmp, t, n);
        tmp[n] = 0;
        long long i = strtoll(tmp, &end, 10);
        if (!*end) {
            *lit = json_integer(i);
        } else {
            double d = strtod(tmp, &end);
            if (*end || end == tmp) return JP_ERR;
            *lit = json_real(d);
        }
        if (!*lit) return JP_NOMEM;
    }
    return jl_push(out, *lit);
}

/* One element of a filter: 1 it passes, 0 it does not, or an error. */
static int jp_filter_one(const char *t, size_t n, size_t k, size_t m, const json_t *e)
{
    jl_t l = {0}, r = {0};
    json_t *ll = NULL, *rl = NULL;
    int exists = k == n, rc = jp_operand(t, k, e, &l, &ll);
    if (exists) {
        rc = rc == JP_NOMEM ? rc : !rc && l.n > 0; /* client-go ignores errors here */
    } else if (!rc && l.n > 1) {
        rc = JP_ERR; /* "can only compare one element at a time" */
    } else if (!rc && l.n == 1) {
        rc = jp_operand(t + m, n - m, e, &r, &rl);
        if (!rc && r.n > 1)
            rc = JP_ERR;
        else if (!rc && r.n == 1)
            rc = jp_compare(l.v[0], t + k, m - k, r.v[0]);
    }
    free(l.v);
    free(r.v);
    json_decref(ll);
    json_decref(rl);
    return rc;
}

/* [?(L OP R)] or [?(L)] on each array in cur. */
static int jp_filter(const char *t, size_t n, const jl_t *cur, jl_t *nxt)
{
    size_t k = 0, m;
    while (k < n && !memchr("!<>=", t[k], 4))
        k++;
    for (m = k; m < n && memchr("!<>=", t[m], 4); m++) {
    }
    if (k < n && (k == 0 || m == n)) return JP_ERR;
    for (size_t c = 0; c < cur->n; c++) {
        const json_t *arr = cur->v[c];
        if (!json_is_array(arr)) return JP_ERR;
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const json_t *e = json_array_get(arr, i);
            int rc = jp_filter_one(t, n, k, m, e);
            if (rc > 0) rc = jl_push(nxt, e);
            if (rc < 0) return rc;
        }
    }
    return 0;
}

/* ---- the evaluator ------------------------------------------------------------ */

static int jp_terminator(char c)
{
    return c && strchr(".,[]$@{} \t\n", c) != NULL;
}

/* What follows '[' at p[i]: the bracket's content [*from, *to) and the index
 * after its ']'; JP_ERR if unterminated. A filter ends at the first ')'
 * outside quotes followed by ']' (client-go's rule); anything else at the
 * first ']'. */
static int jp_bracket_span(const char *p, size_t n, size_t i, size_t *from, size_t *to,
                           size_t *next)
{
    size_t j = i + 1;
    *from = j;
    if (j < n && p[j] == '?') {
        char q = 0;
        for (; j < n; j++) {
            if (q) {
                if (p[j] == q && p[j - 1] != '\\') q = 0;
            } else if (p[j] == '"' || p[j] == '\'') {
                q = p[j];
            } else if (p[j] == ')' && j + 1 < n && p[j + 1] == ']') {
                *to = j + 1;
                *next = j + 2;
                return 0;
            }
        }
        return JP_ERR;
    }
    const char *e = memchr(p + j, ']', n - j);
    if (!e) return JP_ERR;
    *to = (size_t)(e - p);
    *next = *to + 1;
    return 0;
}

/* One bracket's content s[0..sn) applied to cur. */
static int jp_bracket(const char *s, size_t sn, const jl_t *cur, jl_t *nxt)
{
    while (sn && *s == ' ')
        s++, sn--;
    while (sn && s[sn - 1] == ' ')
        sn--;
    if (sn >= 3 && s[0] == '?' && s[1] == '(' && s[sn - 1] == ')')
        return jp_filter(s + 2, sn - 3, cur, nxt);
    if (sn && (*s == '\'' || *s == '"')) {
        json_t *key = NULL;
        int rc = jp_unquote(s, sn, &key);
        if (!rc) rc = jp_field(cur, json_string_value(key), 0, nxt);
        json_decref(key);
        return rc;
    }
    if (!sn || memchr(s, ',', sn)) return JP_ERR; /* unions are not supported */
    return jp_slice(s, sn, cur, nxt);
}

/* Evaluate path p[0..n) on root, appending the values found to out. */
static int jp_eval(const char *p, size_t n, const json_t *root, jl_t *out)
{
    jl_t a = {0}, b = {0}, *cur = &a, *nxt = &b, *t;
    size_t i = 0;
    int rc = n ? jl_push(cur, root) : JP_ERR;
    while (!rc && i < n) {
        char c = p[i];
        nxt->n = 0;
        if (c == '$' || c == '@' || c == ' ') {
            i++;
            continue;
        }
        if (c == '.' && i + 1 < n && p[i + 1] == '.') {
            for (size_t k = 0; !rc && k < cur->n; k++)
                rc = jp_descend(cur->v[k], nxt);
            i++; /* the second '.' starts the field */
        } else if (c == '.') {
            char name[JP_NAME_MAX];
            size_t len = 0;
            int escaped = 0;
            for (i++; !rc && i < n && !jp_terminator(p[i]); i++) {
                if (p[i] == '\\' && i + 1 < n) i++, escaped = 1;
                if (len + 1 >= sizeof name)
                    rc = JP_ERR;
                else
                    name[len++] = p[i];
            }
            name[len] = 0;
            if (!rc) rc = jp_field(cur, name, len == 1 && *name == '*' && !escaped, nxt);
        } else if (c == '[') {
            size_t from, to, next = n;
            rc = jp_bracket_span(p, n, i, &from, &to, &next);
            if (!rc) rc = jp_bracket(p + from, to - from, cur, nxt);
            i = next;
        } else {
            rc = JP_ERR;
        }
        t = cur, cur = nxt, nxt = t;
    }
    for (size_t k = 0; !rc && k < cur->n; k++)
        rc = jl_push(out, cur->v[k]);
    free(a.v);
    free(b.v);
    return rc;
}

/* ---- cells --------------------------------------------------------------------- */

/* strconv.FormatFloat(v, 'g', -1, 64): the shortest digits that read back as
 * v; exponent form below 1e-4 and from 1e+06 on, as Go's %v prints. */
static void go_float(double v, char *out, size_t n)
{
    char e[40];
    int nd = 1;
    for (; nd < 17; nd++) {
        snprintf(e, sizeof e, "%.*e", nd - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    snprintf(e, sizeof e, "%.*e", nd - 1, v);
    const char *x = strchr(e, 'e');
    long exp = x ? strtol(x + 1, NULL, 10) : 0;
    if (exp < -4 || exp >= 6)
        snprintf(out, n, "%s", e);
    else
        snprintf(out, n, "%.*f", nd - 1 - (int)exp > 0 ? nd - 1 - (int)exp : 0, v);
}

/* Compact JSON of objects and arrays, as json.Marshal prints them. Through a
 * callback with a sticky error: jansson's own json_dumps() skips failed
 * appends of keys and would hand back damaged text. */
typedef struct dump {
    buf_t b;
    int err;
} dump_t;

static int dump_piece(const char *p, size_t n, void *arg)
{
    dump_t *d = arg;
    if (!d->err && buf_append(&d->b, p, n)) d->err = 1;
    return d->err ? -1 : 0;
}

/* A "string" column's text of v (a new reference, NULL on ENOMEM). */
static json_t *text_of(const json_t *v)
{
    char tmp[64];
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_stringn(json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(tmp, sizeof tmp, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return json_string(tmp);
    case JSON_REAL:
        go_float(json_real_value(v), tmp, sizeof tmp);
        return json_string(tmp);
    case JSON_TRUE:
        return json_string("true");
    case JSON_FALSE:
        return json_string("false");
    case JSON_NULL:
        return json_string("<no value>");
    default: {
        dump_t d = {{0}, 0};
        buf_init(&d.b, TEXT_MAX);
        int rc = json_dump_callback(v, dump_piece, &d, JSON_COMPACT | JSON_SORT_KEYS);
        json_t *j = rc || d.err ? NULL : json_stringn(d.b.p ? d.b.p : "", d.b.len);
        buf_free(&d.b);
        return j;
    }
    }
}

/* The cell of value v (NULL: nothing found) for a column of `type`. */
static json_t *cell_of(const char *type, const json_t *v, int64_t now)
{
    if (!v) return json_null();
    if (!strcmp(type, "string")) return text_of(v);
    if (!strcmp(type, "integer")) {
        if (json_is_integer(v)) return json_integer(json_integer_value(v));
        if (json_is_real(v)) { /* int64(f) truncates; clamp what does not fit */
            double d = json_real_value(v);
            return json_integer(d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (json_int_t)d);
        }
    } else if (!strcmp(type, "number")) {
        if (json_is_number(v)) return json_deep_copy(v);
    } else if (!strcmp(type, "boolean")) {
        if (json_is_boolean(v)) return json_boolean(json_is_true(v));
    } else if (!strcmp(type, "date") && json_is_string(v)) {
        const char *s = json_string_value(v);
        int64_t t;
        char age[32];
        if (!*s || !strcmp(s, "null")) return json_string("<unknown>");
        if (api__table_time(s, &t)) return json_string("<invalid>");
        api_table_age(now - t, age, sizeof age);
        return json_string(age);
    }
    return json_null();
}

json_t *api__table_custom_columns(const json_t *pc)
{
    json_t *cols =
        json_pack("[{s:s, s:s, s:s, s:s, s:i}]", "name", "Name", "type", "string", "format", "name",
                  "description", "Name of the object, unique within its namespace.", "priority", 0);
    size_t i;
    const json_t *c;
    json_array_foreach(pc, i, c) {
        if (!cols || !json_is_object(c)) continue;
        const char *desc = jstr(c, "description");
        json_t *d = *desc ? json_string(desc)
                          : json_sprintf("Value at the JSONPath %s.", jstr(c, "jsonPath"));
        json_t *prio = json_object_get(c, "priority");
        if (json_array_append_new(
                cols,
                json_pack("{s:s, s:s, s:s, s:o, s:I}", "name", jstr(c, "name"), "type",
                          jstr(c, "type"), "format", jstr(c, "format"), "description", d,
                          "priority",
                          json_is_integer(prio) ? json_integer_value(prio) : (json_int_t)0))) {
            json_decref(cols);
            cols = NULL;
        }
    }
    return cols;
}

size_t api__table_custom_ncols(const json_t *pc)
{
    size_t i, n = 1;
    const json_t *c;
    json_array_foreach(pc, i, c) {
        n += json_is_object(c) != 0;
    }
    return n;
}

void api__table_custom_cells(json_t *cells, const json_t *pc, const json_t *obj, int64_t now_s)
{
    size_t i;
    const json_t *c;
    json_array_append_new(cells, json_string(jstr(json_object_get(obj, "metadata"), "name")));
    json_array_foreach(pc, i, c) {
        if (!json_is_object(c)) continue;
        const char *path = jstr(c, "jsonPath");
        jl_t found = {0};
        int rc = jp_eval(path, strlen(path), obj, &found);
        if (rc != JP_NOMEM) /* else one cell short: the caller reports KP_ENOMEM */
            json_array_append_new(
                cells, cell_of(jstr(c, "type"), !rc && found.n ? found.v[0] : NULL, now_s));
        free(found.v);
    }
}
