/*
 * audit.h -- the audit log, Kubernetes' audit.k8s.io/v1: a policy that says
 * for each request how much of it is recorded (policy.c), the events of a
 * request's stages (event.c), and the log that writes them as JSON lines
 * from a thread of its own, rotating the file as kube-apiserver's
 * lumberjack does (log.c).
 *
 * A REQUEST'S EVENTS (kube-apiserver's WithAudit and WithAuditInit filters)
 *   on_headers -> api_audit_init(): the Audit-ID (the client's Audit-ID
 *     header, else a new random UUID) goes on every reply, also when no
 *     log is kept. With a log: a record of the request's URI, user agent,
 *     source IPs and arrival time (requestReceivedTimestamp).
 *   intake, once authenticated -> api_audit_authenticated(): the policy is
 *     evaluated, once, for the authenticated user (before impersonation)
 *     and the request's attributes (auth/authz.h's api_attrs_of(): verb,
 *     resource, subresource, namespace, name, as the authorizer sees them).
 *     Level None drops the record; else the stage RequestReceived.
 *   intake, once authorized -> api_audit_authorized(): the annotations
 *     authorization.k8s.io/decision (allow, forbid) and .../reason.
 *   a reply begins (http.c, apiserver.on_reply) -> api_audit_reply(): its
 *     code, its Status when it is one (responseStatus), and the bodies the
 *     level keeps. A long-running request (verb watch or proxy; pods' log,
 *     exec, attach, portforward, proxy) gets ResponseStarted here.
 *   the request ends (req_done) -> api_audit_end(): ResponseComplete, or
 *     Panic for a handler that returned without replying (the 500 it then
 *     gets; Kubernetes' Panic is a handler's panic).
 *   A request refused at authentication (401) has one event, at
 *   ResponseStarted, with an empty user (the policy matched without one),
 *   as Kubernetes' failed-authentication audit logs it; one refused by the
 *   authorizer (403) has its user and the annotations.
 *
 * LEVELS
 *   None       nothing.
 *   Metadata   who, what, when, the status and annotations: no request or
 *              response body at all (a Secret's data or a token never
 *              reaches the log at this level; a create's or update's body
 *              is read only for objectRef's name, uid and resourceVersion).
 *   Request    also requestObject: the body as sent, in JSON.
 *   RequestResponse  also responseObject: the reply's object, in JSON.
 *   Non-resource requests have neither object.
 *
 * THE LOG
 *   Events wait in a queue of at most API_AUDIT_QUEUE_MAX events and
 *   API_AUDIT_QUEUE_BYTES bytes (Kubernetes' buffered backend keeps 10,000);
 *   the writer takes them in batches (it lingers up to API_AUDIT_LINGER_MS
 *   for API_AUDIT_BATCH of them) and writes a batch's lines at once;
 *   an event that does not fit is dropped and counted
 *   (apiserver_audit_error_total{plugin="buffered"}). A request never waits
 *   for the disk: its thread builds the event's metadata and copies the
 *   bodies its level keeps; the writer decodes those (JSON, YAML, protobuf),
 *   drops managedFields if the rule says so, and writes one line per event.
 *   A failed write is counted (apiserver_audit_error_total{plugin="log"})
 *   and logged at most once a minute.
 *
 * THREADS
 *   The policy is immutable once parsed: any thread may evaluate it. A
 *   request's hooks run one at a time in its order (the engine's loop
 *   thread for init, authenticated and authorized; the replying thread;
 *   the releasing one), each quick and never blocking beyond the queue's
 *   mutex. api_audit_stop() after the last request.
 *
 * ERRORS: the KP_* convention of lib/err.h.
 */
#ifndef KP_API_AUDIT_AUDIT_H
#define KP_API_AUDIT_AUDIT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "apiserver/apiserver.h"
#include "apiserver/auth/authz.h"
#include "apiserver/http/http.h"
#include "lib/buf.h"

#define API_AUDIT_QUEUE_MAX   10000       /* events waiting for the writer */
#define API_AUDIT_QUEUE_BYTES (64u << 20) /* ... and their bodies' bytes */
#define API_AUDIT_UA_MAX      1024        /* userAgent: cut beyond, "...TRUNCATED" */
#define API_AUDIT_BATCH       512         /* events the writer waits for ... */
#define API_AUDIT_LINGER_MS   10          /* ... at most this long */

