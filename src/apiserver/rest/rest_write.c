/*
 * rest_write.c -- the generic writes: create, update (PUT), merge patch,
 * delete and deletecollection, each one compare-and-swap on the store
 * (PATCH and server-side apply: rest_patch.c).
 *
 * Rules every write follows (reference section 3):
 *  - metadata.resourceVersion is the store's mod_revision; it is never stored
 *    inside the object, and a stale one in a write is a 409 Conflict;
 *  - an update without a resourceVersion is unconditional: it is retried on a
 *    store conflict against the newer state;
 *  - uid and creationTimestamp are the server's; generation moves with spec;
 *  - the main resource keeps the stored status, /status keeps everything else;
 *  - a write that changes nothing is not written (no new revision, no event).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/apply/patch.h"
#include "apiserver/http/http.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"
#include "store/store.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/rest/watchcache.h"

#define UNCONDITIONAL_RETRIES 16

static int key_of(api_req_t *r, const char *name, char *key)
{
    return api_object_key(r->route.res, r->route.ns, name, key, STORE_KEY_MAX + 1);
}

/* Reply `code` with a version as the watch cache encoded it. Writes reply
 * plain JSON whatever the Accept (no Table, protobuf or YAML): these are the
 * bytes rest_reply_object() would make. */
static int reply_version(api_req_t *r, int code, const wc_obj_t *obj)
{
    return api_reply_bytes(r, code, "application/json", obj->json, obj->json_len);
}

/* Hand `obj`, just stored at `key` and `rev` as `text` (freed here), to the
 * watch cache (steals it) and reply with the version it becomes: through
 * `reply`, or as the object. */
/* The bytes the store keeps of `*obj` (owned by the caller; NULL when out of
 * memory). A resource stored in another version converts it first: *obj is
 * then replaced by the stored form (the old one consumed), which is what the
 * watch cache must be offered; the cache converts it back. */
static char *encode_stored(api_req_t *r, json_t **obj)
{
    const api_resource_t *res = r->route.res;
    const api_strategy_t *st = res->strategy;
    if (res->storage_resource && st && st->to_storage) {
        if (!(*obj = st->to_storage(*obj))) return NULL;
    }
    return json_dumps(*obj, JSON_COMPACT);
}

static int reply_written(api_req_t *r, int code, const char *key, json_t *obj, int64_t rev,
                         char *text, rest_reply_fn reply)
{
    const wc_obj_t *v;
    if (reply) json_incref(obj); /* the cache reads it only during wc_offer() */
    int rc = wc_offer(rest_cache(r), key, rev, obj, text, strlen(text), &v);
    free(text);
    if (!rc) rc = reply ? reply(r, obj, rev) : reply_version(r, code, v);
    else rc = api_reply_error(r, rc, NULL, "encoding the object: %s", err_str(rc));
    if (reply) json_decref(obj);
    wc_obj_unref(v);
    return rc;
}

/* Reply with an object not written now (unchanged, dry run, deleted); steals
 * obj. */
static int reply_unwritten(api_req_t *r, json_t *obj, int64_t rev, rest_reply_fn reply)
{
    if (!reply) return rest_reply_object(r, 200, obj, rev);
    int rc = reply(r, obj, rev);
    json_decref(obj);
    return rc;
}

/* 422 Invalid naming one field. */
static int reply_invalid(api_req_t *r, const char *name, const char *field, const char *value,
                         const char *msg)
{
    char m[1024], full[1400];
    const api_resource_t *res = r->route.res;
    snprintf(m, sizeof m, "Invalid value: \"%s\": %s", value, msg);
    if (*res->group) snprintf(full, sizeof full, "%s.%s \"%s\" is invalid: %s: %s", res->kind,
                              res->group, name, field, m);
    else snprintf(full, sizeof full, "%s \"%s\" is invalid: %s: %s", res->kind, name, field, m);
    json_t *d = json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", name, "group",
                          res->group, "kind", res->kind, "causes", "reason",
                          "FieldValueInvalid", "message", m, "field", field);
    int rc = api_reply_status(r, 422, "Invalid", d, "%s", full);
    json_decref(d);
    return rc;
}

/* 422 Invalid listing every cause of the route's kind. Returns -1 after
 * replying, 0 if there were no causes. */
static int reply_causes(api_req_t *r, const char *name, json_t *causes)
{
    const api_resource_t *res = r->route.res;
    return rest_reply_causes(r, res->group, res->kind, name, causes);
}

/* Labels and annotations every kind shares (apimachinery ValidateObjectMeta),
 * once rest_check_metadata_types() has vouched for their shapes. */
static void validate_metadata(const json_t *obj, json_t *causes)
{
    const json_t *meta = json_object_get(obj, "metadata");
    static const char *const maps[] = {"labels", "annotations"};
    for (int m = 0; m < 2; m++) {
        const json_t *map = json_object_get(meta, maps[m]);
        char field[600], err[512];
        snprintf(field, sizeof field, "metadata.%s", maps[m]);
        if (!json_is_object(map)) continue; /* shapes: rest_check_metadata_types() */
        size_t total = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)map, k, v) {
            if (!json_is_string(v)) continue;
            if (sel_label_key_check(k, err, sizeof err)) {
                snprintf(field, sizeof field, "metadata.%s", maps[m]);
                api_cause(causes, "FieldValueInvalid", field, "Invalid value: \"%s\": %s", k, err);
            }
            total += strlen(k) + json_string_length(v);
            if (m == 0 && sel_label_value_check(json_string_value(v), err, sizeof err)) {
                api_cause(causes, "FieldValueInvalid", "metadata.labels",
                          "Invalid value: \"%s\": %s", json_string_value(v), err);
            }
        }
        if (m == 1 && total > 256 * 1024)
            api_cause(causes, "FieldValueTooLong", "metadata.annotations",
                      "Too long: must have at most 262144 bytes");
    }
}

