/*
 * rest.c -- the generic resource verbs: dispatch, and the reads (get, list,
 * watch). Writes are in rest_write.c.
 *
 * Reads of the newest state and lists come from the resource's watch cache
 * (every object version is encoded there once); a list's continuation pages
 * and reads at an exact older revision come from the store at that revision,
 * so that the pages of one list form one snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "lib/base64.h"
#include "lib/err.h"
#include "lib/jsonspan.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/encode/table.h"
#include "apiserver/encode/protobuf.h"
#include "apiserver/schema/selector.h"
#include "store/store.h"
#include "apiserver/rest/watchcache.h"

/* ---- shared helpers (rest_int.h) ---- */

const char *rest_qualified(const api_resource_t *res, char *buf, size_t n)
{
    if (*res->group)
        snprintf(buf, n, "%s.%s", res->resource, res->group);
    else
        snprintf(buf, n, "%s", res->resource);
    return buf;
}

json_t *rest_details(const api_resource_t *res, const char *name)
{
    return json_pack("{s:s, s:s, s:s}", "name", name, "group", res->group, "kind", res->resource);
}

int rest_not_found(api_req_t *r, const char *name)
{
    char q[128];
    json_t *d = rest_details(r->route.res, name);
    int rc = api_reply_status(r, 404, "NotFound", d, "%s \"%s\" not found",
                              rest_qualified(r->route.res, q, sizeof q), name);
    json_decref(d);
    return rc;
}

int rest_store_error(api_req_t *r, int rc, const char *name)
{
    return rest_store_error_for(r, r->route.res, rc, name);
}

int rest_store_error_for(api_req_t *r, const api_resource_t *res, int rc, const char *name)
{
    char q[128];
    rest_qualified(res, q, sizeof q);
    json_t *d = rest_details(res, name);
    int out;
    switch (rc) {
    case KP_ENOTFOUND:
        out = api_reply_status(r, 404, "NotFound", d, "%s \"%s\" not found", q, name);
        break;
    case KP_EEXIST:
        out = api_reply_status(r, 409, "AlreadyExists", d, "%s \"%s\" already exists", q, name);
        break;
    case KP_ECONFLICT:
        out = api_reply_status(r, 409, "Conflict", d,
                               "Operation cannot be fulfilled on %s \"%s\": the object has been "
                               "modified; please apply your changes to the latest version and "
                               "try again",
                               q, name);
        break;
    default:
        out = api_reply_error(r, rc, d, "%s", err_str(rc));
    }
    json_decref(d);
    return out;
}

int rest_reply_causes(api_req_t *r, const char *group, const char *kind, const char *name,
                      const json_t *causes)
{
    size_t n = json_array_size(causes);
    if (!n) return 0;
    char list[2048] = "";
    size_t len = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(causes, i, c) {
        const char *field = json_string_value(json_object_get(c, "field"));
        int w = snprintf(list + len, sizeof list - len, "%s%s: %s", i ? ", " : "",
                         field ? field : "", json_string_value(json_object_get(c, "message")));
        if (w < 0 || (size_t)w >= sizeof list - len) break;
        len += (size_t)w;
    }
    char qkind[160];
    if (*group)
        snprintf(qkind, sizeof qkind, "%s.%s", kind, group);
    else
        snprintf(qkind, sizeof qkind, "%s", kind);
    json_t *d = json_pack("{s:s, s:s, s:s, s:O}", "name", name, "group", group, "kind", kind,
                          "causes", causes);
    api_reply_status(r, 422, "Invalid", d,
                     n > 1 ? "%s \"%s\" is invalid: [%s]" : "%s \"%s\" is invalid: %s", qkind, name,
                     list);
    json_decref(d);
    return -1;
}

int rest_parse_rv(const char *s, int64_t *out)
{
    if (!s || !*s) {
        *out = 0;
        return 0;
    }
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < 0) return KP_EINVAL;
    *out = v;
    return 0;
}

/* Nesting depth of JSON text, counted outside strings. */
static int json_depth_ok(const char *p, size_t n, int max)
{
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max) return 0;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return 1;
}

