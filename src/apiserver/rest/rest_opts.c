/*
 * rest_opts.c -- what every write shares beyond its verb: the query's write
 * options (dryRun, fieldValidation, fieldManager), the kind's schema,
 * decoding rules for unknown and mistyped fields, and field ownership
 * (metadata.managedFields) recorded on each write.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/schema/fields.h"
#include "apiserver/apply/managed.h"
#include "apiserver/schema/schema.h"
#include "apiserver/http/http.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"

/* 422 for a bad option of `kind` (DeleteOptions...), as Kubernetes
 * validates them. */
static int reply_bad_options(api_req_t *r, const char *kind, const char *field,
                             const char *reason, const char *msg)
{
    json_t *d =
        json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", "", "group", "meta.k8s.io",
                  "kind", kind, "causes", "reason", reason, "message", msg, "field", field);
    api_reply_status(r, 422, "Invalid", d, "%s.meta.k8s.io \"\" is invalid: %s: %s", kind, field,
                     msg);
    json_decref(d);
    return -1;
}

/* The same for the options of the request's verb. */
static int reply_bad_option(api_req_t *r, const char *field, const char *reason, const char *msg)
{
    const char *m = r->method;
    const char *kind = !strcmp(m, "POST")    ? "CreateOptions"
                       : !strcmp(m, "PATCH") ? "PatchOptions"
                       : !strcmp(m, "PUT")   ? "UpdateOptions"
                                             : "DeleteOptions";
    return reply_bad_options(r, kind, field, reason, msg);
}

int rest_delete_dry_run(api_req_t *r, const json_t *dry)
{
    if (!dry || json_is_null(dry)) return 0;
    if (!json_is_array(dry))
        return reply_bad_options(r, "DeleteOptions", "dryRun", "FieldValueTypeInvalid",
                                 "Invalid value: must be a list of strings");
    size_t i;
    const json_t *v;
    json_array_foreach(dry, i, v) {
        const char *s = json_string_value(v);
        if (s && !strcmp(s, "All")) continue;
        char msg[300];
        snprintf(msg, sizeof msg, "Unsupported value: \"%.200s\": supported values: \"All\"",
                 s ? s : "");
        return reply_bad_options(r, "DeleteOptions", "dryRun", "FieldValueNotSupported", msg);
    }
    if (json_array_size(dry)) r->dry_run = 1;
    return 0;
}

int rest_write_options(api_req_t *r)
{
    const char *dry = api_query(r, "dryRun");
    r->dry_run = 0;
    if (dry && *dry) {
        if (strcmp(dry, "All")) {
            char msg[300];
            snprintf(msg, sizeof msg, "Unsupported value: \"%.200s\": supported values: \"All\"",
                     dry);
            return reply_bad_option(r, "dryRun", "FieldValueNotSupported", msg);
        }
        r->dry_run = 1;
    }
    const char *fv = api_query(r, "fieldValidation");
    r->validation = API_VALIDATE_WARN; /* the default when absent, as Kubernetes */
    if (fv && *fv) {
        if (!strcmp(fv, "Strict"))
            r->validation = API_VALIDATE_STRICT;
        else if (!strcmp(fv, "Ignore"))
            r->validation = API_VALIDATE_IGNORE;
        else if (strcmp(fv, "Warn")) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "Unsupported value: \"%.200s\": supported values: \"\", \"Ignore\", "
                     "\"Strict\", \"Warn\"",
                     fv);
            return reply_bad_option(r, "fieldValidation", "FieldValueNotSupported", msg);
        }
    }
    const char *fm = api_query(r, "fieldManager");
    if (fm && strlen(fm) > 128)
        return reply_bad_option(r, "fieldManager", "FieldValueTooLong",
                                "Too long: may not be longer than 128");
    if (fm && *fm) {
        snprintf(r->manager, sizeof r->manager, "%s", fm);
    } else {
        /* Kubernetes names an unnamed manager after the client's product:
         * "kubectl/v1.32.0 (linux/amd64) ..." -> "kubectl". */
        const char *ua = api_header(r, "User-Agent");
        size_t n = ua ? strcspn(ua, "/") : 0;
        if (n > 128) n = 128;
        snprintf(r->manager, sizeof r->manager, "%.*s", (int)n, ua ? ua : "");
        if (!r->manager[0]) snprintf(r->manager, sizeof r->manager, "unknown");
    }
    return 0;
}

const json_t *rest_kind_schema(api_req_t *r)
{
    const api_resource_t *res = r->route.res;
    if (res->crd_schema) return res->crd_schema;
    return api_schema_kind(r->srv->schema, res->group, res->version, res->kind, NULL);
}

int rest_check_fields(api_req_t *r, json_t *obj)
{
    return rest_check_fields_since(r, obj, NULL);
}

