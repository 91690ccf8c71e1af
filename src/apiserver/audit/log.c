/*
 * log.c -- the audit log's queue and writer (audit.h, THE LOG): requests
 * push events and go on; one thread takes them in order, in batches,
 * turns each into its line (objectRef, completed from a create's or
 * update's object; requestObject and responseObject: a JSON body as it is,
 * compacted, else decoded from protobuf or YAML, or when managedFields are
 * to be dropped) and writes a batch's lines at once to the file (file.c).
 *
 * Threads: api_audit_push() and the counters from any thread (the queue
 * under `mu`, held for a pointer append); the writer alone touches the
 * file.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/audit/audit.h"
#include "apiserver/encode/protobuf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "lib/yamljson.h"

#define ITEM_OVERHEAD 1024                       /* an event's metadata, in the byte budget */
#define WARN_EVERY_NS ((int64_t)60 * 1000000000) /* a failing file: logged once a minute */

struct api_audit {
    const api_audit_policy_t *policy;
    api_audit_file_t *file;
    char path[512];
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    api_audit_item_t *head, **tail; /* (mu) */
    size_t n, bytes;                /* (mu) queued */
    int stopping;                   /* (mu) */
    atomic_ullong events;           /* pushed (apiserver_audit_event_total) */
    atomic_ullong dropped;          /* the queue was full (plugin "buffered") */
    atomic_ullong failed;           /* not written (plugin "log") */
    atomic_ullong levels[API_AUDIT_REQUEST_RESPONSE + 1];
    int64_t warned_ns; /* (writer) */
};

static size_t item_bytes(const api_audit_item_t *it)
{
    return ITEM_OVERHEAD + it->req_len + it->resp_len;
}

void api_audit_item_free(api_audit_item_t *it)
{
    if (!it) return;
    free(it->text);
    free(it->ref);
    free(it->req);
    free(it->resp);
    free(it);
}

const api_audit_policy_t *api_audit_policy(const api_audit_t *a)
{
    return a->policy;
}

void api_audit_count_level(api_audit_t *a, int level)
{
    if (level >= 0 && level <= API_AUDIT_REQUEST_RESPONSE) atomic_fetch_add(&a->levels[level], 1);
}

void api_audit_push(api_audit_t *a, api_audit_item_t *it)
{
    atomic_fetch_add(&a->events, 1);
    if (!it) { /* could not be built */
        atomic_fetch_add(&a->failed, 1);
        return;
    }
    size_t b = item_bytes(it);
    pthread_mutex_lock(&a->mu);
    int full = a->stopping || a->n >= API_AUDIT_QUEUE_MAX ||
               (a->n && a->bytes + b > API_AUDIT_QUEUE_BYTES);
    if (!full) {
        it->next = NULL;
        *a->tail = it;
        a->tail = &it->next;
        a->n++;
        a->bytes += b;
        /* the idle writer, or the lingering one once a batch is there */
        if (a->n == 1 || a->n == API_AUDIT_BATCH) pthread_cond_signal(&a->cv);
    }
    pthread_mutex_unlock(&a->mu);
    if (full) {
        atomic_fetch_add(&a->dropped, 1);
        api_audit_item_free(it);
    }
}

/* ---- an item's line ---- */

#define COMPACT_DEPTH_MAX 512

typedef struct cj {
    const char *p, *end;
    buf_t *out;
} cj_t;

static void cj_ws(cj_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* A string at c->p (its opening quote), copied. */
static int cj_string(cj_t *c)
{
    const char *s = c->p++;
    while (c->p < c->end) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '"') {
            c->p++;
            return buf_append(c->out, s, (size_t)(c->p - s)) ? -1 : 0;
        }
        if (ch < 0x20) return -1;
        if (ch == '\\') {
            if (c->end - c->p < 2) return -1;
            char e = c->p[1];
            if (e == 'u') {
                if (c->end - c->p < 6 || !is_hex(c->p[2]) || !is_hex(c->p[3]) || !is_hex(c->p[4]) ||
                    !is_hex(c->p[5]))
                    return -1;
                c->p += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                c->p += 2;
            } else {
                return -1;
            }
        } else if (ch >= 0x80) {
            size_t k =
                (size_t)(c->end - c->p) >= 4 ? api_audit_utf8_len((const unsigned char *)c->p) : 0;
            if (!k) { /* near the end: check on a padded copy */
                unsigned char t[5] = {0};
                memcpy(t, c->p, (size_t)(c->end - c->p) < 4 ? (size_t)(c->end - c->p) : 4);
                k = api_audit_utf8_len(t);
                if (!k || (size_t)(c->end - c->p) < k) return -1;
            }
            c->p += k;
        } else {
            c->p++;
        }
    }
    return -1;
}