int rest_body_object(api_req_t *r, json_t **out)
{
    *out = NULL;
    if (r->internal && r->internal->body) {
        if (!json_is_object(r->internal->body))
            return api_reply_status(r, 400, "BadRequest", NULL,
                                    "the request body must be a JSON object");
        if (!(*out = json_deep_copy(r->internal->body)))
            return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return 0;
    }
    const char *ct = api_header(r, "Content-Type");
    if (ct && !strncmp(ct, "application/vnd.kubernetes.protobuf", 35)) {
        /* kubectl's typed clients (create namespace|configmap|deployment...)
         * send protobuf and never fall back to JSON. */
        char err[512];
        json_t *doc = NULL;
        int rc = api_pb_decode(r->body.p, r->body.len, &doc, err, sizeof err);
        if (rc == KP_EINVAL) return api_reply_status(r, 400, "BadRequest", NULL, "%s", err);
        if (rc) return api_reply_error(r, rc, NULL, "decoding protobuf: %s", err_str(rc));
        *out = doc;
        return 0;
    }
    if (ct && (strstr(ct, "protobuf") || strstr(ct, "yaml") || strstr(ct, "cbor")))
        return api_reply_status(r, 415, "UnsupportedMediaType", NULL,
                                "the body of the request was in an unknown format - accepted "
                                "media types include: application/json, "
                                "application/merge-patch+json, "
                                "application/vnd.kubernetes.protobuf");
    if (!r->body.len)
        return api_reply_status(r, 400, "BadRequest", NULL, "the request body is empty");
    if (!json_depth_ok(r->body.p, r->body.len, API_JSON_DEPTH_MAX))
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "the request body is nested deeper than %d levels",
                                API_JSON_DEPTH_MAX);
    json_error_t e;
    /* A repeated key is an error only under fieldValidation=Strict (a
     * warning otherwise, the last value winning): note it, parse again. */
    json_t *doc = json_loadb(r->body.p, r->body.len, JSON_REJECT_DUPLICATES, &e);
    if (!doc && json_error_code(&e) == json_error_duplicate_key) {
        const char *q = strchr(e.text, '\'');
        const char *end = q ? strchr(q + 1, '\'') : NULL;
        snprintf(r->dup_field, sizeof r->dup_field, "%.*s", end ? (int)(end - q - 1) : 0,
                 q ? q + 1 : "");
        if (r->dup_field[0] == '"') { /* jansson quotes the key: near '"name"' */
            size_t n = strlen(r->dup_field);
            memmove(r->dup_field, r->dup_field + 1, n);
            if (n >= 2 && r->dup_field[n - 2] == '"') r->dup_field[n - 2] = '\0';
        }
        if (!r->dup_field[0]) snprintf(r->dup_field, sizeof r->dup_field, "?");
        doc = json_loadb(r->body.p, r->body.len, 0, &e);
    }
    if (!doc)
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "the request body is not valid JSON: %s (line %d, column %d)",
                                e.text, e.line, e.column);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return api_reply_status(r, 400, "BadRequest", NULL,
                                "the request body must be a JSON object");
    }
    *out = doc;
    return 0;
}

json_t *rest_meta(json_t *obj)
{
    json_t *m = json_object_get(obj, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(obj, "metadata", m);
    }
    return m;
}

const char *rest_meta_str(const json_t *obj, const char *field)
{
    const json_t *m = json_object_get(obj, "metadata");
    const char *s = json_string_value(json_object_get(m, field));
    return s ? s : "";
}

void rest_set_rv(json_t *obj, int64_t rev)
{
    char b[24];
    snprintf(b, sizeof b, "%lld", (long long)rev);
    json_object_set_new(rest_meta(obj), "resourceVersion", json_string(b));
}

int rest_reply_object(api_req_t *r, int code, json_t *obj, int64_t rev)
{
    rest_set_rv(obj, rev);
    return api_reply_json(r, code, obj);
}

wc_t *rest_cache(api_req_t *r)
{
    return r->view->caches[r->route.index];
}

int rest_query_bool(api_req_t *r, const char *name)
{
    const char *v = api_query(r, name);
    if (!v) return 0;
    return !strcmp(v, "1") || !strcasecmp(v, "t") || !strcasecmp(v, "true");
}

/* ---- selectors ---- */