/* Apply the shared metadata rules and the kind's strategy to a main-resource
 * write; replies 422 and returns -1 when validation fails. `old` is NULL on
 * create. */
/* Go leaves empty lists and maps with omitempty out of the JSON it writes;
 * so does the store, for the metadata fields clients test for presence
 * (an ownerReferences: [] left behind by a patch reads as "has owners"). */
static void drop_empty_metadata(json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    static const char *const keys[] = {"ownerReferences", "finalizers", "labels", "annotations",
                                       NULL};
    for (const char *const *k = keys; *k; k++) {
        json_t *v = json_object_get(meta, *k);
        if (v && (json_is_null(v) || (json_is_array(v) && !json_array_size(v)) ||
                  (json_is_object(v) && !json_object_size(v))))
            json_object_del(meta, *k);
    }
}

/* Is the kind's own finalization holding `obj` (strategy.h, finalizing)? */
static int finalizing(const api_resource_t *res, const json_t *obj)
{
    const api_strategy_t *st = res->strategy;
    return st && st->finalizing && st->finalizing(obj);
}

int rest_tracks_generation(const api_resource_t *res)
{
    return res->crd_schema || (res->strategy && res->strategy->generation);
}

static int apply_strategy(api_req_t *r, json_t *obj, const json_t *old, const char *name)
{
    const api_resource_t *res = r->route.res;
    const api_strategy_t *st = res->strategy;
    drop_empty_metadata(obj);
    if (st && !old && st->prepare_create) st->prepare_create(obj);
    if (st && old && st->prepare_update) st->prepare_update(obj, old);
    if (st && st->defaults) st->defaults(obj);
    /* Mutating admission (after defaulting, as in Kubernetes): writes of the
     * main resource, not of its subresources. */
    if (st && st->admit && !r->route.sub[0]) {
        const api_ctx_t c = {.srv = r->srv, .dry_run = r->dry_run};
        st->admit(&c, obj, old);
    }
    if (st && st->admission && !r->route.sub[0] && st->admission(r, obj, old, name)) return -1;
    if (r->srv->admit_write && r->srv->admit_write(r, obj, old, name)) return -1;
    if (res->crd_schema) api_crd_prune_and_default(res->crd_schema, obj);
    json_t *causes = json_array();
    validate_metadata(obj, causes);
    if (st && st->validate) st->validate(obj, old, causes);
    if (res->crd_schema) api_crd_validate(res->crd_schema, obj, causes);
    int rc = reply_causes(r, name, causes);
    json_decref(causes);
    return rc;
}

/* The kind's write_begin (side effects outside the object: a Service's
 * addresses) on a write of the main resource. 0 with *txn (NULL: nothing
 * to end) for end_write() exactly once; -1 after replying: 422 for causes,
 * InternalError for an error with a message (Kubernetes' NewInternalError
 * carries it as the only cause), else the code's Status. */
static int begin_write(api_req_t *r, json_t *obj, const json_t *old, const char *name, void **txn)
{
    const api_strategy_t *st = r->route.res->strategy;
    *txn = NULL;
    if (!st || !st->write_begin || r->route.sub[0]) return 0;
    api_ctx_t c = {.srv = r->srv, .dry_run = r->dry_run};
    json_t *causes = json_array();
    int rc = causes ? st->write_begin(&c, obj, old, txn, causes) : KP_ENOMEM;
    const char *msg = api_json_str(json_array_get(causes, 0), "message");
    if (rc && *msg && !json_object_get(json_array_get(causes, 0), "field")) {
        json_t *d = json_pack("{s:O}", "causes", causes);
        api_reply_status(r, 500, "InternalError", d, "Internal error occurred: %s", msg);
        json_decref(d);
    } else if (rc) {
        rest_store_error(r, rc, name);
    } else if (json_array_size(causes)) {
        reply_causes(r, name, causes);
        rc = -1;
    }
    json_decref(causes);
    return rc ? -1 : 0;
}

static void end_write(api_req_t *r, void *txn, int committed)
{
    const api_strategy_t *st = r->route.res->strategy;
    if (txn && st->write_end) {
        api_ctx_t c = {.srv = r->srv, .dry_run = r->dry_run};
        st->write_end(&c, txn, committed);
    }
}

/* The kind's deleted hook, once `obj` left the store. */
static void deleted_hook(api_req_t *r, const json_t *obj)
{
    const api_strategy_t *st = r->route.res->strategy;
    if (st && st->deleted && !r->route.sub[0] && !r->dry_run) {
        api_ctx_t c = {.srv = r->srv, .dry_run = 0};
        st->deleted(&c, obj);
    }
}

static const char *json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "bool";
    default: return "null";
    }
}

/* The shapes of metadata every kind shares, checked as Kubernetes' decoder
 * would: a mismatch is a 400 BadRequest naming the field. Returns -1 after
 * replying. */
