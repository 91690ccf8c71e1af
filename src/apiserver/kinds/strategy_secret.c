/*
 * strategy_secret.c -- Secrets (pkg/registry/core/secret): the Opaque
 * default, stringData folded into data as Kubernetes' conversion does, and
 * ValidateSecret / ValidateSecretUpdate: keys, the 1 MiB budget, the keys
 * each well-known type requires, an immutable type, and `immutable`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "lib/base64.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* SetDefaults_Secret, and the v1 conversion: each stringData entry
 * replaces the data entry of its key (base64 of its bytes); stringData is
 * write-only and never stored. */
static void secret_defaults(json_t *s)
{
    const char *type = json_string_value(json_object_get(s, "type"));
    if (!type || !*type) json_object_set_new(s, "type", json_string("Opaque"));
    json_t *sd = json_object_get(s, "stringData");
    if (json_is_object(sd) && json_object_size(sd)) {
        json_t *data = json_object_get(s, "data");
        if (!json_is_object(data)) {
            data = json_object();
            json_object_set_new(s, "data", data);
        }
        const char *k;
        json_t *v;
        json_object_foreach(sd, k, v) {
            if (!json_is_string(v)) continue; /* shapes: the schema check */
            char *b64 = base64_encode(json_string_value(v), json_string_length(v));
            if (b64) json_object_set_new(data, k, json_string(b64));
            free(b64);
        }
    }
    if (sd) json_object_del(s, "stringData");
}

/* data[key] as a field path. */
static void data_field(char *buf, size_t n, const char *key)
{
    snprintf(buf, n, "data[%s]", key);
}

static void require_data(const json_t *data, const char *key, json_t *causes)
{
    char field[320];
    data_field(field, sizeof field, key);
    if (!json_object_get(data, key))
        api_cause(causes, "FieldValueRequired", field, "Required value");
}

/* The docker config under `key` must decode to a JSON object. */
static void docker_config(const json_t *data, const char *key, json_t *causes)
{
    const json_t *v = json_object_get(data, key);
    if (!v) {
        require_data(data, key, causes);
        return;
    }
    const char *b64 = json_string_value(v);
    size_t n = json_string_length(v), len = 0;
    char *raw = malloc(n + 1);
    if (!raw) return;
    json_error_t err;
    json_t *cfg = NULL;
    if (b64 && !base64_decode(b64, n, raw, n + 1, &len))
        cfg = json_loadb(raw, len, JSON_DECODE_ANY, &err);
    else
        snprintf(err.text, sizeof err.text, "not base64");
    free(raw);
    if (!json_is_object(cfg)) {
        char field[320];
        data_field(field, sizeof field, key);
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: \"<secret contents redacted>\": %s",
                  cfg ? "json: cannot unmarshal into map[string]interface {}" : err.text);
    }
    json_decref(cfg);
}

static void secret_validate(const json_t *s, const json_t *old, json_t *causes)
{
    const char *type = json_string_value(json_object_get(s, "type"));
    if (!type) type = "";
    if (old) {
        const char *was = json_string_value(json_object_get(old, "type"));
        if (was && strcmp(was, type))
            api_cause(causes, "FieldValueInvalid", "type",
                      "Invalid value: \"%s\": field is immutable", type);
        static const char *const fields[] = {"data", NULL};
        api_immutable_validate(s, old, fields, causes);
    }
    const json_t *data = json_object_get(s, "data");
    if (api_config_map_validate(data, "data", 1, causes) > API_MAX_SECRET_SIZE)
        api_cause(causes, "FieldValueTooLong", "data", "Too long: must have at most %d bytes",
                  API_MAX_SECRET_SIZE);

    if (!strcmp(type, "kubernetes.io/service-account-token")) {
        const json_t *ann = json_object_get(json_object_get(s, "metadata"), "annotations");
        const char *sa = json_string_value(json_object_get(ann, "kubernetes.io/service-account.name"));
        if (!sa || !*sa)
            api_cause(causes, "FieldValueRequired",
                      "metadata.annotations[kubernetes.io/service-account.name]", "Required value");
    } else if (!strcmp(type, "kubernetes.io/dockercfg")) {
        docker_config(data, ".dockercfg", causes);
    } else if (!strcmp(type, "kubernetes.io/dockerconfigjson")) {
        docker_config(data, ".dockerconfigjson", causes);
    } else if (!strcmp(type, "kubernetes.io/basic-auth")) {
        /* Either may be empty, but one must be there. */
        if (!json_object_get(data, "username") && !json_object_get(data, "password")) {
            require_data(data, "username", causes);
            require_data(data, "password", causes);
        }
    } else if (!strcmp(type, "kubernetes.io/ssh-auth")) {
        const json_t *key = json_object_get(data, "ssh-privatekey");
        if (!json_string_length(key))
            api_cause(causes, "FieldValueRequired", "data[ssh-privatekey]", "Required value");
    } else if (!strcmp(type, "kubernetes.io/tls")) {
        require_data(data, "tls.crt", causes);
        require_data(data, "tls.key", causes);
    }
}

const api_strategy_t api_strategy_secret = {
    .defaults = secret_defaults,
    .validate = secret_validate,
};
