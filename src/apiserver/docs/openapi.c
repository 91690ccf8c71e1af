/*
 * openapi.c -- the OpenAPI documents kubectl reads: /openapi/v2 (JSON here,
 * protobuf through openapi_pb.c) and /openapi/v3 (a root naming each
 * group-version's document, then one document per group-version).
 *
 * kubectl uses them for three things: `explain` (1.32 over v3, 1.20 over the
 * protobuf v2), client-side validation (1.20 always; 1.32 only when v3 does
 * not show the server validating) and strategic merge patches in client-side
 * apply. The first two need a complete and exact schema of every served
 * kind: kubectl 1.20 rejects a manifest whose field the document types
 * wrongly, and rejects the whole document (every `create -f` then fails) if
 * one $ref dangles.
 *
 * BUILDING A DOCUMENT (gen_t, build())
 *   1. Roots: for each resource the request's view serves (every one for
 *      v2, those of one group-version for v3) the kind's definition, its
 *      list's, and its paths: collection, item, all-namespaces list, status
 *      and scale. Every
 *      operation carries x-kubernetes-group-version-kind and
 *      x-kubernetes-action; writes carry dryRun, fieldManager and
 *      fieldValidation (kubectl 1.32 looks for exactly that on `patch` to
 *      leave validation to the server).
 *   2. Closure: converting a node queues every definition its $refs name
 *      (need()); the queue drains until nothing new is named. A name the
 *      facts lack becomes {} (any value), so no reference ever dangles.
 *   3. The definitions (components.schemas for v3) are emitted sorted by name.
 *
 * FORMS (conv())
 *   v2  Refs "#/definitions/N", nodes as the facts hold them (the facts are
 *       Kubernetes' own v2 definitions without their prose).
 *   v3  Refs "#/components/schemas/N". A $ref with sibling keys (patch rules
 *       such as DeploymentSpec.strategy's retainKeys) becomes
 *       {"allOf": [{"$ref": ...}], siblings...}, as Kubernetes writes it,
 *       because OpenAPI 3.0 ignores the siblings of a $ref.
 *   CRDs (api_resource_t.crd_schema) The version's openAPIV3Schema with the
 *       apiVersion, kind and metadata (ObjectMeta) properties Kubernetes adds,
 *       also inside x-kubernetes-embedded-resource objects. For v2 what
 *       Swagger 2.0 cannot say is dropped the way Kubernetes drops it, so that
 *       kubectl 1.20 accepts whatever the server accepts: allOf/anyOf/oneOf/
 *       not; nullable and x-kubernetes-int-or-string lose their type;
 *       nullable and x-kubernetes-preserve-unknown-fields lose properties,
 *       items and additionalProperties; nullable fields are not required; an
 *       array left without items loses its type. Custom kinds' patch
 *       operations do not list strategic merge patch (Kubernetes serves none
 *       for them), so kubectl sends them merge patches.
 *   A served kind with neither facts nor a CRD schema is described as an
 *   object preserving unknown fields: explainable, never falsely rejected.
 *
 * COST
 *   Nothing is cached: each request converts the definitions it reaches from
 *   the immutable facts (srv->schema) and the resources of its view, so a
 *   new CRD shows up at once and no state is shared between threads. The v3
 *   root builds every group-version's document to digest it (hash= in each
 *   URL, so kubectl's cache drops a document whose content changed).
 *   Measured (-O2, the 17 built-in kinds, ~270 definitions): v2 built in
 *   ~4 ms, ~5 ms more to print its 300 KB of JSON, ~2 ms more for the 220 KB
 *   of protobuf; the v3 root ~10 ms; one group-version's document ~4 ms.
 */
#include "apiserver/docs/openapi.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/err.h"

#define OPENAPI_TITLE   "Kubernetes"
#define OPENAPI_VERSION "v1.32.0-kplane" /* as /version's gitVersion */
#define V2_REF          "#/definitions/"
#define V3_REF          "#/components/schemas/"
#define META_V1         "io.k8s.apimachinery.pkg.apis.meta.v1."
#define SCALE_DEF       "io.k8s.api.autoscaling.v1.Scale"
#define CONV_DEPTH_MAX  64        /* deeper schema nodes are emitted as {} (any value) */
#define PB_DOC_MAX      (64u << 20) /* cap of the protobuf encoding */
#define NAME_LEN        600       /* definition names, operation ids, paths */

/* The Content-Type of the protobuf reply. Not the '@' spelling kubectl 1.20
 * sends in Accept: Go's mime parser rejects '@' in a response. */
#define PB_CTYPE "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

/* One document being built. Errors are sticky in rc: once an allocation
 * fails, later steps still run (on NULLs, which jansson tolerates) and the
 * caller sees the first error. */
typedef struct gen {
    const api_schema_t *schema;
    int v3;
    json_t *defs;  /* name -> converted definition; JSON null while queued */
    json_t *todo;  /* names queued by need(), in order */
    json_t *paths; /* path -> path item */
    int rc;
} gen_t;

static void put(gen_t *g, json_t *obj, const char *key, json_t *val)
{
    /* json_object_set_new() releases val when it fails, NULL obj included. */
    if (json_object_set_new(obj, key, val)) g->rc = KP_ENOMEM;
}

