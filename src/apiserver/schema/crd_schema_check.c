/*
 * crd_schema_check.c -- api_crd_schema_check(): is a CRD version's
 * openAPIV3Schema acceptable, as the apiextensions server decides on a CRD
 * create or update. Kept apart from crd_schema.c because it judges the
 * schema, not an object: it has its own walks, messages and ordering, and
 * borrows from the object side only pruning and validation (for defaults)
 * and the shared helpers of crd_schema_int.h.
 *
 * Passes, in Kubernetes' order:
 *   0. the root may not be nullable (appended first);
 *   1. structural (st_*): ValidateStructural, patterns that compile, then
 *      the completeness of the root's junctors; these causes are collected
 *      apart and sorted by "field: message", as Go sorts them;
 *   2. defaults (def_*), only when pass 1 found nothing: each default is
 *      what pruning leaves of it and is valid against its own node;
 *   3. the OpenAPI subset (oa_*): forbidden keywords, defaults where they
 *      may not be, and the x-kubernetes-list-type / list-map-keys /
 *      map-type rules, in visit order.
 * Messages follow invariant 1 of crd_schema.c.
 */
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/schema/crd_schema.h"
#include "apiserver/schema/crd_schema_int.h"
#include "apiserver/schema/object.h"

/* ---- checking a CRD's schema ---- */

enum { LVL_ROOT, LVL_ITEM, LVL_FIELD };

typedef struct sctx {
    json_t *causes;     /* API validation causes, in visit order */
    json_t *structural; /* structural causes; sorted before they are added */
    api__crd_path_t p;  /* the current node's path */
} sctx_t;

/* A cause at p + sub: "<message>" composed by the caller. */
static void __attribute__((noinline, format(printf, 5, 6)))
s_add(json_t *to, const api__crd_path_t *p, const char *sub, const char *reason, const char *fmt,
      ...)
{
    char field[API__CRD_PATH_CAP + 256], m[API__CRD_MSG_CAP];
    va_list ap;
    snprintf(field, sizeof field, "%s%s", p->s, sub);
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    api_cause(to, reason, field, "%s", m);
}

#define QCAP 256 /* a quoted type or keyword value */

static int type_is(const json_t *s, const char *t)
{
    return !strcmp(api__crd_jstr(s, "type"), t);
}

/* [intOrString anyOf] [{type: integer}, {type: string}], exactly. */
static int ios_anyof(const json_t *s)
{
    const json_t *a = json_object_get(s, "anyOf");
    return json_array_size(a) == 2 && json_object_size(json_array_get(a, 0)) == 1 &&
           json_object_size(json_array_get(a, 1)) == 1 &&
           type_is(json_array_get(a, 0), "integer") && type_is(json_array_get(a, 1), "string");
}

/* A value with Go's zero meaning: absent, null, false, "", [] or {}. */
static int zero(const json_t *v)
{
    return !v || json_is_null(v) || json_is_false(v) ||
           (json_is_string(v) && !*json_string_value(v)) ||
           (json_is_array(v) && !json_array_size(v)) || (json_is_object(v) && !json_object_size(v));
}

/* Root metadata may say nothing but its type, a default (checked apart) and
 * the properties name and/or generateName. */
static int meta_names_only(const json_t *m)
{
    const char *k;
    const json_t *v, *x;
    json_object_foreach((json_t *)m, k, v) {
        if (!strcmp(k, "properties") && json_is_object(v)) {
            const char *pk;
            json_object_foreach((json_t *)v, pk, x)
                if (strcmp(pk, "name") && strcmp(pk, "generateName")) return 0;
        } else if (strcmp(k, "type") && strcmp(k, "default") && strcmp(k, "example") &&
                   strcmp(k, "externalDocs") && !zero(v)) {
            return 0;
        }
    }
    return 1;
}

static void st_nested(sctx_t *sc, const json_t *v, int lvl, int skip_anyof);

/* A pattern must compile (as RE2 would; see crd_schema_re.c). */
static void __attribute__((noinline)) st_pattern(sctx_t *sc, const char *pat)
{
    regex_t re;
    char err[512], qp[API__CRD_MSG_CAP / 2];
    if (!api__crd_re_compile(pat, &re, err, sizeof err))
        regfree(&re);
    else
        s_add(sc->structural, &sc->p, ".pattern", "FieldValueInvalid",
              "Invalid value: %s: must be a valid regular expression, but isn't: %s",
              api__crd_q(qp, sizeof qp, pat), err);
}

