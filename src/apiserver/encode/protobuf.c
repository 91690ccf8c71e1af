/*
 * protobuf.c -- Kubernetes protobuf bodies (runtime.Unknown) to JSON objects.
 *
 * Two layers. The wire reader (rd_*) knows nothing of Kubernetes: it reads
 * varints, fixed 64/32-bit values and length-delimited fields out of a byte
 * range. The walker (walk) reads one message by its table entry
 * (protobuf_schema.h) into a JSON object, recursing for embedded messages.
 *
 * INVARIANTS
 *   1. Nothing is read outside the range [p, end) of the message being read:
 *      every length is checked against the bytes left before it is used. A
 *      varint of more than 10 bytes, or whose 10th byte holds more than bit
 *      63, is malformed.
 *   2. Every field on the wire lands in the JSON or fails the call: a number
 *      the table does not know, a wire type that does not fit the field's
 *      kind, groups, invalid UTF-8 are KP_EINVAL. Nothing is skipped.
 *   3. Protobuf's rules for a non-repeated field seen twice: a scalar's last
 *      value wins, a message merges into what was decoded so far. Merging is
 *      also what lets an inline message share its parent's JSON object.
 *   4. Zero scalars are printed the way Go's encoding/json prints the Go
 *      struct (API_PB_KEEP in protobuf_schema.h); messages are printed
 *      whenever they are on the wire, even empty: gogo-protobuf writes every
 *      non-pointer struct, and encoding/json prints every struct, so `{}`
 *      (e.g. `status: {}`, `resources: {}`) matches in both.
 *   5. Nesting is bounded by PB_DEPTH_MAX whatever the table's shape.
 *   6. The first error is the one reported; on error the partial JSON is
 *      freed and *out stays NULL.
 */
#include "apiserver/encode/protobuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/encode/protobuf_schema.h"
#include "lib/base64.h"
#include "lib/err.h"
#include "lib/pbwire.h"

#define PB_DEPTH_MAX 100 /* the same cap as API_JSON_DEPTH_MAX for JSON bodies */
#define PB_PATH_MAX  512 /* the place named in error messages; longer is cut */
#define PB_NAME_MAX  256 /* apiVersion and kind in the TypeMeta */

/* Go's zero time.Time (January 1, year 1, UTC) in Unix seconds: metav1.Time
 * prints it as null. */
#define GO_ZERO_TIME_UNIX (-62135596800LL)
/* 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the years RFC 3339 can write. */
#define RFC3339_MIN_UNIX (-62167219200LL)
#define RFC3339_MAX_UNIX 253402300799LL

/* ---- the wire reader: lib/pbwire.h ---- */

/* A varint as protobuf's int32 (the low 32 bits, two's complement) and int64. */
static int64_t as_int32(uint64_t u)
{
    int64_t x = (int64_t)(u & 0xffffffffu);
    return x >= 0x80000000LL ? x - 0x100000000LL : x;
}

static int64_t as_int64(uint64_t u)
{
    return u > (uint64_t)INT64_MAX ? -(int64_t)(~u) - 1 : (int64_t)u;
}

/* 1 if the n bytes at s are UTF-8 as jansson and RFC 3629 accept it (no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static int utf8_ok(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return 0;
        }
        if (n - i - 1 < k) return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += k + 1;
    }
    return 1;
}

/* ---- the walker ---- */

typedef struct pb_dec {
    char path[PB_PATH_MAX]; /* where we are, e.g. "Deployment.spec.template" */
    size_t plen;
    int depth;
    char *err;
    size_t errlen;
    int failed;
} pb_dec_t;