int rest_selectors(api_req_t *r, rest_filter_t *f)
{
    char err[512];
    memset(f, 0, sizeof *f);
    if (sel_label_parse(api_query(r, "labelSelector"), &f->labels, err, sizeof err))
        return api_reply_status(r, 400, "BadRequest", NULL, "%s", err);
    if (sel_field_parse(api_query(r, "fieldSelector"), &f->fields, err, sizeof err)) {
        sel_label_free(f->labels);
        f->labels = NULL;
        return api_reply_status(r, 400, "BadRequest", NULL, "%s", err);
    }
    const char *base[16] = {"metadata.name", "metadata.namespace"};
    size_t n = 2;
    for (const char *const *p = r->route.res->field_selectors; p && *p && n < 15; p++)
        base[n++] = *p;
    base[n] = NULL;
    if (sel_field_check(f->fields, base, err, sizeof err)) {
        rest_filter_free(f);
        return api_reply_status(r, 400, "BadRequest", NULL, "%s", err);
    }
    return 0;
}

void rest_filter_free(rest_filter_t *f)
{
    sel_label_free(f->labels);
    sel_field_free(f->fields);
    f->labels = NULL;
    f->fields = NULL;
}

int rest_filter_match(const rest_filter_t *f, const json_t *obj)
{
    const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    return sel_label_match(f->labels, labels) && sel_field_match(f->fields, obj);
}

int rest_table_add(json_t *t, const api_resource_t *res, const wc_obj_t *o, int include,
                   int64_t now_s)
{
    json_t *doc;
    int rc = wc_obj_copy(o, &doc);
    if (!rc) rc = api_table_add_row(t, res, doc, (api_table_include_t)include, now_s);
    json_decref(doc);
    return rc;
}

/* ---- get ---- */

/* Read `key` from the store (*kv, the caller's to free), the authority on
 * which version is current, and in *v the watch cache's copy of that very
 * version when it has it (parsed and encoded already; NULL otherwise, else
 * the caller's to wc_obj_unref()). */
static int read_current(api_req_t *r, const char *key, store_kv_t **kv, const wc_obj_t **v)
{
    *v = NULL;
    int rc = store_get(r->srv->cfg.store, key, 0, kv);
    wc_t *wc = rest_cache(r);
    const wc_obj_t *c;
    if (!rc && wc && !wc_get(wc, key, &c)) {
        if (c->rev == (*kv)->mod_rev)
            *v = c;
        else
            wc_obj_unref(c);
    }
    return rc;
}

int rest_load(api_req_t *r, const char *key, json_t **obj, int64_t *rev)
{
    store_kv_t *kv;
    const wc_obj_t *v;
    *obj = NULL;
    int rc = read_current(r, key, &kv, &v);
    if (rc) return rc;
    *rev = kv->mod_rev;
    /* The cache's copy of the current version, rather than parse the value. */
    if (v && !wc_obj_copy(v, obj))
        json_object_del(json_object_get(*obj, "metadata"), "resourceVersion"); /* as stored */
    wc_obj_unref(v);
    int parsed = !*obj;
    if (parsed) *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
    free(kv);
    if (!*obj) return KP_ECORRUPT;
    /* As served (the cache's copy already is). */
    if (parsed && r->route.res && !(*obj = api_as_served((void *)r->route.res, *obj)))
        return KP_ENOMEM;
    return 0;
}

int rest_load_route(api_req_t *r, json_t **obj, int64_t *rev)
{
    char key[STORE_KEY_MAX + 1];
    *obj = NULL;
    int rc = api_object_key(r->route.res, r->route.ns, r->route.name, key, sizeof key);
    if (!rc) rc = rest_load(r, key, obj, rev);
    if (rc) rest_store_error(r, rc == KP_EINVAL ? KP_ENOTFOUND : rc, r->route.name);
    return rc;
}

/* Does one media range ask for `as` (in meta.k8s.io v1 or v1beta1)? Its
 * version into v. */
static int range_asks(const char *range, size_t n, const char *as, char *v, size_t vlen)
{
    int as_ok = 0, g_ok = 0;
    v[0] = '\0';
    for (const char *p = memchr(range, ';', n), *end = range + n; p && p < end;) {
        p++;
        const char *next = memchr(p, ';', (size_t)(end - p));
        const char *stop = next ? next : end;
        while (p < stop && *p == ' ')
            p++;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        size_t kl = eq ? (size_t)(eq - p) : 0, vl = eq ? (size_t)(stop - eq - 1) : 0;
        while (vl && eq[vl] == ' ')
            vl--;
        if (eq && kl == 2 && !memcmp(p, "as", 2))
            as_ok = vl == strlen(as) && !memcmp(eq + 1, as, vl);
        else if (eq && kl == 1 && *p == 'g')
            g_ok = vl == 11 && !memcmp(eq + 1, "meta.k8s.io", 11);
        else if (eq && kl == 1 && *p == 'v' &&
                 ((vl == 2 && !memcmp(eq + 1, "v1", 2)) ||
                  (vl == 7 && !memcmp(eq + 1, "v1beta1", 7))))
            snprintf(v, vlen, "%.*s", (int)vl, eq + 1);
        p = next;
    }
    return as_ok && g_ok && v[0];
}

