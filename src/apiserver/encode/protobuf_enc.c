/*
 * protobuf_enc.c -- JSON objects to Kubernetes protobuf ("k8s\0" +
 * runtime.Unknown), for clients that ask with Accept:
 * application/vnd.kubernetes.protobuf. The inverse of protobuf.c's walk,
 * driven by the same generated tables (protobuf_gen.c).
 *
 * RULES
 *   1. Fields are written in field-number order (the tables are sorted), as
 *      gogo-protobuf writes them; map entries by key, as gogo sorts them.
 *   2. What the JSON has is written, zero values included; what it lacks is
 *      not. gogo-protobuf also writes the zero of a non-pointer field the
 *      JSON leaves out; a decoder reads both the same.
 *   3. A member the table does not know is left out: it has no protobuf
 *      field in Kubernetes either. A member of the wrong JSON type, a time
 *      that is not RFC 3339, bytes that are not base64 fail with KP_EINVAL,
 *      so the caller can answer in JSON instead of losing a field.
 *   4. A message is opened with pbw_begin() and closed with pbw_end(), which
 *      inserts the body's length in front of it.
 *   5. Nesting is bounded by PB_DEPTH_MAX; the first error sticks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/encode/protobuf.h"
#include "apiserver/encode/protobuf_schema.h"
#include "lib/base64.h"
#include "lib/err.h"
#include "lib/pbwire.h"

#define PB_DEPTH_MAX 100

static void bad(pbw_t *w)
{
    if (!w->rc) w->rc = KP_EINVAL;
}

static void message(pbw_t *w, const api_pb_msg_t *m, const json_t *obj);

/* "2006-01-02T15:04:05[.frac](Z|+hh:mm)" to Unix seconds and nanoseconds. */
static int parse_time(const char *s, int64_t *sec, int32_t *nanos)
{
    int Y, M, D, h, mi, sc, n = 0;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &Y, &M, &D, &h, &mi, &sc, &n) != 6 || n != 19)
        return KP_EINVAL;
    const char *p = s + 19;
    int64_t ns = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 9) ns = ns * 10 + (*p - '0');
        if (!digits) return KP_EINVAL;
        for (; digits < 9; digits++)
            ns *= 10;
    }
    int64_t off = 0;
    if (*p == '+' || *p == '-') {
        int oh, om, k = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5) return KP_EINVAL;
        off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else if (*p++ != 'Z') {
        return KP_EINVAL;
    }
    if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || sc > 60)
        return KP_EINVAL;
    /* days from 1970-01-01 by the civil-from-days inverse (proleptic Gregorian) */
    int64_t y = Y - (M <= 2);
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (M + (M > 2 ? -3 : 9)) + 2) / 5 + D - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    *sec = days * 86400 + h * 3600 + mi * 60 + sc - off;
    *nanos = (int32_t)ns;
    return 0;
}

static void time_field(pbw_t *w, uint32_t num, const json_t *v)
{
    int64_t sec;
    int32_t nanos;
    if (!json_is_string(v) || parse_time(json_string_value(v), &sec, &nanos)) {
        bad(w);
        return;
    }
    size_t at = pbw_begin(w, num);
    pbw_tag(w, 1, PBW_VARINT);
    pbw_varint(w, (uint64_t)sec);
    pbw_tag(w, 2, PBW_VARINT);
    pbw_varint(w, (uint64_t)(int64_t)nanos);
    pbw_end(w, at);
}

static void intorstr_field(pbw_t *w, uint32_t num, const json_t *v)
{
    size_t at = pbw_begin(w, num);
    if (json_is_integer(v)) {
        pbw_tag(w, 1, PBW_VARINT);
        pbw_varint(w, 0);
        pbw_tag(w, 2, PBW_VARINT);
        pbw_varint(w, (uint64_t)(int64_t)(int32_t)json_integer_value(v));
        pbw_bytes(w, 3, "", 0);
    } else if (json_is_string(v)) {
        pbw_tag(w, 1, PBW_VARINT);
        pbw_varint(w, 1);
        pbw_tag(w, 2, PBW_VARINT);
        pbw_varint(w, 0);
        pbw_bytes(w, 3, json_string_value(v), json_string_length(v));
    } else {
        bad(w);
    }
    pbw_end(w, at);
}

/* A JSON value as compact text inside field `inner` of a message `num`
 * (FieldsV1 and RawExtension hold JSON bytes in their field 1). */
