/*
 * strategy_cluster.c -- cluster-wide policy kinds: scheduling.k8s.io/v1
 * PriorityClasses, node.k8s.io/v1 RuntimeClasses and autoscaling/v2
 * HorizontalPodAutoscalers (certificates.k8s.io's CSRs: strategy_csr.c).
 * Kubernetes' defaults, status reset on create, what an update keeps, and the
 * checks of pkg/apis/{scheduling,node,autoscaling}/validation with their
 * field paths and messages.
 *
 * PriorityClass's "only one globalDefault" is Kubernetes' Priority admission
 * (admission_priority.c, the strategy's admission hook).
 *
 * Pure functions of their arguments: safe from any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

/* ---- PriorityClass ---- */

#define HIGHEST_USER_PRIORITY 1000000000LL

static const struct {
    const char *name;
    long long value;
} system_classes[] = {
    {"system-node-critical", 2000001000LL},
    {"system-cluster-critical", 2000000000LL},
};

static void priorityclass_defaults(json_t *pc)
{
    api__set_default(pc, "preemptionPolicy", json_string("PreemptLowerPriority"));
}

static void priorityclass_validate(const json_t *pc, const json_t *old, json_t *causes)
{
    static const char *const policies[] = {"Never", "PreemptLowerPriority", NULL};
    const char *name = api_json_str(json_object_get(pc, "metadata"), "name");
    long long value = json_integer_value(json_object_get(pc, "value"));
    int global = json_is_true(json_object_get(pc, "globalDefault"));
    char why[256], msg[400];
    if (!strncmp(name, "system-", 7)) {
        snprintf(why, sizeof why, "%s is not a known system priority class", name);
        int known = 0;
        for (size_t i = 0; i < sizeof system_classes / sizeof system_classes[0]; i++) {
            if (strcmp(system_classes[i].name, name)) continue;
            if (value != system_classes[i].value)
                snprintf(why, sizeof why, "value of %s PriorityClass must be %lld", name,
                         system_classes[i].value);
            else if (global)
                snprintf(why, sizeof why, "globalDefault of %s PriorityClass must be false", name);
            else
                known = 1;
        }
        snprintf(msg, sizeof msg,
                 "priority class names with 'system-' prefix are reserved for system use only. "
                 "error: %s",
                 why);
        if (!known) api__forbidden(causes, "metadata.name", msg);
    } else if (value > HIGHEST_USER_PRIORITY) {
        api__forbidden(causes, "value",
                       "maximum allowed value of a user defined priority is 1000000000");
    }
    const json_t *pp = json_object_get(pc, "preemptionPolicy");
    if (json_is_string(pp) && !*json_string_value(pp))
        api__required(causes, "preemptionPolicy", "");
    else
        api__enum(causes, pc, "preemptionPolicy", "", policies);
    if (!old) return;
    if (!api_json_same(json_object_get(pc, "value"), json_object_get(old, "value")))
        api__forbidden(causes, "value", "may not be changed in an update.");
    api__immutable(causes, "preemptionPolicy", pp, json_object_get(old, "preemptionPolicy"));
}

const api_strategy_t api_strategy_priorityclass = {
    .defaults = priorityclass_defaults,
    .validate = priorityclass_validate,
    .admission = api_priority_admit_class,
};

/* ---- RuntimeClass ---- */

static void runtimeclass_validate(const json_t *rc, const json_t *old, json_t *causes)
{
    api__dns_name(causes, "handler", api_json_str(rc, "handler"), 1);
    const json_t *fixed = json_object_get(json_object_get(rc, "overhead"), "podFixed");
    const char *k;
    json_t *q;
    json_object_foreach((json_t *)fixed, k, q) {
        char f[160];
        snprintf(f, sizeof f, "overhead.podFixed[%s]", k);
        api__quantity_check(causes, f, q, 0, NULL);
    }
    const json_t *ns = json_object_get(json_object_get(rc, "scheduling"), "nodeSelector");
    json_object_foreach((json_t *)ns, k, q) {
        char err[512];
        if (sel_label_key_check(k, err, sizeof err)) {
            api__invalid_str(causes, "scheduling.nodeSelector", k, err);
        }
    }
    if (old)
        api__immutable(causes, "handler", json_object_get(rc, "handler"),
                       json_object_get(old, "handler"));
}