/* validateValueValidation: the junctors below a node, and its pattern. */
static void st_junctors(sctx_t *sc, const json_t *s, int lvl, int skip_anyof, int skip_allof0)
{
    static const char *const keys[] = {"anyOf", "allOf", "oneOf"};
    const json_t *b;
    const char *pat = api__crd_jstr(s, "pattern");
    size_t i, mark;
    for (int k = 0; k < 3; k++) {
        json_array_foreach(k || !skip_anyof ? json_object_get(s, keys[k]) : NULL, i, b) {
            mark = api__crd_path_add(&sc->p, ".%s[%zu]", keys[k], i);
            st_nested(sc, b, lvl, k == 1 && i == 0 && skip_allof0);
            api__crd_path_cut(&sc->p, mark);
        }
    }
    if (api__crd_jobj(s, "not")) {
        mark = api__crd_path_add(&sc->p, ".not");
        st_nested(sc, api__crd_jobj(s, "not"), lvl, 0);
        api__crd_path_cut(&sc->p, mark);
    }
    if (*pat) st_pattern(sc, pat);
}

/* validateNestedValueValidation: inside allOf/anyOf/oneOf/not only value
 * validations may appear (properties and items to reach deeper values). */
static void st_nested(sctx_t *sc, const json_t *v, int lvl, int skip_anyof)
{
    static const char *const forbid[][2] = {
        {"type", "must be empty"},
        {"additionalProperties", "must be undefined"},
        {"default", "must be undefined"},
        {"title", "must be empty"},
        {"description", "must be empty"},
        {"nullable", "must be false"},
        {"x-kubernetes-preserve-unknown-fields", "must be false"},
        {"x-kubernetes-embedded-resource", "must be false"},
        {"x-kubernetes-int-or-string", "must be false"},
        {"x-kubernetes-list-map-keys", "must be empty"},
        {"x-kubernetes-list-type", "must be undefined"},
        {"x-kubernetes-map-type", "must be undefined"},
        {"x-kubernetes-validations", "must be empty"},
    };
    const char *k;
    const json_t *x;
    char sub[64];
    size_t mark;
    if (!json_is_object(v)) return;
    st_junctors(sc, v, lvl, skip_anyof, 0);
    if (api__crd_jobj(v, "items")) {
        mark = api__crd_path_add(&sc->p, ".items");
        st_nested(sc, api__crd_jobj(v, "items"), lvl, 0);
        api__crd_path_cut(&sc->p, mark);
    }
    json_object_foreach((json_t *)api__crd_jobj(v, "properties"), k, x) {
        mark = api__crd_path_add(&sc->p, ".properties[%s]", k);
        st_nested(sc, x, LVL_FIELD, 0);
        api__crd_path_cut(&sc->p, mark);
    }
    for (size_t i = 0; i < sizeof forbid / sizeof *forbid; i++) {
        x = json_object_get(v, forbid[i][0]);
        int presence = i == 1 || i == 2 || i == 10 || i == 11; /* Go pointers, not values */
        if (presence ? !x || json_is_null(x) : zero(x)) continue;
        snprintf(sub, sizeof sub, ".%s", forbid[i][0]);
        s_add(sc->structural, &sc->p, sub, "FieldValueForbidden", "Forbidden: %s to be structural",
              forbid[i][1]);
    }
    if (json_object_get(api__crd_jobj(v, "properties"), "metadata"))
        s_add(sc->structural, &sc->p, ".properties[metadata]", "FieldValueForbidden",
              "Forbidden: must not be specified in a nested context");
}

/* Type set or not: Required when empty, Invalid (showing it) otherwise. */
static void st_type(json_t *to, const api__crd_path_t *p, const char *sub, const char *type,
                    const char *detail)
{
    char qt[QCAP];
    if (!*type)
        s_add(to, p, sub, "FieldValueRequired", "Required value: %s", detail);
    else
        s_add(to, p, sub, "FieldValueInvalid", "Invalid value: %s: %s",
              api__crd_q(qt, sizeof qt, type), detail);
}