/* Record the first error as "<path>: <message>" and return rc. */
static int fail(pb_dec_t *d, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(pb_dec_t *d, int rc, const char *fmt, ...)
{
    if (d->failed++ || !d->err || !d->errlen) return rc;
    if (rc == KP_ENOMEM) {
        snprintf(d->err, d->errlen, "out of memory");
        return rc;
    }
    int n = snprintf(d->err, d->errlen, "%s: ", d->path);
    if (n >= 0 && (size_t)n < d->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int oom(pb_dec_t *d)
{
    return fail(d, KP_ENOMEM, "out of memory");
}

/* Append to the path; returns the old length for path_pop(). A path that
 * does not fit is cut, which only shortens messages. */
static size_t path_push(pb_dec_t *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static size_t path_push(pb_dec_t *d, const char *fmt, ...)
{
    size_t old = d->plen;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(d->path + old, sizeof d->path - old, fmt, ap);
    va_end(ap);
    if (n > 0) d->plen = old + (size_t)n < sizeof d->path ? old + (size_t)n : sizeof d->path - 1;
    return old;
}

static void path_pop(pb_dec_t *d, size_t old)
{
    d->plen = old;
    d->path[old] = '\0';
}

static const char *wt_name(int wt)
{
    static const char *const names[] = {"varint",      "64-bit",    "length-delimited",
                                        "start-group", "end-group", "32-bit"};
    return wt >= 0 && wt <= 5 ? names[wt] : "invalid";
}

static const api_pb_field_t *find_field(const api_pb_msg_t *m, uint32_t num)
{
    for (size_t i = 0; i < m->nfields; i++)
        if (m->fields[i].num == num) return &m->fields[i];
    return NULL;
}

/* The member `name` of obj as an array (type 'a') or object ('o') in *m,
 * created empty if absent. Fails if the member has another type, which only
 * a table with two fields of one JSON name could cause. */
static int member(pb_dec_t *d, json_t *obj, const char *name, char type, json_t **m)
{
    *m = json_object_get(obj, name);
    if (*m) {
        if (type == 'a' ? json_is_array(*m) : json_is_object(*m)) return 0;
        *m = NULL;
        return fail(d, KP_EINVAL, "two fields of the table share the JSON name \"%s\"", name);
    }
    *m = type == 'a' ? json_array() : json_object();
    if (!*m || json_object_set_new(obj, name, *m)) {
        *m = NULL;
        return oom(d);
    }
    return 0;
}

/* Store a decoded value v (stolen) for field f of obj: appended for a
 * repeated field, else set (last wins), or left out when `zero` and the field
 * is omitempty. */
static int put(pb_dec_t *d, const api_pb_field_t *f, json_t *obj, json_t *v, int zero)
{
    if (!v) return oom(d);
    if (f->flags & API_PB_REP) {
        json_t *a;
        int rc = member(d, obj, f->json, 'a', &a);
        if (rc) {
            json_decref(v);
            return rc;
        }
        return json_array_append_new(a, v) ? oom(d) : 0;
    }
    if (zero && !(f->flags & API_PB_KEEP)) {
        json_decref(v);
        json_object_del(obj, f->json);
        return 0;
    }
    return json_object_set_new(obj, f->json, v) ? oom(d) : 0;
}

static int walk(pb_dec_t *d, const api_pb_msg_t *m, const uint8_t *p, size_t n, json_t *obj);

/* metav1.Time {1: seconds, 2: nanos}. *v is NULL for the zero time, which
 * Kubernetes prints as null and we leave out. */
static int dec_time(pb_dec_t *d, const uint8_t *p, size_t n, int micro, json_t **v)
{
    pbr_t r = {p, p + n};
    int64_t sec = 0, nanos = 0;
    *v = NULL;
    while (r.p < r.end) {
        pbr_val_t f;
        const char *e = pbr_field(&r, &f);
        if (e) return fail(d, KP_EINVAL, "%s", e);
        if ((f.num != 1 && f.num != 2) || f.wt != PBW_VARINT)
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in Time", f.num, f.wt);
        if (f.num == 1)
            sec = as_int64(f.u);
        else
            nanos = as_int32(f.u);
    }
    if (n == 0) return 0; /* Time.Unmarshal: no bytes is the zero time */
    /* nanos moves sec by at most 3: checking with that margin first keeps
     * the arithmetic below from overflowing */
    if (sec < RFC3339_MIN_UNIX - 3 || sec > RFC3339_MAX_UNIX + 3)
        return fail(d, KP_EINVAL, "time %lld is outside the years 0000-9999", (long long)sec);
    /* time.Unix(sec, nanos) carries whole seconds out of nanos; JSON drops
     * the fraction. */
    sec += nanos / 1000000000;
    nanos %= 1000000000;
    if (nanos < 0) {
        sec--;
        nanos += 1000000000;
    }
    if (sec == GO_ZERO_TIME_UNIX && nanos == 0) return 0;
    if (sec < RFC3339_MIN_UNIX || sec > RFC3339_MAX_UNIX)
        return fail(d, KP_EINVAL, "time %lld is outside the years 0000-9999", (long long)sec);
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm))
        return fail(d, KP_EINVAL, "time %lld cannot be converted", (long long)sec);
    char buf[80]; /* 27 bytes for the years in range; the rest quiets -Wformat-truncation */
    if (micro) /* MicroTime: RFC 3339 with microseconds, always 6 digits */
        snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                 (int)(nanos / 1000));
    else
        snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    *v = json_string(buf);
    return *v ? 0 : oom(d);
}

/* intstr.IntOrString {1: type, 2: intVal, 3: strVal}: a number or a string. */
static int dec_intorstr(pb_dec_t *d, const uint8_t *p, size_t n, json_t **v)
{
    pbr_t r = {p, p + n};
    int64_t type = 0, ival = 0;
    const uint8_t *s = NULL;
    size_t slen = 0;
    *v = NULL;
    while (r.p < r.end) {
        pbr_val_t f;
        const char *e = pbr_field(&r, &f);
        if (e) return fail(d, KP_EINVAL, "%s", e);
        if (f.num == 1 && f.wt == PBW_VARINT)
            type = as_int64(f.u);
        else if (f.num == 2 && f.wt == PBW_VARINT)
            ival = as_int32(f.u);
        else if (f.num == 3 && f.wt == PBW_LEN) {
            s = f.data;
            slen = f.len;
        } else {
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in IntOrString", f.num,
                        f.wt);
        }
    }
    if (type == 0)
        *v = json_integer(ival);
    else if (type == 1) {
        if (!utf8_ok(s, slen)) return fail(d, KP_EINVAL, "strVal is not valid UTF-8");
        *v = json_stringn(s ? (const char *)s : "", slen);
    } else {
        return fail(d, KP_EINVAL, "IntOrString type %lld is neither 0 (int) nor 1 (string)",
                    (long long)type);
    }
    return *v ? 0 : oom(d);
}