int rest_check_metadata_types(api_req_t *r, const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *bad = NULL, *want = NULL;
    const json_t *v = NULL;
    if (meta && !json_is_null(meta) && !json_is_object(meta)) {
        bad = "metadata", want = "v1.ObjectMeta", v = meta;
    } else if (meta) {
        static const char *const strs[] = {"name", "generateName", "namespace", "uid",
                                           "resourceVersion", NULL};
        for (const char *const *k = strs; *k && !bad; k++) {
            v = json_object_get(meta, *k);
            if (v && !json_is_null(v) && !json_is_string(v)) bad = *k, want = "string";
        }
        static const char *const maps[] = {"labels", "annotations", NULL};
        for (const char *const *k = maps; *k && !bad; k++) {
            const json_t *m = json_object_get(meta, *k);
            if (!m || json_is_null(m)) continue;
            if (!json_is_object(m)) {
                bad = *k, want = "map[string]string", v = m;
                break;
            }
            const char *mk;
            json_t *mv;
            json_object_foreach((json_t *)m, mk, mv) {
                if (!json_is_string(mv)) {
                    bad = *k, want = "string", v = mv;
                    break;
                }
            }
        }
        const json_t *fin = json_object_get(meta, "finalizers");
        if (!bad && fin && !json_is_null(fin)) {
            size_t i;
            json_t *f;
            if (!json_is_array(fin)) bad = "finalizers", want = "[]string", v = fin;
            else json_array_foreach(fin, i, f) if (!json_is_string(f) && !bad)
                bad = "finalizers", want = "string", v = f;
        }
    }
    if (!bad) return 0;
    api_reply_status(r, 400, "BadRequest", NULL,
                     "json: cannot unmarshal %s into Go struct field ObjectMeta.metadata%s%s of "
                     "type %s",
                     json_kind(v), strcmp(bad, "metadata") ? "." : "",
                     strcmp(bad, "metadata") ? bad : "", want);
    return -1;
}

/* A custom resource's body without a kind. Kubernetes decodes a built-in
 * kind into its Go type, whose kind and version default what the body
 * lacks (a POST or PUT of {"metadata": ...} is fine); a custom resource is
 * decoded as unstructured, and that decoder wants the body's own kind:
 * "Object 'Kind' is missing in '<body>'", which the create and update
 * handlers wrap in their decode-error text. The default fieldValidation
 * (Warn) and Strict decode strictly, where the decoder knows no kind at all
 * ("the object provided is unrecognized", with the body's first 30 bytes);
 * Ignore decodes with the request's kind as the default. */
static int reply_missing_kind(api_req_t *r)
{
    const api_resource_t *res = r->route.res;
    int len = r->body.len > 600 ? 600 : (int)r->body.len; /* the message's room */
    const char *more = r->body.len > 600 ? "..." : "";
    if (r->validation == API_VALIDATE_IGNORE)
        api_reply_status(r, 400, "BadRequest", NULL,
                         "%s in version \"%s\" cannot be handled as a %s: Object 'Kind' is "
                         "missing in '%.*s%s'",
                         res->kind, res->version, res->kind, len, r->body.p, more);
    else
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the object provided is unrecognized (must be of type %s): Object 'Kind' "
                         "is missing in '%.*s%s' (%.*s%s)",
                         res->kind, len, r->body.p, more, r->body.len > 30 ? 30 : (int)r->body.len,
                         r->body.p, r->body.len > 30 ? " ..." : "");
    return -1;
}

/* kind and apiVersion in a body must name the URL's resource; missing ones
 * are filled in, but for a custom resource's kind (reply_missing_kind).
 * Replies 400 and returns -1 on a mismatch. */
int rest_check_type(api_req_t *r, json_t *obj)
{
    const api_resource_t *res = r->route.res;
    char gv[96];
    api_group_version(res, gv, sizeof gv);
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    if (res->crd_schema && (!kind || !*kind)) return reply_missing_kind(r);
    if (av && *av && strcmp(av, gv)) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the API version in the data (%s) does not match the expected API "
                         "version (%s)",
                         av, gv);
        return -1;
    }
    if (kind && *kind && strcmp(kind, res->kind)) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the kind in the data (%s) does not match the expected kind (%s)", kind,
                         res->kind);
        return -1;
    }
    if (rest_check_metadata_types(r, obj)) return -1;
    json_object_set_new(obj, "kind", json_string(res->kind));
    json_object_set_new(obj, "apiVersion", json_string(gv));
    return 0;
}

/* The body's metadata.namespace must match the URL's. */
static int check_body_namespace(api_req_t *r, json_t *obj)
{
    json_t *meta = rest_meta(obj);
    const char *ns = rest_meta_str(obj, "namespace");
    if (!r->route.res->namespaced) {
        json_object_del(meta, "namespace");
        return 0;
    }
    if (*ns && strcmp(ns, r->route.ns)) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the namespace of the provided object does not match the namespace "
                         "sent on the request");
        return -1;
    }
    json_object_set_new(meta, "namespace", json_string(r->route.ns));
    return 0;
}

/* What is stored must fit the object byte limit, checked before it is
 * stored (stored_text) or answered under dryRun (check_object_size): a patch
 * (of any type), an apply or a PUT builds it from a request, and none may
 * make it larger than a request may be. Returns -1 after replying 413,
 * Kubernetes' answer at its request byte limit. */
static int reply_too_large(api_req_t *r)
{
    api_reply_status(r, 413, "RequestEntityTooLarge", NULL,
                     "Request entity too large: limit is %u", API_BODY_MAX);
    return -1;
}

/* A dry run's size check: the object's compact JSON counted, the count
 * stopping just past the limit. */
static int check_object_size(api_req_t *r, const json_t *obj)
{
    return api_json_size(obj, API_BODY_MAX, 4096, NULL) <= API_BODY_MAX ? 0 : reply_too_large(r);
}

/* The bytes to store of *obj (encode_stored()) in *text, at most
 * API_BODY_MAX of them. Returns 0, or -1 after replying (413, or the
 * error's Status without memory). */
static int stored_text(api_req_t *r, json_t **obj, const char *name, char **text)
{
    if (!(*text = encode_stored(r, obj))) {
        rest_store_error(r, KP_ENOMEM, name);
        return -1;
    }
    if (strlen(*text) <= API_BODY_MAX) return 0;
    free(*text);
    *text = NULL;
    return reply_too_large(r);
}