/* validateStructuralInvariants at one node of the structural skeleton. */
static void st_node(sctx_t *sc, const json_t *s, int lvl)
{
    static const char *const empty[] = {"must not be empty at the root",
                                        "must not be empty for specified array items",
                                        "must not be empty for specified object fields"};
    const char *type = api__crd_jstr(s, "type"), *k;
    const json_t *items = json_object_get(s, "items"), *props = api__crd_jobj(s, "properties"), *x;
    const json_t *ap = json_object_get(s, "additionalProperties"),
                 *allof = json_object_get(s, "allOf");
    int ios = api__crd_jtrue(s, "x-kubernetes-int-or-string"),
        emb = api__crd_jtrue(s, "x-kubernetes-embedded-resource");
    int pres = api__crd_jtrue(s, "x-kubernetes-preserve-unknown-fields"),
        meta = lvl == LVL_ROOT || emb;
    char qt[QCAP];
    size_t mark;
    if (!strcmp(type, "array") && !items)
        s_add(sc->structural, &sc->p, ".items", "FieldValueRequired",
              "Required value: must be specified");
    if (json_is_object(items)) {
        mark = api__crd_path_add(&sc->p, ".items");
        st_node(sc, items, LVL_ITEM);
        api__crd_path_cut(&sc->p, mark);
    }
    json_object_foreach((json_t *)props, k, x) {
        mark = api__crd_path_add(&sc->p, ".properties[%s]", k);
        st_node(sc, x, LVL_FIELD);
        api__crd_path_cut(&sc->p, mark);
    }
    if (ap && !json_is_null(ap) && lvl == LVL_ROOT)
        s_add(sc->structural, &sc->p, ".additionalProperties", "FieldValueForbidden",
              "Forbidden: must not be used at the root");
    if (json_is_object(ap)) {
        mark = api__crd_path_add(&sc->p, ".additionalProperties");
        st_node(sc, ap, LVL_FIELD);
        api__crd_path_cut(&sc->p, mark);
    }
    if (ios && pres)
        s_add(sc->structural, &sc->p, ".x-kubernetes-preserve-unknown-fields", "FieldValueInvalid",
              "Invalid value: true: must be false if x-kubernetes-int-or-string is true");
    if (ios && emb)
        s_add(sc->structural, &sc->p, ".x-kubernetes-embedded-resource", "FieldValueInvalid",
              "Invalid value: true: must be false if x-kubernetes-int-or-string is true");
    st_junctors(sc, s, lvl, ios_anyof(s),
                json_array_size(allof) && ios_anyof(json_array_get(allof, 0)));
    if (emb && strcmp(type, "object"))
        st_type(sc->structural, &sc->p, ".type", type,
                "must be object if x-kubernetes-embedded-resource is true");
    else if (!*type && !ios && !pres)
        s_add(sc->structural, &sc->p, ".type", "FieldValueRequired", "Required value: %s",
              empty[lvl]);
    if (emb && ap && !json_is_null(ap))
        s_add(sc->structural, &sc->p, ".additionalProperties", "FieldValueForbidden",
              "Forbidden: must not be used if x-kubernetes-embedded-resource is set");
    if (lvl == LVL_ROOT && *type && strcmp(type, "object"))
        s_add(sc->structural, &sc->p, ".type", "FieldValueInvalid",
              "Invalid value: %s: must be object at the root", api__crd_q(qt, sizeof qt, type));
    static const char *const tm[] = {"kind", "apiVersion"};
    for (int i = 0; i < 2 && meta; i++) {
        const json_t *f = api__crd_jobj(props, tm[i]);
        char sub[64];
        snprintf(sub, sizeof sub, ".properties[%s].type", tm[i]);
        if (f && !type_is(f, "string"))
            s_add(sc->structural, &sc->p, sub, "FieldValueInvalid",
                  "Invalid value: %s: must be string",
                  api__crd_q(qt, sizeof qt, api__crd_jstr(f, "type")));
    }
    if ((x = api__crd_jobj(props, "metadata"))) {
        if (meta && !type_is(x, "object"))
            s_add(sc->structural, &sc->p, ".properties[metadata].type", "FieldValueInvalid",
                  "Invalid value: %s: must be object",
                  api__crd_q(qt, sizeof qt, api__crd_jstr(x, "type")));
        if (lvl == LVL_ROOT && !meta_names_only(x))
            s_add(sc->structural, &sc->p, ".properties[metadata]", "FieldValueForbidden",
                  "Forbidden: must not specify anything other than name and generateName, but "
                  "metadata is implicitly specified");
    }
    if (emb && !pres && !json_object_size(props))
        s_add(sc->structural, &sc->p, ".properties", "FieldValueRequired",
              "Required value: must not be empty if x-kubernetes-embedded-resource is true without "
              "x-kubernetes-preserve-unknown-fields");
}