/* resource.Quantity {1: string}. No string is Go's zero Quantity, "0"; an
 * empty one fails ParseQuantity in Kubernetes, so here too. The text is kept
 * as sent: clients send Quantity.String(), which is already canonical. */
static int dec_quantity(pb_dec_t *d, const uint8_t *p, size_t n, json_t **v)
{
    pbr_t r = {p, p + n};
    const uint8_t *s = (const uint8_t *)"0";
    size_t slen = 1;
    *v = NULL;
    while (r.p < r.end) {
        pbr_val_t f;
        const char *e = pbr_field(&r, &f);
        if (e) return fail(d, KP_EINVAL, "%s", e);
        if (f.num != 1 || f.wt != PBW_LEN)
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in Quantity", f.num, f.wt);
        s = f.data;
        slen = f.len;
    }
    if (slen == 0) return fail(d, KP_EINVAL, "empty quantity");
    if (!utf8_ok(s, slen)) return fail(d, KP_EINVAL, "quantity is not valid UTF-8");
    *v = json_stringn((const char *)s, slen);
    return *v ? 0 : oom(d);
}

/* metav1.FieldsV1 {1: Raw}: Raw is JSON, printed as is. */
static int dec_fieldsv1(pb_dec_t *d, const uint8_t *p, size_t n, json_t **v)
{
    pbr_t r = {p, p + n};
    const uint8_t *raw = NULL;
    size_t rlen = 0;
    *v = NULL;
    while (r.p < r.end) {
        pbr_val_t f;
        const char *e = pbr_field(&r, &f);
        if (e) return fail(d, KP_EINVAL, "%s", e);
        if (f.num != 1 || f.wt != PBW_LEN)
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in FieldsV1", f.num, f.wt);
        raw = f.data;
        rlen = f.len;
    }
    if (!raw) {
        *v = json_null();
        return 0;
    }
    json_error_t je;
    *v = json_loadb((const char *)raw, rlen, JSON_DECODE_ANY, &je);
    return *v ? 0 : fail(d, KP_EINVAL, "Raw is not valid JSON: %s", je.text);
}

