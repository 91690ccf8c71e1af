/*
 * openapi_pb.c -- the v2 OpenAPI document in protobuf: gnostic's
 * openapi_v2.Document (github.com/google/gnostic, openapiv2/OpenAPIv2.proto),
 * the form kubectl 1.20 fetches for `explain` and client-side validation,
 * and kubectl 1.32 for its v2 fallbacks.
 *
 * Two layers. The writer (pbw_t) knows only the wire: varints, 64-bit
 * doubles, and length-delimited fields. A message is opened with pbw_begin(),
 * which notes where its body starts, and closed with pbw_end(), which measures
 * the body and inserts its length varint in front of it (moving the body up
 * by the varint's size): no size pass, at the price of moving each body once
 * per enclosing message. The walkers (doc_msg, schema_msg, ...) map the JSON
 * document built by openapi.c onto the messages, field number by field
 * number as OpenAPIv2.proto numbers them.
 *
 * RULES
 *   1. Only what the Swagger 2.0 document defines is encoded; a key of the
 *      wrong JSON type is skipped like an unknown one, so one odd CRD schema
 *      cannot make the whole document undecodable.
 *   2. Vendor extensions (x-*) become NamedAny{name, Any{yaml}}, the YAML
 *      being the value's JSON text with spaces after ':' and ',' (JSON flow
 *      style is YAML). kube-openapi reads x-kubernetes-group-version-kind and
 *      the patch rules from there with yaml.Unmarshal.
 *   3. proto3 strings must be UTF-8: every string comes from jansson, which
 *      holds UTF-8 only.
 *   4. Nesting is bounded by PB_DEPTH_MAX (KP_EINVAL beyond).
 *   5. The first error sticks (pbw_t.rc): later writes do nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/docs/openapi.h"
#include "lib/err.h"
#include "lib/pbwire.h"

#define PB_DEPTH_MAX 100

/* ---- JSON values to fields ---- */

static void jstr(pbw_t *w, unsigned field, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_string(v)) pbw_bytes(w, field, json_string_value(v), json_string_length(v));
}

/* A repeated string field from a string array (or one string). */
static void jstrs(pbw_t *w, unsigned field, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_string(v)) {
        pbw_bytes(w, field, json_string_value(v), json_string_length(v));
        return;
    }
    size_t i;
    const json_t *s;
    json_array_foreach(v, i, s)
        if (json_is_string(s)) pbw_bytes(w, field, json_string_value(s), json_string_length(s));
}

static void jbool(pbw_t *w, unsigned field, const json_t *obj, const char *key)
{
    if (json_is_true(json_object_get(obj, key))) {
        pbw_tag(w, field, PBW_VARINT);
        pbw_varint(w, 1);
    }
}

static void jint(pbw_t *w, unsigned field, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) return;
    pbw_tag(w, field, PBW_VARINT);
    pbw_varint(w, (uint64_t)(int64_t)json_number_value(v)); /* int64: two's complement */
}

static void jdouble(pbw_t *w, unsigned field, const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_number(v)) return;
    double d = json_number_value(v);
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(u >> (8 * i));
    pbw_tag(w, field, PBW_I64);
    pbw_raw(w, le, sizeof le);
}

/* Any{yaml: the value as YAML} in field `field`. */
static void any_field(pbw_t *w, unsigned field, const json_t *value)
{
    if (w->rc) return;
    /* Not JSON_COMPACT: "a": b needs the space to be YAML in block context. */
    char *text = json_dumps(value, JSON_ENCODE_ANY);
    if (!text) {
        w->rc = KP_ENOMEM;
        return;
    }
    size_t at = pbw_begin(w, field);
    pbw_bytes(w, 2, text, strlen(text));
    pbw_end(w, at);
    free(text);
}

/* The x-* keys of `obj` as repeated NamedAny in field `field`. */
static void extensions(pbw_t *w, unsigned field, const json_t *obj)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (strncmp(key, "x-", 2)) continue;
        size_t at = pbw_begin(w, field);
        pbw_bytes(w, 1, key, strlen(key));
        any_field(w, 2, v);
        pbw_end(w, at);
    }
}

/* ---- messages ---- */