/* ---- the policy (policy.c) ---- */

typedef struct apiserver_audit_policy api_audit_policy_t;

enum { API_AUDIT_NONE = 0, API_AUDIT_METADATA, API_AUDIT_REQUEST, API_AUDIT_REQUEST_RESPONSE };
/* Stages, as bits of a set. */
enum {
    API_AUDIT_REQUEST_RECEIVED = 1,
    API_AUDIT_RESPONSE_STARTED = 2,
    API_AUDIT_RESPONSE_COMPLETE = 4,
    API_AUDIT_PANIC = 8,
};

/* What the policy says of one request: the first matching rule's level (no
 * rule: None), the stages not logged (the rule's and the policy's
 * omitStages united) and whether managedFields are dropped from the
 * objects (the rule's omitManagedFields if it sets one, else the
 * policy's). */
typedef struct api_audit_verdict {
    int level;
    unsigned omit_stages;
    int omit_managed_fields;
} api_audit_verdict_t;

/* Parse an audit.k8s.io/v1 Policy (YAML or JSON, one document) and check
 * it as kube-apiserver does (ValidatePolicy: levels, omitStages,
 * nonResourceURLs starting with '/' and with '*' only last, never beside
 * resources or namespaces, groups that are DNS subdomains, resourceNames
 * only with resources; at least one rule). Fields it does not know are
 * ignored, as Kubernetes' decoder ignores them; the first is named in
 * `warn` (may be NULL; "" when none). *out is the caller's (free with
 * apiserver_audit_policy_free). Errors: KP_EINVAL, with `err` naming the
 * field ("rules[2].level: Unsupported value: ..."), KP_ENOMEM. */
int api_audit_policy_parse(const char *text, size_t len, api_audit_policy_t **out, char *err,
                           size_t errlen, char *warn, size_t warnlen);

/* The verdict for a request with attributes `a` (a->user NULL: a request
 * that failed authentication, which rules naming users or groups do not
 * match), as Kubernetes' policy checker. */
void api_audit_policy_eval(const api_audit_policy_t *p, const api_attrs_t *a,
                           api_audit_verdict_t *out);

/* "None", "Metadata", ...; "RequestReceived", ... (one stage bit). */
const char *api_audit_level_name(int level);
const char *api_audit_stage_name(unsigned stage);

/* ---- the file (log.c): lumberjack's rotation ---- */

typedef struct api_audit_file api_audit_file_t;

typedef struct api_audit_file_opts {
    const char *path; /* "-": standard output, never rotated */
    size_t max_bytes; /* rotate before a write would pass it (0: 100 MiB) */
    int max_backups;  /* rotated files kept, the newest (0: all) */
    int max_age_days; /* rotated files older than this (by the time in
                         their name) are removed (0: none) */
} api_audit_file_opts_t;

/* Open (create, mode 0600, and its directory, 0755) or append to the file.
 * `now_ns` (wall clock) names backups and ages them. A write of n bytes
 * that would take the file past max_bytes first renames it to
 * DIR/NAME-<UTC time, 2006-01-02T15-04-05.000>EXT (audit.log ->
 * audit-2024-05-01T10-20-30.123.log) and starts a new one; then backups
 * beyond max_backups (oldest first) and older than max_age_days are
 * removed, as after opening. A write longer than max_bytes is refused
 * (KP_ETOOLARGE), as lumberjack refuses it. Errors: KP_EIO (with `err`),
 * KP_ENOMEM. Not thread-safe: one writer. */
int api_audit_file_open(const api_audit_file_opts_t *o, int64_t now_ns, api_audit_file_t **out,
                        char *err, size_t errlen);
int api_audit_file_write(api_audit_file_t *f, const void *p, size_t n, int64_t now_ns);
/* Bytes a write may add without rotating the file (SIZE_MAX: standard
 * output): lines that fit go out together in one write. */
size_t api_audit_file_room(const api_audit_file_t *f);
void api_audit_file_close(api_audit_file_t *f);
/* A backup's name for `path` rotated at now_ns (into out, size len). */
void api_audit_backup_name(const char *path, int64_t now_ns, char *out, size_t len);