static void append(gen_t *g, json_t *arr, json_t *val)
{
    if (json_array_append_new(arr, val)) g->rc = KP_ENOMEM;
}

/* ---- definitions ---- */

/* Queue definition `name` unless it is known already. */
static void need(gen_t *g, const char *name)
{
    if (json_object_get(g->defs, name)) return;
    put(g, g->defs, name, json_null());
    append(g, g->todo, json_string(name));
}

/* The reference to definition `name` in this document's form, queuing the
 * definition. */
static json_t *ref_str(gen_t *g, const char *name)
{
    need(g, name);
    return json_sprintf("%s%s", g->v3 ? V3_REF : V2_REF, name);
}

/* {"$ref": ref_str(name)}. */
static json_t *ref_to(gen_t *g, const char *name)
{
    return json_pack("{s:o}", "$ref", ref_str(g, name));
}

static int key_in(const char *key, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(key, *set)) return 1;
    return 0;
}

/* Keys Swagger 2.0 has no words for: the value they constrain goes unchecked. */
static const char *const v2_dropped[] = {"allOf", "anyOf", "oneOf", "not", "nullable", NULL};
static const char *const sub_schema_lists[] = {"allOf", "anyOf", "oneOf", NULL};

static json_t *conv(gen_t *g, const json_t *in, int depth);

/* Add the fields Kubernetes gives every object of a kind (apiVersion, kind,
 * metadata) to converted properties `props`, where absent. */
static void add_meta_fields(gen_t *g, json_t *props)
{
    if (!json_object_get(props, "apiVersion"))
        put(g, props, "apiVersion", json_pack("{s:s}", "type", "string"));
    if (!json_object_get(props, "kind"))
        put(g, props, "kind", json_pack("{s:s}", "type", "string"));
    if (!json_object_get(props, "metadata"))
        put(g, props, "metadata", ref_to(g, META_V1 "ObjectMeta"));
}

/* Append "kind" and "apiVersion" to required list `req` where absent. */
static void add_required(gen_t *g, json_t *req)
{
    static const char *const names[] = {"kind", "apiVersion"};
    for (int n = 0; n < 2; n++) {
        size_t i;
        json_t *x;
        int has = 0;
        json_array_foreach(req, i, x) has |= !strcmp(json_string_value(x) ?: "", names[n]);
        if (!has) append(g, req, json_string(names[n]));
    }
}

/* v2: the required names of `in` without those of nullable properties (a
 * null value counts as absent to kubectl 1.20). */
static json_t *v2_required(const json_t *in, const json_t *required)
{
    const json_t *props = json_object_get(in, "properties");
    json_t *out = json_array();
    size_t i;
    json_t *name;
    json_array_foreach(required, i, name) {
        const json_t *p = json_object_get(props, json_string_value(name) ?: "");
        if (json_is_true(json_object_get(p, "nullable"))) continue;
        if (json_array_append(out, name)) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* A copy of schema node `in` in this document's form (see FORMS above),
 * queuing every definition it references. Never NULL unless out of memory. */
static json_t *conv(gen_t *g, const json_t *in, int depth)
{
    if (!json_is_object(in) || depth > CONV_DEPTH_MAX) return json_object();
    int v2 = !g->v3;
    int nullable = json_is_true(json_object_get(in, "nullable"));
    int preserve = json_is_true(json_object_get(in, "x-kubernetes-preserve-unknown-fields"));
    int intstr = json_is_true(json_object_get(in, "x-kubernetes-int-or-string"));
    int open = v2 && (nullable || preserve); /* v2: no fields to check inside */
    json_t *out = json_object();
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)in, key, v) {
        json_t *c;
        if (!strcmp(key, "$ref")) continue; /* below, once the siblings are known */
        if (!strcmp(key, "properties")) {
            if (open || !json_is_object(v)) continue;
            c = json_object();
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) put(g, c, pk, conv(g, pv, depth + 1));
        } else if (!strcmp(key, "items")) {
            if (open || !json_is_object(v)) continue; /* tuple form: not structural */
            c = conv(g, v, depth + 1);
        } else if (!strcmp(key, "additionalProperties")) {
            if (open) continue;
            c = json_is_object(v) ? conv(g, v, depth + 1) : json_deep_copy(v);
        } else if (v2 && key_in(key, v2_dropped)) {
            continue;
        } else if (v2 && !strcmp(key, "type") && (nullable || intstr)) {
            continue;
        } else if (v2 && !strcmp(key, "required") && json_is_array(v)) {
            c = v2_required(in, v);
        } else if (!v2 && key_in(key, sub_schema_lists) && json_is_array(v)) {
            c = json_array();
            size_t i;
            json_t *sub;
            json_array_foreach(v, i, sub) append(g, c, conv(g, sub, depth + 1));
        } else if (!v2 && !strcmp(key, "not")) {
            c = conv(g, v, depth + 1);
        } else {
            c = json_deep_copy(v);
        }
        put(g, out, key, c);
    }
    /* Kubernetes' addEmbeddedProperties: an embedded resource declares and
     * requires apiVersion and kind, and has ObjectMeta, but in v2 where it
     * keeps unknown fields (kubectl would refuse them). */
    if (json_is_true(json_object_get(in, "x-kubernetes-embedded-resource")) && !open) {
        json_t *props = json_object_get(out, "properties");
        json_t *req = json_object_get(out, "required");
        if (!props && json_object_set_new(out, "properties", props = json_object()))
            g->rc = KP_ENOMEM; /* props is gone */
        else add_meta_fields(g, props);
        if (!json_is_array(req) && json_object_set_new(out, "required", req = json_array()))
            g->rc = KP_ENOMEM;
        else add_required(g, req);
    }
    if (v2) {
        /* kube-openapi (kubectl) rejects an array type without items. */
        const char *type = json_string_value(json_object_get(out, "type"));
        if (type && !strcmp(type, "array") && !json_object_get(out, "items"))
            json_object_del(out, "type");
    }
    const char *ref = json_string_value(json_object_get(in, "$ref"));
    if (ref && !strncmp(ref, V2_REF, sizeof V2_REF - 1)) {
        /* Any other reference cannot be followed: the node means any value. */
        const char *name = ref + sizeof V2_REF - 1;
        if (!v2 && json_object_size(out)) put(g, out, "allOf", json_pack("[o]", ref_to(g, name)));
        else put(g, out, "$ref", ref_str(g, name));
    }
    if (!out) g->rc = KP_ENOMEM;
    return out;
}