static void generate_name(const char *base, char *out, size_t n)
{
    static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char rnd[5];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) memset(rnd, 0, sizeof rnd);
    char suffix[6];
    for (int i = 0; i < 5; i++) suffix[i] = alphabet[rnd[i] % (sizeof alphabet - 1)];
    suffix[5] = '\0';
    /* Kubernetes keeps base + suffix within 63 characters. */
    snprintf(out, n, "%.*s%s", 58, base, suffix);
}

int rest_create(api_req_t *r)
{
    const api_resource_t *res = r->route.res;
    if (*r->route.sub)
        return api_reply_status(r, 405, "MethodNotAllowed", NULL,
                                "the server does not allow this method on the requested resource");
    if (res->namespaced && !*r->route.ns)
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    if (res->crd_terminating) {
        json_t *d = json_pack("{s:s, s:s}", "group", res->group, "kind", res->resource);
        int rc = api_reply_status(r, 405, "MethodNotAllowed", d,
                                  "create not allowed while custom resource definition is "
                                  "terminating");
        json_decref(d);
        return rc;
    }
    json_t *obj;
    int rc = rest_body_object(r, &obj);
    if (rc || !obj) return rc;
    return rest_create_object(r, obj);
}

int rest_create_object(api_req_t *r, json_t *obj)
{
    const api_resource_t *res = r->route.res;
    int rc = 0;
    if (rest_check_type(r, obj) || check_body_namespace(r, obj) || rest_check_fields(r, obj)) goto out;

    json_t *meta = rest_meta(obj);
    char name[API_NAME_MAX + 8];
    snprintf(name, sizeof name, "%s", rest_meta_str(obj, "name"));
    const char *gen = rest_meta_str(obj, "generateName");
    if (!*name && *gen) generate_name(gen, name, sizeof name);
    const char *bad = api_name_invalid(name, res->strategy ? (int)res->strategy->name_rule : 0);
    if (bad) {
        if (!*name) {
            json_t *d = json_pack("{s:s, s:s, s:[{s:s, s:s, s:s}]}", "group", res->group,
                                  "kind", res->kind, "causes", "reason", "FieldValueRequired",
                                  "message", "Required value: name or generateName is required",
                                  "field", "metadata.name");
            api_reply_status(r, 422, "Invalid",
                             d, "%s \"\" is invalid: metadata.name: Required value: name or "
                             "generateName is required",
                             res->kind);
            json_decref(d);
        } else {
            reply_invalid(r, name, "metadata.name", name, bad);
        }
        goto out;
    }
    if (*rest_meta_str(obj, "resourceVersion")) {
        api_reply_status(r, 400, "BadRequest", NULL,
                         "resourceVersion should not be set on objects to be created");
        goto out;
    }
    if (r->srv->admit_create && r->srv->admit_create(r, name)) goto out;

    char uid[37], now[32];
    if ((rc = api_new_uid(uid))) {
        api_reply_error(r, rc, NULL, "generating a uid: %s", err_str(rc));
        goto out;
    }
    api_now_rfc3339(now);
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(now));
    json_object_del(meta, "resourceVersion");
    json_object_del(meta, "deletionTimestamp");
    json_object_del(meta, "deletionGracePeriodSeconds");
    json_object_del(meta, "selfLink");
    if (rest_tracks_generation(res)) json_object_set_new(meta, "generation", json_integer(1));
    else json_object_del(meta, "generation");
    if (apply_strategy(r, obj, NULL, name)) goto out;

    char key[STORE_KEY_MAX + 1];
    if (key_of(r, name, key)) {
        reply_invalid(r, name, "metadata.name", name, "name is too long");
        goto out;
    }
    if (!r->fields_untracked && rest_track_fields(r, NULL, obj)) goto out;
    void *txn;
    if (begin_write(r, obj, NULL, name, &txn)) goto out;
    if (r->dry_run) { /* everything a create does, but the write */
        end_write(r, txn, 0);
        if (check_object_size(r, obj)) goto out;
        json_object_del(meta, "resourceVersion");
        return api_reply_json(r, 201, obj);
    }
    char *text;
    if (stored_text(r, &obj, name, &text)) {
        end_write(r, txn, 0);
        goto out;
    }
    int64_t rev = 0;
    rc = store_create(r->srv->cfg.store, key, text, strlen(text), &rev);
    end_write(r, txn, rc == 0);
    if (rc) {
        free(text);
        rest_store_error(r, rc, name);
        goto out;
    }
    return reply_written(r, 201, key, obj, rev, text, NULL);
out:
    json_decref(obj);
    return 0;
}

/* Build the object to store from the current one and the request's new one.
 * Returns the new object (a new reference) or NULL after replying. */
json_t *rest_merge_for_write(api_req_t *r, const json_t *cur, json_t *in)
{
    json_t *own = json_deep_copy(in);
    if (!own) {
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return NULL;
    }
    return rest_merge_for_write_owned(r, cur, own);
}

static int is_one_of(const char *k, const char *a, const char *b)
{
    return !strcmp(k, a) || (b && !strcmp(k, b));
}

/* Make the members of object `to` those of `from` (copies where they
 * differ), except the members `but` and `but2` (may be NULL); metadata one
 * level down, so that a metadata that differs only in resourceVersion and
 * managedFields is not copied whole. */