static int digits(cj_t *c)
{
    const char *s = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return c->p > s ? 0 : -1;
}

static int cj_value(cj_t *c, int depth)
{
    cj_ws(c);
    if (c->p >= c->end) return -1;
    char ch = *c->p;
    if (ch == '"') return cj_string(c);
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        if (depth >= COMPACT_DEPTH_MAX || buf_append(c->out, &ch, 1)) return -1;
        c->p++;
        cj_ws(c);
        if (c->p < c->end && *c->p == close) {
            c->p++;
            return buf_append(c->out, &close, 1) ? -1 : 0;
        }
        for (;;) {
            if (ch == '{') {
                cj_ws(c);
                if (c->p >= c->end || *c->p != '"' || cj_string(c)) return -1;
                cj_ws(c);
                if (c->p >= c->end || *c->p++ != ':' || buf_append(c->out, ":", 1)) return -1;
            }
            if (cj_value(c, depth + 1)) return -1;
            cj_ws(c);
            if (c->p >= c->end) return -1;
            char sep = *c->p++;
            if (buf_append(c->out, &sep, 1)) return -1;
            if (sep == close) return 0;
            if (sep != ',') return -1;
        }
    }
    const char *s = c->p;
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t n = strlen(words[i]);
        if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, words[i], n)) {
            c->p += n;
            return buf_append(c->out, s, n) ? -1 : 0;
        }
    }
    /* a number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    if (*c->p == '-') c->p++;
    if (c->p < c->end && *c->p == '0')
        c->p++;
    else if (digits(c))
        return -1;
    if (c->p < c->end && *c->p == '.' && (c->p++, digits(c))) return -1;
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (digits(c)) return -1;
    }
    return buf_append(c->out, s, (size_t)(c->p - s)) ? -1 : 0;
}

int api_audit_json_compact(const char *p, size_t n, buf_t *out)
{
    size_t was = out->len;
    cj_t c = {.p = p, .end = p + n, .out = out};
    int rc = cj_value(&c, 0);
    if (!rc) {
        cj_ws(&c);
        rc = c.p == c.end ? 0 : -1;
    }
    if (rc && out->p) {
        out->len = was;
        out->p[was] = '\0';
    }
    return rc;
}

/* A body as JSON (new reference), or NULL when it is none of the types an
 * object comes in or does not decode. */
static json_t *decode(const char *p, size_t n, const char *type)
{
    json_t *out = NULL;
    if (!strncmp(type, API_PB_MEDIA_TYPE, strlen(API_PB_MEDIA_TYPE))) {
        char err[256];
        if (api_pb_decode(p, n, &out, err, sizeof err)) return NULL;
        return out;
    }
    if (strstr(type, "yaml")) {
        static const yamljson_limits_t lim = {.max_depth = API_JSON_DEPTH_MAX,
                                              .max_bytes = API_YAML_BYTES_MAX,
                                              .max_alias_bytes = API_YAML_ALIAS_MAX};
        char err[256];
        return yaml_to_json(p, n, &lim, &out, err, sizeof err) ? NULL : out;
    }
    if (*type && !strstr(type, "json")) return NULL; /* text (a log), or unknown */
    return json_loadb(p, n, JSON_DECODE_ANY, NULL);
}

static void drop_managed(json_t *obj)
{
    json_object_del(json_object_get(obj, "metadata"), "managedFields");
}

/* Kubernetes' copyWithoutManagedFields: the object's, a list's items', a
 * Table's rows' objects'. */
static void strip_managed_fields(json_t *obj)
{
    if (!json_is_object(obj)) return;
    drop_managed(obj);
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(obj, "items"), i, v)
        drop_managed(v);
    json_array_foreach(json_object_get(obj, "rows"), i, v)
        drop_managed(json_object_get(v, "object"));
}

/* ,"objectRef":{...} from the item's fields in Kubernetes' order, empty
 * ones left out; as LogRequestObject does, an empty namespace and name, and
 * uid and resourceVersion, from the request object's metadata (`obj`, may
 * be NULL). */
