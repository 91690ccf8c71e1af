/*
 * fields.c -- prune and type-check an object by its schema (see fields.h).
 *
 * Kubernetes decodes a built-in kind's JSON into Go structs: a field the
 * struct lacks is dropped (fieldValidation decides whether that is silent,
 * a warning, or a 400), and a value of the wrong type fails the decode. The
 * walk below does both in one pass over the object, following the schema
 * facts; it never changes a value, only removes unknown keys.
 */
#include "apiserver/schema/fields.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/err.h"

#define PATH_MAX_LEN 512

typedef struct walk {
    const api_schema_t *s;
    json_t *unknown;
    char *err;
    size_t errlen;
    char path[PATH_MAX_LEN];
} walk_t;

static const char *json_type_word(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "bool";
    default:
        return "null";
    }
}

/* The Go spelling of a schema's type: int32, string, v1.PodSpec, []v1.Container,
 * map[string]string. */
static void go_type(const api_schema_t *s, const json_t *decl, char *out, size_t n)
{
    const char *ref = json_string_value(json_object_get(decl, "$ref"));
    if (ref) {
        /* #/definitions/io.k8s.api.apps.v1.DeploymentSpec -> v1.DeploymentSpec */
        const char *prev = strrchr(ref, '.');
        while (prev && prev > ref && prev[-1] != '.')
            prev--;
        snprintf(out, n, "%s", prev && prev > ref ? prev : ref);
        return;
    }
    const json_t *node = api_schema_resolve(s, decl);
    const char *format = json_string_value(json_object_get(node, "format"));
    char inner[160];
    switch (api_schema_type(s, node)) {
    case API_SCHEMA_ARRAY:
        go_type(s, json_object_get(node, "items"), inner, sizeof inner);
        snprintf(out, n, "[]%s", inner);
        return;
    case API_SCHEMA_MAP:
        go_type(s, json_object_get(node, "additionalProperties"), inner, sizeof inner);
        snprintf(out, n, "map[string]%s", inner);
        return;
    case API_SCHEMA_INTEGER:
        snprintf(out, n, "%s", format && !strcmp(format, "int32") ? "int32" : "int64");
        return;
    case API_SCHEMA_NUMBER:
        snprintf(out, n, "float64");
        return;
    case API_SCHEMA_BOOLEAN:
        snprintf(out, n, "bool");
        return;
    case API_SCHEMA_STRING:
        snprintf(out, n, "string");
        return;
    case API_SCHEMA_INT_OR_STRING:
        snprintf(out, n, "intstr.IntOrString");
        return;
    default:
        snprintf(out, n, "map[string]interface {}");
        return;
    }
}

static int type_error(walk_t *w, const json_t *v, const json_t *decl, const char *owner)
{
    char t[200];
    go_type(w->s, decl, t, sizeof t);
    snprintf(w->err, w->errlen, "json: cannot unmarshal %s into Go struct field %s.%s of type %s",
             json_type_word(v), owner, w->path, t);
    return KP_EINVAL;
}

static int walk_value(walk_t *w, const json_t *decl, json_t *v, const json_t *base,
                      const char *owner);

/* An integer field: a JSON number Go can store in the field's type, int32
 * or int64 by the schema's format (no format: int64). 3.0 is an integer to
 * Go's decoder; 3.5 is not, and neither is a value out of the type's range:
 * Go's message then quotes the number ("json: cannot unmarshal number
 * 4294967297 into Go struct field DeploymentSpec.spec.replicas of type
 * int32"). A number beyond int64 never gets here: the JSON parser refuses
 * it. */
static int check_integer(walk_t *w, const json_t *v, const json_t *decl, const json_t *node,
                         const char *owner)
{
    const char *format = json_string_value(json_object_get(node, "format"));
    int is32 = format && !strcmp(format, "int32");
    char num[48];
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (!is32 || (i >= INT32_MIN && i <= INT32_MAX)) return 0;
        snprintf(num, sizeof num, "number %" JSON_INTEGER_FORMAT, i);
    } else if (json_is_real(v)) {
        double d = json_real_value(v);
        double lo = is32 ? (double)INT32_MIN : -9223372036854775808.0;
        double hi = is32 ? (double)INT32_MAX : 9223372036854775807.0;
        /* in range before the cast: a double outside long long is undefined */
        if (d >= lo && d < hi + 1 && d == (double)(long long)d) return 0;
        snprintf(num, sizeof num, "number %.17g", d);
    } else {
        return type_error(w, v, decl, owner);
    }
    char t[200];
    go_type(w->s, decl, t, sizeof t);
    snprintf(w->err, w->errlen, "json: cannot unmarshal %s into Go struct field %s.%s of type %s",
             num, owner, w->path, t);
    return KP_EINVAL;
}

/* A value equal to its counterpart in the base version was checked when
 * that version was written: nothing under it to drop or to report. */
static int checked(const json_t *v, const json_t *base)
{
    return base && json_equal(v, base);
}

/* Append ".name" or "[i]" to the path; return the old length to restore. */
static size_t push(walk_t *w, const char *name)
{
    size_t len = strlen(w->path);
    snprintf(w->path + len, sizeof w->path - len, "%s%s", len ? "." : "", name);
    return len;
}