static int make_same(json_t *to, const json_t *from, const char *but, const char *but2)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(to, tmp, k, v) {
        if (!is_one_of(k, but, but2) && !json_object_get(from, k)) json_object_del(to, k);
    }
    int rc = 0;
    json_object_foreach((json_t *)from, k, v) {
        json_t *mine = json_object_get(to, k);
        if (is_one_of(k, but, but2) || (mine && json_equal(mine, v))) continue;
        if (!strcmp(k, "metadata") && json_is_object(mine) && json_is_object(v)) {
            if (make_same(mine, v, "resourceVersion", "managedFields")) rc = KP_ENOMEM;
            continue;
        }
        json_t *copy = json_deep_copy(v);
        if (!copy || json_object_set_new(to, k, copy)) rc = KP_ENOMEM;
    }
    return rc;
}

/* A status write, built in `in` (owned), as Kubernetes' status strategies
 * build it: in's status and metadata (but the server's fields, kept by the
 * caller), everything else (spec) made cur's again; then the kind's
 * prepare_status_update and validate_status, or those of its status-like
 * subresource `own` (NULL: the status subresource). A custom resource's status strategy keeps only the
 * status (and managedFields). resourceVersion is left as in has it: the
 * update loop drops it from what it stores. */
static json_t *status_for_write(api_req_t *r, const json_t *cur, json_t *in,
                                const api_sub_t *own)
{
    const api_resource_t *res = r->route.res;
    const api_strategy_t *st = res->strategy;
    int rc = make_same(in, cur, "status", res->crd_schema ? NULL : "metadata");
    if (rc) {
        json_decref(in);
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return NULL;
    }
    if (own) own->prepare(in, cur);
    else if (st && st->prepare_status_update) st->prepare_status_update(in, cur);
    drop_empty_metadata(in);
    json_t *causes = json_array();
    validate_metadata(in, causes);
    if (own && own->validate) own->validate(in, cur, causes);
    else if (!own && st && st->validate_status) st->validate_status(in, cur, causes);
    if (reply_causes(r, r->route.name, causes)) {
        json_decref(causes);
        json_decref(in);
        return NULL;
    }
    json_decref(causes);
    if (r->srv->admit_write && r->srv->admit_write(r, in, cur, r->route.name)) {
        json_decref(in);
        return NULL;
    }
    return in;
}