static int decode_unknown(pb_dec_t *d, const uint8_t *body, size_t len, json_t **out);

/* runtime.RawExtension {1: Raw}: JSON text, or an object in its own "k8s\0"
 * envelope (the form watch events and v1 List carry in protobuf). No Raw is
 * null. */
static int dec_rawext(pb_dec_t *d, const uint8_t *p, size_t n, json_t **v)
{
    pbr_t r = {p, p + n};
    const uint8_t *raw = NULL;
    size_t rlen = 0;
    *v = NULL;
    while (r.p < r.end) {
        pbr_val_t f;
        const char *e = pbr_field(&r, &f);
        if (e) return fail(d, KP_EINVAL, "%s", e);
        if (f.num != 1 || f.wt != PBW_LEN)
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in RawExtension", f.num,
                        f.wt);
        raw = f.data;
        rlen = f.len;
    }
    if (!raw || !rlen) {
        *v = json_null();
        return *v ? 0 : oom(d);
    }
    if (rlen >= 4 && !memcmp(raw, "k8s", 4)) {
        if (d->depth >= PB_DEPTH_MAX)
            return fail(d, KP_EINVAL, "nested deeper than %d messages", PB_DEPTH_MAX);
        d->depth++;
        int rc = decode_unknown(d, raw, rlen, v);
        d->depth--;
        return rc;
    }
    json_error_t je;
    *v = json_loadb((const char *)raw, rlen, JSON_DECODE_ANY, &je);
    return *v ? 0 : fail(d, KP_EINVAL, "Raw is neither JSON nor protobuf: %s", je.text);
}

/* A message {1: repeated string} (ExtraValue): the list itself. */
static int dec_strlist(pb_dec_t *d, const uint8_t *p, size_t n, json_t **v)
{
    pbr_t r = {p, p + n};
    *v = json_array();
    if (!*v) return oom(d);
    while (r.p < r.end) {
        pbr_val_t f;
        const char *e = pbr_field(&r, &f);
        if (e) return fail(d, KP_EINVAL, "%s", e);
        if (f.num != 1 || f.wt != PBW_LEN)
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in a string list", f.num,
                        f.wt);
        if (!utf8_ok(f.data, f.len)) return fail(d, KP_EINVAL, "a string is not valid UTF-8");
        if (json_array_append_new(*v, json_stringn((const char *)f.data, f.len))) return oom(d);
    }
    return 0;
}

/* A map entry {1: key, 2: value} decoded by its entry message into map. */
static int dec_map_entry(pb_dec_t *d, const api_pb_field_t *f, json_t *obj, const uint8_t *p,
                         size_t n)
{
    json_t *tmp = json_object();
    if (!tmp) return oom(d);
    int rc = walk(d, f->msg, p, n, tmp);
    if (rc) goto out;
    json_t *map;
    rc = member(d, obj, f->json, 'o', &map);
    if (rc) goto out;
    json_t *k = json_object_get(tmp, "key");
    json_t *v = json_object_get(tmp, "value");
    if (v)
        json_incref(v);
    else if (f->msg->nfields > 1 && f->msg->fields[1].kind == API_PB_QUANTITY)
        v = json_string("0"); /* a missing value is the value type's zero */
    else if (f->msg->nfields > 1 && f->msg->fields[1].kind == API_PB_STRLIST)
        v = json_array();
    else
        v = json_string("");
    if (!v) {
        rc = oom(d);
        goto out;
    }
    const char *ks = k ? json_string_value(k) : "";
    size_t klen = k ? json_string_length(k) : 0;
    if (json_object_setn_new(map, ks, klen, v)) rc = oom(d);
out:
    json_decref(tmp);
    return rc;
}