static void schema_msg(pbw_t *w, const json_t *s, int depth);

/* Field `field` holding a Schema message for `s`, if `s` is an object. */
static void schema_field(pbw_t *w, unsigned field, const json_t *s, int depth)
{
    if (!json_is_object(s)) return;
    size_t at = pbw_begin(w, field);
    schema_msg(w, s, depth + 1);
    pbw_end(w, at);
}

/* Schema: _ref 1, format 2, title 3, description 4, default 5, multiple_of 6,
 * maximum 7, exclusive_maximum 8, minimum 9, exclusive_minimum 10,
 * max_length 11, min_length 12, pattern 13, max_items 14, min_items 15,
 * unique_items 16, max_properties 17, min_properties 18, required 19, enum 20,
 * additional_properties 21, type 22, items 23, all_of 24, properties 25,
 * discriminator 26, read_only 27, example 30, vendor_extension 31. */
static void schema_msg(pbw_t *w, const json_t *s, int depth)
{
    if (depth > PB_DEPTH_MAX) {
        if (!w->rc) w->rc = KP_EINVAL;
        return;
    }
    jstr(w, 1, s, "$ref");
    jstr(w, 2, s, "format");
    jstr(w, 3, s, "title");
    jstr(w, 4, s, "description");
    const json_t *v = json_object_get(s, "default");
    if (v) any_field(w, 5, v);
    jdouble(w, 6, s, "multipleOf");
    jdouble(w, 7, s, "maximum");
    jbool(w, 8, s, "exclusiveMaximum");
    jdouble(w, 9, s, "minimum");
    jbool(w, 10, s, "exclusiveMinimum");
    jint(w, 11, s, "maxLength");
    jint(w, 12, s, "minLength");
    jstr(w, 13, s, "pattern");
    jint(w, 14, s, "maxItems");
    jint(w, 15, s, "minItems");
    jbool(w, 16, s, "uniqueItems");
    jint(w, 17, s, "maxProperties");
    jint(w, 18, s, "minProperties");
    jstrs(w, 19, s, "required");
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(s, "enum"), i, e) any_field(w, 20, e);

    v = json_object_get(s, "additionalProperties");
    if (json_is_object(v) || json_is_boolean(v)) {
        size_t at = pbw_begin(w, 21); /* AdditionalPropertiesItem: schema 1 | boolean 2 */
        if (json_is_object(v)) {
            schema_field(w, 1, v, depth);
        } else {
            pbw_tag(w, 2, PBW_VARINT); /* a oneof member: written even when false */
            pbw_varint(w, json_is_true(v));
        }
        pbw_end(w, at);
    }
    v = json_object_get(s, "type");
    if (json_is_string(v) || json_is_array(v)) {
        size_t at = pbw_begin(w, 22); /* TypeItem: repeated value 1 */
        jstrs(w, 1, s, "type");
        pbw_end(w, at);
    }
    v = json_object_get(s, "items");
    if (json_is_object(v) || json_is_array(v)) {
        size_t at = pbw_begin(w, 23); /* ItemsItem: repeated schema 1 */
        if (json_is_object(v)) schema_field(w, 1, v, depth);
        json_array_foreach(v, i, e) schema_field(w, 1, e, depth);
        pbw_end(w, at);
    }
    json_array_foreach(json_object_get(s, "allOf"), i, e) schema_field(w, 24, e, depth);
    v = json_object_get(s, "properties");
    if (json_is_object(v)) {
        size_t at = pbw_begin(w, 25); /* Properties: repeated NamedSchema 1 */
        const char *name;
        json_t *p;
        json_object_foreach((json_t *)v, name, p) {
            if (!json_is_object(p)) continue;
            size_t ns = pbw_begin(w, 1);
            pbw_bytes(w, 1, name, strlen(name));
            schema_field(w, 2, p, depth);
            pbw_end(w, ns);
        }
        pbw_end(w, at);
    }
    jstr(w, 26, s, "discriminator");
    jbool(w, 27, s, "readOnly");
    v = json_object_get(s, "example");
    if (v) any_field(w, 30, v);
    extensions(w, 31, s);
}

