/*
 * strategy_configmap.c -- ConfigMaps (pkg/registry/core/configmap): their
 * validation (ValidateConfigMap, ValidateConfigMapUpdate), and the helpers
 * Secrets share with them: config-map keys, the 1 MiB data budget and the
 * `immutable` rule.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* Kubernetes' IsConfigMapKey: at most 253 characters of [-._a-zA-Z0-9], not
 * "." or "..", and not starting with "..". */
void api_config_key_validate(const char *map, const char *key, json_t *causes)
{
    char field[320];
    snprintf(field, sizeof field, "%s[%s]", map, key);
    size_t n = strlen(key);
    if (n > 253)
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: \"%s\": must be no more than 253 characters", key);
    int ok = n > 0;
    for (size_t i = 0; i < n && ok; i++) {
        char c = key[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '-' || c == '_' || c == '.';
    }
    if (!ok)
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: \"%s\": a valid config key must consist of alphanumeric "
                  "characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
                  "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
                  key);
    const char *dots = !strcmp(key, ".")           ? "must not be '.'"
                       : !strcmp(key, "..")        ? "must not be '..'"
                       : !strncmp(key, "..", 2) ? "must not start with '..'"
                                                   : NULL;
    if (dots) api_cause(causes, "FieldValueInvalid", field, "Invalid value: \"%s\": %s", key, dots);
}

/* The bytes a base64 string of length n decodes to (padding discounted). */
size_t api_base64_decoded_len(const char *s, size_t n)
{
    size_t len = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
    for (size_t i = n; i > 0 && s[i - 1] == '=' && len > 0; i--)
        len--;
    return len;
}

size_t api_config_map_validate(const json_t *map, const char *name, int base64, json_t *causes)
{
    size_t total = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)map, k, v) {
        api_config_key_validate(name, k, causes);
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        total += base64 ? api_base64_decoded_len(s ? s : "", n) : n;
    }
    return total;
}

void api_immutable_validate(const json_t *obj, const json_t *old, const char *const *fields,
                            json_t *causes)
{
    if (!old || !json_is_true(json_object_get(old, "immutable"))) return;
    if (!json_is_true(json_object_get(obj, "immutable")))
        api_cause(causes, "FieldValueForbidden", "immutable",
                  "Forbidden: field is immutable when `immutable` is set");
    for (const char *const *f = fields; *f; f++) {
        const json_t *a = json_object_get(obj, *f), *b = json_object_get(old, *f);
        /* Go's DeepEqual of a nil and an empty map differs; JSON cannot
         * tell them apart once stored, so both count as empty. */
        int same = (!a || !json_object_size(a)) && (!b || !json_object_size(b))
                       ? 1
                       : a && b && json_equal(a, b);
        if (!same)
            api_cause(causes, "FieldValueForbidden", *f,
                      "Forbidden: field is immutable when `immutable` is set");
    }
}

static void configmap_validate(const json_t *cm, const json_t *old, json_t *causes)
{
    static const char *const fields[] = {"data", "binaryData", NULL};
    api_immutable_validate(cm, old, fields, causes);
    const json_t *data = json_object_get(cm, "data");
    const json_t *bin = json_object_get(cm, "binaryData");
    size_t total = api_config_map_validate(data, "data", 0, causes);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)data, k, v) {
        if (!json_object_get(bin, k)) continue;
        char field[320];
        snprintf(field, sizeof field, "data[%s]", k);
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: \"%s\": duplicate of key present in binaryData", k);
    }
    total += api_config_map_validate(bin, "binaryData", 1, causes);
    if (total > API_MAX_SECRET_SIZE)
        api_cause(causes, "FieldValueTooLong", NULL, "Too long: must have at most %d bytes",
                  API_MAX_SECRET_SIZE);
}

const api_strategy_t api_strategy_configmap = {
    .validate = configmap_validate,
};