json_t *rest_merge_for_write_owned(api_req_t *r, const json_t *cur, json_t *in)
{
    const api_resource_t *res = r->route.res;
    json_t *out = in;
    json_t *meta = rest_meta(out);
    const json_t *cmeta = json_object_get(cur, "metadata");
    const char *uid = rest_meta_str(in, "uid"), *cuid = rest_meta_str(cur, "uid");
    if (*uid && strcmp(uid, cuid)) {
        json_t *d = rest_details(res, r->route.name);
        api_reply_status(r, 409, "Conflict", d,
                         "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                         uid, cuid);
        json_decref(d);
        json_decref(out); /* uid points into it */
        return NULL;
    }
    /* The server's metadata. */
    static const char *const kept[] = {"uid", "creationTimestamp", "deletionTimestamp",
                                       "deletionGracePeriodSeconds", "generation", NULL};
    for (const char *const *k = kept; *k; k++) {
        json_t *v = json_object_get(cmeta, *k);
        if (v) json_object_set(meta, *k, v);
        else json_object_del(meta, *k);
    }
    if (!strcmp(r->route.sub, "status")) return status_for_write(r, cur, out, NULL);
    /* A kind's status-like subresource (strategy.h: api_sub_t.prepare). */
    const api_sub_t *own = *r->route.sub ? api_strategy_sub(res->strategy, r->route.sub) : NULL;
    if (own && own->prepare) return status_for_write(r, cur, out, own);
    if (res->subresources & API_SUB_STATUS) {
        json_t *st = json_object_get(cur, "status");
        if (st) json_object_set(out, "status", st);
        else json_object_del(out, "status");
    }
    if (apply_strategy(r, out, cur, r->route.name)) {
        json_decref(out);
        return NULL;
    }
    if (rest_tracks_generation(res) &&
        !api_json_same(json_object_get(cur, "spec"), json_object_get(out, "spec"))) {
        json_int_t g = json_integer_value(json_object_get(cmeta, "generation"));
        json_object_set_new(meta, "generation", json_integer(g + 1));
    }
    return out;
}

/* The update loop shared by PUT, PATCH and the subresources (rest_int.h). */
int rest_update_loop(api_req_t *r, rest_make_fn make, void *arg, rest_reply_fn reply)
{
    const char *name = r->route.name;
    char key[STORE_KEY_MAX + 1];
    if (key_of(r, name, key)) return rest_not_found(r, name);
    store_t *st = r->srv->cfg.store;
    for (int attempt = 0; attempt < UNCONDITIONAL_RETRIES; attempt++) {
        json_t *cur;
        int64_t cur_rev;
        int rc = rest_load(r, key, &cur, &cur_rev);
        if (rc) return rest_store_error(r, rc, name);
        int64_t pre = 0;
        rest_set_rv(cur, cur_rev); /* make() sees the object as clients do */
        json_t *next = make(r, cur, arg, &pre);
        json_object_del(rest_meta(cur), "resourceVersion");
        if (!next) {
            json_decref(cur);
            return 0;
        }
        if (pre && pre != cur_rev) {
            json_decref(cur);
            json_decref(next);
            return rest_store_error(r, KP_ECONFLICT, name);
        }
        json_t *nm = rest_meta(next);
        json_object_del(nm, "resourceVersion");
        /* The kind's own finalization holds an object too (a namespace's
         * spec.finalizers). */
        int had_finalizers = json_array_size(json_object_get(rest_meta(cur), "finalizers")) > 0 ||
                             finalizing(r->route.res, cur);
        /* No change: no write, no new revision; unless the stored form is
         * under an old encryption key (Kubernetes writes a stale read). */
        if (rest_same_but_managed(cur, next) && !store_stale(st, key, cur_rev)) {
            json_decref(next);
            return reply_unwritten(r, cur, cur_rev, reply);
        }
        if (!r->fields_untracked && rest_track_fields(r, cur, next)) {
            json_decref(cur);
            json_decref(next);
            return 0;
        }
        void *txn = NULL;
        if (begin_write(r, next, cur, name, &txn)) {
            json_decref(cur);
            json_decref(next);
            return 0;
        }
        json_decref(cur);
        if (r->dry_run) { /* everything an update does, but the write */
            end_write(r, txn, 0);
            if (check_object_size(r, next)) {
                json_decref(next);
                return 0;
            }
            return reply_unwritten(r, next, cur_rev, reply);
        }
        /* A deleted object whose last finalizer this update removes is gone
         * now, unless a grace period still runs (a pod its node has yet to
         * stop: the node's final DELETE ends it). */
        const json_t *grace = json_object_get(nm, "deletionGracePeriodSeconds");
        int finish = json_object_get(nm, "deletionTimestamp") &&
                     json_array_size(json_object_get(nm, "finalizers")) == 0 && had_finalizers &&
                     !finalizing(r->route.res, next) &&
                     (!grace || json_integer_value(grace) == 0);
        int64_t rev = 0;
        char *text = NULL;
        if (finish) {
            rc = store_delete(st, key, cur_rev, &rev);
        } else if (stored_text(r, &next, name, &text)) {
            end_write(r, txn, 0);
            json_decref(next);
            return 0;
        } else {
            rc = store_update(st, key, text, strlen(text), cur_rev, &rev);
        }
        if (rc) free(text);
        end_write(r, txn, rc == 0);
        if (!rc && finish) deleted_hook(r, next);
        if (rc == KP_ECONFLICT && !pre) { /* unconditional: try again on the newer state */
            json_decref(next);
            continue;
        }
        if (rc) {
            json_decref(next);
            return rest_store_error(r, rc, name);
        }
        if (finish) return reply_unwritten(r, next, rev, reply);
        return reply_written(r, 200, key, next, rev, text, reply);
    }
    return rest_store_error(r, KP_ECONFLICT, name);
}

static json_t *make_put(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    json_t *in = arg;
    if (rest_parse_rv(rest_meta_str(in, "resourceVersion"), pre)) {
        api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion");
        return NULL;
    }
    return rest_merge_for_write(r, cur, in);
}

int rest_check_url_name(api_req_t *r, const json_t *obj)
{
    const char *name = rest_meta_str(obj, "name");
    if (!strcmp(name, r->route.name)) return 0;
    api_reply_status(r, 400, "BadRequest", NULL,
                     "the name of the object (%s) does not match the name on the URL (%s)", name,
                     r->route.name);
    return -1;
}

int rest_update(api_req_t *r)
{
    json_t *in;
    int rc = rest_body_object(r, &in);
    if (rc || !in) return rc;
    if (rest_check_type(r, in) || check_body_namespace(r, in) || rest_check_fields(r, in) ||
        rest_check_url_name(r, in))
        goto out;
    rc = rest_update_loop(r, make_put, in, NULL);
out:
    json_decref(in);
    return rc;
}

int rest_delete_options(api_req_t *r, const json_t *opts, rest_delete_opts_t *o)
{
    if (opts && !json_is_object(opts)) {
        api_reply_status(r, 400, "BadRequest", NULL, "deleteOptions must be an object");
        return -1;
    }
    if (rest_delete_propagation(r, opts, &o->policy)) return -1;
    const json_t *pc = json_object_get(opts, "preconditions");
    const char *uid = json_string_value(json_object_get(pc, "uid"));
    if (uid) snprintf(o->pre_uid, sizeof o->pre_uid, "%s", uid);
    const json_t *g = json_object_get(opts, "gracePeriodSeconds");
    if (json_is_integer(g) && json_integer_value(g) >= 0) o->grace = json_integer_value(g);
    if (rest_delete_dry_run(r, json_object_get(opts, "dryRun"))) return -1;
    if (rest_parse_rv(json_string_value(json_object_get(pc, "resourceVersion")), &o->pre_rv)) {
        api_reply_status(r, 400, "BadRequest", NULL, "invalid preconditions.resourceVersion");
        return -1;
    }
    return 0;
}

/* DeleteOptions from the body (kubectl) or the query (Python). Returns -1
 * after replying to a malformed one. */
static int delete_options(api_req_t *r, rest_delete_opts_t *o)
{
    *o = REST_DELETE_OPTS_INIT;
    const char *q = api_query(r, "gracePeriodSeconds");
    if (q && *q) {
        char *end;
        o->grace = strtoll(q, &end, 10);
        if (*end || o->grace < 0) {
            api_reply_status(r, 400, "BadRequest", NULL, "invalid gracePeriodSeconds: %s", q);
            return -1;
        }
    }
    if (!r->body.len) return rest_delete_options(r, NULL, o);
    json_t *opts;
    if (rest_body_object(r, &opts) || !opts) return -1;
    int rc = rest_delete_options(r, opts, o);
    json_decref(opts);
    return rc;
}

/* ---- deletion propagation (Kubernetes' generic registry store) ----
 *
 * A DELETE's cascade becomes finalizers the garbage collector serves:
 * Orphan -> "orphan" (dependents lose their ownerReference to the object,
 * then the finalizer goes), Foreground -> "foregroundDeletion" (dependents
 * are deleted first; the finalizer goes when none that blocks remains),
 * Background -> neither (the object goes now, dependents after it). With no
 * policy given, a GC finalizer already on the object stands, else the kind's
 * default (strategy.h, default_orphan: batch/v1 Jobs), else Background. */
#define FIN_ORPHAN     "orphan"
#define FIN_FOREGROUND "foregroundDeletion"

static int has_string(const json_t *list, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), s))
        return 1;
    return 0;
}

