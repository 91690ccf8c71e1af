/*
 * strategy_hpa_v1.c -- autoscaling/v1 HorizontalPodAutoscalers: the same
 * objects as autoscaling/v2 ones (stored as those, as Kubernetes stores
 * them), converted as Kubernetes' pkg/apis/autoscaling/v1 conversion does:
 * targetCPUUtilizationPercentage is the v2 CPU Utilization metric; what v1
 * cannot say travels in annotations as JSON (other metrics, behavior,
 * current metrics, conditions) and comes back from them; with no metric at
 * all, v2 gets the default CPU target of 80%.
 */
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

#define ANN_METRICS "autoscaling.alpha.kubernetes.io/metrics"
#define ANN_BEHAVIOR "autoscaling.alpha.kubernetes.io/behavior"
#define ANN_CURRENT "autoscaling.alpha.kubernetes.io/current-metrics"
#define ANN_CONDITIONS "autoscaling.alpha.kubernetes.io/conditions"
#define DEFAULT_CPU 80

/* Is v2 metric `m` a CPU Resource metric with a Utilization target? */
static int cpu_utilization(const json_t *m)
{
    const json_t *res = json_object_get(m, "resource");
    const json_t *target = json_object_get(res, "target");
    return !strcmp(api_json_str(m, "type"), "Resource") && !strcmp(api_json_str(res, "name"), "cpu") &&
           !strcmp(api_json_str(target, "type"), "Utilization") &&
           json_is_integer(json_object_get(target, "averageUtilization"));
}

static json_t *annotations(json_t *obj)
{
    json_t *meta = json_object_get(obj, "metadata");
    json_t *ann = json_object_get(meta, "annotations");
    if (!json_is_object(ann) && json_is_object(meta))
        json_object_set_new(meta, "annotations", ann = json_object());
    return ann;
}

/* Move `value` (stolen) into annotation `key` as JSON text. */
static void annotate(json_t *obj, const char *key, json_t *value)
{
    char *text = json_dumps(value, JSON_COMPACT);
    json_decref(value);
    if (text) json_object_set_new(annotations(obj), key, json_string(text));
    free(text);
}

/* Take annotation `key` out of obj, parsed (a new reference), or NULL. */
static json_t *take_annotation(json_t *obj, const char *key)
{
    json_t *ann = json_object_get(json_object_get(obj, "metadata"), "annotations");
    const char *text = json_string_value(json_object_get(ann, key));
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    json_object_del(ann, key);
    if (ann && !json_object_size(ann))
        json_object_del(json_object_get(obj, "metadata"), "annotations");
    return v;
}

/* autoscaling/v2 -> v1 (from the store). */
static json_t *v2_to_v1(json_t *hpa)
{
    if (!hpa) return NULL;
    json_t *spec = json_object_get(hpa, "spec");
    json_t *status = json_object_get(hpa, "status");
    json_t *v1spec = json_object();
    json_t *other = json_array();
    if (!v1spec || !other) goto fail;
    static const char *const same[] = {"scaleTargetRef", "minReplicas", "maxReplicas"};
    for (size_t i = 0; i < 3; i++)
        if (json_object_get(spec, same[i]))
            json_object_set(v1spec, same[i], json_object_get(spec, same[i]));
    size_t i;
    json_t *m;
    int have_cpu = 0;
    json_array_foreach(json_object_get(spec, "metrics"), i, m) {
        if (!have_cpu && cpu_utilization(m)) {
            have_cpu = 1;
            json_object_set(v1spec, "targetCPUUtilizationPercentage",
                            json_object_get(json_object_get(json_object_get(m, "resource"),
                                                            "target"),
                                            "averageUtilization"));
            continue;
        }
        json_array_append(other, m);
    }
    if (json_array_size(other)) annotate(hpa, ANN_METRICS, json_incref(other));
    if (json_object_get(spec, "behavior"))
        annotate(hpa, ANN_BEHAVIOR, json_incref(json_object_get(spec, "behavior")));
    json_decref(other);
    json_object_set_new(hpa, "spec", v1spec);
    if (json_is_object(status)) {
        json_t *v1st = json_object();
        static const char *const kept[] = {"observedGeneration", "lastScaleTime",
                                           "currentReplicas", "desiredReplicas"};
        for (size_t k = 0; v1st && k < 4; k++)
            if (json_object_get(status, kept[k]))
                json_object_set(v1st, kept[k], json_object_get(status, kept[k]));
        json_t *cur = json_object_get(status, "currentMetrics");
        json_array_foreach(cur, i, m) {
            const json_t *res = json_object_get(m, "resource");
            const json_t *au =
                json_object_get(json_object_get(res, "current"), "averageUtilization");
            if (!strcmp(api_json_str(m, "type"), "Resource") &&
                !strcmp(api_json_str(res, "name"), "cpu") && json_is_integer(au)) {
                json_object_set(v1st, "currentCPUUtilizationPercentage", (json_t *)au);
                break;
            }
        }
        if (json_array_size(cur)) annotate(hpa, ANN_CURRENT, json_incref(cur));
        json_t *conds = json_object_get(status, "conditions");
        if (json_array_size(conds)) annotate(hpa, ANN_CONDITIONS, json_incref(conds));
        if (v1st && !json_object_get(v1st, "currentReplicas"))
            json_object_set_new(v1st, "currentReplicas", json_integer(0));
        if (v1st && !json_object_get(v1st, "desiredReplicas"))
            json_object_set_new(v1st, "desiredReplicas", json_integer(0));
        json_object_set_new(hpa, "status", v1st ? v1st : json_object());
    }
    json_object_set_new(hpa, "apiVersion", json_string("autoscaling/v1"));
    return hpa;
fail:
    json_decref(v1spec);
    json_decref(other);
    json_decref(hpa);
    return NULL;
}