/* Convert every queued definition; those converted queue more. */
static void close_defs(gen_t *g)
{
    for (size_t i = 0; i < json_array_size(g->todo) && !g->rc; i++) {
        const char *name = json_string_value(json_array_get(g->todo, i));
        if (!json_is_null(json_object_get(g->defs, name))) continue;
        const json_t *def = api_schema_def(g->schema, name);
        put(g, g->defs, name, def ? conv(g, def, 0) : json_object());
    }
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A copy of object `obj` with its keys in sorted order. */
static json_t *sorted(gen_t *g, json_t *obj)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof *keys);
    json_t *out = json_object();
    if (!keys || !out) {
        free(keys);
        json_decref(out);
        g->rc = KP_ENOMEM;
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) keys[i++] = k;
    qsort(keys, n, sizeof *keys, cmp_names);
    for (i = 0; i < n; i++) put(g, out, keys[i], json_incref(json_object_get(obj, keys[i])));
    free(keys);
    return out;
}

/* "stable.example.com", "v1", "CronTab" -> "com.example.stable.v1.CronTab",
 * the name Kubernetes gives a custom kind's definition. */
static void crd_def_name(const char *group, const char *version, const char *kind, char *out,
                         size_t n)
{
    size_t w = 0;
    const char *end = group + strlen(group);
    while (end > group && w < n) {
        const char *dot = end;
        while (dot > group && dot[-1] != '.') dot--;
        int k = snprintf(out + w, n - w, "%.*s.", (int)(end - dot), dot);
        w = k < 0 ? n : w + (size_t)k;
        end = dot > group ? dot - 1 : group;
    }
    if (w < n) snprintf(out + w, n - w, "%s.%s", version, kind);
}

static json_t *gvk_json(const char *group, const char *version, const char *kind)
{
    return json_pack("{s:s, s:s, s:s}", "group", group, "kind", kind, "version", version);
}

/* The definition of a kind without facts: its CRD schema (or an object
 * preserving unknown fields) with the meta fields added, as Kubernetes builds
 * a custom kind's. */
static void add_custom_kind(gen_t *g, const api_resource_t *r, const char *name)
{
    int schemaless =
        !json_is_object(r->crd_schema) ||
        json_is_true(json_object_get(r->crd_schema, "x-kubernetes-preserve-unknown-fields"));
    if (!g->v3 && schemaless) {
        /* Kubernetes' buildKubeNative: v2 gives a kind that keeps unknown
         * fields no properties at all (not even the meta fields), as
         * kubectl would otherwise refuse every other field. */
        json_t *def = json_pack("{s:s, s:[o]}", "type", "object", "x-kubernetes-group-version-kind",
                                gvk_json(r->group, r->version, r->kind));
        if (!def) g->rc = KP_ENOMEM;
        else put(g, g->defs, name, def);
        return;
    }
    json_t *top = json_is_object(r->crd_schema)
                      ? json_deep_copy(r->crd_schema)
                      : json_pack("{s:s, s:b}", "type", "object",
                                  "x-kubernetes-preserve-unknown-fields", 1);
    json_t *props = json_object_get(top, "properties");
    if (!top || (!json_is_object(props) &&
                 json_object_set_new(top, "properties", props = json_object()))) {
        json_decref(top);
        g->rc = KP_ENOMEM;
        return;
    }
    /* In the facts' (v2) form; conv() rewrites it. metadata always refers
     * to ObjectMeta, whatever the CRD says of it. */
    put(g, props, "apiVersion", json_pack("{s:s}", "type", "string"));
    put(g, props, "kind", json_pack("{s:s}", "type", "string"));
    put(g, props, "metadata", json_pack("{s:s}", "$ref", V2_REF META_V1 "ObjectMeta"));
    if (!json_object_get(top, "type")) put(g, top, "type", json_string("object"));
    json_t *def = conv(g, top, 0);
    json_decref(top);
    put(g, def, "x-kubernetes-group-version-kind",
        json_pack("[o]", gvk_json(r->group, r->version, r->kind)));
    put(g, g->defs, name, def);
}