const api_strategy_t api_strategy_runtimeclass = {
    .validate = runtimeclass_validate,
};

/* ---- HorizontalPodAutoscaler (autoscaling/v2) ---- */

static void hpa_prepare_create(json_t *hpa)
{
    json_object_set_new(hpa, "status", json_pack("{s:i}", "desiredReplicas", 0));
}

static json_t *hpa_policy(const char *type, int value, int period)
{
    return json_pack("{s:s, s:i, s:i}", "type", type, "value", value, "periodSeconds", period);
}

/* GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: fill what a given
 * rule leaves out. */
static void hpa_rules_defaults(json_t *behavior, const char *key, int up)
{
    json_t *rules = api_json_child(behavior, key);
    api__set_default(rules, "stabilizationWindowSeconds", json_integer(up ? 0 : 300));
    api__set_default(rules, "selectPolicy", json_string("Max"));
    if (json_array_size(json_object_get(rules, "policies"))) return;
    json_t *p = json_array();
    if (up) {
        json_array_append_new(p, hpa_policy("Pods", 4, 15));
        json_array_append_new(p, hpa_policy("Percent", 100, 15));
    } else {
        json_array_append_new(p, hpa_policy("Percent", 100, 15));
    }
    json_object_set_new(rules, "policies", p);
}

static void hpa_defaults(json_t *hpa)
{
    json_t *spec = api_json_child(hpa, "spec");
    api__set_default(spec, "minReplicas", json_integer(1));
    if (!json_array_size(json_object_get(spec, "metrics")))
        json_object_set_new(spec, "metrics",
                            json_pack("[{s:s, s:{s:s, s:{s:s, s:i}}}]", "type", "Resource",
                                      "resource", "name", "cpu", "target", "type", "Utilization",
                                      "averageUtilization", 80));
    json_t *behavior = json_object_get(spec, "behavior");
    if (!json_is_object(behavior)) return; /* only a given behavior is filled in */
    hpa_rules_defaults(behavior, "scaleUp", 1);
    hpa_rules_defaults(behavior, "scaleDown", 0);
}

/* ValidateCrossVersionObjectReference: kind and name, path segments. */
static void check_object_ref(const json_t *ref, const char *path, json_t *causes)
{
    static const char *const keys[] = {"kind", "name", NULL};
    for (const char *const *k = keys; *k; k++) {
        char f[160];
        snprintf(f, sizeof f, "%s.%s", path, *k);
        const char *v = api_json_str(ref, *k);
        const char *bad = *v ? api__path_segment_invalid(v) : NULL;
        if (!*v) api__required(causes, f, "");
        else if (bad) api__invalid(causes, f, json_object_get(ref, *k), bad);
    }
}

static void check_metric_target(const json_t *t, const char *path, json_t *causes)
{
    char f[320];
    const json_t *type = json_object_get(t, "type");
    const char *s = json_string_value(type);
    snprintf(f, sizeof f, "%s.type", path);
    if (!s || !*s) api__required(causes, f, "must specify a metric target type");
    if (!s || (strcmp(s, "Utilization") && strcmp(s, "Value") && strcmp(s, "AverageValue")))
        api__invalid(causes, f, type, "must be either Utilization, Value, or AverageValue");
    static const char *const qs[] = {"value", "averageValue", NULL};
    for (const char *const *k = qs; *k; k++) {
        const json_t *q = json_object_get(t, *k);
        int64_t m;
        if (!q || json_is_null(q)) continue;
        snprintf(f, sizeof f, "%s.%s", path, *k);
        if (api__quantity(q, 1, &m)) api__invalid(causes, f, q, API_QUANTITY_MSG);
        else if (m <= 0) api__invalid(causes, f, q, "must be positive");
    }
    const json_t *u = json_object_get(t, "averageUtilization");
    snprintf(f, sizeof f, "%s.averageUtilization", path);
    if (u && !json_is_null(u) && (!json_is_integer(u) || json_integer_value(u) < 1))
        api__invalid(causes, f, u, "must be greater than 0");
}