static void json_bytes_field(pbw_t *w, uint32_t num, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) {
        if (!w->rc) w->rc = KP_ENOMEM;
        return;
    }
    size_t at = pbw_begin(w, num);
    pbw_bytes(w, 1, text, strlen(text));
    pbw_end(w, at);
    free(text);
}

static void envelope(pbw_t *w, const api_pb_root_t *root, const json_t *obj);

static void rawext_field(pbw_t *w, uint32_t num, const json_t *v)
{
    const char *av = json_string_value(json_object_get(v, "apiVersion"));
    const char *kind = json_string_value(json_object_get(v, "kind"));
    const api_pb_root_t *root = av && kind ? api__pb_root_find(av, kind) : NULL;
    if (!root) {
        json_bytes_field(w, num, v);
        return;
    }
    size_t at = pbw_begin(w, num);
    size_t inner = pbw_begin(w, 1);
    envelope(w, root, v);
    pbw_end(w, inner);
    pbw_end(w, at);
}

/* One value (not a list) of field f. */
static void value(pbw_t *w, const api_pb_field_t *f, const json_t *v)
{
    switch (f->kind) {
    case API_PB_STRING:
        if (!json_is_string(v)) return bad(w);
        pbw_bytes(w, f->num, json_string_value(v), json_string_length(v));
        return;
    case API_PB_BYTES: {
        if (!json_is_string(v)) return bad(w);
        size_t n = json_string_length(v), len = 0;
        uint8_t *out = malloc(n / 4 * 3 + 3);
        if (!out) {
            if (!w->rc) w->rc = KP_ENOMEM;
            return;
        }
        if (base64_decode(json_string_value(v), n, out, n / 4 * 3 + 3, &len))
            bad(w);
        else
            pbw_bytes(w, f->num, out, len);
        free(out);
        return;
    }
    case API_PB_BOOL:
        if (!json_is_boolean(v)) return bad(w);
        pbw_tag(w, f->num, PBW_VARINT);
        pbw_varint(w, json_is_true(v));
        return;
    case API_PB_INT32:
    case API_PB_INT64:
        if (!json_is_integer(v)) return bad(w);
        pbw_tag(w, f->num, PBW_VARINT);
        pbw_varint(w, (uint64_t)(f->kind == API_PB_INT32 ? (int64_t)(int32_t)json_integer_value(v)
                                                     : (int64_t)json_integer_value(v)));
        return;
    case API_PB_DOUBLE: {
        if (!json_is_number(v)) return bad(w);
        double x = json_number_value(v);
        uint64_t u;
        memcpy(&u, &x, sizeof u);
        uint8_t le[8];
        for (int i = 0; i < 8; i++)
            le[i] = (uint8_t)(u >> (8 * i));
        pbw_tag(w, f->num, PBW_I64);
        pbw_raw(w, le, 8);
        return;
    }
    case API_PB_MESSAGE: {
        if (!json_is_object(v)) return bad(w);
        size_t at = pbw_begin(w, f->num);
        message(w, f->msg, v);
        pbw_end(w, at);
        return;
    }
    case API_PB_TIME:
    case API_PB_MICROTIME:
        time_field(w, f->num, v);
        return;
    case API_PB_INTORSTR:
        intorstr_field(w, f->num, v);
        return;
    case API_PB_QUANTITY: {
        char num[64];
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (json_is_integer(v)) { /* a number where a quantity goes: its decimal text */
            n = (size_t)snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
            s = num;
        }
        if (!s) return bad(w);
        size_t at = pbw_begin(w, f->num);
        pbw_bytes(w, 1, s, n);
        pbw_end(w, at);
        return;
    }
    case API_PB_FIELDSV1:
        json_bytes_field(w, f->num, v);
        return;
    case API_PB_RAWEXT:
        rawext_field(w, f->num, v);
        return;
    case API_PB_STRLIST: {
        if (!json_is_array(v)) return bad(w);
        size_t at = pbw_begin(w, f->num), i;
        const json_t *s;
        json_array_foreach(v, i, s)
        {
            if (!json_is_string(s)) return bad(w);
            pbw_bytes(w, 1, json_string_value(s), json_string_length(s));
        }
        pbw_end(w, at);
        return;
    }
    default:
        bad(w);
    }
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* map<string, V>: one entry message per key, keys sorted. */
static void map_field(pbw_t *w, const api_pb_field_t *f, const json_t *obj)
{
    if (!json_is_object(obj)) return bad(w);
    size_t n = json_object_size(obj), i = 0;
    if (!n) return;
    const char **keys = malloc(n * sizeof keys[0]);
    if (!keys) {
        if (!w->rc) w->rc = KP_ENOMEM;
        return;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)obj, k, v) keys[i++] = k;
    qsort(keys, n, sizeof keys[0], key_cmp);
    for (i = 0; i < n && !w->rc; i++) {
        size_t at = pbw_begin(w, f->num);
        pbw_bytes(w, 1, keys[i], strlen(keys[i]));
        value(w, &f->msg->fields[1], json_object_get(obj, keys[i]));
        pbw_end(w, at);
    }
    free(keys);
}