/* ---- the log (log.c) ---- */

typedef struct api_audit api_audit_t;

/* Start the log: `policy` (borrowed: must outlive the log) selects what is
 * written to o->path. Errors: KP_EIO (the file: `err` says why),
 * KP_ENOMEM. */
int api_audit_start(const api_audit_policy_t *policy, const api_audit_file_opts_t *o,
                    api_audit_t **out, char *err, size_t errlen);
/* Write what is queued, stop the writer, close. NULL: no-op. */
void api_audit_stop(api_audit_t *a);
/* The log's counters in the Prometheus text format, appended to b (a may
 * be NULL: all zero): apiserver_audit_event_total,
 * apiserver_audit_error_total{plugin="buffered"|"log"},
 * apiserver_audit_level_total{level}. Errors: as buf_printf. */
int api_audit_metrics(api_audit_t *a, buf_t *b);

/* ---- a request's hooks (event.c) ---- */

/* on_headers, before intake: the Audit-ID header; with a log (s->audit), a
 * record (r->audit). */
void api_audit_init(api_req_t *r);
/* Intake, once r->user is the authenticated (or anonymous) user and
 * before impersonation: the policy, RequestReceived. */
void api_audit_authenticated(api_req_t *r);
/* Intake, once the authorizer decided. */
void api_audit_authorized(api_req_t *r, int allowed, const char *reason);
/* apiserver.on_reply (http.h). */
void api_audit_reply(api_req_t *r, int code, const char *ctype, const json_t *doc, const char *body,
                     size_t len, int stream);
/* The handler returned without replying: the event's stage is Panic. */
void api_audit_panic(api_req_t *r);
/* req_done: the last events; the record goes. */
void api_audit_end(api_req_t *r);

/* ---- between event.c and log.c ---- */

/* One event for the writer, rendered but for objectRef and the objects:
 * its line is head, objectRef (from `ref`), mid, requestObject and
 * responseObject (decoded from `req` and `resp`), tail. */
typedef struct api_audit_item {
    char *text;       /* head, mid and tail, each NUL-terminated, in a row */
    size_t mid, tail; /* their offsets in text */
    /* objectRef's resource, namespace, name, apiGroup, apiVersion and
     * subresource, each NUL-terminated in a row ("": left out); NULL: no
     * objectRef */
    char *ref;
    char *req, *resp; /* bodies (malloc'd) of their content types; NULL: none */
    size_t req_len, resp_len;
    char req_type[64], resp_type[64];
    int req_meta; /* the request body only fills objectRef (Metadata) */
    int req_fill; /* objectRef's empty namespace and name, uid and resourceVersion
                     from the request object (create, update) */
    int omit_managed_fields;
    struct api_audit_item *next;
} api_audit_item_t;

/* Queue an item (taken: freed when written or dropped; NULL: one that
 * could not be built, counted as not written); never blocks beyond the
 * queue's mutex. */
void api_audit_push(api_audit_t *a, api_audit_item_t *it);
/* Count a request's level (apiserver_audit_level_total). */
void api_audit_count_level(api_audit_t *a, int level);
const api_audit_policy_t *api_audit_policy(const api_audit_t *a);
/* The line an item becomes (without its newline), appended to `out`: what
 * the writer does. Errors: KP_ENOMEM. */
int api_audit_item_line(api_audit_item_t *it, buf_t *out);
void api_audit_item_free(api_audit_item_t *it);
/* Append s as a JSON string (quoted; control characters escaped, invalid
 * UTF-8 bytes each as U+FFFD, as Go's encoder writes them). Errors: as
 * buf_append. */
int api_audit_json_str(buf_t *b, const char *s);
/* The length of the valid UTF-8 sequence at s (0: not one; overlongs and
 * surrogates are not). */
size_t api_audit_utf8_len(const unsigned char *s);
/* Append the JSON text p[0..n) without its insignificant whitespace, if it
 * is one valid JSON value (RFC 8259, UTF-8; at most 512 levels deep): 0,
 * or -1 with `out` as it was. Cheaper than a parse and a dump, for the
 * bodies logged as they are. */
int api_audit_json_compact(const char *p, size_t n, buf_t *out);

#endif