/* One bool/int32/int64 value of field f into obj. */
static int put_varint(pb_dec_t *d, const api_pb_field_t *f, json_t *obj, uint64_t u)
{
    if (f->kind == API_PB_BOOL) return put(d, f, obj, json_boolean(u != 0), u == 0);
    int64_t x = f->kind == API_PB_INT32 ? as_int32(u) : as_int64(u);
    return put(d, f, obj, json_integer(x), x == 0);
}

/* The varint(s) of a bool/int32/int64 field: one value, or for a repeated
 * field also a packed run. */
static int dec_varints(pb_dec_t *d, const api_pb_field_t *f, const pbr_val_t *w, json_t *obj)
{
    if (w->wt == PBW_VARINT) return put_varint(d, f, obj, w->u);
    if (w->wt != PBW_LEN || !(f->flags & API_PB_REP))
        return fail(d, KP_EINVAL, "field %u (%s): wire type %d (%s), expected 0 (varint)", f->num,
                    f->json, w->wt, wt_name(w->wt));
    pbr_t packed = {w->data, w->data + w->len};
    while (packed.p < packed.end) {
        uint64_t u;
        const char *e = pbr_varint(&packed, &u);
        if (e) return fail(d, KP_EINVAL, "field %u (%s): packed: %s", f->num, f->json, e);
        int rc = put_varint(d, f, obj, u);
        if (rc) return rc;
    }
    return 0;
}

/* One field of message m on the wire, into obj. */
static int dec_field(pb_dec_t *d, const api_pb_msg_t *m, const pbr_val_t *w, json_t *obj)
{
    const api_pb_field_t *f = find_field(m, w->num);
    if (!f)
        return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in %s", w->num, w->wt, m->name);
    if (f->kind == API_PB_BOOL || f->kind == API_PB_INT32 || f->kind == API_PB_INT64)
        return dec_varints(d, f, w, obj);
    if (f->kind == API_PB_DOUBLE) {
        if (w->wt != PBW_I64 || (f->flags & API_PB_REP))
            return fail(d, KP_EINVAL, "field %u (%s): wire type %d (%s), expected 1 (64-bit)",
                        w->num, f->json, w->wt, wt_name(w->wt));
        double x;
        memcpy(&x, &w->u, sizeof x);
        return put(d, f, obj, json_real(x), x == 0);
    }
    if (w->wt != PBW_LEN)
        return fail(d, KP_EINVAL, "field %u (%s): wire type %d (%s), expected 2 (length-delimited)",
                    w->num, f->json, w->wt, wt_name(w->wt));

    json_t *v = NULL;
    size_t old;
    int rc;
    switch (f->kind) {
    case API_PB_STRING:
        if (!utf8_ok(w->data, w->len))
            return fail(d, KP_EINVAL, "field %u (%s) is not valid UTF-8", w->num, f->json);
        return put(d, f, obj, json_stringn((const char *)w->data, w->len), w->len == 0);
    case API_PB_BYTES: {
        char *b64 = base64_encode(w->data, w->len);
        if (!b64) return oom(d);
        v = json_string(b64);
        free(b64);
        return put(d, f, obj, v, w->len == 0);
    }
    case API_PB_MESSAGE:
        if (d->depth >= PB_DEPTH_MAX)
            return fail(d, KP_EINVAL, "nested deeper than %d messages", PB_DEPTH_MAX);
        if (f->flags & API_PB_INLINE) {
            /* json:",inline": the members go into this object; the path
             * stays, as in the JSON */
            d->depth++;
            rc = walk(d, f->msg, w->data, w->len, obj);
            d->depth--;
            return rc;
        }
        if (f->flags & API_PB_REP) {
            json_t *a;
            rc = member(d, obj, f->json, 'a', &a);
            if (rc) return rc;
            old = path_push(d, ".%s[%zu]", f->json, json_array_size(a));
            v = json_object();
            if (!v || json_array_append_new(a, v)) {
                path_pop(d, old);
                return oom(d);
            }
        } else {
            old = path_push(d, ".%s", f->json);
            rc = member(d, obj, f->json, 'o', &v); /* merges into an earlier copy */
            if (rc) {
                path_pop(d, old);
                return rc;
            }
        }
        d->depth++;
        rc = walk(d, f->msg, w->data, w->len, v);
        d->depth--;
        path_pop(d, old);
        return rc;
    case API_PB_MAP:
        old = path_push(d, ".%s", f->json);
        rc = dec_map_entry(d, f, obj, w->data, w->len);
        path_pop(d, old);
        return rc;
    case API_PB_TIME:
    case API_PB_MICROTIME:
    case API_PB_INTORSTR:
    case API_PB_QUANTITY:
    case API_PB_FIELDSV1:
    case API_PB_RAWEXT:
    case API_PB_STRLIST:
        old = path_push(d, ".%s", f->json);
        if (f->kind == API_PB_TIME || f->kind == API_PB_MICROTIME)
            rc = dec_time(d, w->data, w->len, f->kind == API_PB_MICROTIME, &v);
        else if (f->kind == API_PB_RAWEXT)
            rc = dec_rawext(d, w->data, w->len, &v);
        else if (f->kind == API_PB_STRLIST)
            rc = dec_strlist(d, w->data, w->len, &v);
        else if (f->kind == API_PB_INTORSTR)
            rc = dec_intorstr(d, w->data, w->len, &v);
        else if (f->kind == API_PB_QUANTITY)
            rc = dec_quantity(d, w->data, w->len, &v);
        else
            rc = dec_fieldsv1(d, w->data, w->len, &v);
        path_pop(d, old);
        if (rc) return rc;
        if (!v) { /* the zero time: left out, or null in a list */
            if (!(f->flags & API_PB_REP)) {
                json_object_del(obj, f->json);
                return 0;
            }
            v = json_null();
        }
        return put(d, f, obj, v, 0);
    default:
        return fail(d, KP_EINVAL, "field %u (%s): kind %d is not in the table's kinds", w->num,
                    f->json, f->kind);
    }
}