static void st_complete(sctx_t *sc, const json_t *v, const json_t *s, api__crd_path_t *vp);

static void st_complete_nested(sctx_t *sc, const json_t *b, const json_t *s, api__crd_path_t *vp);

/* One item schema (key NULL) or property named in a junctor: it must exist
 * in the structural node s too. */
static void st_complete_one(sctx_t *sc, const json_t *x, const json_t *s, api__crd_path_t *vp,
                            const char *key)
{
    const json_t *sub =
        key ? api__crd_jobj(api__crd_jobj(s, "properties"), key) : api__crd_jobj(s, "items");
    size_t ms = key ? api__crd_path_add(&sc->p, ".properties[%s]", key)
                    : api__crd_path_add(&sc->p, ".items");
    size_t mv =
        key ? api__crd_path_add(vp, ".properties[%s]", key) : api__crd_path_add(vp, ".items");
    if (!sub)
        s_add(sc->structural, &sc->p, "", "FieldValueRequired",
              "Required value: because it is defined in %s", vp->s);
    else
        st_complete_nested(sc, x, sub, vp);
    api__crd_path_cut(vp, mv);
    api__crd_path_cut(&sc->p, ms);
}

/* validateNestedValueValidationCompleteness: b, under junctor path vp, may
 * only name items and properties the structural node s (at sc->p) has. */
static void st_complete_nested(sctx_t *sc, const json_t *b, const json_t *s, api__crd_path_t *vp)
{
    const json_t *x;
    const char *k;
    st_complete(sc, b, s, vp);
    if (api__crd_jobj(b, "items")) st_complete_one(sc, api__crd_jobj(b, "items"), s, vp, NULL);
    json_object_foreach((json_t *)api__crd_jobj(b, "properties"), k, x)
        st_complete_one(sc, x, s, vp, k);
}

/* validateValueValidationCompleteness over v's junctors. Kubernetes applies
 * it to the root's junctors only, and so do we. */
static void st_complete(sctx_t *sc, const json_t *v, const json_t *s, api__crd_path_t *vp)
{
    static const char *const keys[] = {"allOf", "anyOf", "oneOf"};
    const json_t *b;
    size_t i, mark;
    if (api__crd_jobj(v, "not")) {
        mark = api__crd_path_add(vp, ".not");
        st_complete_nested(sc, api__crd_jobj(v, "not"), s, vp);
        api__crd_path_cut(vp, mark);
    }
    for (int k = 0; k < 3; k++) {
        json_array_foreach(json_object_get(v, keys[k]), i, b) {
            mark = api__crd_path_add(vp, ".%s[%zu]", keys[k], i);
            st_complete_nested(sc, b, s, vp);
            api__crd_path_cut(vp, mark);
        }
    }
}

/* Where defaults are forbidden: why ("in top-level metadata", ...), or NULL. */
typedef struct oaf {
    int root, inside_meta;
    const char *no_default;
} oaf_t;

/* []string{"a", "b"} as %#v prints x-kubernetes-list-map-keys. */
static void go_strings(api__crd_sb_t *b, const json_t *a)
{
    const json_t *x;
    size_t i;
    api__crd_sb_add(b, "[]string{");
    json_array_foreach(a, i, x) {
        api__crd_sb_add(b, "%s", i ? ", " : "");
        api__crd_go_quote(b, json_is_string(x) ? json_string_value(x) : "");
    }
    api__crd_sb_add(b, "}");
}

