/*
 * strategy_apiservice.c -- APIService (apiregistration.k8s.io/v1): Kubernetes'
 * apiservice strategy and ValidateAPIService. The status is the APIService
 * controller's (apiservice.c): a create starts without one.
 */
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

static void apiservice_prepare_create(json_t *obj)
{
    json_object_del(obj, "status");
}

static int json_int(const json_t *obj, const char *key, json_int_t *out)
{
    const json_t *v = json_object_get(obj, key);
    *out = json_is_integer(v) ? json_integer_value(v) : 0;
    return v != NULL;
}

/* Kubernetes' IsDNS1035Label: its message, or NULL when `s` is one. */
static const char *dns1035_invalid(const char *s)
{
    size_t n = strlen(s);
    if (n > 63) return "must be no more than 63 characters";
    int ok = n > 0 && s[0] >= 'a' && s[0] <= 'z' &&
             ((s[n - 1] >= 'a' && s[n - 1] <= 'z') || (s[n - 1] >= '0' && s[n - 1] <= '9'));
    for (size_t i = 0; ok && i < n; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-';
    return ok ? NULL
              : "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                "start with an alphabetic character, and end with an alphanumeric character "
                "(e.g. 'my-name',  or 'abc-123', regex used for validation is "
                "'[a-z]([-a-z0-9]*[a-z0-9])?')";
}

static void apiservice_validate(const json_t *obj, const json_t *old, json_t *causes)
{
    (void)old;
    const json_t *spec = json_object_get(obj, "spec");
    const char *group = api_json_str(spec, "group"), *version = api_json_str(spec, "version");
    const char *name = api_json_str(json_object_get(obj, "metadata"), "name");
    char want[512];
    snprintf(want, sizeof want, "%s.%s", version, group);
    if (strcmp(name, want))
        api_cause(causes, "FieldValueInvalid", "metadata.name",
                  "Invalid value: \"%s\": must be `spec.version+\".\"+spec.group`: \"%s\"", name,
                  want);
    if (!*group && strcmp(version, "v1"))
        api_cause(causes, "FieldValueRequired", "spec.group",
                  "Required value: only v1 may have an empty group and it better be legacy kube");
    const char *why = *group ? api_name_invalid(group, 0) : NULL;
    if (why) api_cause(causes, "FieldValueInvalid", "spec.group", "Invalid value: \"%s\": %s", group, why);
    if ((why = dns1035_invalid(version)))
        api_cause(causes, "FieldValueInvalid", "spec.version", "Invalid value: \"%s\": %s", version,
                  why);
    json_int_t gp, vp;
    json_int(spec, "groupPriorityMinimum", &gp);
    json_int(spec, "versionPriority", &vp);
    if (gp <= 0 || gp > 20000)
        api_cause(causes, "FieldValueInvalid", "spec.groupPriorityMinimum",
                  "Invalid value: %lld: must be positive and less than 20000", (long long)gp);
    if (vp <= 0 || vp > 1000)
        api_cause(causes, "FieldValueInvalid", "spec.versionPriority",
                  "Invalid value: %lld: must be positive and less than 1000", (long long)vp);
    const json_t *svc = json_object_get(spec, "service");
    const char *ca = api_json_str(spec, "caBundle");
    int insecure = json_is_true(json_object_get(spec, "insecureSkipTLSVerify"));
    if (!json_is_object(svc)) {
        if (*ca)
            api_cause(causes, "FieldValueInvalid", "spec.caBundle",
                      "Invalid value: \"%zu bytes\": local APIServices may not have a caBundle",
                      strlen(ca) / 4 * 3);
        if (insecure)
            api_cause(causes, "FieldValueInvalid", "spec.insecureSkipTLSVerify",
                      "Invalid value: true: local APIServices may not have insecureSkipTLSVerify");
        return;
    }
    if (!*api_json_str(svc, "namespace"))
        api_cause(causes, "FieldValueRequired", "spec.service.namespace", "Required value");
    if (!*api_json_str(svc, "name"))
        api_cause(causes, "FieldValueRequired", "spec.service.name", "Required value");
    json_int_t port;
    if (json_int(svc, "port", &port) && (port < 1 || port > 65535))
        api_cause(causes, "FieldValueInvalid", "spec.service.port",
                  "Invalid value: %lld: port is not valid: must be between 1 and 65535, "
                  "inclusive",
                  (long long)port);
    if (insecure && *ca)
        api_cause(causes, "FieldValueInvalid", "spec.insecureSkipTLSVerify",
                  "Invalid value: true: may not be true if caBundle is present");
}

const api_strategy_t api_strategy_apiservice = {
    .name_rule = API_NAME_PATH_SEGMENT,
    .prepare_create = apiservice_prepare_create,
    .validate = apiservice_validate,
};
