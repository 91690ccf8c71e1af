/*
 * rest_patch.c -- PATCH in Kubernetes' four forms, and server-side apply.
 *
 *   application/json-patch+json            RFC 6902, on the object as the
 *                                          client sees it (resourceVersion
 *                                          included: a "test" on it works)
 *   application/merge-patch+json           RFC 7386
 *   application/strategic-merge-patch+json Kubernetes' list-aware merge,
 *                                          built-in kinds only (415 for
 *                                          custom resources, as Kubernetes)
 *   application/apply-patch+yaml           server-side apply (managed.h):
 *                                          creates when absent; 409 on a
 *                                          field another manager owns
 *
 * Every form builds the new object from the stored one and then takes the
 * update path (rest_update_loop): server-owned metadata, the spec/status
 * split, defaults, validation, generation, no-op detection, and a retry on a
 * store conflict unless the patch carried a resourceVersion precondition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/apply/managed.h"
#include "apiserver/apply/patch.h"
#include "apiserver/http/http.h"
#include "lib/err.h"
#include "lib/yamljson.h"
#include "apiserver/rest/rest_int.h"

typedef enum patch_type { PATCH_JSON = 1, PATCH_MERGE, PATCH_STRATEGIC, PATCH_APPLY } patch_type_t;

typedef struct patch_ctx {
    patch_type_t type;
    const json_t *patch; /* an array for PATCH_JSON, else an object */
} patch_ctx_t;

void rest_merge_patch(json_t *target, const json_t *patch)
{
    api_merge_patch(target, patch);
}

/* The media type without parameters ("; charset=utf-8"). */
static patch_type_t patch_type_of(const char *ct)
{
    if (!ct) return 0;
    size_t n = strcspn(ct, "; ");
    static const struct {
        const char *name;
        patch_type_t type;
    } types[] = {
        {"application/json-patch+json", PATCH_JSON},
        {"application/merge-patch+json", PATCH_MERGE},
        {"application/strategic-merge-patch+json", PATCH_STRATEGIC},
        {"application/apply-patch+yaml", PATCH_APPLY},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].name) == n && !strncasecmp(ct, types[i].name, n)) return types[i].type;
    return 0;
}

static int reply_unsupported(api_req_t *r)
{
    const char *accepted =
        r->route.res->crd_schema
            ? "application/json-patch+json, application/merge-patch+json, "
              "application/apply-patch+yaml"
            : "application/json-patch+json, application/merge-patch+json, "
              "application/apply-patch+yaml, application/strategic-merge-patch+json";
    return api_reply_status(r, 415, "UnsupportedMediaType", NULL,
                            "the body of the request was in an unknown format - accepted media "
                            "types include: %s",
                            accepted);
}

/* A patch or scale body: merge or strategic merge (which, for the objects
 * that have no lists, are the same). */
int rest_patch_body(api_req_t *r, json_t **patch)
{
    *patch = NULL;
    patch_type_t t = patch_type_of(api_header(r, "Content-Type"));
    if (t != PATCH_MERGE && t != PATCH_STRATEGIC) return reply_unsupported(r);
    return rest_body_object(r, patch);
}

/* The precondition a patched object carries: its metadata.resourceVersion
 * when the patch set one. Returns -1 after replying to a malformed one. */
static int patched_precondition(api_req_t *r, const json_t *patch, patch_type_t type,
                                const json_t *patched, const char *cur_rv, int64_t *pre)
{
    const char *rv;
    if (type == PATCH_JSON) {
        rv = json_string_value(
            json_object_get(json_object_get(patched, "metadata"), "resourceVersion"));
        if (rv && !strcmp(rv, cur_rv)) rv = NULL; /* untouched */
    } else {
        rv = json_string_value(
            json_object_get(json_object_get(patch, "metadata"), "resourceVersion"));
    }
    if (rest_parse_rv(rv, pre)) {
        api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion: %s", rv);
        return -1;
    }
    return 0;
}