/* The list and map extensions of one node (ValidateCustomResourceDefinition-
 * OpenAPISchema and validateMapListKeysMapSet). */
static void __attribute__((noinline)) oa_lists(sctx_t *sc, const json_t *s)
{
    const char *type = api__crd_jstr(s, "type"), *lt = api__crd_jstr(s, "x-kubernetes-list-type");
    const char *mt = api__crd_jstr(s, "x-kubernetes-map-type");
    const json_t *items = json_object_get(s, "items"),
                 *keys = json_object_get(s, "x-kubernetes-list-map-keys"), *k;
    const json_t *is = api__crd_jobj(s, "items"), *iprops = api__crd_jobj(is, "properties");
    char qv[QCAP], ks[API__CRD_MSG_CAP / 2] = "", sub[API__CRD_PATH_CAP];
    api__crd_sb_t b = {ks, sizeof ks, 0};
    size_t i, j;
    int has_lt = json_object_get(s, "x-kubernetes-list-type") != NULL;
    go_strings(&b, keys);
    if (json_object_get(s, "x-kubernetes-map-type")) {
        if (strcmp(type, "object"))
            st_type(sc->causes, &sc->p, ".type", type,
                    "must be object if x-kubernetes-map-type is specified");
        if (strcmp(mt, "atomic") && strcmp(mt, "granular"))
            s_add(sc->causes, &sc->p, ".x-kubernetes-map-type", "FieldValueNotSupported",
                  "Unsupported value: %s: supported values: \"atomic\", \"granular\"",
                  api__crd_q(qv, sizeof qv, mt));
    }
    if (has_lt && strcmp(type, "array")) {
        st_type(sc->causes, &sc->p, ".type", type,
                "must be array if x-kubernetes-list-type is specified");
    } else if (!strcmp(lt, "set") && is) {
        const json_t *ilt = json_object_get(is, "x-kubernetes-list-type");
        if (type_is(is, "array") && ilt &&
            strcmp(api__crd_jstr(is, "x-kubernetes-list-type"), "atomic"))
            s_add(sc->causes, &sc->p, ".items.x-kubernetes-list-type", "FieldValueInvalid",
                  "Invalid value: %s: must be atomic as item of a list with "
                  "x-kubernetes-list-type=set",
                  api__crd_q(qv, sizeof qv, api__crd_jstr(is, "x-kubernetes-list-type")));
        if (type_is(is, "object") && strcmp(api__crd_jstr(is, "x-kubernetes-map-type"), "atomic"))
            s_add(sc->causes, &sc->p, ".items.x-kubernetes-map-type", "FieldValueInvalid",
                  "Invalid value: %s: must be atomic as item of a list with "
                  "x-kubernetes-list-type=set",
                  ilt ? api__crd_q(qv, sizeof qv, api__crd_jstr(is, "x-kubernetes-list-type"))
                      : "null");
    }
    if (has_lt && strcmp(lt, "atomic") && strcmp(lt, "set") && strcmp(lt, "map"))
        s_add(sc->causes, &sc->p, ".x-kubernetes-list-type", "FieldValueNotSupported",
              "Unsupported value: %s: supported values: \"atomic\", \"set\", \"map\"",
              api__crd_q(qv, sizeof qv, lt));
    if (json_array_size(keys) && !has_lt)
        s_add(sc->causes, &sc->p, ".x-kubernetes-list-type", "FieldValueRequired",
              "Required value: must be map if x-kubernetes-list-map-keys is non-empty");
    else if (json_array_size(keys) && strcmp(lt, "map"))
        s_add(sc->causes, &sc->p, ".x-kubernetes-list-type", "FieldValueInvalid",
              "Invalid value: %s: must be map if x-kubernetes-list-map-keys is non-empty",
              api__crd_q(qv, sizeof qv, lt));
    if (!strcmp(lt, "map")) {
        if (!json_array_size(keys))
            s_add(sc->causes, &sc->p, ".x-kubernetes-list-map-keys", "FieldValueRequired",
                  "Required value: must not be empty if x-kubernetes-list-type is map");
        if (!items)
            s_add(sc->causes, &sc->p, ".items", "FieldValueRequired",
                  "Required value: must have a schema if x-kubernetes-list-type is map");
        if (items && !is)
            s_add(sc->causes, &sc->p, ".items", "FieldValueInvalid",
                  "Invalid value: %s: must only have a single schema if x-kubernetes-list-type is "
                  "map",
                  json_is_array(items) ? "[]" : "null");
        if (is && !type_is(is, "object"))
            s_add(
                sc->causes, &sc->p, ".items.type", "FieldValueInvalid",
                "Invalid value: %s: must be object if parent array's x-kubernetes-list-type is map",
                api__crd_q(qv, sizeof qv, api__crd_jstr(is, "type")));
        json_array_foreach(type_is(is, "object") ? keys : NULL, i, k) {
            const char *name = json_string_value(k);
            const json_t *ps = name ? api__crd_jobj(iprops, name) : NULL;
            snprintf(sub, sizeof sub, ".items.properties[%s].type", name ? name : "");
            if (ps && (type_is(ps, "array") || type_is(ps, "object")))
                s_add(sc->causes, &sc->p, sub, "FieldValueInvalid",
                      "Invalid value: \"object\": must be a scalar type if parent array's "
                      "x-kubernetes-list-type is map");
            if (!ps)
                s_add(sc->causes, &sc->p, ".x-kubernetes-list-map-keys", "FieldValueInvalid",
                      "Invalid value: %s: entries must all be names of item properties", ks);
            for (j = 0; j < i; j++)
                if (json_equal(json_array_get(keys, j), k)) break;
            if (j < i)
                s_add(sc->causes, &sc->p, ".x-kubernetes-list-map-keys", "FieldValueInvalid",
                      "Invalid value: %s: must not contain duplicate entries", ks);
        }
    }
    if (!is || (strcmp(lt, "set") && strcmp(lt, "map"))) return;
    if (api__crd_jtrue(is, "nullable"))
        s_add(sc->causes, &sc->p, ".items.nullable", "FieldValueForbidden",
              "Forbidden: cannot be nullable when x-kubernetes-list-type is %s", lt);
    json_array_foreach(!strcmp(lt, "map") ? keys : NULL, i, k) {
        const char *name = json_string_value(k);
        const json_t *ps = name ? api__crd_jobj(iprops, name) : NULL, *r;
        int req = 0;
        if (!ps) continue;
        json_array_foreach(json_object_get(is, "required"), j, r)
            req |= json_equal(r, k);
        snprintf(sub, sizeof sub, ".items.properties[%s].default", name);
        if (!req && !api__crd_has_default(ps))
            s_add(
                sc->causes, &sc->p, sub, "FieldValueRequired",
                "Required value: this property is in x-kubernetes-list-map-keys, so it must have a "
                "default or be a required property");
        snprintf(sub, sizeof sub, ".items.properties[%s].nullable", name);
        if (api__crd_jtrue(ps, "nullable"))
            s_add(sc->causes, &sc->p, sub, "FieldValueForbidden",
                  "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be "
                  "nullable");
    }
}

