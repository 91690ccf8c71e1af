/*
 * table_cells.c -- the cell helpers every Table printer shares (table_int.h):
 * times and ages (apimachinery duration.HumanDuration), label and selector
 * strings (labels.FormatLabels, metav1.FormatLabelSelector), container
 * lists (layoutContainerCells). No state: every function works on its
 * arguments only.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/encode/table_int.h"

void api__table_sbf(sb_t *s, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof tmp)
        s->err = 1; /* only short numeric forms come here */
    else
        sb_putn(s, tmp, (size_t)w);
}

/* ---- time ---------------------------------------------------------------- */

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Parse RFC 3339 ("2024-05-01T10:00:00Z", fraction and offset allowed) into
 * Unix seconds (fractions dropped). Returns 0, or -1 if s is not such a time. */
static int ts_parse(const char *s, int64_t *out)
{
    int y, mo, d, h, mi, se;
    if (!s || strlen(s) < 20 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
        s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return -1;
    const char *p = s + 19;
    if (*p == '.') {
        if (p[1] < '0' || p[1] > '9') return -1;
        for (p++; *p >= '0' && *p <= '9'; p++) {
        }
    }
    int64_t off = 0;
    if ((*p == 'Z' || *p == 'z') && !p[1]) {
        off = 0;
    } else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
        int oh, om;
        if (digits(p + 1, 2, &oh) || digits(p + 4, 2, &om)) return -1;
        off = (*p == '+' ? 1 : -1) * (int64_t)(oh * 3600 + om * 60);
    } else {
        return -1;
    }
    *out = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
    return 0;
}

int api__table_time(const char *s, int64_t *out)
{
    return ts_parse(s, out);
}

void api_table_age(int64_t s, char *out, size_t n)
{
    if (s < -1) {
        snprintf(out, n, "<invalid>");
        return;
    }
    if (s < 0) s = 0;
    int64_t m = s / 60, h = s / 3600, d = h / 24;
    if (s < 120)
        snprintf(out, n, "%llds", (long long)s);
    else if (m < 10 && s % 60)
        snprintf(out, n, "%lldm%llds", (long long)m, (long long)(s % 60));
    else if (m < 180)
        snprintf(out, n, "%lldm", (long long)m);
    else if (h < 8 && m % 60)
        snprintf(out, n, "%lldh%lldm", (long long)h, (long long)(m % 60));
    else if (h < 48)
        snprintf(out, n, "%lldh", (long long)h);
    else if (h < 24 * 8 && h % 24)
        snprintf(out, n, "%lldd%lldh", (long long)d, (long long)(h % 24));
    else if (h < 24 * 365 * 2)
        snprintf(out, n, "%lldd", (long long)d);
    else if (h < 24 * 365 * 8 && d % 365)
        snprintf(out, n, "%lldy%lldd", (long long)(d / 365), (long long)(d % 365));
    else
        snprintf(out, n, "%lldy", (long long)(d / 365));
}

/* translateTimestampSince: the age of `t` (API_TABLE_NO_TIME: "<unknown>"). */
void api__table_since_t(json_t *cells, int64_t t, int64_t now)
{
    char age[32] = "<unknown>";
    if (t != API_TABLE_NO_TIME) api_table_age(now - t, age, sizeof age);
    cell_str(cells, age);
}

int64_t api__table_ts(const char *s)
{
    int64_t t;
    return s && *s && !ts_parse(s, &t) ? t : API_TABLE_NO_TIME;
}

void api__table_since(json_t *cells, const char *ts, int64_t now)
{
    api__table_since_t(cells, api__table_ts(ts), now);
}

void api__table_age_cell(json_t *cells, const json_t *obj, int64_t now)
{
    api__table_since(cells, jstr(jget(obj, "metadata"), "creationTimestamp"), now);
}

/* ---- labels, selectors, containers ---------------------------------------- */

int api__table_cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of object `o`, sorted (caller frees the array, not the strings;
 * they are borrowed from `o`). NULL with *n 0 when empty; *n (size_t)-1 on
 * an allocation failure. */
const char **api__table_sorted_keys(const json_t *o, size_t *n)
{
    *n = json_is_object(o) ? json_object_size(o) : 0;
    if (!*n) return NULL;
    const char **k = malloc(*n * sizeof *k);
    if (!k) {
        *n = (size_t)-1;
        return NULL;
    }
    size_t i = 0;
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        k[i++] = key;
    }
    qsort(k, *n, sizeof *k, api__table_cmp_cstr);
    return k;
}

/* labels.FormatLabels: "a=1,b=2" sorted by key, "<none>" when empty. */
void api__table_labels(json_t *cells, const json_t *labels)
{
    size_t n;
    const char **k = api__table_sorted_keys(labels, &n);
    sb_t s;
    sb_init(&s);
    if (n == (size_t)-1)
        s.err = 1;
    else if (!n)
        sb_put(&s, "<none>");
    for (size_t i = 0; n != (size_t)-1 && i < n; i++) {
        if (i) sb_put(&s, ",");
        sb_put(&s, k[i]);
        sb_put(&s, "=");
        sb_put(&s, jstr(labels, k[i]));
    }
    free(k);
    cell_sb(cells, &s);
}