static int has(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return v && !json_is_null(v);
}

static void check_metric(const json_t *m, const char *path, json_t *causes)
{
    static const char *const types[] = {"ContainerResource", "External", "Object", "Pods",
                                        "Resource", NULL};
    static const char *const fields[] = {"containerResource", "external", "object", "pods",
                                         "resource", NULL};
    char f[160], g[256];
    const json_t *type = json_object_get(m, "type");
    const char *s = json_string_value(type);
    snprintf(f, sizeof f, "%s.type", path);
    if (!s || !*s) {
        api__required(causes, f, "must specify a metric source type");
        return;
    }
    int which = -1;
    for (int i = 0; types[i]; i++)
        if (!strcmp(s, types[i])) which = i;
    if (which < 0) {
        api__not_supported(causes, f, type, types);
        return;
    }
    const char *field = fields[which];
    const json_t *src = json_object_get(m, field);
    snprintf(f, sizeof f, "%s.%s", path, field);
    if (!has(m, field)) {
        api__required(causes, f, "must populate information for the given metric source");
        return;
    }
    for (int i = 0; fields[i]; i++) {
        if (i == which || !has(m, fields[i])) continue;
        snprintf(g, sizeof g, "%s.%s", path, fields[i]);
        api__forbidden(causes, g, "must populate the given metric source only");
    }
    const json_t *target = json_object_get(src, "target");
    snprintf(g, sizeof g, "%s.target", f);
    check_metric_target(target, g, causes);
    if (which == 0 || which == 4) { /* (Container)Resource */
        snprintf(g, sizeof g, "%s.name", f);
        if (!*api_json_str(src, "name")) api__required(causes, g, "must specify a resource name");
        if (which == 0) {
            snprintf(g, sizeof g, "%s.container", f);
            if (!*api_json_str(src, "container"))
                api__required(causes, g, "must specify a container");
        }
        int util = has(target, "averageUtilization"), avg = has(target, "averageValue");
        snprintf(g, sizeof g, "%s.target.averageUtilization", f);
        if (!util && !avg)
            api__required(causes, g, "must set either a target raw value or a target utilization");
        snprintf(g, sizeof g, "%s.target.averageValue", f);
        if (util && avg)
            api__forbidden(causes, g, "may not set both a target raw value and a target utilization");
        return;
    }
    snprintf(g, sizeof g, "%s.metric.name", f);
    if (!*api_json_str(json_object_get(src, "metric"), "name"))
        api__required(causes, g, "must specify a metric name");
    if (which == 3) { /* Pods */
        snprintf(g, sizeof g, "%s.target.averageValue", f);
        if (!has(target, "averageValue"))
            api__required(causes, g, "must specify a positive target averageValue");
        return;
    }
    if (which == 2) { /* Object */
        snprintf(g, sizeof g, "%s.describedObject", f);
        check_object_ref(json_object_get(src, "describedObject"), g, causes);
    }
    snprintf(g, sizeof g, "%s.target.averageValue", f);
    if (!has(target, "value") && !has(target, "averageValue"))
        api__required(causes, g, "must set either a target value or averageValue");
    if (which == 1 && has(target, "value") && has(target, "averageValue")) {
        snprintf(g, sizeof g, "%s.target.value", f);
        api__forbidden(causes, g, "may not set both a target value for metric and a target "
                                  "average value for metric");
    }
}