static void oa_node(sctx_t *sc, const json_t *s, oaf_t f);

static void oa_child(sctx_t *sc, const json_t *s, oaf_t f, const char *fmt, const char *key,
                     size_t i)
{
    size_t mark =
        key ? api__crd_path_add(&sc->p, ".properties[%s]", key) : api__crd_path_add(&sc->p, fmt, i);
    oa_node(sc, s, f);
    api__crd_path_cut(&sc->p, mark);
}

/* ValidateCustomResourceDefinitionOpenAPISchema at one node, then below. */
static void oa_node(sctx_t *sc, const json_t *s, oaf_t f)
{
    static const char *const unsupported[][2] = {
        {"id", "id is not supported"},
        {"additionalItems", "additionalItems is not supported"},
        {"patternProperties", "patternProperties is not supported"},
        {"definitions", "definitions is not supported"},
        {"dependencies", "dependencies is not supported"},
        {"$ref", "$ref is not supported"},
    };
    static const char types[] = " array boolean integer number object string ";
    const char *type = api__crd_jstr(s, "type"), *k;
    const json_t *props = api__crd_jobj(s, "properties"),
                 *ap = json_object_get(s, "additionalProperties"), *x;
    const json_t *items = json_object_get(s, "items");
    int emb = api__crd_jtrue(s, "x-kubernetes-embedded-resource");
    char qv[QCAP], sub[64];
    size_t i;
    oaf_t sf = f;
    if (!json_is_object(s)) return;
    snprintf(qv, sizeof qv, " %s ", type);
    if (*type && !strstr(types, qv))
        s_add(sc->causes, &sc->p, ".type", "FieldValueNotSupported",
              "Unsupported value: %s: supported values: \"array\", \"boolean\", \"integer\", "
              "\"number\", "
              "\"object\", \"string\"",
              api__crd_q(qv, sizeof qv, type));
    if (api__crd_has_default(s) && f.no_default)
        s_add(sc->causes, &sc->p, ".default", "FieldValueForbidden",
              "Forbidden: must not be set %s", f.no_default);
    for (i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        snprintf(sub, sizeof sub, ".%s", unsupported[i][0]);
        x = json_object_get(s, unsupported[i][0]);
        if (x && !json_is_null(x) && (i == 1 || i >= 4 || !zero(x))) /* presence vs non-empty */
            s_add(sc->causes, &sc->p, sub, "FieldValueForbidden", "Forbidden: %s",
                  unsupported[i][1]);
    }
    if (!strcmp(type, "null"))
        s_add(sc->causes, &sc->p, ".type", "FieldValueForbidden",
              "Forbidden: type cannot be set to null, use nullable as an alternative");
    if (json_array_size(items))
        s_add(sc->causes, &sc->p, ".items", "FieldValueForbidden",
              "Forbidden: items must be a schema object and not an array");
    if (f.inside_meta && emb)
        s_add(sc->causes, &sc->p, ".x-kubernetes-embedded-resource", "FieldValueForbidden",
              "Forbidden: must not be used inside of resource meta");
    if (api__crd_jtrue(s, "uniqueItems"))
        s_add(sc->causes, &sc->p, ".uniqueItems", "FieldValueForbidden",
              "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes "
              "quadratic");
    if (ap && !json_is_null(ap) && json_object_size(props) && !json_is_true(ap))
        s_add(sc->causes, &sc->p, ".additionalProperties", "FieldValueForbidden",
              "Forbidden: additionalProperties and properties are mutual exclusive");
    sf.root = 0;
    if (json_is_object(ap)) {
        oaf_t af = sf;
        if (f.inside_meta)
            af.no_default = "inside additionalProperties applying to object metadata";
        oa_child(sc, ap, af, ".additionalProperties", NULL, 0);
    }
    json_object_foreach((json_t *)props, k, x) {
        oaf_t pf = sf;
        if ((f.root || emb) && api__crd_is_meta_field(k)) {
            pf.inside_meta = 1;
            if (f.root)
                pf.no_default = !strcmp(k, "metadata") ? "in top-level metadata"
                                : !strcmp(k, "kind")   ? "in top-level kind"
                                                       : "in top-level apiVersion";
        }
        oa_child(sc, x, pf, NULL, k, 0);
    }
    if (api__crd_jobj(s, "not")) oa_child(sc, api__crd_jobj(s, "not"), sf, ".not", NULL, 0);
    static const char *const junctors[] = {"allOf", "oneOf", "anyOf"};
    for (int j = 0; j < 3; j++) {
        snprintf(sub, sizeof sub, ".%s[%%zu]", junctors[j]);
        json_array_foreach(json_object_get(s, junctors[j]), i, x)
            oa_child(sc, x, sf, sub, NULL, i);
    }
    if (json_is_object(items)) oa_child(sc, items, sf, ".items", NULL, 0);
    json_array_foreach(items, i, x)
        oa_child(sc, x, sf, ".items[%zu]", NULL, i);
    if (json_is_false(json_object_get(s, "x-kubernetes-preserve-unknown-fields")))
        s_add(sc->causes, &sc->p, ".x-kubernetes-preserve-unknown-fields", "FieldValueInvalid",
              "Invalid value: false: must be true or undefined");
    oa_lists(sc, s);
}