int rest_check_fields_since(api_req_t *r, json_t *obj, const json_t *base)
{
    /* The server's own writes (api_internal) are built by its code from its
     * type facts: no client's bytes to prune or to check (the bootstrap
     * policy's 124 objects spent 8% of their CPU here). */
    if (r->internal) return 0;
    const api_resource_t *res = r->route.res;
    const json_t *node = rest_kind_schema(r);
    json_t *unknown = json_array();
    char err[700];
    if (!unknown) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    if (res->crd_schema) base = NULL; /* its schema may have changed since base was written */
    int rc = node ? api_fields_prune_since(r->srv->schema, node, res->kind, obj, base, unknown,
                                           err, sizeof err)
                  : 0;
    if (rc) {
        json_decref(unknown);
        api_reply_status(r, 400, "BadRequest", NULL,
                         "%s in version \"%s\" cannot be handled as a %s: %s", res->kind,
                         res->version, res->kind, err);
        return -1;
    }
    if (r->dup_field[0]) {
        char d[200];
        snprintf(d, sizeof d, "%s", r->dup_field);
        json_array_insert_new(unknown, 0, json_string(d));
    }
    size_t n = json_array_size(unknown);
    if (!n || r->validation == API_VALIDATE_IGNORE) {
        json_decref(unknown);
        return 0;
    }
    size_t dup = r->dup_field[0] ? 1 : 0;
    if (r->validation == API_VALIDATE_WARN) {
        for (size_t i = 0; i < n; i++)
            api_warn(r, "%s field \"%s\"", i < dup ? "duplicate" : "unknown",
                     json_string_value(json_array_get(unknown, i)));
        json_decref(unknown);
        return 0;
    }
    char list[2048];
    size_t len = 0;
    list[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof list - 1; i++) {
        int w = snprintf(list + len, sizeof list - len, "%s%s field \"%s\"", i ? ", " : "",
                         i < dup ? "duplicate" : "unknown",
                         json_string_value(json_array_get(unknown, i)));
        if (w < 0) break;
        len += (size_t)w;
    }
    json_decref(unknown);
    api_reply_status(r, 400, "BadRequest", NULL,
                     "%s in version \"%s\" cannot be handled as a %s: strict decoding error: %s",
                     res->kind, res->version, res->kind, list);
    return -1;
}

int rest_same_but_managed(const json_t *a, const json_t *b)
{
    if (json_object_size(a) != json_object_size(b)) return 0;
    const char *k;
    json_t *va;
    json_object_foreach((json_t *)a, k, va) {
        const json_t *vb = json_object_get(b, k);
        if (!vb) return 0;
        if (strcmp(k, "metadata")) {
            if (!json_equal(va, vb)) return 0;
            continue;
        }
        /* metadata: every field but managedFields */
        const char *mk;
        json_t *ma;
        size_t na = json_object_size(va) - (json_object_get(va, "managedFields") != NULL);
        size_t nb = json_object_size(vb) - (json_object_get(vb, "managedFields") != NULL);
        if (na != nb) return 0;
        json_object_foreach(va, mk, ma) {
            if (!strcmp(mk, "managedFields")) continue;
            const json_t *mb = json_object_get(vb, mk);
            if (!mb || !json_equal(ma, mb)) return 0;
        }
    }
    return 1;
}
int rest_track_fields(api_req_t *r, const json_t *old, json_t *obj)
{
    const api_resource_t *res = r->route.res;
    char gv[96], now[32];
    api_group_version(res, gv, sizeof gv);
    api_now_rfc3339(now);
    static const char *const reset_status[] = {"status", NULL};
    static const char *const reset_spec[] = {"spec", NULL};
    const char *const *reset = NULL;
    if (!strcmp(r->route.sub, "status"))
        reset = reset_spec;
    else if (!*r->route.sub && (res->subresources & API_SUB_STATUS))
        reset = reset_status;
    api_manager_t m = {.manager = r->manager,
                       .api_version = gv,
                       .subresource = r->route.sub,
                       .now = now,
                       .reset = reset};
    int rc = api_managed_update(r->srv->schema, rest_kind_schema(r), old, obj, &m);
    if (rc) {
        api_reply_error(r, rc, NULL, "recording managed fields: %s", err_str(rc));
        return -1;
    }
    return 0;
}

/* DeleteOptions' cascade: propagationPolicy and the deprecated
 * orphanDependents, from the query (Python) or the body (kubectl), the body
 * winning as Kubernetes decodes the body over the query. Validated as
 * Kubernetes' ValidateDeleteOptions: both set, or an unknown policy, is a 422
 * naming the field. */
int rest_delete_propagation(api_req_t *r, const json_t *body, int *policy)
{
    *policy = REST_GC_DEFAULT;
    const char *pp = api_query(r, "propagationPolicy");
    const char *od = api_query(r, "orphanDependents");
    int orphan = -1; /* not given */
    if (od && *od) orphan = rest_query_bool(r, "orphanDependents");
    const json_t *bp = json_object_get(body, "propagationPolicy");
    const json_t *bo = json_object_get(body, "orphanDependents");
    if (json_is_string(bp)) pp = json_string_value(bp);
    if (json_is_boolean(bo)) orphan = json_is_true(bo);
    if (pp && !*pp) pp = NULL;
    if (pp && orphan >= 0) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Invalid value: \"%.200s\": orphanDependents and deletionPropagation cannot "
                 "be both set",
                 pp);
        return reply_bad_options(r, "DeleteOptions", "propagationPolicy", "FieldValueInvalid",
                                 msg);
    }
    if (orphan >= 0) {
        *policy = orphan ? REST_GC_ORPHAN : REST_GC_BACKGROUND;
        return 0;
    }
    if (!pp) return 0;
    if (!strcmp(pp, "Orphan")) *policy = REST_GC_ORPHAN;
    else if (!strcmp(pp, "Background")) *policy = REST_GC_BACKGROUND;
    else if (!strcmp(pp, "Foreground")) *policy = REST_GC_FOREGROUND;
    else {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Unsupported value: \"%.200s\": supported values: \"Foreground\", "
                 "\"Background\", \"Orphan\", \"nil\"",
                 pp);
        return reply_bad_options(r, "DeleteOptions", "propagationPolicy",
                                 "FieldValueNotSupported", msg);
    }
    return 0;
}
