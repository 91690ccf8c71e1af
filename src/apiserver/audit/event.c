/*
 * event.c -- a request's audit record and the events of its stages
 * (audit.h, A REQUEST'S EVENTS), as kube-apiserver's audit filters make
 * them. The record keeps the event's parts as JSON text, each rendered
 * once (the user when the policy is evaluated, the status at the reply);
 * an event is those parts put together with its stage and times, handed
 * to the log's queue (log.c), which adds objectRef and the bodies.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "apiserver/audit/audit.h"
#include "lib/clock.h"
#include "lib/err.h"

#define PENDING        (-1) /* the policy not yet evaluated */
#define SOURCE_IPS_MAX 32

struct api_audit_req {
    api_audit_t *log;
    int level;        /* API_AUDIT_*, or PENDING */
    unsigned omit;    /* stages not logged */
    int omit_mf;      /* managedFields dropped from the objects */
    int fill_ref;     /* create, update: objectRef's name, uid... from the request object */
    int long_running; /* ResponseStarted is logged */
    int started;      /* ... and is done (sent or omitted) */
    int failed_authn; /* refused at authentication: ResponseStarted only */
    int panic;        /* the handler returned without replying */
    int code;         /* the reply's; 0 until one */
    int64_t received_ns;
    const char *authn_name; /* r->user.name when authenticated: impersonation changes it */
    /* The event's parts, JSON text: */
    char *id;     /* "auditID":"..." */
    char *uri;    /* ,"requestURI":"..." */
    char *verb;   /* ,"verb":"..." */
    char *user;   /* ,"user":{...} */
    char *imp;    /* ,"impersonatedUser":{...}, NULL when none */
    char *client; /* ,"sourceIPs":[...],"userAgent":"..." (either may be left out) */
    char *ref;    /* objectRef's fields (api_audit_item_t), NULL when none */
    size_t ref_len;
    char *status;     /* ,"responseStatus":{...}, NULL until a reply */
    char *ann;        /* ,"annotations":{...}, NULL until the authorizer decided */
    char *req, *resp; /* bodies kept for the last event */
    size_t req_len, resp_len;
    char req_type[64], resp_type[64];
    int req_meta; /* the request body only fills objectRef (Metadata) */
};

/* ---- JSON text ---- */

size_t api_audit_utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80) return 1;
    size_t n = c >= 0xf0 && c <= 0xf4   ? 4
               : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xc2 && c < 0xe0  ? 2
                                        : 0;
    if (!n) return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0;
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0;
    return n;
}