/* Read message m from the n bytes at p into obj. */
static int walk(pb_dec_t *d, const api_pb_msg_t *m, const uint8_t *p, size_t n, json_t *obj)
{
    pbr_t r = {p, p + n};
    while (r.p < r.end) {
        pbr_val_t w;
        const char *e = pbr_field(&r, &w);
        if (e) {
            if (w.num) return fail(d, KP_EINVAL, "field %u (wire type %d): %s", w.num, w.wt, e);
            return fail(d, KP_EINVAL, "%s", e);
        }
        int rc = dec_field(d, m, &w, obj);
        if (rc) return rc;
    }
    return 0;
}

/* ---- runtime.Unknown ---- */

/* A string field of TypeMeta or Unknown into buf, NUL-terminated. */
static int copy_name(pb_dec_t *d, const pbr_val_t *w, const char *what, char *buf, size_t cap)
{
    if (w->wt != PBW_LEN)
        return fail(d, KP_EINVAL, "%s: wire type %d, expected 2 (length-delimited)", what, w->wt);
    if (w->len >= cap) return fail(d, KP_EINVAL, "%s is longer than %zu bytes", what, cap - 1);
    if (memchr(w->data, 0, w->len) || !utf8_ok(w->data, w->len))
        return fail(d, KP_EINVAL, "%s is not a valid name", what);
    memcpy(buf, w->data, w->len);
    buf[w->len] = '\0';
    return 0;
}

/* An object in its "k8s\0" envelope into *out: the body, or a RawExtension's
 * raw bytes inside one (d->depth counts the envelopes). */