/* kind and apiVersion of a patched object (`in`, changed in place). Kubernetes
 * decodes a JSON or merge patch's result into the resource's type: a member
 * that is absent (or null, or "") takes the resource's value, as the
 * decoder's defaults; any other value cannot become this resource and fails
 * the decode, which it answers 422 Invalid on the field "patch". A strategic
 * merge patch is applied to the typed object, whose kind and version come
 * from its type: a changed string is dropped; a value of another JSON type
 * fails its conversion (422 too). So a patch never turns one kind into
 * another. Returns -1 after replying. */
static int patched_type(api_req_t *r, patch_type_t type, json_t *in)
{
    char gv[96];
    api_group_version(r->route.res, gv, sizeof gv);
    static const char *const fields[] = {"kind", "apiVersion"};
    const char *want[] = {r->route.res->kind, gv};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(in, fields[i]);
        const char *got = json_string_value(v);
        int same = !v || json_is_null(v) || (got && (!*got || !strcmp(got, want[i])));
        if (!same && !(got && type == PATCH_STRATEGIC)) {
            char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
            char msg[512];
            snprintf(msg, sizeof msg, "Invalid value: %.200s: %s must be %s", text ? text : "?",
                     fields[i], want[i]);
            free(text);
            json_t *d = json_pack("{s:[{s:s, s:s, s:s}]}", "causes", "reason", "FieldValueInvalid",
                                  "message", msg, "field", "patch");
            api_reply_status(r, 422, "Invalid", d, " \"\" is invalid: patch: %s", msg);
            json_decref(d);
            return -1;
        }
        json_object_set_new(in, fields[i], json_string(want[i]));
    }
    return 0;
}

static json_t *make_patched(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    const patch_ctx_t *ctx = arg;
    char err[1024] = "";
    char cur_rv[24];
    json_t *in = json_deep_copy(cur);
    if (!in) {
        api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return NULL;
    }
    int rc = 0;
    if (ctx->type == PATCH_JSON) {
        /* A JSON patch sees the object as clients do, resourceVersion and all. */
        snprintf(cur_rv, sizeof cur_rv, "%s", rest_meta_str(cur, "resourceVersion"));
        const api_patch_limits_t lim = {.copy_max = API_JSON_PATCH_COPY_MAX,
                                        .result_max = API_BODY_MAX,
                                        .depth_max = API_JSON_DEPTH_MAX};
        rc = api_json_patch_limited(&in, ctx->patch, &lim, err, sizeof err);
    } else if (ctx->type == PATCH_MERGE) {
        api_merge_patch(in, ctx->patch);
    } else {
        rc = api_strategic_merge_patch(r->srv->schema, rest_kind_schema(r), in, ctx->patch, err,
                                       sizeof err);
    }
    if (rc) {
        json_decref(in);
        if (rc == KP_EINVAL)
            api_reply_status(r, 400, "BadRequest", NULL, "%s", err);
        else if (rc == KP_ETOOLARGE)
            api_reply_status(r, 413, "RequestEntityTooLarge", NULL, "%s", err);
        else if (rc == KP_ECONFLICT)
            api_reply_status(r, 422, "Invalid", NULL, "%s", err);
        else
            api_reply_error(r, rc, NULL, "patching: %s", err_str(rc));
        return NULL;
    }
    if (!json_is_object(in)) {
        json_decref(in);
        api_reply_status(r, 422, "Invalid", NULL, "the patched object is not a JSON object");
        return NULL;
    }
    if (patched_type(r, ctx->type, in)) {
        json_decref(in);
        return NULL;
    }
    if (patched_precondition(r, ctx->patch, ctx->type, in, cur_rv, pre)) {
        json_decref(in);
        return NULL;
    }
    json_object_del(rest_meta(in), "resourceVersion");
    if (rest_check_metadata_types(r, in) || rest_check_fields_since(r, in, cur)) {
        json_decref(in);
        return NULL;
    }
    if (strcmp(rest_meta_str(in, "name"), r->route.name)) {
        json_decref(in);
        api_reply_status(r, 400, "BadRequest", NULL, "the patch changes metadata.name");
        return NULL;
    }
    return rest_merge_for_write_owned(r, cur, in);
}