int api_audit_json_str(buf_t *b, const char *s)
{
    int rc = buf_append(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (!rc && *p) {
        size_t run = 0; /* bytes that go as they are */
        while (p[run] >= 0x20 && p[run] != '"' && p[run] != '\\' && p[run] < 0x80)
            run++;
        if (run) {
            rc = buf_append(b, p, run);
            p += run;
            continue;
        }
        size_t k = *p >= 0x80 ? api_audit_utf8_len(p) : 0;
        if (k) {
            rc = buf_append(b, p, k);
            p += k;
        } else if (*p >= 0x80) {
            rc = buf_append(b, "\\ufffd", 6);
            p++;
        } else {
            char e[8];
            int n = *p == '"'    ? snprintf(e, sizeof e, "\\\"")
                    : *p == '\\' ? snprintf(e, sizeof e, "\\\\")
                    : *p == '\n' ? snprintf(e, sizeof e, "\\n")
                    : *p == '\r' ? snprintf(e, sizeof e, "\\r")
                    : *p == '\t' ? snprintf(e, sizeof e, "\\t")
                                 : snprintf(e, sizeof e, "\\u%04x", *p);
            rc = buf_append(b, e, (size_t)n);
            p++;
        }
    }
    return rc ? rc : buf_append(b, "\"", 1);
}

/* `,"key":` then s as a string. */
static int put_str(buf_t *b, const char *key, const char *s)
{
    int rc = buf_printf(b, ",\"%s\":", key);
    return rc ? rc : api_audit_json_str(b, s);
}

/* The text b holds, as a new string (b is reset); NULL when out of memory
 * (`rc`, or none). */
static char *take(buf_t *b, int rc)
{
    size_t n;
    if (rc || buf_append(b, "", 0)) { /* (allocates an empty one's) */
        buf_free(b);
        return NULL;
    }
    return buf_detach(b, &n);
}

/* ,"KEY":{UserInfo}: username, uid, groups, extra (empty ones left out). */
static char *user_text(const char *key, const api_user_t *u)
{
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = buf_printf(&b, ",\"%s\":{", key);
    const char *sep = "";
    if (!rc && u->name && *u->name) {
        rc = buf_printf(&b, "\"username\":");
        if (!rc) rc = api_audit_json_str(&b, u->name);
        sep = ",";
    }
    if (!rc && u->uid && *u->uid) {
        rc = buf_printf(&b, "%s\"uid\":", sep);
        if (!rc) rc = api_audit_json_str(&b, u->uid);
        sep = ",";
    }
    if (!rc && u->ngroups) {
        rc = buf_printf(&b, "%s\"groups\":[", sep);
        for (size_t i = 0; !rc && i < u->ngroups; i++) {
            if (i) rc = buf_append(&b, ",", 1);
            if (!rc) rc = api_audit_json_str(&b, u->groups[i]);
        }
        if (!rc) rc = buf_append(&b, "]", 1);
        sep = ",";
    }
    if (!rc && u->nextra) {
        rc = buf_printf(&b, "%s\"extra\":{", sep);
        for (size_t i = 0; !rc && i < u->nextra; i++) {
            if (i) rc = buf_append(&b, ",", 1);
            if (!rc) rc = api_audit_json_str(&b, u->extra[i].key);
            if (!rc) rc = buf_append(&b, ":[", 2);
            for (size_t k = 0; !rc && k < u->extra[i].nvalues; k++) {
                if (k) rc = buf_append(&b, ",", 1);
                if (!rc) rc = api_audit_json_str(&b, u->extra[i].values[k]);
            }
            if (!rc) rc = buf_append(&b, "]", 1);
        }
        if (!rc) rc = buf_append(&b, "}", 1);
    }
    if (!rc) rc = buf_append(&b, "}", 1);
    return take(&b, rc);
}

/* An IP address in its canonical text, or 0 if `s` (n bytes) is none. */
static int ip_text(const char *s, size_t n, char *out, size_t len)
{
    char t[64];
    unsigned char bin[16];
    if (!n || n >= sizeof t) return 0;
    memcpy(t, s, n);
    t[n] = '\0';
    if (inet_pton(AF_INET, t, bin) == 1)
        return inet_ntop(AF_INET, bin, out, (socklen_t)len) != NULL;
    if (inet_pton(AF_INET6, t, bin) == 1)
        return inet_ntop(AF_INET6, bin, out, (socklen_t)len) != NULL;
    return 0;
}

/* Kubernetes' SourceIPs: X-Forwarded-For's valid addresses, X-Real-Ip's if
 * new, then the connection's peer unless it is the last already; `n` of
 * them into ips. */
static size_t source_ips(api_req_t *r, char ips[][64])
{
    size_t n = 0;
    char ip[64];
    const char *xff = api_header(r, "X-Forwarded-For");
    for (const char *p = xff; p && *p && n < SOURCE_IPS_MAX;) {
        size_t k = strcspn(p, ",");
        const char *s = p, *e = p + k;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (ip_text(s, (size_t)(e - s), ips[n], 64)) n++;
        p += k + (p[k] == ',');
    }
    const char *real = api_header(r, "X-Real-Ip");
    if (real && n < SOURCE_IPS_MAX && ip_text(real, strlen(real), ip, sizeof ip)) {
        size_t i = 0;
        while (i < n && strcmp(ips[i], ip))
            i++;
        if (i == n) memcpy(ips[n++], ip, sizeof ip);
    }
    const char *peer = api_req_peer(r);
    if (n < SOURCE_IPS_MAX && ip_text(peer, strlen(peer), ip, sizeof ip) &&
        (!n || strcmp(ips[n - 1], ip)))
        memcpy(ips[n++], ip, sizeof ip);
    return n;
}

/* ,"sourceIPs":[...],"userAgent":"..." (the user agent cut at
 * API_AUDIT_UA_MAX bytes, as Kubernetes cuts it). */
static char *client_text(api_req_t *r)
{
    char ips[SOURCE_IPS_MAX][64];
    size_t n = source_ips(r, ips);
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        rc = buf_printf(&b, "%s", i ? "," : ",\"sourceIPs\":[");
        if (!rc) rc = api_audit_json_str(&b, ips[i]);
    }
    if (!rc && n) rc = buf_append(&b, "]", 1);
    const char *ua = api_header(r, "User-Agent");
    if (!rc && ua && *ua) {
        if (strlen(ua) > API_AUDIT_UA_MAX) {
            char cut[API_AUDIT_UA_MAX + 16];
            snprintf(cut, sizeof cut, "%.*s...TRUNCATED", API_AUDIT_UA_MAX, ua);
            rc = put_str(&b, "userAgent", cut);
        } else {
            rc = put_str(&b, "userAgent", ua);
        }
    }
    return take(&b, rc);
}