/* The body of a ParametersItem: parameter 1 | json_reference 2. */
static void param_msg(pbw_t *w, const json_t *p)
{
    const char *ref = json_string_value(json_object_get(p, "$ref"));
    if (ref) {
        size_t at = pbw_begin(w, 2); /* JsonReference: _ref 1 */
        pbw_bytes(w, 1, ref, strlen(ref));
        pbw_end(w, at);
        return;
    }
    const char *in = json_string_value(json_object_get(p, "in"));
    if (!in) return;
    size_t pm = pbw_begin(w, 1); /* Parameter: body_parameter 1 | non_body_parameter 2 */
    if (!strcmp(in, "body")) {
        /* BodyParameter: description 1, name 2, in 3, required 4, schema 5,
         * vendor_extension 6. */
        size_t bp = pbw_begin(w, 1);
        jstr(w, 1, p, "description");
        jstr(w, 2, p, "name");
        jstr(w, 3, p, "in");
        jbool(w, 4, p, "required");
        schema_field(w, 5, json_object_get(p, "schema"), 0);
        extensions(w, 6, p);
        pbw_end(w, bp);
    } else {
        /* NonBodyParameter: header 1, form data 2, query 3, path 4. The query
         * and form-data messages number type/format/uniqueItems from 6 (they
         * have allowEmptyValue at 5), header and path from 5. */
        unsigned which = !strcmp(in, "header") ? 1 : !strcmp(in, "formData") ? 2
                         : !strcmp(in, "path") ? 4 : 3;
        int query_like = which == 2 || which == 3;
        size_t nb = pbw_begin(w, 2);
        size_t sub = pbw_begin(w, which);
        jbool(w, 1, p, "required");
        jstr(w, 2, p, "in");
        jstr(w, 3, p, "description");
        jstr(w, 4, p, "name");
        if (query_like) {
            jbool(w, 5, p, "allowEmptyValue");
            jstr(w, 6, p, "type");
            jstr(w, 7, p, "format");
            jbool(w, 20, p, "uniqueItems");
            extensions(w, 23, p);
        } else {
            jstr(w, 5, p, "type");
            jstr(w, 6, p, "format");
            jbool(w, 19, p, "uniqueItems");
            extensions(w, 22, p);
        }
        pbw_end(w, sub);
        pbw_end(w, nb);
    }
    pbw_end(w, pm);
}

static void params_field(pbw_t *w, unsigned field, const json_t *params)
{
    size_t i;
    const json_t *p;
    json_array_foreach(params, i, p) {
        if (!json_is_object(p)) continue;
        size_t at = pbw_begin(w, field);
        param_msg(w, p);
        pbw_end(w, at);
    }
}

/* Responses: response_code 1 (NamedResponseValue{name 1, value 2:
 * ResponseValue{response 1: Response{description 1, schema 2: SchemaItem{
 * schema 1}, vendor_extension 5} | json_reference 2}}), vendor_extension 2. */
static void responses_msg(pbw_t *w, const json_t *rs)
{
    const char *code;
    json_t *r;
    json_object_foreach((json_t *)rs, code, r) {
        if (!strncmp(code, "x-", 2) || !json_is_object(r)) continue;
        size_t named = pbw_begin(w, 1);
        pbw_bytes(w, 1, code, strlen(code));
        size_t value = pbw_begin(w, 2);
        const char *ref = json_string_value(json_object_get(r, "$ref"));
        if (ref) {
            size_t at = pbw_begin(w, 2);
            pbw_bytes(w, 1, ref, strlen(ref));
            pbw_end(w, at);
        } else {
            size_t resp = pbw_begin(w, 1);
            jstr(w, 1, r, "description");
            const json_t *schema = json_object_get(r, "schema");
            if (json_is_object(schema)) {
                size_t item = pbw_begin(w, 2);
                schema_field(w, 1, schema, 0);
                pbw_end(w, item);
            }
            extensions(w, 5, r);
            pbw_end(w, resp);
        }
        pbw_end(w, value);
        pbw_end(w, named);
    }
    extensions(w, 2, rs);
}