static int default_orphans(const api_resource_t *res)
{
    return res->strategy && res->strategy->default_orphan;
}

/* Set the GC finalizers `meta` must carry for this delete; 1 if that
 * changed them. */
static int gc_finalizers(const api_resource_t *res, json_t *meta, int policy)
{
    json_t *fin = json_object_get(meta, "finalizers");
    int orphan, fg;
    if (policy == REST_GC_ORPHAN) orphan = 1, fg = 0;
    else if (policy == REST_GC_FOREGROUND) orphan = 0, fg = 1;
    else if (policy == REST_GC_BACKGROUND) orphan = 0, fg = 0;
    else if (has_string(fin, FIN_ORPHAN)) orphan = 1, fg = 0;
    else if (has_string(fin, FIN_FOREGROUND)) orphan = 0, fg = 1;
    else orphan = default_orphans(res), fg = 0;
    if (orphan == has_string(fin, FIN_ORPHAN) && fg == has_string(fin, FIN_FOREGROUND)) return 0;
    json_t *next = json_array();
    size_t i;
    json_t *v;
    json_array_foreach(fin, i, v) {
        const char *f = json_string_value(v);
        if (f && (!strcmp(f, FIN_ORPHAN) || !strcmp(f, FIN_FOREGROUND))) continue;
        json_array_append(next, v);
    }
    if (orphan) json_array_append_new(next, json_string(FIN_ORPHAN));
    if (fg) json_array_append_new(next, json_string(FIN_FOREGROUND));
    if (json_array_size(next)) json_object_set_new(meta, "finalizers", next);
    else {
        json_decref(next);
        json_object_del(meta, "finalizers");
    }
    return 1;
}


/* How a delete ends for `cur`: 1 to mark it (deletionTimestamp; someone
 * finishes later), 0 to remove it now. Sets *grace for a mark. */
static int must_mark(api_req_t *r, const json_t *cur, const rest_delete_opts_t *o, long long *grace)
{
    const json_t *meta = json_object_get(cur, "metadata");
    *grace = 0;
    if (json_array_size(json_object_get(meta, "finalizers")) > 0) return 1;
    const api_strategy_t *st = r->route.res->strategy;
    /* The kind's own finalization (a namespace waits for its content to go:
     * the namespace controller empties it, then drops "kubernetes" through
     * /finalize). */
    if (finalizing(r->route.res, cur)) return 1;
    /* Graceful deletion (a bound pod stops on its node first). */
    if (st && st->graceful) return st->graceful(cur, o->grace, grace);
    return 0;
}

/* What a delete leaves: the object's last state (doc) and its revision. A
 * mark written now is also the watch cache's version (obj), which the reply
 * sends as it is. gone_clear() drops both. */
typedef struct gone {
    json_t *doc;
    const wc_obj_t *obj; /* NULL: nothing written but a delete */
    int64_t rev;
    int purging; /* KP_ECONFLICT: finalizing, and the kind refuses a second delete */
} gone_t;

static void gone_clear(gone_t *g)
{
    json_decref(g->doc);
    wc_obj_unref(g->obj);
    memset(g, 0, sizeof *g);
}

/* Delete `name` (or mark it deleted when something must finish first). On
 * success *gone holds the object's last state (gone_clear() it). */
static int delete_one(api_req_t *r, const char *name, const rest_delete_opts_t *o, gone_t *gone)
{
    char key[STORE_KEY_MAX + 1];
    if (key_of(r, name, key)) return KP_ENOTFOUND;
    store_t *st = r->srv->cfg.store;
    for (int attempt = 0; attempt < UNCONDITIONAL_RETRIES; attempt++) {
        json_t *cur;
        int64_t cur_rev;
        int rc = rest_load(r, key, &cur, &cur_rev);
        if (rc) return rc;
        if ((o->pre_rv && o->pre_rv != cur_rev) ||
            (*o->pre_uid && strcmp(o->pre_uid, rest_meta_str(cur, "uid")))) {
            json_decref(cur);
            return KP_ECONFLICT;
        }
        json_t *meta = rest_meta(cur);
        const api_strategy_t *kind = r->route.res->strategy;
        int deleting = json_object_get(meta, "deletionTimestamp") != NULL;
        if (deleting && finalizing(r->route.res, cur)) {
            if (!kind->finalizing_conflict) { /* accepted; nothing changes */
                *gone = (gone_t){.doc = cur, .rev = cur_rev};
                return 0;
            }
            json_decref(cur);
            gone->purging = 1; /* Kubernetes' namespace registry: a Conflict */
            return KP_ECONFLICT;
        }
        int fin_changed = gc_finalizers(r->route.res, meta, o->policy);
        long long grace;
        int mark = must_mark(r, cur, o, &grace);
        json_t *prev_grace = json_object_get(meta, "deletionGracePeriodSeconds");
        int sooner = !deleting || (json_is_integer(prev_grace) &&
                                   json_integer_value(prev_grace) > grace);
        if (mark && !sooner && !fin_changed) {
            *gone = (gone_t){.doc = cur, .rev = cur_rev}; /* being deleted, no sooner than asked */
            return 0;
        }
        int64_t rev = 0;
        char *text = NULL;
        if (mark) {
            if (sooner) {
                char when[32];
                time_t t = time(NULL) + (time_t)grace;
                struct tm tm;
                gmtime_r(&t, &tm);
                strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
                json_object_set_new(meta, "deletionTimestamp", json_string(when));
                json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(grace));
            }
            if (kind && kind->delete_mark) kind->delete_mark(cur);
        }
        if (r->dry_run) { /* everything a delete does, but the write */
            *gone = (gone_t){.doc = cur, .rev = cur_rev};
            return 0;
        }
        if (mark) {
            text = encode_stored(r, &cur);
            rc = text ? store_update(st, key, text, strlen(text), cur_rev, &rev) : KP_ENOMEM;
        } else {
            rc = store_delete(st, key, cur_rev, &rev);
        }
        if (rc == KP_ECONFLICT && !o->pre_rv) {
            free(text);
            json_decref(cur);
            continue;
        }
        if (rc) {
            free(text);
            json_decref(cur);
            return rc;
        }
        gone->rev = rev;
        if (mark) { /* the cache reads cur only during wc_offer() */
            rc = wc_offer(rest_cache(r), key, rev, json_incref(cur), text, strlen(text),
                          &gone->obj);
            free(text);
            gone->doc = cur;
            return rc;
        }
        deleted_hook(r, cur);
        gone->doc = cur;
        return 0;
    }
    return KP_ECONFLICT;
}