/* The list of a kind without facts, referring to definition `item`. */
static void add_custom_list(gen_t *g, const api_resource_t *r, const char *name,
                            const char *item)
{
    json_t *list = json_pack(
        "{s:[s], s:{s:{s:s}, s:{s:s, s:{s:s+}}, s:{s:s}, s:{s:s}}, s:s, s:[o]}", "required",
        "items", "properties", "apiVersion", "type", "string", "items", "type", "array",
        "items", "$ref", V2_REF, item, "kind", "type", "string", "metadata", "$ref",
        V2_REF META_V1 "ListMeta", "type", "object", "x-kubernetes-group-version-kind",
        gvk_json(r->group, r->version, r->list_kind));
    if (!list) {
        g->rc = KP_ENOMEM;
        return;
    }
    put(g, g->defs, name, conv(g, list, 0));
    json_decref(list);
}

/* ---- paths ---- */

typedef struct param {
    const char *name, *in, *type;
    int required;
} param_t;

enum {
    P_NAME, P_NAMESPACE, P_PRETTY, P_BOOKMARKS, P_CONTINUE, P_FIELDSEL, P_LABELSEL, P_LIMIT,
    P_RV, P_RVMATCH, P_INITIAL, P_TIMEOUT, P_WATCH, P_DRYRUN, P_MANAGER, P_VALIDATION, P_FORCE,
    P_GRACE, P_ORPHAN, P_PROPAGATION,
};
#define P_END (-1)

static const param_t params[] = {
    [P_NAME] = {"name", "path", "string", 1},
    [P_NAMESPACE] = {"namespace", "path", "string", 1},
    [P_PRETTY] = {"pretty", "query", "string", 0},
    [P_BOOKMARKS] = {"allowWatchBookmarks", "query", "boolean", 0},
    [P_CONTINUE] = {"continue", "query", "string", 0},
    [P_FIELDSEL] = {"fieldSelector", "query", "string", 0},
    [P_LABELSEL] = {"labelSelector", "query", "string", 0},
    [P_LIMIT] = {"limit", "query", "integer", 0},
    [P_RV] = {"resourceVersion", "query", "string", 0},
    [P_RVMATCH] = {"resourceVersionMatch", "query", "string", 0},
    [P_INITIAL] = {"sendInitialEvents", "query", "boolean", 0},
    [P_TIMEOUT] = {"timeoutSeconds", "query", "integer", 0},
    [P_WATCH] = {"watch", "query", "boolean", 0},
    [P_DRYRUN] = {"dryRun", "query", "string", 0},
    [P_MANAGER] = {"fieldManager", "query", "string", 0},
    [P_VALIDATION] = {"fieldValidation", "query", "string", 0},
    [P_FORCE] = {"force", "query", "boolean", 0},
    [P_GRACE] = {"gracePeriodSeconds", "query", "integer", 0},
    [P_ORPHAN] = {"orphanDependents", "query", "boolean", 0},
    [P_PROPAGATION] = {"propagationPolicy", "query", "string", 0},
};

static json_t *param_json(gen_t *g, int i)
{
    const param_t *p = &params[i];
    json_t *o = g->v3 ? json_pack("{s:s, s:s, s:{s:s, s:b}}", "name", p->name, "in", p->in,
                                  "schema", "type", p->type, "uniqueItems", 1)
                      : json_pack("{s:s, s:s, s:s, s:b}", "in", p->in, "name", p->name, "type",
                                  p->type, "uniqueItems", 1);
    if (p->required) put(g, o, "required", json_true());
    if (!o) g->rc = KP_ENOMEM;
    return o;
}

enum { BODY_NONE, BODY_OBJECT, BODY_PATCH, BODY_DELETE };
enum { REPLY_OBJECT, REPLY_LIST, REPLY_STATUS };
enum { C200 = 1, C201 = 2, C202 = 4 };

/* One operation kind: how it appears under its path. */
typedef struct op_def {
    const char *method; /* key in the path item */
    const char *action; /* x-kubernetes-action */
    const char *verb;   /* operationId prefix */
    int body, reply;
    unsigned codes;
    const signed char *params; /* P_END-terminated */
    unsigned needs;            /* the row's verb (API_V_*) it is listed for */
} op_def_t;

static const signed char list_params[] = {P_BOOKMARKS, P_CONTINUE, P_FIELDSEL, P_LABELSEL,
                                          P_LIMIT,     P_RV,       P_RVMATCH,  P_INITIAL,
                                          P_TIMEOUT,   P_WATCH,    P_END};
static const signed char write_params[] = {P_DRYRUN, P_MANAGER, P_VALIDATION, P_END};
static const signed char patch_params[] = {P_DRYRUN, P_MANAGER, P_VALIDATION, P_FORCE, P_END};
static const signed char delete_params[] = {P_DRYRUN, P_GRACE, P_ORPHAN, P_PROPAGATION, P_END};
static const signed char deletecoll_params[] = {
    P_CONTINUE, P_DRYRUN, P_FIELDSEL,   P_GRACE, P_LABELSEL, P_LIMIT, P_ORPHAN,
    P_PROPAGATION, P_RV,  P_RVMATCH, P_INITIAL, P_TIMEOUT, P_END};
static const signed char no_params[] = {P_END};