static int decode_unknown(pb_dec_t *d, const uint8_t *body, size_t len, json_t **out)
{
    static const uint8_t magic[4] = {'k', '8', 's', 0};
    char api_version[PB_NAME_MAX] = "", kind[PB_NAME_MAX] = "", encoding[PB_NAME_MAX] = "",
         ctype[PB_NAME_MAX] = "";
    const uint8_t *raw = NULL;
    size_t rawlen = 0;
    int rc;

    size_t base = d->depth ? d->plen : 0; /* the top level names the kind alone */
    *out = NULL;
    if (len < sizeof magic || memcmp(body, magic, sizeof magic))
        return fail(d, KP_EINVAL, "not a Kubernetes protobuf message (no \"k8s\\x00\" prefix)");

    pbr_t r = {(const uint8_t *)body + sizeof magic, (const uint8_t *)body + len};
    while (r.p < r.end) {
        pbr_val_t w;
        const char *e = pbr_field(&r, &w);
        if (e) return fail(d, KP_EINVAL, "runtime.Unknown: %s", e);
        if ((w.num == 1 || w.num == 2) && w.wt != PBW_LEN)
            return fail(d, KP_EINVAL, "runtime.Unknown: field %u: wire type %d, expected 2", w.num,
                        w.wt);
        if (w.num == 1) { /* typeMeta */
            pbr_t t = {w.data, w.data + w.len};
            while (t.p < t.end) {
                pbr_val_t tw;
                e = pbr_field(&t, &tw);
                if (e) return fail(d, KP_EINVAL, "runtime.Unknown.typeMeta: %s", e);
                if (tw.num == 1)
                    rc = copy_name(d, &tw, "apiVersion", api_version, sizeof api_version);
                else if (tw.num == 2)
                    rc = copy_name(d, &tw, "kind", kind, sizeof kind);
                else
                    rc = fail(d, KP_EINVAL, "unknown field %u (wire type %d) in TypeMeta", tw.num,
                              tw.wt);
                if (rc) return rc;
            }
        } else if (w.num == 2) {
            raw = w.data;
            rawlen = w.len;
        } else if (w.num == 3) {
            rc = copy_name(d, &w, "contentEncoding", encoding, sizeof encoding);
            if (rc) return rc;
        } else if (w.num == 4) {
            rc = copy_name(d, &w, "contentType", ctype, sizeof ctype);
            if (rc) return rc;
        } else {
            return fail(d, KP_EINVAL, "unknown field %u (wire type %d) in runtime.Unknown", w.num,
                        w.wt);
        }
    }
    if (encoding[0])
        return fail(d, KP_EINVAL, "contentEncoding \"%s\" is not supported", encoding);
    if (ctype[0] && strcmp(ctype, API_PB_MEDIA_TYPE))
        return fail(d, KP_EINVAL, "contentType \"%s\" is not %s", ctype, API_PB_MEDIA_TYPE);
    if (!kind[0]) return fail(d, KP_EINVAL, "no kind in the object's TypeMeta");
    const api_pb_root_t *root = api__pb_root_find(api_version, kind);
    if (!root)
        return fail(d, KP_EINVAL,
                    "kind \"%s\" of apiVersion \"%s\" cannot be decoded from protobuf; send it "
                    "as JSON",
                    kind, api_version);

    json_t *obj = json_object();
    if (!obj || json_object_set_new(obj, "kind", json_string(kind)) ||
        json_object_set_new(obj, "apiVersion", json_string(api_version))) {
        json_decref(obj);
        return oom(d);
    }
    path_pop(d, base);
    path_push(d, base ? "(%s)" : "%s", kind);
    rc = raw ? walk(d, root->msg, raw, rawlen, obj) : 0;
    path_pop(d, base);
    if (rc) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return 0;
}

int api_pb_decode(const void *body, size_t len, json_t **out, char *err, size_t errlen)
{
    pb_dec_t d = {.err = err, .errlen = errlen};
    if (err && errlen) err[0] = '\0';
    path_push(&d, "protobuf body");
    return decode_unknown(&d, body, len, out);
}

const api_pb_root_t *api__pb_root_find(const char *api_version, const char *kind)
{
    for (size_t i = 0; i < api__pb_nroots; i++)
        if (!strcmp(api__pb_roots[i].api_version, api_version) &&
            !strcmp(api__pb_roots[i].kind, kind))
            return &api__pb_roots[i];
    return NULL;
}

const api_pb_root_t *api__pb_root_at(size_t i)
{
    return i < api__pb_nroots ? &api__pb_roots[i] : NULL;
}

int api_pb_has_kind(const char *api_version, const char *kind)
{
    return api__pb_root_find(api_version, kind) != NULL;
}