/* Operation: tags 1, summary 2, description 3, operation_id 5, produces 6,
 * consumes 7, parameters 8, responses 9, schemes 10, deprecated 11,
 * vendor_extension 13. */
static void operation_msg(pbw_t *w, const json_t *op)
{
    jstrs(w, 1, op, "tags");
    jstr(w, 2, op, "summary");
    jstr(w, 3, op, "description");
    jstr(w, 5, op, "operationId");
    jstrs(w, 6, op, "produces");
    jstrs(w, 7, op, "consumes");
    params_field(w, 8, json_object_get(op, "parameters"));
    const json_t *rs = json_object_get(op, "responses");
    if (json_is_object(rs)) {
        size_t at = pbw_begin(w, 9);
        responses_msg(w, rs);
        pbw_end(w, at);
    }
    jstrs(w, 10, op, "schemes");
    jbool(w, 11, op, "deprecated");
    extensions(w, 13, op);
}

/* PathItem: _ref 1, get 2, put 3, post 4, delete 5, options 6, head 7,
 * patch 8, parameters 9, vendor_extension 10. */
static void path_item_msg(pbw_t *w, const json_t *item)
{
    static const char *const methods[] = {"get",     "put",  "post",  "delete",
                                          "options", "head", "patch", NULL};
    jstr(w, 1, item, "$ref");
    for (unsigned i = 0; methods[i]; i++) {
        const json_t *op = json_object_get(item, methods[i]);
        if (!json_is_object(op)) continue;
        size_t at = pbw_begin(w, 2 + i);
        operation_msg(w, op);
        pbw_end(w, at);
    }
    params_field(w, 9, json_object_get(item, "parameters"));
    extensions(w, 10, item);
}

/* Document: swagger 1, info 2, host 3, base_path 4, schemes 5, consumes 6,
 * produces 7, paths 8, definitions 9, vendor_extension 16. */
static void doc_msg(pbw_t *w, const json_t *doc)
{
    jstr(w, 1, doc, "swagger");
    const json_t *info = json_object_get(doc, "info");
    if (json_is_object(info)) {
        size_t at = pbw_begin(w, 2); /* Info: title 1, version 2, description 3, ext 7 */
        jstr(w, 1, info, "title");
        jstr(w, 2, info, "version");
        jstr(w, 3, info, "description");
        extensions(w, 7, info);
        pbw_end(w, at);
    }
    jstr(w, 3, doc, "host");
    jstr(w, 4, doc, "basePath");
    jstrs(w, 5, doc, "schemes");
    jstrs(w, 6, doc, "consumes");
    jstrs(w, 7, doc, "produces");
    const char *name;
    json_t *v;
    const json_t *paths = json_object_get(doc, "paths");
    if (json_is_object(paths)) {
        size_t at = pbw_begin(w, 8); /* Paths: vendor_extension 1, path 2 */
        extensions(w, 1, paths);
        json_object_foreach((json_t *)paths, name, v) {
            if (!strncmp(name, "x-", 2) || !json_is_object(v)) continue;
            size_t named = pbw_begin(w, 2); /* NamedPathItem: name 1, value 2 */
            pbw_bytes(w, 1, name, strlen(name));
            size_t item = pbw_begin(w, 2);
            path_item_msg(w, v);
            pbw_end(w, item);
            pbw_end(w, named);
        }
        pbw_end(w, at);
    }
    const json_t *defs = json_object_get(doc, "definitions");
    if (json_is_object(defs)) {
        size_t at = pbw_begin(w, 9); /* Definitions: repeated NamedSchema 1 */
        json_object_foreach((json_t *)defs, name, v) {
            if (!json_is_object(v)) continue;
            size_t named = pbw_begin(w, 1); /* NamedSchema: name 1, value 2 */
            pbw_bytes(w, 1, name, strlen(name));
            schema_field(w, 2, v, 0);
            pbw_end(w, named);
        }
        pbw_end(w, at);
    }
    extensions(w, 16, doc);
}

int api_openapi_v2_protobuf(const json_t *doc, buf_t *out)
{
    if (!json_is_object(doc)) return KP_EINVAL;
    pbw_t w = {.b = out};
    doc_msg(&w, doc);
    return w.rc;
}