/* meta/v1.MicroTime: RFC 3339 in UTC with microseconds. */
static int micro_time(buf_t *b, const char *key, int64_t ns)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char t[32];
    strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf_printf(b, ",\"%s\":\"%s.%06dZ\"", key, t, (int)(ns % 1000000000 / 1000));
}

/* A version 4 UUID, as Kubernetes' Audit-ID (uuid.New()). */
static void new_uuid(char out[37])
{
    unsigned char b[16];
    if (getrandom(b, sizeof b, 0) != (ssize_t)sizeof b) {
        /* no entropy: still unique within the process */
        uint64_t t = (uint64_t)clock_wall_ns(), m = (uint64_t)clock_mono_ns() ^ (uintptr_t)out;
        memcpy(b, &t, 8);
        memcpy(b + 8, &m, 8);
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

/* ,"responseStatus":{...} for a reply of `code` whose object is `doc` (may
 * be NULL): a Status's status, message, reason and details, as Kubernetes
 * copies them; the code alone for anything else. */
static char *status_text(int code, const json_t *doc)
{
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = buf_printf(&b, ",\"responseStatus\":{\"metadata\":{}");
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (kind && !strcmp(kind, "Status")) {
        static const char *const keys[] = {"status", "message", "reason"};
        for (size_t i = 0; !rc && i < sizeof keys / sizeof keys[0]; i++) {
            const char *v = json_string_value(json_object_get(doc, keys[i]));
            if (v && *v) rc = put_str(&b, keys[i], v);
        }
        const json_t *d = json_object_get(doc, "details");
        char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
        if (!rc && text) rc = buf_printf(&b, ",\"details\":");
        if (!rc && text) rc = buf_append(&b, text, strlen(text));
        free(text);
    }
    if (!rc) rc = buf_printf(&b, ",\"code\":%d}", code);
    return take(&b, rc);
}

static char *status_fixed(int code, const char *status, const char *message, const char *reason)
{
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = buf_printf(&b, ",\"responseStatus\":{\"metadata\":{}");
    if (!rc) rc = put_str(&b, "status", status);
    if (!rc) rc = put_str(&b, "message", message);
    if (!rc && reason) rc = put_str(&b, "reason", reason);
    if (!rc) rc = buf_printf(&b, ",\"code\":%d}", code);
    return take(&b, rc);
}

/* ---- the record ---- */

static void rec_free(struct api_audit_req *rec)
{
    if (!rec) return;
    free(rec->id);
    free(rec->uri);
    free(rec->verb);
    free(rec->user);
    free(rec->imp);
    free(rec->client);
    free(rec->ref);
    free(rec->status);
    free(rec->ann);
    free(rec->req);
    free(rec->resp);
    free(rec);
}

/* Nothing more of r is logged. */
static void drop(api_req_t *r)
{
    rec_free(r->audit);
    r->audit = NULL;
}

/* Queue the event of `stage` (unless the policy omits it); `last` moves the
 * kept bodies to it. */
static void emit(struct api_audit_req *rec, unsigned stage, int last)
{
    if (rec->omit & stage) return;
    api_audit_item_t *it = calloc(1, sizeof *it);
    if (!it) {
        api_audit_push(rec->log, NULL);
        return;
    }
    buf_t b;
    buf_init(&b, SIZE_MAX);
    /* (buf_printf cuts at 1 KiB: the parts, which may be longer, are appended) */
    int rc =
        buf_printf(&b, "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"%s\",",
                   api_audit_level_name(rec->level));
    const char *parts[] = {
        rec->id,   ",\"stage\":\"", api_audit_stage_name(stage), "\"",       rec->uri,
        rec->verb, rec->user,       rec->imp ? rec->imp : "",    rec->client};
    for (size_t i = 0; !rc && i < sizeof parts / sizeof parts[0]; i++)
        rc = buf_append(&b, parts[i], strlen(parts[i]));
    if (!rc) rc = buf_append(&b, "", 1);
    it->mid = b.len;
    if (!rc && stage != API_AUDIT_REQUEST_RECEIVED && rec->status)
        rc = buf_append(&b, rec->status, strlen(rec->status));
    if (!rc) rc = buf_append(&b, "", 1);
    it->tail = b.len;
    if (!rc) rc = micro_time(&b, "requestReceivedTimestamp", rec->received_ns);
    if (!rc)
        rc = micro_time(&b, "stageTimestamp",
                        stage == API_AUDIT_REQUEST_RECEIVED ? rec->received_ns : clock_wall_ns());
    if (!rc && rec->ann && stage != API_AUDIT_REQUEST_RECEIVED)
        rc = buf_append(&b, rec->ann, strlen(rec->ann));
    if (!rc) rc = buf_append(&b, "}", 1);
    it->text = take(&b, rc);
    if (it->text && rec->ref && !(it->ref = malloc(rec->ref_len))) {
        free(it->text);
        it->text = NULL;
    }
    if (!it->text) {
        free(it);
        api_audit_push(rec->log, NULL);
        return;
    }
    if (rec->ref) memcpy(it->ref, rec->ref, rec->ref_len);
    it->omit_managed_fields = rec->omit_mf;
    if (last && rec->req) {
        it->req = rec->req, it->req_len = rec->req_len, it->req_meta = rec->req_meta;
        it->req_fill = rec->fill_ref;
        memcpy(it->req_type, rec->req_type, sizeof it->req_type);
        rec->req = NULL;
    }
    if (last && rec->resp) {
        it->resp = rec->resp, it->resp_len = rec->resp_len;
        memcpy(it->resp_type, rec->resp_type, sizeof it->resp_type);
        rec->resp = NULL;
    }
    api_audit_push(rec->log, it);
}

/* Evaluate the policy for r as user `u` (NULL: authentication failed) and
 * render the event's parts that depend on it. Nonzero when out of memory. */
static int evaluate(struct api_audit_req *rec, api_req_t *r, const api_user_t *u)
{
    api_attrs_t a;
    if (api_attrs_of(r, u, &a)) return KP_ENOMEM;
    api_audit_verdict_t v;
    api_audit_policy_eval(api_audit_policy(rec->log), &a, &v);
    api_audit_count_level(rec->log, v.level);
    rec->level = v.level;
    rec->omit = v.omit_stages;
    rec->omit_mf = v.omit_managed_fields;
    int rc = 0;
    if (v.level > API_AUDIT_NONE) {
        buf_t b;
        buf_init(&b, SIZE_MAX);
        rec->verb = take(&b, put_str(&b, "verb", a.verb));
        if (u) {
            free(rec->user);
            rec->user = user_text("user", u);
            rec->authn_name = u->name;
        }
        if (a.resource_request) {
            /* objectRef's fields, in a row (api_audit_item_t) */
            const char *vals[] = {a.resource, a.ns, a.name, a.group, a.version, a.sub};
            for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
                rc |= buf_append(&b, vals[i], strlen(vals[i]) + 1);
            rec->ref_len = b.len;
            rec->ref = take(&b, rc);
        }
        rc = !rec->verb || !rec->user || (a.resource_request && !rec->ref);
        /* Kubernetes' BasicLongRunningRequestCheck, as kube-apiserver sets it */
        static const char *const subs[] = {"attach", "exec", "proxy", "log", "portforward"};
        rec->long_running = !strcmp(a.verb, "watch") || !strcmp(a.verb, "proxy");
        for (size_t i = 0; a.resource_request && i < sizeof subs / sizeof subs[0]; i++)
            rec->long_running |= !strcmp(a.sub, subs[i]);
        rec->fill_ref =
            a.resource_request && (!strcmp(a.verb, "create") || !strcmp(a.verb, "update"));
    }
    api_attrs_clear(&a);
    return rc ? KP_ENOMEM : 0;
}

/* The user r acts as, if impersonation changed it. */
static void note_impersonation(struct api_audit_req *rec, api_req_t *r)
{
    if (!rec->imp && rec->authn_name && r->user.name && r->user.name != rec->authn_name)
        rec->imp = user_text("impersonatedUser", &r->user);
}

/* A copy of n bytes (NUL-terminated), and its type cut to fit. */
static char *keep(const char *p, size_t n, const char *ctype, char *type, size_t tlen)
{
    char *c = malloc(n + 1);
    if (!c) return NULL;
    memcpy(c, p, n);
    c[n] = '\0';
    snprintf(type, tlen, "%s", ctype ? ctype : "");
    return c;
}

/* ---- the hooks ---- */

void api_audit_init(api_req_t *r)
{
    char uuid[37];
    const char *id = api_header(r, "Audit-ID");
    if (!id || !*id) {
        new_uuid(uuid);
        id = uuid;
    }
    api_set_reply_header(r, "Audit-ID", id); /* (out of memory: a reply without it) */
    api_audit_t *log = r->srv->audit;
    if (!log) return;
    struct api_audit_req *rec = calloc(1, sizeof *rec);
    if (!rec) return;
    rec->log = log;
    rec->level = PENDING;
    rec->received_ns = clock_wall_ns();
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = buf_printf(&b, "\"auditID\":");
    if (!rc) rc = api_audit_json_str(&b, id);
    rec->id = take(&b, rc);
    rec->uri = take(&b, put_str(&b, "requestURI", api_req_target(r)));
    rec->user = strdup(",\"user\":{}");
    rec->client = client_text(r);
    if (!rec->id || !rec->uri || !rec->user || !rec->client) {
        rec_free(rec);
        return;
    }
    r->audit = rec;
}

void api_audit_authenticated(api_req_t *r)
{
    struct api_audit_req *rec = r->audit;
    if (!rec || rec->level != PENDING) return;
    if (evaluate(rec, r, &r->user) || rec->level == API_AUDIT_NONE) {
        drop(r);
        return;
    }
    emit(rec, API_AUDIT_REQUEST_RECEIVED, 0);
}

void api_audit_authorized(api_req_t *r, int allowed, const char *reason)
{
    struct api_audit_req *rec = r->audit;
    if (!rec || rec->level <= API_AUDIT_NONE) return;
    buf_t b;
    buf_init(&b, SIZE_MAX);
    int rc = buf_printf(&b,
                        ",\"annotations\":{\"authorization.k8s.io/decision\":\"%s\","
                        "\"authorization.k8s.io/reason\":",
                        allowed ? "allow" : "forbid");
    if (!rc) rc = api_audit_json_str(&b, reason);
    if (!rc) rc = buf_append(&b, "}", 1);
    free(rec->ann);
    rec->ann = take(&b, rc);
}

void api_audit_reply(api_req_t *r, int code, const char *ctype, const json_t *doc, const char *body,
                     size_t len, int stream)
{
    struct api_audit_req *rec = r->audit;
    if (!rec) return;
    if (rec->level == PENDING) {
        /* Replied to before the user was known: refused at authentication.
         * The policy sees no user (Kubernetes' failed-authentication audit). */
        if (evaluate(rec, r, NULL) || rec->level == API_AUDIT_NONE) {
            drop(r);
            return;
        }
        rec->failed_authn = 1;
    }
    rec->code = code;
    free(rec->status);
    rec->status = status_text(code, doc);
    note_impersonation(rec, r);
    if (rec->failed_authn) return;
    if (rec->ref && r->body.len && (rec->level >= API_AUDIT_REQUEST || rec->fill_ref)) {
        free(rec->req);
        rec->req = keep(r->body.p, r->body.len, api_header(r, "Content-Type"), rec->req_type,
                        sizeof rec->req_type);
        rec->req_len = rec->req ? r->body.len : 0;
        rec->req_meta = rec->level < API_AUDIT_REQUEST;
    }
    if (rec->ref && rec->level == API_AUDIT_REQUEST_RESPONSE && !stream && body && len) {
        free(rec->resp);
        rec->resp = keep(body, len, ctype, rec->resp_type, sizeof rec->resp_type);
        rec->resp_len = rec->resp ? len : 0;
    }
    if (rec->long_running && !rec->started) {
        rec->started = 1;
        emit(rec, API_AUDIT_RESPONSE_STARTED, 0);
    }
}

void api_audit_panic(api_req_t *r)
{
    if (r->audit) r->audit->panic = 1;
}

void api_audit_end(api_req_t *r)
{
    struct api_audit_req *rec = r->audit;
    if (!rec) return;
    r->audit = NULL;
    if (rec->failed_authn) {
        emit(rec, API_AUDIT_RESPONSE_STARTED, 0);
    } else if (rec->level > API_AUDIT_NONE) {
        note_impersonation(rec, r);
        char *st = NULL;
        if (rec->panic)
            st = status_fixed(500, "Failure",
                              "APIServer panic'd: the handler returned without "
                              "replying",
                              "InternalError");
        else if (!rec->code && r->code) /* the HTTP engine's refusal (413, 429) */
            st = status_text(r->code, NULL);
        else if (!rec->code) /* Kubernetes' when nothing was written */
            st = status_fixed(200, "Success", "Connection closed early", NULL);
        if (st) {
            free(rec->status);
            rec->status = st;
        }
        if (rec->long_running && !rec->started) emit(rec, API_AUDIT_RESPONSE_STARTED, 0);
        emit(rec, rec->panic ? API_AUDIT_PANIC : API_AUDIT_RESPONSE_COMPLETE, 1);
    }
    rec_free(rec);
}