/* One default: it must be what pruning leaves of it, and valid against its
 * own node (reported under "<node>.default"). */
static void __attribute__((noinline)) def_check(sctx_t *sc, const json_t *s, int embedded)
{
    const json_t *d = json_object_get(s, "default");
    json_t *pruned = json_deep_copy(d);
    char path[API__CRD_PATH_CAP + 16], m[API__CRD_MSG_CAP] = "";
    api__crd_sb_t b = {m, sizeof m, 0};
    api__crd_prune(pruned, s, embedded);
    if (pruned && !json_equal(pruned, d)) {
        api__crd_go_value(&b, d);
        s_add(sc->causes, &sc->p, ".default", "FieldValueInvalid",
              "Invalid value: %s: must not have unknown fields", m);
    }
    json_decref(pruned);
    snprintf(path, sizeof path, "%s.default", sc->p.s);
    api__crd_validate_at(s, d, path, sc->causes);
}

/* ValidateDefaults: defaults outside resource metadata, along the skeleton
 * (properties and items; defaults under additionalProperties are not checked). */
static void def_node(sctx_t *sc, const json_t *s, int inside_meta, int embedded)
{
    const json_t *x;
    const char *k;
    embedded |= api__crd_jtrue(s, "x-kubernetes-embedded-resource");
    if (embedded) inside_meta = 0;
    if (api__crd_has_default(s) && !inside_meta) def_check(sc, s, embedded);
    if (api__crd_jobj(s, "items")) {
        size_t mark = api__crd_path_add(&sc->p, ".items");
        def_node(sc, api__crd_jobj(s, "items"), inside_meta, 0);
        api__crd_path_cut(&sc->p, mark);
    }
    json_object_foreach((json_t *)api__crd_jobj(s, "properties"), k, x) {
        size_t mark = api__crd_path_add(&sc->p, ".properties[%s]", k);
        def_node(sc, x, inside_meta || (embedded && api__crd_is_meta_field(k)), 0);
        api__crd_path_cut(&sc->p, mark);
    }
}