int rest_wants_table(api_req_t *r, int *include)
{
    const char *accept = api_header(r, "Accept");
    *include = API_TABLE_METADATA;
    /* Media ranges are comma-separated; one asking for a v1 Table is enough
     * (kubectl lists v1, then v1beta1, then plain JSON). */
    int want = 0;
    char v[16];
    for (const char *p = accept; p && *p && !want;) {
        size_t n = strcspn(p, ",");
        want = range_asks(p, n, "Table", v, sizeof v) && !strcmp(v, "v1");
        p += n;
        if (*p == ',') p++;
    }
    if (!want) return 0;
    int inc = api_table_include_parse(api_query(r, "includeObject"));
    if (inc < 0) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "includeObject: Unsupported value: \"%s\": supported values: "
                         "\"Metadata\", \"None\", \"Object\"",
                         api_query(r, "includeObject"));
        return -1;
    }
    *include = inc;
    return 1;
}

int rest_wants_meta(api_req_t *r, int list, char *av, size_t avlen)
{
    const char *accept = api_header(r, "Accept");
    const char *as = list ? "PartialObjectMetadataList" : "PartialObjectMetadata";
    char v[16];
    for (const char *p = accept; p && *p;) {
        size_t n = strcspn(p, ",");
        if (range_asks(p, n, as, v, sizeof v)) {
            snprintf(av, avlen, "meta.k8s.io/%s", v);
            return 1;
        }
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

int rest_meta_append(buf_t *b, const char *json, size_t len, const char *av)
{
    const char *vb = "{}", *ve = vb + 2;
    jspan_member(json, json + len, "metadata", NULL, &vb, &ve); /* absent: {} */
    char head[96];
    int n = snprintf(head, sizeof head,
                     "{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"%s\",\"metadata\":", av);
    int rc = n > 0 && (size_t)n < sizeof head ? buf_append(b, head, (size_t)n) : KP_EINVAL;
    if (!rc) rc = buf_append(b, vb, (size_t)(ve - vb));
    if (!rc) rc = buf_append(b, "}", 1);
    return rc;
}

/* A GET answered in JSON with the watch cache's bytes, encoded once, when
 * the cache's version of the object is the one the store reads now (the
 * store stays the authority on which version is current). 1 when replied;
 * 0 to read and encode it (which also reports any error). */
static int get_cached(api_req_t *r)
{
    char key[STORE_KEY_MAX + 1];
    store_kv_t *kv;
    const wc_obj_t *v;
    if (!rest_cache(r) || api_pb_accepts(api_header(r, "Accept")) ||
        api_object_key(r->route.res, r->route.ns, r->route.name, key, sizeof key) ||
        read_current(r, key, &kv, &v))
        return 0;
    free(kv);
    if (v) api_reply_bytes(r, 200, "application/json", v->json, v->json_len);
    int hit = v != NULL;
    wc_obj_unref(v);
    return hit;
}

static int do_get(api_req_t *r)
{
    json_t *obj;
    int64_t rev;
    int include, table = rest_wants_table(r, &include);
    if (table < 0) return 0;
    char av[32];
    int meta = !table && rest_wants_meta(r, 0, av, sizeof av);
    if (!table && !meta && get_cached(r)) return 0;
    if (rest_load_route(r, &obj, &rev)) return 0;
    if (meta) {
        rest_set_rv(obj, rev);
        char *js = json_dumps(obj, JSON_COMPACT);
        json_decref(obj);
        buf_t b;
        buf_init(&b, (size_t)-1);
        int rc = js ? rest_meta_append(&b, js, strlen(js), av) : KP_ENOMEM;
        free(js);
        if (rc) {
            buf_free(&b);
            return api_reply_error(r, rc, NULL, "encoding: %s", err_str(rc));
        }
        size_t len;
        char *body = buf_detach(&b, &len);
        return api_reply_take(r, 200, "application/json", body, len);
    }
    if (!table) return rest_reply_object(r, 200, obj, rev);
    rest_set_rv(obj, rev);
    json_t *t = api_table_new(r->route.res, 1);
    int rc = t ? api_table_add_row(t, r->route.res, obj, include, time(NULL)) : KP_ENOMEM;
    json_decref(obj);
    if (rc) {
        json_decref(t);
        return api_reply_error(r, rc, NULL, "rendering a table: %s", err_str(rc));
    }
    json_object_set_new(json_object_get(t, "metadata"), "resourceVersion",
                        json_sprintf("%lld", (long long)rev));
    return api_reply_json(r, 200, t);
}

/* ---- list ---- */

/* Continue tokens: base64 of {"rv":N,"start":"<key after which to go on>"}. */
static char *token_encode(int64_t rev, const char *last_key)
{
    json_t *t = json_pack("{s:I, s:s}", "rv", (json_int_t)rev, "start", last_key);
    char *raw = json_dumps(t, JSON_COMPACT);
    json_decref(t);
    char *out = raw ? base64_encode(raw, strlen(raw)) : NULL;
    free(raw);
    return out;
}

static int token_decode(const char *tok, int64_t *rev, char *key, size_t keylen)
{
    char raw[3072];
    size_t n;
    if (base64_decode(tok, strlen(tok), raw, sizeof raw, &n)) return KP_EINVAL;
    json_t *t = json_loadb(raw, n, 0, NULL);
    json_int_t rv;
    const char *start;
    int rc = t && !json_unpack(t, "{s:I, s:s}", "rv", &rv, "start", &start) && rv > 0 &&
                     strlen(start) < keylen
                 ? 0
                 : KP_EINVAL;
    if (!rc) {
        *rev = rv;
        snprintf(key, keylen, "%s", start);
    }
    json_decref(t);
    return rc;
}

/* Where a list's items go: the JSON text of a List, or the rows of a Table. */
typedef struct list_sink {
    buf_t b; /* the items, comma-separated */
    size_t count;
    json_t *table; /* non-NULL: a Table is being built instead */
    char meta[32]; /* non-empty: items are PartialObjectMetadata of this apiVersion */
    int include;
    int64_t now;
} list_sink_t;

/* 0, or -1 after replying 400 to a bad includeObject. */
/* `hint`: the bytes the items will take, to allocate the body once. The
 * List is written in one buffer that goes to the connection as it is:
 * kind, apiVersion, the items, and metadata last (known only at the end;
 * key order means nothing to JSON clients). */
static int sink_init(api_req_t *r, list_sink_t *s, size_t hint)
{
    memset(s, 0, sizeof s[0]);
    buf_init(&s->b, (size_t)-1);
    int t = rest_wants_table(r, &s->include);
    if (t < 0) return -1;
    if (t && !(s->table = api_table_new(r->route.res, 1))) {
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return -1;
    }
    s->now = time(NULL);
    if (!t) {
        char gv[96], head[256];
        const api_resource_t *res = r->route.res;
        int meta = rest_wants_meta(r, 1, s->meta, sizeof s->meta);
        int n = snprintf(head, sizeof head, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"items\":[",
                         meta ? "PartialObjectMetadataList" : res->list_kind,
                         meta ? s->meta : api_group_version(res, gv, sizeof gv));
        if (buf_reserve(&s->b, hint + 512) || buf_append(&s->b, head, (size_t)n)) {
            api_reply_status(r, 500, "InternalError", NULL, "out of memory");
            return -1;
        }
    }
    return 0;
}

static void sink_free(list_sink_t *s)
{
    buf_free(&s->b);
    json_decref(s->table);
    s->table = NULL;
}

/* Append one item: a whole object (with resourceVersion) and its JSON, or
 * (doc NULL) the cached version `o`. */
static int add_item(api_req_t *r, list_sink_t *s, const json_t *doc, const wc_obj_t *o,
                    const char *json, size_t len)
{
    if (s->table) {
        int rc = doc ? api_table_add_row(s->table, r->route.res, doc, s->include, s->now)
                     : rest_table_add(s->table, r->route.res, o, s->include, s->now);
        if (!rc) s->count++;
        return rc;
    }
    int rc = 0;
    if (s->count) rc = buf_append(&s->b, ",", 1);
    if (!rc)
        rc =
            s->meta[0] ? rest_meta_append(&s->b, json, len, s->meta) : buf_append(&s->b, json, len);
    if (!rc) s->count++;
    return rc;
}

static int finish_list(api_req_t *r, list_sink_t *s, int64_t rev, const char *cont)
{
    if (s->table) {
        json_t *meta = json_object_get(s->table, "metadata");
        json_object_set_new(meta, "resourceVersion", json_sprintf("%lld", (long long)rev));
        if (cont) json_object_set_new(meta, "continue", json_string(cont));
        json_t *t = s->table;
        s->table = NULL;
        return api_reply_json(r, 200, t);
    }
    char tail[512];
    int n = snprintf(tail, sizeof tail, "],\"metadata\":{\"resourceVersion\":\"%lld\"%s%s%s}}",
                     (long long)rev, cont ? ",\"continue\":\"" : "", cont ? cont : "",
                     cont ? "\"" : "");
    int rc = n > 0 && (size_t)n < sizeof tail ? buf_append(&s->b, tail, (size_t)n) : KP_EINVAL;
    if (rc) return api_reply_error(r, rc, NULL, "list too large");
    size_t len;
    char *body = buf_detach(&s->b, &len);
    if (!s->meta[0] && api_pb_accepts(api_header(r, "Accept"))) { /* the List as a message */
        json_t *doc = json_loadb(body, len, 0, NULL);
        free(body);
        return api_reply_json(r, 200, doc);
    }
    return api_reply_take(r, 200, "application/json", body, len);
}

/* How many objects a page of `limit` needs from the watch cache: with no
 * selector, one more than the page (to know whether more follow); with one,
 * all (0). */
static size_t cache_limit(const rest_filter_t *f, long long limit)
{
    return !f->labels && !f->fields && limit > 0 ? (size_t)limit + 1 : 0;
}

/* Reply with the objects of `l` (a snapshot from the watch cache) that
 * match f, at most `limit` (0: all), and a continue token when more match. */
static int reply_cached(api_req_t *r, const rest_filter_t *f, const wc_list_t *l, size_t limit)
{
    size_t hint = 0;
    for (size_t i = 0; i < l->count && (!limit || i < limit); i++)
        hint += l->objs[i]->json_len + 1;
    list_sink_t s;
    if (sink_init(r, &s, hint)) return 0;
    const char *last = NULL;
    int more = 0, rc = 0;
    for (size_t i = 0; i < l->count && !rc; i++) {
        const wc_obj_t *o = l->objs[i];
        if (!wc_obj_match(o, f->labels, f->fields)) continue;
        if (limit && s.count == limit) {
            more = 1;
            break;
        }
        rc = add_item(r, &s, NULL, o, o->json, o->json_len);
        last = o->key;
    }
    char *tok = more && last ? token_encode(l->rev, last) : NULL;
    if (!rc)
        rc = finish_list(r, &s, l->rev, tok);
    else
        rc = api_reply_error(r, rc, NULL, "list failed: %s", err_str(rc));
    free(tok);
    sink_free(&s);
    return rc;
}

/* A continuation page: from the store, at the first page's revision. */
static int list_from_store(api_req_t *r, const rest_filter_t *f, const char *prefix, int64_t rev,
                           const char *after, size_t limit)
{
    list_sink_t s;
    if (sink_init(r, &s, 0)) return 0;
    char last[STORE_KEY_MAX + 1];
    snprintf(last, sizeof last, "%s", after);
    int more = 0, done = 0, rc = 0;
    while (!done && !rc) {
        store_range_t *page;
        rc = store_range(r->srv->cfg.store, prefix, last, 500, rev, &page);
        if (rc) break;
        for (size_t i = 0; i < page->count && !rc; i++) {
            const store_kv_t *kv = &page->kvs[i];
            if (limit && s.count == limit) { /* an item beyond the page: say so */
                more = done = 1;
                break;
            }
            snprintf(last, sizeof last, "%s", kv->key);
            json_t *obj = json_loadb(kv->value, kv->value_len, 0, NULL);
            if (obj) obj = api_as_served((void *)r->route.res, obj);
            if (obj && rest_filter_match(f, obj)) {
                rest_set_rv(obj, kv->mod_rev);
                char *js = s.table ? NULL : json_dumps(obj, JSON_COMPACT);
                rc =
                    js || s.table ? add_item(r, &s, obj, NULL, js, js ? strlen(js) : 0) : KP_ENOMEM;
                free(js);
            }
            json_decref(obj);
        }
        if (!page->more) done = 1;
        store_range_free(page);
    }
    if (rc == KP_ECOMPACTED) {
        sink_free(&s);
        return api_reply_status(r, 410, "Expired", NULL,
                                "The provided continue parameter is too old to display a "
                                "consistent list result. You can start a new list without the "
                                "continue parameter.");
    }
    if (rc) {
        sink_free(&s);
        return api_reply_error(r, rc, NULL, "list failed: %s", err_str(rc));
    }
    char *tok = more ? token_encode(rev, last) : NULL;
    rc = finish_list(r, &s, rev, tok);
    free(tok);
    sink_free(&s);
    return rc;
}

static int do_list(api_req_t *r)
{
    rest_filter_t f;
    int rc = rest_selectors(r, &f);
    if (rc || r->replied) return rc;
    char prefix[STORE_KEY_MAX + 1];
    if (api_ns_prefix(r->route.res, r->route.ns, prefix, sizeof prefix)) {
        rest_filter_free(&f);
        return rest_not_found(r, r->route.ns);
    }
    long long lim = 0;
    const char *ls = api_query(r, "limit");
    if (ls && *ls) {
        char *end;
        lim = strtoll(ls, &end, 10);
        if (*end) {
            rest_filter_free(&f);
            return api_reply_status(r, 400, "BadRequest", NULL,
                                    "invalid limit: strconv.ParseInt: parsing \"%s\": invalid "
                                    "syntax",
                                    ls);
        }
    }
    if (lim < 0) lim = 0;
    const char *match = api_query(r, "resourceVersionMatch");
    const char *rvq = api_query(r, "resourceVersion");
    if (match && *match) {
        const char *why = NULL;
        if (!rvq || !*rvq)
            why = "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
                  "resourceVersion is provided";
        else if (strcmp(match, "NotOlderThan") && strcmp(match, "Exact"))
            why = "resourceVersionMatch: Unsupported value: supported values: \"Exact\", "
                  "\"NotOlderThan\"";
        if (why) {
            rest_filter_free(&f);
            json_t *d = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "group", "meta.k8s.io", "kind",
                                  "ListOptions", "causes", "reason",
                                  !rvq || !*rvq ? "FieldValueForbidden" : "FieldValueNotSupported",
                                  "message", why, "field", "resourceVersionMatch");
            int out = api_reply_status(r, 422, "Invalid", d,
                                       "ListOptions.meta.k8s.io \"\" is invalid: %s", why);
            json_decref(d);
            return out;
        }
    }
    const char *cont = api_query(r, "continue");
    if (cont && *cont) {
        int64_t rev;
        char after[STORE_KEY_MAX + 1];
        if (token_decode(cont, &rev, after, sizeof after) ||
            strncmp(after, prefix, strlen(prefix))) {
            rest_filter_free(&f);
            return api_reply_status(r, 400, "BadRequest", NULL, "continue key is not valid");
        }
        /* From the watch cache while its history reaches back to the first
         * page's snapshot (as Kubernetes 1.33's ListFromCacheSnapshot);
         * else from the store, at that revision (Kubernetes 1.32). */
        wc_list_t *l = NULL;
        if (!wc_list_at(rest_cache(r), prefix, after, cache_limit(&f, lim), rev, &l)) {
            rc = reply_cached(r, &f, l, (size_t)lim);
            wc_list_free(l);
        } else {
            rc = list_from_store(r, &f, prefix, rev, after, (size_t)lim);
        }
        rest_filter_free(&f);
        return rc;
    }

    /* First page: from the cache, once it has caught up with the store
     * (resourceVersion "" is a consistent read; "0" takes the cache as it is,
     * whole: Kubernetes serves "0" from its watch cache ignoring limit, with
     * no continue, and client-go's reflectors list so). */
    int64_t min_rev = 0;
    const char *rvs = api_query(r, "resourceVersion");
    if (rvs && !strcmp(rvs, "0")) lim = 0;
    if (rest_parse_rv(rvs, &min_rev)) {
        rest_filter_free(&f);
        return api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion: %s", rvs);
    }
    if ((!rvs || !*rvs) && (rc = store_revision(r->srv->cfg.store, &min_rev))) {
        /* No current revision, no consistent read: never serve what may be stale. */
        rest_filter_free(&f);
        return api_reply_error(r, rc, NULL, "reading the current revision: %s", err_str(rc));
    }
    wc_list_t *l;
    rc = wc_list(rest_cache(r), prefix, NULL, cache_limit(&f, lim), min_rev, 3000, &l);
    if (rc) {
        rest_filter_free(&f);
        if (rc == KP_ETIMEDOUT) {
            /* storage.NewTooLargeResourceVersionError: client-go's reflector
             * knows it by the cause, and waits retryAfterSeconds. */
            json_t *d =
                json_pack("{s:[{s:s, s:s}], s:i}", "causes", "reason", "ResourceVersionTooLarge",
                          "message", "Too large resource version", "retryAfterSeconds", 1);
            rc = api_reply_status(r, 504, "Timeout", d, "Timeout: Too large resource version: %lld",
                                  (long long)min_rev);
            json_decref(d);
            return rc;
        }
        return api_reply_error(r, rc, NULL, "list failed: %s", err_str(rc));
    }
    rc = reply_cached(r, &f, l, (size_t)lim);
    wc_list_free(l);
    rest_filter_free(&f);
    return rc;
}

/* ---- dispatch ---- */

/* The verb (API_V_*) a request for a resource itself asks for; 0: none. */
static unsigned request_verb(api_req_t *r)
{
    const char *m = r->method;
    if (!*r->route.name) {
        if (!strcmp(m, "GET")) return rest_query_bool(r, "watch") ? API_V_WATCH : API_V_LIST;
        if (!strcmp(m, "POST")) return API_V_CREATE;
        return !strcmp(m, "DELETE") ? API_V_DELETECOLLECTION : 0;
    }
    if (!strcmp(m, "GET")) return API_V_GET;
    if (!strcmp(m, "PUT")) return API_V_UPDATE;
    if (!strcmp(m, "PATCH")) return API_V_PATCH;
    return !strcmp(m, "DELETE") ? API_V_DELETE : 0;
}

int api_serve_resource(api_req_t *r)
{
    const api_route_t *rt = &r->route;
    const char *m = r->method;
    if (!rt->res)
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    if (rt->res->namespaced && *rt->name && !*rt->ns)
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    if (strcmp(m, "GET") && rest_write_options(r)) return 0;
    if (*rt->sub) {
        /* The generic status and scale, else the kind's own (strategy.h). */
        if (!api_resource_serves_sub(rt->res, rt->sub) || !*rt->name)
            return api_reply_status(r, 404, "NotFound", NULL,
                                    "the server could not find the requested resource");
        if (!strcmp(rt->sub, "scale")) return rest_scale(r);
        const api_sub_t *own = api_strategy_sub(rt->res->strategy, rt->sub);
        if (own && own->handler) return own->handler(r);
    }
    /* A resource without objects of its own serves its verbs itself. */
    const api_strategy_t *st = rt->res->strategy;
    if (st && st->serve && !*rt->sub) {
        if (rt->res->verbs & request_verb(r)) return st->serve(r);
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested "
                                "resource");
    }

    /* The verbs the resource serves (namespaces, as in Kubernetes, are
     * deleted one by one: no deletecollection). */
    unsigned verbs = rt->res->verbs;
    if (!*rt->name) {
        if (!strcmp(m, "GET")) {
            int watch = rest_query_bool(r, "watch");
            if (verbs & (watch ? API_V_WATCH : API_V_LIST))
                return watch ? rest_watch(r) : do_list(r);
        }
        if (!strcmp(m, "POST") && (verbs & API_V_CREATE)) return rest_create(r);
        if (!strcmp(m, "DELETE") && (verbs & API_V_DELETECOLLECTION))
            return rest_delete_collection(r);
    } else {
        if (!strcmp(m, "GET") && (verbs & API_V_GET)) return do_get(r);
        if (!strcmp(m, "PUT") && (verbs & API_V_UPDATE)) return rest_update(r);
        if (!strcmp(m, "PATCH") && (verbs & API_V_PATCH)) return rest_patch(r);
        if (!strcmp(m, "DELETE") && !*rt->sub && (verbs & API_V_DELETE)) return rest_delete(r);
    }
    return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                            "the server does not allow this method on the requested resource");
}