/* ---- server-side apply ---- */

/* config applied to cur (NULL: absent) by the request's manager: a new
 * reference, or NULL after replying. */
static json_t *apply_managed(api_req_t *r, const json_t *cur, const json_t *config)
{
    char gv[96], now[32], err[2048];
    api_group_version(r->route.res, gv, sizeof gv);
    api_now_rfc3339(now);
    static const char *const reset_status[] = {"status", NULL};
    static const char *const reset_spec[] = {"spec", NULL};
    const char *const *reset = NULL;
    if (!strcmp(r->route.sub, "status"))
        reset = reset_spec;
    else if (!*r->route.sub && (r->route.res->subresources & API_SUB_STATUS))
        reset = reset_status;
    api_manager_t m = {.manager = r->manager,
                       .api_version = gv,
                       .subresource = r->route.sub,
                       .now = now,
                       .reset = reset};
    json_t *out = NULL, *conflicts = NULL;
    int rc = api_managed_apply(r->srv->schema, rest_kind_schema(r), cur, config, &m,
                               rest_query_bool(r, "force"), &out, &conflicts, err, sizeof err);
    if (rc == KP_ECONFLICT) {
        /* Kubernetes' details carry only the causes here. */
        json_t *d = json_object();
        if (d && conflicts) json_object_set(d, "causes", conflicts);
        api_reply_status(r, 409, "Conflict", d, "%s", err);
        json_decref(d);
        json_decref(conflicts);
        return NULL;
    }
    json_decref(conflicts);
    if (rc) {
        if (rc == KP_EINVAL)
            api_reply_status(r, 400, "BadRequest", NULL, "%s", err);
        else
            api_reply_error(r, rc, NULL, "applying: %s", err_str(rc));
        return NULL;
    }
    return out;
}

static json_t *make_applied(api_req_t *r, const json_t *cur, void *arg, int64_t *pre)
{
    const json_t *config = arg;
    if (rest_parse_rv(rest_meta_str(config, "resourceVersion"), pre)) {
        api_reply_status(r, 400, "BadRequest", NULL, "invalid resourceVersion");
        return NULL;
    }
    json_t *out = apply_managed(r, cur, config);
    if (!out) return NULL;
    json_object_del(rest_meta(out), "resourceVersion");
    return rest_merge_for_write_owned(r, cur, out);
}

/* The applied configuration: YAML (or JSON, a subset) naming the route's
 * object. Returns NULL after replying. */
static json_t *apply_config(api_req_t *r)
{
    if (!r->body.len) {
        api_reply_status(r, 400, "BadRequest", NULL, "the request body is empty");
        return NULL;
    }
    json_t *config;
    char err[512];
    static const yamljson_limits_t lim = {.max_depth = API_JSON_DEPTH_MAX,
                                          .max_bytes = API_YAML_BYTES_MAX,
                                          .max_alias_bytes = API_YAML_ALIAS_MAX};
    int rc = yaml_to_json(r->body.p, r->body.len, &lim, &config, err, sizeof err);
    if (rc) {
        if (rc == KP_ENOMEM)
            api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        else
            api_reply_status(r, 400, "BadRequest", NULL, "error decoding YAML: %s", err);
        return NULL;
    }
    if (!json_is_object(config)) {
        json_decref(config);
        api_reply_status(r, 400, "BadRequest", NULL,
                         "error decoding YAML: the applied configuration is not an object");
        return NULL;
    }
    const char *name = rest_meta_str(config, "name");
    if (!json_string_value(json_object_get(config, "apiVersion")) ||
        !json_string_value(json_object_get(config, "kind"))) {
        json_decref(config);
        api_reply_status(r, 400, "BadRequest", NULL,
                         "apiVersion and kind must be set in an applied configuration");
        return NULL;
    }
    if (*name && strcmp(name, r->route.name)) {
        /* reply first: name points into config */
        api_reply_status(r, 400, "BadRequest", NULL,
                         "the name of the object (%s) does not match the name on the URL (%s)",
                         name, r->route.name);
        json_decref(config);
        return NULL;
    }
    json_object_set_new(rest_meta(config), "name", json_string(r->route.name));
    return config;
}