/* One requirement of a label selector, for sorting by key. */
typedef struct req {
    const char *key;
    const char *op;       /* "=", " in ", " notin ", "", "!" */
    const json_t *values; /* array, or a single string for "=" */
} req_t;

/* metav1.LabelSelectorAsSelector(sel).String() into s: requirements sorted by
 * key (stable), values of in/notin sorted. Returns 0, or -1 if the selector is
 * invalid (an unknown operator, or values where none are allowed). A NULL or
 * empty selector writes nothing. Keys and values are not re-validated: the
 * object passed validation when it was stored. */
int api__table_selector(const json_t *sel, sb_t *s)
{
    const json_t *ml = jget(sel, "matchLabels"), *me = jget(sel, "matchExpressions");
    size_t nl = json_is_object(ml) ? json_object_size(ml) : 0;
    size_t ne = json_array_size(me), n = 0;
    if (!nl && !ne) return 0;
    req_t *r = calloc(nl + ne, sizeof *r);
    if (!r) {
        s->err = 1;
        return 0;
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)ml, key, v) {
        r[n++] = (req_t){key, "=", v};
    }
    size_t i;
    int rc = 0;
    json_array_foreach(me, i, v) {
        const char *op = jstr(v, "operator");
        const json_t *vals = jget(v, "values");
        size_t nv = json_array_size(vals);
        req_t q = {jstr(v, "key"), NULL, vals};
        if (!strcmp(op, "In"))
            q.op = " in ";
        else if (!strcmp(op, "NotIn"))
            q.op = " notin ";
        else if (!strcmp(op, "Exists"))
            q.op = "";
        else if (!strcmp(op, "DoesNotExist"))
            q.op = "!";
        if (!q.op || (*q.op == ' ' ? nv == 0 : nv != 0)) {
            rc = -1;
            goto done;
        }
        r[n++] = q;
    }
    for (i = 1; i < n; i++) { /* insertion sort: stable, like Go's for short lists */
        req_t t = r[i];
        size_t j = i;
        for (; j > 0 && strcmp(r[j - 1].key, t.key) > 0; j--)
            r[j] = r[j - 1];
        r[j] = t;
    }
    for (i = 0; i < n; i++) {
        if (i) sb_put(s, ",");
        if (!strcmp(r[i].op, "!")) sb_put(s, "!");
        sb_put(s, r[i].key);
        if (!strcmp(r[i].op, "=")) {
            sb_put(s, "=");
            sb_put(s, json_string_value(r[i].values) ? json_string_value(r[i].values) : "");
        } else if (*r[i].op == ' ') {
            size_t nv;
            const char **vs = malloc(json_array_size(r[i].values) * sizeof *vs);
            if (!vs) {
                s->err = 1;
                break;
            }
            nv = 0;
            for (size_t k = 0; k < json_array_size(r[i].values); k++) {
                const char *x = json_string_value(json_array_get(r[i].values, k));
                vs[nv++] = x ? x : "";
            }
            qsort(vs, nv, sizeof *vs, api__table_cmp_cstr);
            sb_put(s, r[i].op);
            sb_put(s, "(");
            for (size_t k = 0; k < nv; k++) {
                if (k) sb_put(s, ",");
                sb_put(s, vs[k]);
            }
            sb_put(s, ")");
            free(vs);
        }
    }
done:
    free(r);
    return rc;
}

/* metav1.FormatLabelSelector: "<none>" when empty, "<error>" when invalid. */
void api__table_format_selector(json_t *cells, const json_t *sel)
{
    sb_t s;
    sb_init(&s);
    if (api__table_selector(sel, &s)) {
        buf_free(&s.b);
        cell_str(cells, "<error>");
        return;
    }
    if (!s.b.len) sb_put(&s, "<none>");
    cell_sb(cells, &s);
}

/* layoutContainerCells: names and images of the template's containers. */
void api__table_containers(json_t *cells, const json_t *pod_spec)
{
    const json_t *cs = jget(pod_spec, "containers");
    sb_t names, images;
    sb_init(&names);
    sb_init(&images);
    for (size_t i = 0; i < json_array_size(cs); i++) {
        const json_t *c = json_array_get(cs, i);
        if (i) {
            sb_put(&names, ",");
            sb_put(&images, ",");
        }
        sb_put(&names, jstr(c, "name"));
        sb_put(&images, jstr(c, "image"));
    }
    cell_sb(cells, &names);
    cell_sb(cells, &images);
}

void api__table_join(sb_t *s, const json_t *a, const char *sep)
{
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *v = json_string_value(json_array_get(a, i));
        if (s->b.len) sb_put(s, sep);
        sb_put(s, v ? v : "");
    }
}