/* autoscaling/v1 -> v2 (to the store). */
static json_t *v1_to_v2(json_t *hpa)
{
    if (!hpa) return NULL;
    json_t *spec = json_object_get(hpa, "spec");
    json_t *v2spec = json_object();
    json_t *metrics = json_array();
    if (!v2spec || !metrics) {
        json_decref(v2spec);
        json_decref(metrics);
        json_decref(hpa);
        return NULL;
    }
    static const char *const same[] = {"scaleTargetRef", "minReplicas", "maxReplicas"};
    for (size_t i = 0; i < 3; i++)
        if (json_object_get(spec, same[i]))
            json_object_set(v2spec, same[i], json_object_get(spec, same[i]));
    const json_t *cpu = json_object_get(spec, "targetCPUUtilizationPercentage");
    if (json_is_integer(cpu))
        json_array_append_new(metrics, json_pack("{s:s, s:{s:s, s:{s:s, s:O}}}", "type",
                                                 "Resource", "resource", "name", "cpu",
                                                 "target", "type", "Utilization",
                                                 "averageUtilization", cpu));
    json_t *other = take_annotation(hpa, ANN_METRICS);
    if (json_is_array(other)) json_array_extend(metrics, other);
    json_decref(other);
    if (!json_array_size(metrics))
        json_array_append_new(metrics, json_pack("{s:s, s:{s:s, s:{s:s, s:i}}}", "type",
                                                 "Resource", "resource", "name", "cpu",
                                                 "target", "type", "Utilization",
                                                 "averageUtilization", DEFAULT_CPU));
    json_object_set_new(v2spec, "metrics", metrics);
    json_t *behavior = take_annotation(hpa, ANN_BEHAVIOR);
    if (json_is_object(behavior)) json_object_set(v2spec, "behavior", behavior);
    json_decref(behavior);
    json_object_set_new(hpa, "spec", v2spec);

    json_t *status = json_object_get(hpa, "status");
    json_t *cur = take_annotation(hpa, ANN_CURRENT);
    json_t *conds = take_annotation(hpa, ANN_CONDITIONS);
    if (json_is_object(status)) {
        json_t *v2st = json_object();
        static const char *const kept[] = {"observedGeneration", "lastScaleTime",
                                           "currentReplicas", "desiredReplicas"};
        for (size_t k = 0; v2st && k < 4; k++)
            if (json_object_get(status, kept[k]))
                json_object_set(v2st, kept[k], json_object_get(status, kept[k]));
        const json_t *cu = json_object_get(status, "currentCPUUtilizationPercentage");
        if (json_is_array(cur))
            json_object_set(v2st, "currentMetrics", cur);
        else if (json_is_integer(cu))
            json_object_set_new(v2st, "currentMetrics",
                                json_pack("[{s:s, s:{s:s, s:{s:O}}}]", "type", "Resource",
                                          "resource", "name", "cpu", "current",
                                          "averageUtilization", cu));
        if (json_is_array(conds)) json_object_set(v2st, "conditions", conds);
        json_object_set_new(hpa, "status", v2st ? v2st : json_object());
    }
    json_decref(cur);
    json_decref(conds);
    json_object_set_new(hpa, "apiVersion", json_string("autoscaling/v2"));
    return hpa;
}

/* SetDefaults_HorizontalPodAutoscaler of autoscaling/v1. */
static void hpa_v1_defaults(json_t *hpa)
{
    json_t *spec = json_object_get(hpa, "spec");
    if (json_is_object(spec) && !json_object_get(spec, "minReplicas"))
        json_object_set_new(spec, "minReplicas", json_integer(1));
}

/* Kubernetes validates the one internal object whatever the version: the
 * autoscaling/v2 rules, on the object as it will be stored (their field
 * paths, as Kubernetes reports them). */
static void hpa_v1_validate(const json_t *hpa, const json_t *old, json_t *causes)
{
    const api_resource_t *v2 = api_registry_find("autoscaling", "v2", "horizontalpodautoscalers");
    const api_strategy_t *st = v2 ? v2->strategy : NULL;
    if (!st || !st->validate) return;
    json_t *now = v1_to_v2(json_deep_copy(hpa));
    json_t *before = old ? v1_to_v2(json_deep_copy(old)) : NULL;
    if (now && (!old || before)) st->validate(now, before, causes);
    json_decref(now);
    json_decref(before);
}

const api_strategy_t api_strategy_horizontalpodautoscaler__autoscaling_v1 = {
    .defaults = hpa_v1_defaults,
    .validate = hpa_v1_validate,
    .to_storage = v1_to_v2,
    .from_storage = v2_to_v1,
};
