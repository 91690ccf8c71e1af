/*
 * schema.c -- the API's type facts, parsed once (see schema.h).
 */
#include "apiserver/schema/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/err.h"

struct api_schema {
    json_t *doc;        /* {"definitions": {...}} */
    const json_t *defs; /* doc.definitions */
    json_t *by_gvk;     /* "group/version/Kind" -> definition name */
};

#define REF_PREFIX "#/definitions/"

int api_schema_load(api_schema_t **out)
{
    *out = NULL;
    api_schema_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->doc = json_pack("{s:{}}", "definitions");
    s->defs = json_object_get(s->doc, "definitions");
    s->by_gvk = json_object();
    if (!s->doc || !s->by_gvk) {
        api_schema_free(s);
        return KP_ENOMEM;
    }
    for (const api_facts_part_t *p = api_openapi_facts; p->name; p++) {
        json_error_t err;
        json_t *part = json_loadb(p->json, *p->len, 0, &err);
        const json_t *defs = json_object_get(part, "definitions");
        int rc = !json_is_object(defs)                     ? KP_ECORRUPT
                 : json_object_update((json_t *)s->defs, (json_t *)defs) ? KP_ENOMEM
                                                                         : 0;
        json_decref(part);
        if (rc) {
            api_schema_free(s);
            return rc;
        }
    }
    const char *name;
    json_t *def;
    json_object_foreach((json_t *)s->defs, name, def) {
        size_t i;
        json_t *gvk;
        json_array_foreach(json_object_get(def, "x-kubernetes-group-version-kind"), i, gvk) {
            char key[256];
            snprintf(key, sizeof key, "%s/%s/%s",
                     json_string_value(json_object_get(gvk, "group")) ?: "",
                     json_string_value(json_object_get(gvk, "version")) ?: "",
                     json_string_value(json_object_get(gvk, "kind")) ?: "");
            /* The first definition named for a GVK wins (a kind is also named
             * by the DeleteOptions and WatchEvent of every group). */
            if (!json_object_get(s->by_gvk, key) &&
                json_object_set_new(s->by_gvk, key, json_string(name))) {
                api_schema_free(s);
                return KP_ENOMEM;
            }
        }
    }
    *out = s;
    return 0;
}

void api_schema_free(api_schema_t *s)
{
    if (!s) return;
    json_decref(s->doc);
    json_decref(s->by_gvk);
    free(s);
}

const json_t *api_schema_definitions(const api_schema_t *s)
{
    return s->defs;
}

const json_t *api_schema_def(const api_schema_t *s, const char *name)
{
    return json_object_get(s->defs, name);
}

const json_t *api_schema_kind(const api_schema_t *s, const char *group, const char *version,
                              const char *kind, const char **name)
{
    char key[256];
    snprintf(key, sizeof key, "%s/%s/%s", group, version, kind);
    const char *n = json_string_value(json_object_get(s->by_gvk, key));
    if (name) *name = n;
    return n ? api_schema_def(s, n) : NULL;
}

const json_t *api_schema_resolve(const api_schema_t *s, const json_t *node)
{
    /* Definitions never chain more than a few links; the cap guards a cycle. */
    for (int hops = 0; node && hops < 8; hops++) {
        const char *ref = json_string_value(json_object_get(node, "$ref"));
        if (!ref) return node;
        if (strncmp(ref, REF_PREFIX, sizeof REF_PREFIX - 1)) return NULL;
        node = api_schema_def(s, ref + sizeof REF_PREFIX - 1);
    }
    return NULL;
}

const json_t *api_schema_field(const api_schema_t *s, const json_t *node, const char *field)
{
    node = api_schema_resolve(s, node);
    if (!node) return NULL;
    const json_t *p = json_object_get(json_object_get(node, "properties"), field);
    if (p) return p;
    const json_t *ap = json_object_get(node, "additionalProperties");
    return json_is_object(ap) ? ap : NULL;
}

const json_t *api_schema_items(const api_schema_t *s, const json_t *node)
{
    node = api_schema_resolve(s, node);
    const char *type = json_string_value(json_object_get(node, "type"));
    if (!type || strcmp(type, "array")) return NULL;
    return api_schema_resolve(s, json_object_get(node, "items"));
}

api_schema_type_t api_schema_type(const api_schema_t *s, const json_t *node)
{
    node = api_schema_resolve(s, node);
    if (!node) return API_SCHEMA_ANY;
    const char *type = json_string_value(json_object_get(node, "type"));
    const char *format = json_string_value(json_object_get(node, "format"));
    if ((format && !strcmp(format, "int-or-string")) ||
        json_is_true(json_object_get(node, "x-kubernetes-int-or-string")))
        return API_SCHEMA_INT_OR_STRING;
    if (!type) return API_SCHEMA_ANY;
    if (!strcmp(type, "object")) {
        if (json_object_get(node, "properties")) return API_SCHEMA_OBJECT;
        if (json_is_object(json_object_get(node, "additionalProperties"))) return API_SCHEMA_MAP;
        return API_SCHEMA_ANY; /* an object of any fields */
    }
    if (!strcmp(type, "array")) return API_SCHEMA_ARRAY;
    if (!strcmp(type, "string")) return API_SCHEMA_STRING;
    if (!strcmp(type, "integer")) return API_SCHEMA_INTEGER;
    if (!strcmp(type, "number")) return API_SCHEMA_NUMBER;
    if (!strcmp(type, "boolean")) return API_SCHEMA_BOOLEAN;
    return API_SCHEMA_ANY;
}

static int strategy_has(const json_t *node, const char *word)
{
    const char *st = json_string_value(json_object_get(node, "x-kubernetes-patch-strategy"));
    if (!st) return 0;
    size_t n = strlen(word);
    for (const char *p = st; (p = strstr(p, word)); p += n)
        if ((p == st || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return 1;
    return 0;
}

void api_schema_list_rules(const json_t *node, api_list_rules_t *out)
{
    memset(out, 0, sizeof *out);
    if (!node) return;
    out->merge_key = json_string_value(json_object_get(node, "x-kubernetes-patch-merge-key"));
    out->merge = strategy_has(node, "merge");
    out->retain_keys = strategy_has(node, "retainKeys");
    out->list_type = json_string_value(json_object_get(node, "x-kubernetes-list-type"));
    const json_t *keys = json_object_get(node, "x-kubernetes-list-map-keys");
    out->map_keys = json_is_array(keys) ? keys : NULL;
}

int api_schema_retain_keys(const json_t *node)
{
    return strategy_has(node, "retainKeys");
}