static int serve_apply(api_req_t *r)
{
    if (!api_query(r, "fieldManager") || !*api_query(r, "fieldManager")) {
        json_t *d =
            json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", "", "group", "meta.k8s.io",
                      "kind", "PatchOptions", "causes", "reason", "FieldValueRequired", "message",
                      "Required value: is required for apply patch", "field", "fieldManager");
        api_reply_status(r, 422, "Invalid", d,
                         "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required "
                         "value: is required for apply patch");
        json_decref(d);
        return 0;
    }
    json_t *config = apply_config(r);
    if (!config) return 0;
    int rc = 0;
    if (rest_check_type(r, config) || rest_check_fields(r, config)) goto out;
    r->fields_untracked = 1;
    char key[512];
    json_t *cur = NULL;
    int64_t cur_rev;
    if (api_object_key(r->route.res, r->route.ns, r->route.name, key, sizeof key)) {
        rc = rest_not_found(r, r->route.name);
        goto out;
    }
    rc = rest_load(r, key, &cur, &cur_rev);
    json_decref(cur);
    if (rc == KP_ENOTFOUND && !*r->route.sub) {
        /* Apply creates: the object is the configuration, owned by the
         * manager's Apply entry. */
        json_t *created = apply_managed(r, NULL, config);
        rc = created ? rest_create_object(r, created) : 0; /* steals created */
        goto out;
    }
    if (rc) {
        rc = rest_store_error(r, rc, r->route.name);
        goto out;
    }
    rc = rest_update_loop(r, make_applied, config, NULL);
out:
    json_decref(config);
    return rc;
}

int rest_patch(api_req_t *r)
{
    patch_type_t type = patch_type_of(api_header(r, "Content-Type"));
    if (!type || (type == PATCH_STRATEGIC && r->route.res->crd_schema)) return reply_unsupported(r);
    if (type == PATCH_APPLY) return serve_apply(r);
    json_t *patch;
    if (type == PATCH_JSON) {
        if (!r->body.len)
            return api_reply_status(r, 400, "BadRequest", NULL, "the request body is empty");
        json_error_t e;
        patch = json_loadb(r->body.p, r->body.len, 0, &e);
        if (!patch)
            return api_reply_status(r, 400, "BadRequest", NULL,
                                    "the request body is not valid JSON: %s", e.text);
        if (!json_is_array(patch)) {
            json_decref(patch);
            return api_reply_status(r, 400, "BadRequest", NULL,
                                    "json: cannot unmarshal object into Go value of type "
                                    "jsonpatch.Patch");
        }
        if (json_array_size(patch) > API_JSON_PATCH_MAX) {
            size_t n = json_array_size(patch);
            json_decref(patch);
            return api_reply_status(r, 413, "RequestEntityTooLarge", NULL,
                                    "The allowed maximum operations in a JSON patch is %d, got %zu",
                                    API_JSON_PATCH_MAX, n);
        }
    } else {
        int rc = rest_body_object(r, &patch);
        if (rc || !patch) return rc;
    }
    patch_ctx_t ctx = {.type = type, .patch = patch};
    int rc = rest_update_loop(r, make_patched, &ctx, NULL);
    json_decref(patch);
    return rc;
}