static void message(pbw_t *w, const api_pb_msg_t *m, const json_t *obj)
{
    if (++w->depth > PB_DEPTH_MAX) bad(w);
    for (size_t i = 0; i < m->nfields && !w->rc; i++) {
        const api_pb_field_t *f = &m->fields[i];
        if (f->flags & API_PB_INLINE) { /* json:",inline": the same JSON object */
            size_t at = pbw_begin(w, f->num);
            message(w, f->msg, obj);
            pbw_end(w, at);
            continue;
        }
        const json_t *v = json_object_get(obj, f->json);
        if (!v || json_is_null(v)) continue;
        if (f->kind == API_PB_MAP) {
            map_field(w, f, v);
        } else if (f->flags & API_PB_REP) {
            if (!json_is_array(v)) return bad(w);
            size_t j;
            const json_t *e;
            json_array_foreach(v, j, e) value(w, f, e);
        } else {
            value(w, f, v);
        }
    }
    w->depth--;
}

/* "k8s\0" + runtime.Unknown {1: typeMeta, 2: raw, 3: "", 4: ""}. */
static void envelope(pbw_t *w, const api_pb_root_t *root, const json_t *obj)
{
    pbw_raw(w, "k8s", 4);
    size_t tm = pbw_begin(w, 1);
    pbw_bytes(w, 1, root->api_version, strlen(root->api_version));
    pbw_bytes(w, 2, root->kind, strlen(root->kind));
    pbw_end(w, tm);
    size_t at = pbw_begin(w, 2);
    message(w, root->msg, obj);
    pbw_end(w, at);
    pbw_bytes(w, 3, "", 0);
    pbw_bytes(w, 4, "", 0);
}

int api_pb_encode(const json_t *obj, buf_t *out)
{
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const api_pb_root_t *root = av && kind ? api__pb_root_find(av, kind) : NULL;
    if (!root) return KP_ENOTFOUND;
    size_t start = out->len;
    pbw_t w = {out, 0, 0};
    envelope(&w, root, obj);
    if (w.rc) out->len = start;
    return w.rc;
}

int api_pb_encode_event(const char *type, const json_t *obj, buf_t *out)
{
    json_t *e = json_pack("{s:s, s:s, s:s, s:O}", "apiVersion", "v1", "kind", "WatchEvent", "type",
                          type, "object", obj);
    if (!e) return KP_ENOMEM;
    size_t start = out->len;
    uint8_t len[4] = {0};
    int rc = buf_append(out, len, 4);
    if (!rc) rc = api_pb_encode(e, out);
    json_decref(e);
    if (rc) {
        out->len = start;
        return rc;
    }
    size_t n = out->len - start - 4; /* the frame: a 4-byte big-endian length */
    if (n > UINT32_MAX) {
        out->len = start;
        return KP_ETOOLARGE;
    }
    for (int i = 0; i < 4; i++)
        out->p[start + (size_t)i] = (char)(uint8_t)(n >> (24 - 8 * i));
    return 0;
}

int api_pb_accepts(const char *accept)
{
    /* Media ranges in order: the first of JSON, protobuf or any decides
     * (client-go sends "application/vnd.kubernetes.protobuf, application/json";
     * a range asking for a Table or another variant is passed over). */
    for (const char *p = accept; p && *p;) {
        size_t n = strcspn(p, ",");
        while (n && *p == ' ') {
            p++;
            n--;
        }
        size_t t = strcspn(p, ";,");
        if (t > n) t = n;
        while (t && p[t - 1] == ' ')
            t--;
        int params = memchr(p, ';', n) != NULL;
        int table = params && (memmem(p, n, "as=", 3) != NULL);
        if (!table) {
            if (t == strlen(API_PB_MEDIA_TYPE) && !strncmp(p, API_PB_MEDIA_TYPE, t)) return 1;
            if ((t == 16 && !strncmp(p, "application/json", 16)) ||
                (t == 3 && !strncmp(p, "*/*", 3)) || (t == 13 && !strncmp(p, "application/*", 13)))
                return 0;
        }
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}