static int object_ref(buf_t *b, const char *ref, const json_t *obj)
{
    const char *f[6]; /* resource, namespace, name, apiGroup, apiVersion, subresource */
    for (int i = 0; i < 6; i++) {
        f[i] = ref;
        ref += strlen(ref) + 1;
    }
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    const char *keys[] = {"resource",   "namespace",       "name",       "uid", "apiGroup",
                          "apiVersion", "resourceVersion", "subresource"};
    const char *vals[] = {f[0], *f[1] ? f[1] : ns, *f[2] ? f[2] : name, uid, f[3], f[4], rv, f[5]};
    int rc = buf_printf(b, ",\"objectRef\":{");
    const char *sep = "";
    for (size_t i = 0; !rc && i < sizeof keys / sizeof keys[0]; i++) {
        if (!vals[i] || !*vals[i]) continue;
        rc = buf_printf(b, "%s\"%s\":", sep, keys[i]);
        if (!rc) rc = api_audit_json_str(b, vals[i]);
        sep = ",";
    }
    return rc ? rc : buf_append(b, "}", 1);
}

/* ,"KEY":obj (taken), managedFields dropped when asked. */
static int put_object(buf_t *b, const char *key, json_t *obj, int omit_managed_fields)
{
    if (omit_managed_fields) strip_managed_fields(obj);
    char *text = json_dumps(obj, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(obj);
    if (!text) return KP_ENOMEM;
    int rc = buf_printf(b, ",\"%s\":", key);
    if (!rc) rc = buf_append(b, text, strlen(text));
    free(text);
    return rc;
}

/* Whether a content type is JSON's (or none given). */
static int is_json(const char *type)
{
    return !*type ||
           (strstr(type, "json") && strncmp(type, API_PB_MEDIA_TYPE, strlen(API_PB_MEDIA_TYPE)));
}

/* ,"KEY": and the body: a JSON body as it is (compacted) when nothing is
 * to be dropped from it; else decoded (`obj`, taken, when already). A body
 * that does not decode (or is text, a log) gives no field. */
static int put_body(buf_t *b, const char *key, const char *p, size_t n, const char *type,
                    json_t *obj, int omit_managed_fields)
{
    if (!omit_managed_fields && is_json(type)) {
        size_t was = b->len;
        int rc = buf_printf(b, ",\"%s\":", key);
        if (rc) return rc;
        if (!api_audit_json_compact(p, n, b)) {
            json_decref(obj);
            return 0;
        }
        b->len = was; /* not JSON after all */
        b->p[was] = '\0';
    }
    if (!obj) obj = decode(p, n, type);
    return obj ? put_object(b, key, obj, omit_managed_fields) : 0;
}

int api_audit_item_line(api_audit_item_t *it, buf_t *out)
{
    /* decoded only when objectRef needs its metadata */
    json_t *req = it->req && it->req_fill ? decode(it->req, it->req_len, it->req_type) : NULL;
    int rc = buf_append(out, it->text, strlen(it->text));
    if (!rc && it->ref) rc = object_ref(out, it->ref, req);
    if (!rc) rc = buf_append(out, it->text + it->mid, strlen(it->text + it->mid));
    if (!rc && it->req && !it->req_meta) {
        rc = put_body(out, "requestObject", it->req, it->req_len, it->req_type, req,
                      it->omit_managed_fields);
        req = NULL;
    }
    if (!rc && it->resp)
        rc = put_body(out, "responseObject", it->resp, it->resp_len, it->resp_type, NULL,
                      it->omit_managed_fields);
    json_decref(req);
    if (!rc) rc = buf_append(out, it->text + it->tail, strlen(it->text + it->tail));
    return rc;
}

/* ---- the writer ---- */

/* What could not be written (n events): counted, and said at most once a
 * minute. */
static void failed(api_audit_t *a, size_t n, size_t bytes, int rc, int64_t now)
{
    atomic_fetch_add(&a->failed, n);
    if (!a->warned_ns || now - a->warned_ns >= WARN_EVERY_NS) {
        a->warned_ns = now;
        log_warn("audit", "%zu events (%zu bytes) not written to %s: %s", n, bytes, a->path,
                 err_str(rc));
    }
}

/* Write `pend` (`n` whole lines, which fit the file without rotating). */
static void flush(api_audit_t *a, buf_t *pend, size_t *n)
{
    if (!pend->len) return;
    int64_t now = clock_wall_ns();
    int rc = api_audit_file_write(a->file, pend->p, pend->len, now);
    if (rc) failed(a, *n, pend->len, rc, now);
    buf_reset(pend);
    *n = 0;
}

/* A batch's lines, gathered while they fit the file and written at once; a
 * line that would take the file past its size goes alone (rotating it). */
static void write_batch(api_audit_t *a, api_audit_item_t *batch, buf_t *line, buf_t *pend)
{
    size_t n = 0;
    for (api_audit_item_t *it = batch, *next; it; it = next) {
        next = it->next;
        buf_reset(line);
        int rc = api_audit_item_line(it, line);
        if (!rc) rc = buf_append(line, "\n", 1);
        api_audit_item_free(it);
        if (rc) {
            failed(a, 1, 0, rc, clock_wall_ns());
            continue;
        }
        if (pend->len + line->len > api_audit_file_room(a->file) || pend->len > (1u << 20))
            flush(a, pend, &n);
        if (line->len <= api_audit_file_room(a->file)) {
            rc = buf_append(pend, line->p, line->len);
            if (!rc) {
                n++;
                continue;
            }
        }
        int64_t now = clock_wall_ns();
        rc = api_audit_file_write(a->file, line->p, line->len, now);
        if (rc) failed(a, 1, line->len, rc, now);
    }
    flush(a, pend, &n);
}

static void *writer(void *arg)
{
    api_audit_t *a = arg;
    log_thread_name("audit", "writer");
    buf_t line, pend;
    buf_init(&line, SIZE_MAX);
    buf_init(&pend, SIZE_MAX);
    pthread_mutex_lock(&a->mu);
    for (;;) {
        while (!a->head && !a->stopping)
            pthread_cond_wait(&a->cv, &a->mu);
        if (!a->head) break; /* stopping, and all written */
        /* Linger for more: one wake-up and one write for many events. */
        struct timespec until = clock_deadline_ms(API_AUDIT_LINGER_MS);
        while (!a->stopping && a->n < API_AUDIT_BATCH &&
               !pthread_cond_timedwait(&a->cv, &a->mu, &until))
            ;
        api_audit_item_t *batch = a->head;
        a->head = NULL;
        a->tail = &a->head;
        a->n = 0;
        a->bytes = 0;
        pthread_mutex_unlock(&a->mu);
        write_batch(a, batch, &line, &pend);
        if (line.cap > (1u << 20)) buf_free(&line); /* a large event's room goes */
        if (pend.cap > (4u << 20)) buf_free(&pend);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    buf_free(&line);
    buf_free(&pend);
    return NULL;
}

int api_audit_start(const api_audit_policy_t *policy, const api_audit_file_opts_t *o,
                    api_audit_t **out, char *err, size_t errlen)
{
    *out = NULL;
    api_audit_t *a = calloc(1, sizeof *a);
    if (!a) return KP_ENOMEM;
    a->policy = policy;
    a->tail = &a->head;
    snprintf(a->path, sizeof a->path, "%s", o->path);
    int rc = api_audit_file_open(o, clock_wall_ns(), &a->file, err, errlen);
    if (rc) {
        free(a);
        return rc;
    }
    pthread_mutex_init(&a->mu, NULL);
    if (clock_cond_init(&a->cv)) {
        pthread_mutex_destroy(&a->mu);
        api_audit_file_close(a->file);
        free(a);
        return KP_ENOMEM;
    }
    if (pthread_create(&a->thread, NULL, writer, a)) {
        snprintf(err, errlen, "no thread for the writer");
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        api_audit_file_close(a->file);
        free(a);
        return KP_ENOMEM;
    }
    *out = a;
    return 0;
}

void api_audit_stop(api_audit_t *a)
{
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    a->stopping = 1;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    api_audit_file_close(a->file);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

int api_audit_metrics(api_audit_t *a, buf_t *b)
{
    unsigned long long ev = a ? atomic_load(&a->events) : 0;
    unsigned long long dropped = a ? atomic_load(&a->dropped) : 0;
    unsigned long long failed = a ? atomic_load(&a->failed) : 0;
    /* (each call under buf_printf's 1 KiB) */
    int rc = buf_printf(b,
                        "# HELP apiserver_audit_event_total Counter of audit events generated and "
                        "sent to the audit backend.\n"
                        "# TYPE apiserver_audit_event_total counter\n"
                        "apiserver_audit_event_total %llu\n",
                        ev);
    if (!rc)
        rc = buf_printf(b,
                        "# HELP apiserver_audit_error_total Counter of audit events that failed "
                        "to be audited properly. Plugin identifies the plugin affected by the "
                        "error.\n"
                        "# TYPE apiserver_audit_error_total counter\n"
                        "apiserver_audit_error_total{plugin=\"buffered\"} %llu\n"
                        "apiserver_audit_error_total{plugin=\"log\"} %llu\n",
                        dropped, failed);
    if (!rc)
        rc = buf_printf(b, "# HELP apiserver_audit_level_total Counter of policy levels for audit "
                           "events (1 per request).\n"
                           "# TYPE apiserver_audit_level_total counter\n");
    for (int l = 0; !rc && l <= API_AUDIT_REQUEST_RESPONSE; l++)
        rc = buf_printf(b, "apiserver_audit_level_total{level=\"%s\"} %llu\n",
                        api_audit_level_name(l), a ? atomic_load(&a->levels[l]) : 0ull);
    return rc;
}