int rest_delete(api_req_t *r)
{
    rest_delete_opts_t o;
    if (delete_options(r, &o)) return 0;
    return rest_delete_route(r, &o, NULL);
}

int rest_delete_route(api_req_t *r, const rest_delete_opts_t *opts, int (*reply)(api_req_t *r))
{
    const rest_delete_opts_t o = *opts;
    const api_strategy_t *st = r->route.res->strategy;
    char q[128];
    /* Admission refusing the delete (NamespaceLifecycle's immortal
     * namespaces). */
    const char *refused = st && st->delete_refused ? st->delete_refused(r->route.name) : NULL;
    if (refused) {
        json_t *d = rest_details(r->route.res, r->route.name);
        int rc = api_reply_status(r, 403, "Forbidden", d, "%s \"%s\" is forbidden: %s",
                                  rest_qualified(r->route.res, q, sizeof q), r->route.name,
                                  refused);
        json_decref(d);
        return rc;
    }
    gone_t gone = {0};
    int rc = delete_one(r, r->route.name, &o, &gone);
    if (rc == KP_ECONFLICT && gone.purging) {
        json_t *d = rest_details(r->route.res, r->route.name);
        rc = api_reply_status(r, 409, "Conflict", d, "Operation cannot be fulfilled on %s \"%s\": %s",
                              rest_qualified(r->route.res, q, sizeof q), r->route.name,
                              st->finalizing_conflict);
        json_decref(d);
        return rc;
    }
    if (rc == KP_ECONFLICT && (o.pre_rv || *o.pre_uid)) {
        json_t *d = rest_details(r->route.res, r->route.name);
        rc = api_reply_status(r, 409, "Conflict", d,
                              "Operation cannot be fulfilled on %s \"%s\": the precondition "
                              "failed",
                              r->route.res->resource, r->route.name);
        json_decref(d);
        return rc;
    }
    if (rc) return rest_store_error(r, rc, r->route.name);
    if (reply) {
        gone_clear(&gone);
        return reply(r);
    }
    /* Still there (finalizers), or a kind that answers with what it
     * deleted: the object; otherwise a Status. */
    const json_t *doc = gone.doc;
    if (json_object_get(json_object_get(doc, "metadata"), "deletionTimestamp") ||
        (st && st->delete_returns_object)) {
        if (gone.obj)
            rc = reply_version(r, 200, gone.obj);
        else
            rc = rest_reply_object(r, 200, json_incref(gone.doc), gone.rev);
        gone_clear(&gone);
        return rc;
    }
    json_t *d = rest_details(r->route.res, r->route.name);
    json_object_set_new(d, "uid", json_string(rest_meta_str(doc, "uid")));
    gone_clear(&gone);
    json_t *s = api_status_new(200, "", "", d);
    json_decref(d);
    return api_reply_json(r, 200, s);
}

int rest_delete_collection(api_req_t *r)
{
    rest_filter_t f;
    int rc = rest_selectors(r, &f);
    if (rc || r->replied) return rc;
    char prefix[STORE_KEY_MAX + 1];
    api_ns_prefix(r->route.res, r->route.ns, prefix, sizeof prefix);
    rest_delete_opts_t o;
    if (delete_options(r, &o)) {
        rest_filter_free(&f);
        return 0;
    }
    wc_list_t *l;
    if ((rc = wc_list(rest_cache(r), prefix, NULL, 0, 0, 3000, &l))) {
        rest_filter_free(&f);
        return api_reply_error(r, rc, NULL, "listing: %s", err_str(rc));
    }
    char saved_ns[sizeof r->route.ns];
    memcpy(saved_ns, r->route.ns, sizeof saved_ns);
    for (size_t i = 0; i < l->count && !rc; i++) {
        const wc_obj_t *obj = l->objs[i];
        if (!wc_obj_match(obj, f.labels, f.fields)) continue;
        snprintf(r->route.ns, sizeof r->route.ns, "%s", obj->ns);
        gone_t gone = {0};
        rc = delete_one(r, obj->name, &o, &gone);
        gone_clear(&gone);
        if (rc == KP_ENOTFOUND) rc = 0;
    }
    memcpy(r->route.ns, saved_ns, sizeof saved_ns);
    wc_list_free(l);
    rest_filter_free(&f);
    if (rc) return api_reply_error(r, rc, NULL, "deleting: %s", err_str(rc));
    json_t *s = api_status_new(200, "", "", NULL);
    return api_reply_json(r, 200, s);
}
