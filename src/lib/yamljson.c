/*
 * yamljson.c -- YAML to JSON through libyaml's document API (see yamljson.h).
 *
 * libyaml builds the node graph (aliases point at their anchors' nodes); we
 * convert it recursively, counting nodes so that an alias bomb ("billion
 * laughs") stops at max_nodes instead of exhausting memory.
 */
#include "yamljson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "err.h"

typedef struct conv {
    yaml_document_t *doc;
    int max_depth;
    size_t max_nodes, nodes;
    char *err;
    size_t errlen;
} conv_t;

static int is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (!strcmp(s, *words)) return 1;
    return 0;
}

/* A plain scalar's JSON value, as YAML 1.1's core types resolve it. */
static json_t *plain_scalar(const char *s, size_t len)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                        "on",   "On",   "ON",   "y",   "Y",   NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
                                         "off",   "Off",   "OFF",   "n",  "N",  NULL};
    if (is_one_of(s, nulls)) return json_null();
    if (is_one_of(s, trues)) return json_true();
    if (is_one_of(s, falses)) return json_false();
    size_t sign = *s == '-' || *s == '+';
    if (len > sign && strspn(s + sign, "0123456789") == len - sign) {
        errno = 0;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!errno && !*end) return json_integer(v);
    }
    if (len && strspn(s, "+-0123456789.eE") == len && strpbrk(s, "0123456789")) {
        errno = 0;
        char *end;
        double d = strtod(s, &end);
        if (!errno && !*end) return json_real(d);
    }
    if (!strcasecmp(s, ".inf") || !strcasecmp(s, "+.inf") || !strcasecmp(s, "-.inf") ||
        !strcasecmp(s, ".nan"))
        return json_stringn(s, len); /* JSON has no infinities */
    return json_stringn(s, len);
}

static int convert(conv_t *c, yaml_node_t *n, int depth, json_t **out)
{
    *out = NULL;
    if (depth > c->max_depth || ++c->nodes > c->max_nodes) {
        snprintf(c->err, c->errlen, "the document is nested too deeply or has too many nodes");
        return KP_ETOOLARGE;
    }
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)n->data.scalar.value;
        size_t len = n->data.scalar.length;
        /* libyaml's loader gives every untagged scalar the str tag, so an
         * explicit !!str cannot be told apart: the style decides. */
        int quoted = n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        *out = quoted ? json_stringn(s, len) : plain_scalar(s, len);
        return *out ? 0 : KP_ENOMEM;
    }
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        if (!a) return KP_ENOMEM;
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++) {
            json_t *v;
            int rc = convert(c, yaml_document_get_node(c->doc, *it), depth + 1, &v);
            if (rc || json_array_append_new(a, v)) {
                json_decref(a);
                return rc ? rc : KP_ENOMEM;
            }
        }
        *out = a;
        return 0;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        if (!o) return KP_ENOMEM;
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                snprintf(c->err, c->errlen, "line %lu: a mapping key must be a scalar",
                         k ? (unsigned long)k->start_mark.line + 1 : 0ul);
                json_decref(o);
                return KP_EINVAL;
            }
            json_t *v;
            int rc = convert(c, yaml_document_get_node(c->doc, p->value), depth + 1, &v);
            if (rc) {
                json_decref(o);
                return rc;
            }
            char *key = strndup((const char *)k->data.scalar.value, k->data.scalar.length);
            if (!key || json_object_set_new(o, key, v)) {
                free(key);
                json_decref(o);
                return KP_ENOMEM;
            }
            free(key);
        }
        *out = o;
        return 0;
    }
    default:
        *out = json_null();
        return 0;
    }
}

int yaml_to_json(const char *text, size_t len, int max_depth, size_t max_nodes, json_t **out,
                 char *err, size_t errlen)
{
    *out = NULL;
    if (errlen) err[0] = '\0';
    yaml_parser_t p;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&p)) return KP_ENOMEM;
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &doc)) {
        snprintf(err, errlen, "yaml: line %lu: %s", (unsigned long)p.problem_mark.line + 1,
                 p.problem ? p.problem : "invalid YAML");
        yaml_parser_delete(&p);
        return KP_EINVAL;
    }
    conv_t c = {
        .doc = &doc, .max_depth = max_depth, .max_nodes = max_nodes, .err = err, .errlen = errlen};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    int rc = root ? convert(&c, root, 0, out) : 0;
    if (!rc && !root && !(*out = json_null())) rc = KP_ENOMEM;
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return rc;
}