static void check_scaling_rules(const json_t *rules, const char *path, json_t *causes)
{
    static const char *const selects[] = {"Disabled", "Max", "Min", NULL};
    static const char *const ptypes[] = {"Percent", "Pods", NULL};
    char f[160];
    if (!json_is_object(rules)) return;
    const json_t *w = json_object_get(rules, "stabilizationWindowSeconds");
    snprintf(f, sizeof f, "%s.stabilizationWindowSeconds", path);
    if (json_is_integer(w) && json_integer_value(w) < 0)
        api__invalid(causes, f, w, "must be greater than or equal to zero");
    if (json_is_integer(w) && json_integer_value(w) > 3600)
        api__invalid(causes, f, w, "must be less than or equal to 3600");
    api__enum(causes, rules, "selectPolicy", path, selects);
    const json_t *policies = json_object_get(rules, "policies");
    snprintf(f, sizeof f, "%s.policies", path);
    if (!json_array_size(policies)) api__required(causes, f, "must specify at least one Policy");
    size_t i;
    json_t *p;
    json_array_foreach(policies, i, p) {
        snprintf(f, sizeof f, "%s.policies[%zu]", path, i);
        const json_t *t = json_object_get(p, "type");
        char g[192];
        snprintf(g, sizeof g, "%s.type", f);
        if (!api__in(json_string_value(t), ptypes)) api__not_supported(causes, g, t, ptypes);
        const json_t *v = json_object_get(p, "value"), *ps = json_object_get(p, "periodSeconds");
        snprintf(g, sizeof g, "%s.value", f);
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
            api__invalid(causes, g, v, "must be greater than zero");
        snprintf(g, sizeof g, "%s.periodSeconds", f);
        if (!json_is_integer(ps) || json_integer_value(ps) <= 0)
            api__invalid(causes, g, ps, "must be greater than zero");
        else if (json_integer_value(ps) > 1800)
            api__invalid(causes, g, ps, "must be less than or equal to 1800");
    }
}

static void hpa_validate(const json_t *hpa, const json_t *old, json_t *causes)
{
    (void)old;
    const json_t *spec = json_object_get(hpa, "spec");
    check_object_ref(json_object_get(spec, "scaleTargetRef"), "spec.scaleTargetRef", causes);
    const json_t *minv = json_object_get(spec, "minReplicas");
    const json_t *maxv = json_object_get(spec, "maxReplicas");
    if (json_is_integer(minv) && json_integer_value(minv) < 1)
        api__invalid(causes, "spec.minReplicas", minv, "must be greater than or equal to 1");
    if (!maxv || json_is_null(maxv))
        api_cause(causes, "FieldValueInvalid", "spec.maxReplicas",
                  "Invalid value: 0: must be greater than 0");
    else if (!json_is_integer(maxv) || json_integer_value(maxv) < 1)
        api__invalid(causes, "spec.maxReplicas", maxv, "must be greater than 0");
    else if (json_is_integer(minv) && json_integer_value(maxv) < json_integer_value(minv))
        api__invalid(causes, "spec.maxReplicas", maxv,
                     "must be greater than or equal to `minReplicas`");
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(spec, "metrics"), i, m) {
        char f[64];
        snprintf(f, sizeof f, "spec.metrics[%zu]", i);
        check_metric(m, f, causes);
    }
    const json_t *b = json_object_get(spec, "behavior");
    check_scaling_rules(json_object_get(b, "scaleUp"), "spec.behavior.scaleUp", causes);
    check_scaling_rules(json_object_get(b, "scaleDown"), "spec.behavior.scaleDown", causes);
}

const api_strategy_t api_strategy_horizontalpodautoscaler = {
    .prepare_create = hpa_prepare_create,
    .defaults = hpa_defaults,
    .validate = hpa_validate,
};