static const op_def_t op_list = {"get", "list", "list", BODY_NONE, REPLY_LIST, C200, list_params,
                                 API_V_LIST};
static const op_def_t op_create = {"post", "post", "create", BODY_OBJECT, REPLY_OBJECT,
                                   C200 | C201 | C202, write_params, API_V_CREATE};
static const op_def_t op_deletecoll = {"delete", "deletecollection", "deleteCollection",
                                       BODY_DELETE, REPLY_STATUS, C200, deletecoll_params,
                                       API_V_DELETECOLLECTION};
static const op_def_t op_read = {"get", "get", "read", BODY_NONE, REPLY_OBJECT, C200, no_params,
                                 API_V_GET};
static const op_def_t op_replace = {"put", "put", "replace", BODY_OBJECT, REPLY_OBJECT,
                                    C200 | C201, write_params, API_V_UPDATE};
static const op_def_t op_patch = {"patch", "patch", "patch", BODY_PATCH, REPLY_OBJECT,
                                  C200 | C201, patch_params, API_V_PATCH};
static const op_def_t op_delete = {"delete", "delete", "delete", BODY_DELETE, REPLY_STATUS,
                                   C200 | C202, delete_params, API_V_DELETE};

static const char *const patch_types[] = {
    "application/json-patch+json", "application/merge-patch+json",
    "application/strategic-merge-patch+json", "application/apply-patch+yaml", NULL};

/* What a path's operations act on. */
typedef struct target {
    const char *group, *version, *kind; /* x-kubernetes-group-version-kind */
    const char *object_def;             /* the object read and written */
    const char *list_def;               /* what list returns; NULL: no list */
    const char *tag;                    /* "apps_v1" */
    int strategic;                      /* strategic merge patch served */
} target_t;

/* {"$ref": ...} to what operation `op` takes as its body (reply 0) or
 * answers with (reply 1). */
static json_t *schema_of(gen_t *g, const op_def_t *op, const target_t *t, int reply)
{
    if (reply && op->reply == REPLY_STATUS) return ref_to(g, META_V1 "Status");
    if (reply && op->reply == REPLY_LIST) return ref_to(g, t->list_def);
    if (!reply && op->body == BODY_PATCH) return ref_to(g, META_V1 "Patch");
    if (!reply && op->body == BODY_DELETE) return ref_to(g, META_V1 "DeleteOptions");
    return ref_to(g, t->object_def);
}

/* v3 content: {"<type>": {"schema": schema}} for each of `types`; steals schema. */
static json_t *media(gen_t *g, const char *const *types, json_t *schema)
{
    json_t *content = json_object();
    for (; *types; types++) put(g, content, *types, json_pack("{s:O}", "schema", schema));
    json_decref(schema);
    return content;
}

static json_t *responses(gen_t *g, const op_def_t *op, const target_t *t)
{
    static const struct {
        unsigned bit;
        const char *code, *text;
    } codes[] = {{C200, "200", "OK"}, {C201, "201", "Created"}, {C202, "202", "Accepted"}};
    static const char *const json_only[] = {"application/json", NULL};
    json_t *out = json_object();
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        if (!(op->codes & codes[i].bit)) continue;
        json_t *schema = schema_of(g, op, t, 1);
        put(g, out, codes[i].code,
            g->v3 ? json_pack("{s:s, s:o}", "description", codes[i].text, "content",
                              media(g, json_only, schema))
                  : json_pack("{s:s, s:o}", "description", codes[i].text, "schema", schema));
    }
    put(g, out, "401", json_pack("{s:s}", "description", "Unauthorized"));
    return out;
}

static json_t *op_json(gen_t *g, const op_def_t *op, const target_t *t, const char *opid)
{
    static const char *const any[] = {"*/*", NULL};
    const char *const *consumes = op->body == BODY_PATCH ? patch_types : any;
    const char *smp_less[5];
    if (op->body == BODY_PATCH && !t->strategic) {
        size_t n = 0;
        for (const char *const *p = patch_types; *p; p++)
            if (!strstr(*p, "strategic")) smp_less[n++] = *p;
        smp_less[n] = NULL;
        consumes = smp_less;
    }
    json_t *o = json_object();
    put(g, o, "tags", json_pack("[s]", t->tag));
    put(g, o, "operationId", json_string(opid));
    if (!g->v3) {
        json_t *c = json_array();
        for (const char *const *p = consumes; *p; p++) append(g, c, json_string(*p));
        put(g, o, "consumes", c);
        put(g, o, "produces", json_pack("[s]", "application/json"));
        put(g, o, "schemes", json_pack("[s]", "https"));
    }
    json_t *ps = json_array();
    if (!g->v3 && op->body != BODY_NONE)
        append(g, ps,
               json_pack("{s:s, s:s, s:b, s:o}", "in", "body", "name", "body", "required",
                         op->body != BODY_DELETE, "schema", schema_of(g, op, t, 0)));
    for (const signed char *p = op->params; *p != P_END; p++) append(g, ps, param_json(g, *p));
    put(g, o, "parameters", ps);
    if (g->v3 && op->body != BODY_NONE)
        put(g, o, "requestBody",
            json_pack("{s:o, s:b}", "content", media(g, consumes, schema_of(g, op, t, 0)),
                      "required", op->body != BODY_DELETE));
    put(g, o, "responses", responses(g, op, t));
    put(g, o, "x-kubernetes-action", json_string(op->action));
    put(g, o, "x-kubernetes-group-version-kind", gvk_json(t->group, t->version, t->kind));
    return o;
}