/* Go sorts structural errors by their full text, "field: message". */
static int cmp_cause(const void *a, const void *b)
{
    const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
    char sx[API__CRD_PATH_CAP + API__CRD_MSG_CAP], sy[API__CRD_PATH_CAP + API__CRD_MSG_CAP];
    snprintf(sx, sizeof sx, "%s: %s", api__crd_jstr(x, "field"), api__crd_jstr(x, "message"));
    snprintf(sy, sizeof sy, "%s: %s", api__crd_jstr(y, "field"), api__crd_jstr(y, "message"));
    return strcmp(sx, sy);
}

void api_crd_schema_check(const json_t *schema, const char *path, json_t *causes)
{
    sctx_t *sc;
    api__crd_path_t *vp;
    json_t **all = NULL;
    size_t i, n;
    if (!json_is_object(schema) || !causes) return;
    sc = calloc(1, sizeof *sc);
    vp = calloc(1, sizeof *vp);
    if (!sc || !vp || !(sc->structural = json_array()) || !(sc->causes = json_array())) {
        api_cause(causes, "InternalError", path ? path : "", "Internal error: out of memory");
        goto done;
    }
    api__crd_path_add(&sc->p, "%s", path ? path : "");
    if (api__crd_jtrue(schema, "nullable"))
        s_add(causes, &sc->p, ".nullable", "FieldValueForbidden",
              "Forbidden: nullable cannot be true at the root");
    st_node(sc, schema, LVL_ROOT);
    api__crd_path_add(vp, "%s", sc->p.s);
    st_complete(sc, schema, schema, vp);
    n = json_array_size(sc->structural);
    if (n && (all = malloc(n * sizeof *all))) {
        for (i = 0; i < n; i++)
            all[i] = json_array_get(sc->structural, i);
        qsort(all, n, sizeof *all, cmp_cause);
        for (i = 0; i < n; i++)
            json_array_append(causes, all[i]);
        free(all);
    } else if (n) {
        json_array_extend(causes, sc->structural);
    } else {
        def_node(sc, schema, 0, 1);
        json_array_extend(causes, sc->causes);
        json_array_clear(sc->causes);
    }
    oa_node(sc, schema, (oaf_t){1, 0, NULL});
    json_array_extend(causes, sc->causes);
done:
    if (sc) json_decref(sc->structural), json_decref(sc->causes);
    free(sc);
    free(vp);
}