static size_t push_index(walk_t *w, size_t idx)
{
    size_t len = strlen(w->path);
    snprintf(w->path + len, sizeof w->path - len, "[%zu]", idx);
    return len;
}

/* The short name of the struct a $ref points at, for messages. */
static const char *ref_struct(const json_t *decl, const char *owner)
{
    const char *ref = json_string_value(json_object_get(decl, "$ref"));
    if (!ref) return owner;
    const char *dot = strrchr(ref, '.');
    return dot ? dot + 1 : ref;
}

/* x-kubernetes-preserve-unknown-fields on a node (or on the declaration
 * that refers to it). */
static int preserves(const json_t *node, const json_t *decl)
{
    return json_is_true(json_object_get(node, "x-kubernetes-preserve-unknown-fields")) ||
           json_is_true(json_object_get(decl, "x-kubernetes-preserve-unknown-fields"));
}

/* An object of `node`: its undeclared fields are unknown (reported and
 * dropped) unless the node preserves them (`keep`); declared ones are
 * walked. */
static int walk_object(walk_t *w, const json_t *node, json_t *obj, const json_t *base,
                       const char *owner, int keep)
{
    const json_t *props = json_object_get(node, "properties");
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(obj, tmp, k, v) {
        const json_t *decl = json_object_get(props, k);
        const json_t *b = json_object_get(base, k);
        if (decl && checked(v, b)) continue;
        if (!decl && keep) continue;
        size_t len = push(w, k);
        int rc = 0;
        if (!decl) {
            if (w->unknown) json_array_append_new(w->unknown, json_string(w->path));
            json_object_del(obj, k);
        } else {
            rc = walk_value(w, decl, v, b, owner);
        }
        w->path[len] = '\0';
        if (rc) return rc;
    }
    return 0;
}

static int walk_value(walk_t *w, const json_t *decl, json_t *v, const json_t *base,
                      const char *owner)
{
    if (json_is_null(v)) return 0;
    const json_t *node = api_schema_resolve(w->s, decl);
    if (!node) return 0;
    const char *inner = ref_struct(decl, owner);
    if (preserves(node, decl)) /* unknown fields stay; declared ones are still walked */
        return json_is_object(v) && json_is_object(json_object_get(node, "properties"))
                   ? walk_object(w, node, v, json_is_object(base) ? base : NULL, inner, 1)
                   : 0;
    switch (api_schema_type(w->s, node)) {
    case API_SCHEMA_OBJECT:
        if (!json_is_object(v)) return type_error(w, v, decl, owner);
        return walk_object(w, node, v, json_is_object(base) ? base : NULL, inner, 0);
    case API_SCHEMA_MAP: {
        if (!json_is_object(v)) return type_error(w, v, decl, owner);
        const json_t *item = json_object_get(node, "additionalProperties");
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e) {
            const json_t *b = json_is_object(base) ? json_object_get(base, k) : NULL;
            if (checked(e, b)) continue;
            size_t len = push(w, k);
            int rc = walk_value(w, item, e, b, inner);
            w->path[len] = '\0';
            if (rc) return rc;
        }
        return 0;
    }
    case API_SCHEMA_ARRAY: {
        if (!json_is_array(v)) return type_error(w, v, decl, owner);
        const json_t *item = json_object_get(node, "items");
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            const json_t *b = json_is_array(base) ? json_array_get(base, i) : NULL;
            if (checked(e, b)) continue;
            size_t len = push_index(w, i);
            int rc = walk_value(w, item, e, b, ref_struct(item, inner));
            w->path[len] = '\0';
            if (rc) return rc;
        }
        return 0;
    }
    case API_SCHEMA_STRING:
        return json_is_string(v) ? 0 : type_error(w, v, decl, owner);
    case API_SCHEMA_INTEGER:
        return check_integer(w, v, decl, node, owner);
    case API_SCHEMA_NUMBER:
        return json_is_number(v) ? 0 : type_error(w, v, decl, owner);
    case API_SCHEMA_BOOLEAN:
        return json_is_boolean(v) ? 0 : type_error(w, v, decl, owner);
    case API_SCHEMA_INT_OR_STRING:
        return json_is_string(v) || json_is_integer(v) ? 0 : type_error(w, v, decl, owner);
    case API_SCHEMA_ANY:
        return 0;
    }
    return 0;
}

int api_fields_prune(const api_schema_t *s, const json_t *node, const char *kind, json_t *obj,
                     json_t *unknown, char *err, size_t errlen)
{
    return api_fields_prune_since(s, node, kind, obj, NULL, unknown, err, errlen);
}

int api_fields_prune_since(const api_schema_t *s, const json_t *node, const char *kind,
                           json_t *obj, const json_t *base, json_t *unknown, char *err,
                           size_t errlen)
{
    walk_t w = {.s = s, .unknown = unknown, .err = err, .errlen = errlen};
    if (errlen) err[0] = '\0';
    const json_t *def = api_schema_resolve(s, node);
    if (!def || !json_is_object(obj)) return 0;
    return walk_object(&w, def, obj, json_is_object(base) ? base : NULL, kind,
                       preserves(def, node));
}