/* Add path `path` with operations `ops` (NULL-terminated), path-level
 * parameters `pp`, operation ids "<verb><id>" (id: "AppsV1NamespacedDeployment"). */
static void add_path(gen_t *g, const char *path, const target_t *t, const op_def_t *const *ops,
                     const signed char *pp, const char *id)
{
    json_t *item = json_object();
    for (; *ops; ops++) {
        char opid[NAME_LEN];
        snprintf(opid, sizeof opid, "%s%s", (*ops)->verb, id);
        put(g, item, (*ops)->method, op_json(g, *ops, t, opid));
    }
    json_t *ps = json_array();
    for (; *pp != P_END; pp++) append(g, ps, param_json(g, *pp));
    put(g, item, "parameters", ps);
    put(g, g->paths, path, item);
}

/* snprintf for names built from bounded parts (group, version, kind,
 * resource: each far shorter than NAME_LEN); a cut name would only be an
 * odd path or operation id. */
static void name_fmt(char *buf, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void name_fmt(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

/* "coordination.k8s.io" -> "Coordination", "stable.example.com" ->
 * "StableExampleCom", "" -> "Core": the group as operation ids spell it. */
static void group_camel(const char *group, char *out, size_t n)
{
    if (!*group) group = "core";
    size_t len = strlen(group), w = 0;
    static const char suffix[] = ".k8s.io";
    if (len > sizeof suffix - 1 && !strcmp(group + len - (sizeof suffix - 1), suffix))
        len -= sizeof suffix - 1;
    int up = 1;
    for (size_t i = 0; i < len && w + 1 < n; i++) {
        char c = group[i];
        if (c == '.' || c == '-') {
            up = 1;
            continue;
        }
        out[w++] = up && c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
        up = 0;
    }
    out[w] = '\0';
}

/* The operations of `ops` (NULL-terminated) whose verb r's row lists, into
 * `out` (room for every one and the NULL); how many. */
static size_t served_ops(const api_resource_t *r, const op_def_t *const *ops,
                         const op_def_t **out)
{
    size_t n = 0;
    for (; *ops; ops++)
        if (r->verbs & (*ops)->needs) out[n++] = *ops;
    out[n] = NULL;
    return n;
}

/* The kind's definitions, then the paths of the verbs it serves (a
 * create-only or read-only resource has only those, as in Kubernetes). */
static void add_resource(gen_t *g, const api_resource_t *r)
{
    char kind_def[NAME_LEN], list_def[NAME_LEN] = "";
    const char *kn = NULL, *ln = NULL;
    int lists = (r->verbs & API_V_LIST) != 0; /* else there may be no List kind */
    int builtin = !r->crd_schema &&
                  api_schema_kind(g->schema, r->group, r->version, r->kind, &kn) &&
                  (!lists || api_schema_kind(g->schema, r->group, r->version, r->list_kind, &ln));
    if (builtin) {
        snprintf(kind_def, sizeof kind_def, "%s", kn);
        need(g, kind_def);
        if (lists) {
            snprintf(list_def, sizeof list_def, "%s", ln);
            need(g, list_def);
        }
    } else {
        crd_def_name(r->group, r->version, r->kind, kind_def, sizeof kind_def);
        crd_def_name(r->group, r->version, r->list_kind, list_def, sizeof list_def);
        add_custom_kind(g, r, kind_def);
        add_custom_list(g, r, list_def, kind_def);
    }

    char camel[NAME_LEN], version[64], tag[NAME_LEN], prefix[NAME_LEN];
    group_camel(r->group, camel, sizeof camel);
    snprintf(version, sizeof version, "%s", r->version);
    if (version[0] >= 'a' && version[0] <= 'z') version[0] = (char)(version[0] - 'a' + 'A');
    name_fmt(tag, sizeof tag, "%c%s_%s",
             camel[0] >= 'A' && camel[0] <= 'Z' ? camel[0] - 'A' + 'a' : camel[0],
             camel[0] ? camel + 1 : "", r->version);
    if (*r->group) snprintf(prefix, sizeof prefix, "/apis/%s/%s", r->group, r->version);
    else snprintf(prefix, sizeof prefix, "/api/%s", r->version);

    /* Custom kinds take no strategic merge patch, as in Kubernetes. */
    target_t t = {r->group, r->version, r->kind, kind_def, list_def, tag, builtin};
    const char *scope = r->namespaced ? "Namespaced" : "";
    char coll[NAME_LEN + 64], item[NAME_LEN + 80], id[NAME_LEN + 64];
    if (r->namespaced)
        snprintf(coll, sizeof coll, "%s/namespaces/{namespace}/%s", prefix, r->resource);
    else snprintf(coll, sizeof coll, "%s/%s", prefix, r->resource);
    static const signed char coll_pp_ns[] = {P_NAMESPACE, P_PRETTY, P_END};
    static const signed char item_pp_ns[] = {P_NAME, P_NAMESPACE, P_PRETTY, P_END};
    static const signed char coll_pp[] = {P_PRETTY, P_END};
    static const signed char item_pp[] = {P_NAME, P_PRETTY, P_END};
    const signed char *cpp = r->namespaced ? coll_pp_ns : coll_pp;
    const signed char *ipp = r->namespaced ? item_pp_ns : item_pp;

    static const op_def_t *const coll_ops[] = {&op_list, &op_create, &op_deletecoll, NULL};
    static const op_def_t *const item_ops[] = {&op_read, &op_replace, &op_patch, &op_delete,
                                               NULL};
    static const op_def_t *const sub_ops[] = {&op_read, &op_replace, &op_patch, NULL};
    static const op_def_t *const all_ops[] = {&op_list, NULL};

    const op_def_t *sel[8];
    name_fmt(id, sizeof id, "%s%s%s%s", camel, version, scope, r->kind);
    if (served_ops(r, coll_ops, sel)) add_path(g, coll, &t, sel, cpp, id);
    name_fmt(item, sizeof item, "%s/{name}", coll);
    if (served_ops(r, item_ops, sel)) add_path(g, item, &t, sel, ipp, id);
    if (r->namespaced && lists) {
        char all[NAME_LEN + 64];
        name_fmt(all, sizeof all, "%s/%s", prefix, r->resource);
        name_fmt(id, sizeof id, "%s%s%sForAllNamespaces", camel, version, r->kind);
        add_path(g, all, &t, all_ops, coll_pp, id);
    }
    char sub[NAME_LEN + 96];
    if (r->subresources & API_SUB_STATUS) {
        name_fmt(sub, sizeof sub, "%s/status", item);
        name_fmt(id, sizeof id, "%s%s%s%sStatus", camel, version, scope, r->kind);
        add_path(g, sub, &t, sub_ops, ipp, id);
    }
    if (r->subresources & API_SUB_SCALE) {
        target_t s = {"autoscaling", "v1", "Scale", SCALE_DEF, NULL, tag, 1};
        name_fmt(sub, sizeof sub, "%s/scale", item);
        name_fmt(id, sizeof id, "%s%s%s%sScale", camel, version, scope, r->kind);
        add_path(g, sub, &s, sub_ops, ipp, id);
    }
}

/* ---- documents ---- */

/* Build the v2 document (v3 0, group NULL: every resource of view `v`) or
 * the v3 document of one group-version. KP_ENOTFOUND: no resource in it. */
static int build(const api_schema_t *schema, const api_view_t *v, int v3, const char *group,
                 const char *version, json_t **out)
{
    *out = NULL;
    gen_t g = {schema, v3, json_object(), json_array(), json_object(), 0};
    if (!g.defs || !g.todo || !g.paths) g.rc = KP_ENOMEM;
    int any = 0;
    for (size_t i = 0; i < v->count && !g.rc; i++) {
        const api_resource_t *r = v->res[i];
        if (group && (strcmp(r->group, group) || strcmp(r->version, version))) continue;
        add_resource(&g, r);
        any = 1;
    }
    close_defs(&g);
    json_t *defs = g.rc ? NULL : sorted(&g, g.defs);
    json_t *doc = NULL;
    if (!g.rc && !any && group) g.rc = KP_ENOTFOUND;
    if (!g.rc) {
        doc = v3 ? json_pack("{s:s, s:{s:s, s:s}, s:O, s:{s:O}}", "openapi", "3.0.0", "info",
                             "title", OPENAPI_TITLE, "version", OPENAPI_VERSION, "paths", g.paths,
                             "components", "schemas", defs)
                 : json_pack("{s:s, s:{s:s, s:s}, s:O, s:O}", "swagger", "2.0", "info", "title",
                             OPENAPI_TITLE, "version", OPENAPI_VERSION, "paths", g.paths,
                             "definitions", defs);
        if (!doc) g.rc = KP_ENOMEM;
    }
    json_decref(defs);
    json_decref(g.defs);
    json_decref(g.todo);
    json_decref(g.paths);
    if (g.rc) {
        json_decref(doc);
        return g.rc;
    }
    *out = doc;
    return 0;
}

int api_openapi_v2(const api_schema_t *schema, const api_view_t *view, json_t **out)
{
    return build(schema, view, 0, NULL, NULL, out);
}

/* "api/v1" or "apis/<group>/<version>". */
static void gv_path(const api_resource_t *r, char *buf, size_t n)
{
    if (*r->group) snprintf(buf, n, "apis/%s/%s", r->group, r->version);
    else snprintf(buf, n, "api/%s", r->version);
}

/* FNV-1a, 64 bits: a change detector for kubectl's cache, not a defence
 * against anyone. */
static uint64_t digest(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static int v3_root(const api_schema_t *schema, const api_view_t *v, json_t **out)
{
    *out = NULL;
    json_t *paths = json_object();
    if (!paths) return KP_ENOMEM;
    int rc = 0;
    for (size_t i = 0; i < v->count && !rc; i++) {
        const api_resource_t *r = v->res[i];
        char key[NAME_LEN], url[NAME_LEN + 64];
        gv_path(r, key, sizeof key);
        if (json_object_get(paths, key)) continue;
        json_t *doc;
        if ((rc = build(schema, v, 1, r->group, r->version, &doc))) break;
        char *text = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        if (!text) {
            rc = KP_ENOMEM;
            break;
        }
        snprintf(url, sizeof url, "/openapi/v3/%s?hash=%016llX", key,
                 (unsigned long long)digest(text, strlen(text)));
        free(text);
        if (json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url)))
            rc = KP_ENOMEM;
    }
    if (rc) {
        json_decref(paths);
        return rc;
    }
    *out = json_pack("{s:o}", "paths", paths);
    return *out ? 0 : KP_ENOMEM;
}

/* Accept names the gnostic protobuf form (either spelling). */
static int wants_protobuf(const char *accept)
{
    return accept && strstr(accept, "com.github.proto-openapi.spec.v2") &&
           strstr(accept, "protobuf");
}

static int serve_v2(api_req_t *r)
{
    json_t *doc;
    int rc = api_openapi_v2(r->srv->schema, r->view, &doc);
    if (rc) return api_reply_error(r, rc, NULL, "building the OpenAPI document: %s", err_str(rc));
    if (!wants_protobuf(api_header(r, "Accept"))) return api_reply_json(r, 200, doc);
    buf_t b;
    buf_init(&b, PB_DOC_MAX);
    rc = api_openapi_v2_protobuf(doc, &b);
    json_decref(doc);
    if (!rc) rc = api_reply_bytes(r, 200, PB_CTYPE, b.p, b.len);
    else rc = api_reply_error(r, rc, NULL, "encoding the OpenAPI document: %s", err_str(rc));
    buf_free(&b);
    return rc;
}

/* Split "/openapi/v3/api/<v>" or "/openapi/v3/apis/<g>/<v>" (no further
 * segment). 0 on success. */
static int parse_gv(const char *p, char *group, size_t gn, char *version, size_t vn)
{
    static const char core[] = "/openapi/v3/api/", apis[] = "/openapi/v3/apis/";
    const char *v;
    if (!strncmp(p, core, sizeof core - 1)) {
        group[0] = '\0';
        v = p + sizeof core - 1;
    } else if (!strncmp(p, apis, sizeof apis - 1)) {
        const char *g = p + sizeof apis - 1, *slash = strchr(g, '/');
        if (!slash || slash == g || (size_t)(slash - g) >= gn) return KP_ENOTFOUND;
        memcpy(group, g, (size_t)(slash - g));
        group[slash - g] = '\0';
        v = slash + 1;
    } else {
        return KP_ENOTFOUND;
    }
    size_t n = strlen(v);
    if (!n || n >= vn || strchr(v, '/')) return KP_ENOTFOUND;
    memcpy(version, v, n + 1);
    return 0;
}

/* A group-version's v3 document (doc consumed), as kube-openapi's handler3
 * serves it: its digest is its ETag; asked for by the digest the root lists
 * (?hash=), it is immutable (kubectl keeps it in its HTTP cache instead of
 * fetching it again); asked by another digest, a 301 to the current one. */
static int reply_group_version(api_req_t *r, json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
    char hash[24], etag[32];
    snprintf(hash, sizeof hash, "%016llX", (unsigned long long)digest(text, strlen(text)));
    snprintf(etag, sizeof etag, "\"%s\"", hash);
    const char *want = api_query(r, "hash");
    if (want && *want && strcmp(want, hash)) {
        free(text);
        char url[1024];
        snprintf(url, sizeof url, "%s?hash=%s", r->path, hash);
        const char *hdrs[] = {"Location", url, NULL};
        char *body = strdup("<a href=\"\">Moved Permanently</a>.\n");
        if (!body) return api_reply_status(r, 500, "InternalError", NULL, "out of memory");
        return api_reply_take_with(r, 301, "text/html; charset=utf-8", body, strlen(body), hdrs);
    }
    char expires[64] = "";
    if (want && *want) { /* a year from now, as Kubernetes says "never" */
        time_t t = time(NULL) + 365 * 24 * 3600;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(expires, sizeof expires, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    }
    const char *cached[] = {"ETag", etag, "Vary", "Accept", "Cache-Control", "public, immutable",
                            "Expires", expires, NULL};
    const char *plain[] = {"ETag", etag, "Vary", "Accept", NULL};
    return api_reply_take_with(r, 200, "application/json", text, strlen(text),
                               *expires ? cached : plain);
}

int api_serve_openapi(api_req_t *r)
{
    const char *p = r->path;
    if (!strcmp(p, "/openapi/v2")) return serve_v2(r);
    json_t *doc = NULL;
    int rc = KP_ENOTFOUND;
    char group[256], version[64];
    if (!strcmp(p, "/openapi/v3") || !strcmp(p, "/openapi/v3/"))
        rc = v3_root(r->srv->schema, r->view, &doc);
    else if (!parse_gv(p, group, sizeof group, version, sizeof version))
        rc = build(r->srv->schema, r->view, 1, group, version, &doc);
    if (rc == KP_ENOTFOUND)
        return api_reply_status(r, 404, "NotFound", NULL,
                                "the server could not find the requested resource");
    if (rc) return api_reply_error(r, rc, NULL, "building the OpenAPI document: %s", err_str(rc));
    if (!doc || !strcmp(p, "/openapi/v3") || !strcmp(p, "/openapi/v3/"))
        return api_reply_json(r, 200, doc);
    return reply_group_version(r, doc);
}
