/*
 * nodematch.c -- taints, tolerations and node affinity (nodematch.h).
 */
#include "lib/nodematch.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

int kp_toleration_matches(const json_t *t, const char *key, const char *value, const char *effect)
{
    const char *te = str(t, "effect"), *tk = str(t, "key"), *op = str(t, "operator");
    if (*te && strcmp(te, effect)) return 0;
    if (*tk && strcmp(tk, key)) return 0;
    if (!strcmp(op, "Exists")) return 1;
    if (!*tk) return 0; /* an empty key tolerates every taint only with Exists */
    return (!*op || !strcmp(op, "Equal")) && !strcmp(str(t, "value"), value);
}

int kp_tolerates(const json_t *tolerations, const char *key, const char *value, const char *effect)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tolerations, i, t) {
        if (kp_toleration_matches(t, key, value, effect)) return 1;
    }
    return 0;
}

int kp_tolerates_taint(const json_t *tolerations, const json_t *taint)
{
    return kp_tolerates(tolerations, str(taint, "key"), str(taint, "value"), str(taint, "effect"));
}

static int parse_int(const char *s, int64_t *out)
{
    if (!s || !*s) return 0;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || errno) return 0;
    *out = v;
    return 1;
}

static int in_values(const json_t *values, const char *s)
{
    size_t i;
    const json_t *v;
    json_array_foreach(values, i, v) {
        const char *x = json_string_value(v);
        if (x && !strcmp(x, s)) return 1;
    }
    return 0;
}

/* One node selector requirement against a value (NULL: the key is absent). */
static int requirement_match(const json_t *req, const char *val)
{
    const char *op = str(req, "operator");
    const json_t *values = json_object_get(req, "values");
    if (!strcmp(op, "In")) return val && in_values(values, val);
    if (!strcmp(op, "NotIn")) return !val || !in_values(values, val);
    if (!strcmp(op, "Exists")) return val != NULL;
    if (!strcmp(op, "DoesNotExist")) return val == NULL;
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
        int64_t have, want;
        if (!val || json_array_size(values) != 1 || !parse_int(val, &have) ||
            !parse_int(json_string_value(json_array_get(values, 0)), &want))
            return 0;
        return !strcmp(op, "Gt") ? have > want : have < want;
    }
    return 0;
}

static int term_match(const json_t *term, const json_t *labels, const char *name)
{
    const json_t *exprs = json_object_get(term, "matchExpressions");
    const json_t *fields = json_object_get(term, "matchFields");
    if (!json_array_size(exprs) && !json_array_size(fields)) return 0;
    size_t i;
    const json_t *r;
    json_array_foreach(exprs, i, r) {
        if (!requirement_match(r, json_string_value(json_object_get(labels, str(r, "key")))))
            return 0;
    }
    json_array_foreach(fields, i, r) {
        if (strcmp(str(r, "key"), "metadata.name") || !requirement_match(r, name)) return 0;
    }
    return 1;
}

int kp_node_selects(const json_t *selector, const json_t *required, const json_t *labels,
                    const char *name)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)selector, k, v) {
        const char *have = json_string_value(json_object_get(labels, k));
        const char *want = json_string_value(v);
        if (!have || !want || strcmp(have, want)) return 0;
    }
    if (!json_is_object(required)) return 1;
    size_t i;
    const json_t *term;
    json_array_foreach(json_object_get(required, "nodeSelectorTerms"), i, term) {
        if (term_match(term, labels, name ? name : "")) return 1;
    }
    return 0;
}

int kp_pod_spec_selects_node(const json_t *spec, const json_t *node)
{
    const json_t *req =
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution");
    const json_t *meta = json_object_get(node, "metadata");
    return kp_node_selects(json_object_get(spec, "nodeSelector"), req,
                           json_object_get(meta, "labels"), str(meta, "name"));
}
