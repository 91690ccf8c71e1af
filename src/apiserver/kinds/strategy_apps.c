/*
 * strategy_apps.c -- workloads that embed a pod template (apps/v1 Deployment,
 * ReplicaSet, StatefulSet, DaemonSet; batch/v1 Job):
 * Kubernetes' defaults, and validation of replicas, selectors (required,
 * matching the template's labels, immutable) and strategies.
 */
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/schema/selector.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

static void set_default(json_t *obj, const char *key, json_t *value)
{
    if (!json_object_get(obj, key)) json_object_set_new(obj, key, value);
    else json_decref(value);
}

static json_t *child(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) {
        c = json_object();
        json_object_set_new(obj, key, c);
    }
    return c;
}

static void template_defaults(json_t *spec)
{
    json_t *tmpl = json_object_get(spec, "template");
    if (json_is_object(tmpl)) api_pod_spec_defaults(child(tmpl, "spec"));
}

static void check_count_at(const json_t *spec, const char *path, const char *key, json_t *causes)
{
    const json_t *v = json_object_get(spec, key);
    char field[160];
    snprintf(field, sizeof field, "%s.%s", path, key);
    if (!v || json_is_null(v)) return;
    if (!json_is_integer(v))
        api_cause(causes, "FieldValueTypeInvalid", field, "Invalid value: must be an integer");
    else if (json_integer_value(v) < 0)
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: %lld: must be greater than or equal to 0",
                  (long long)json_integer_value(v));
}

static void check_count(const json_t *spec, const char *key, json_t *causes)
{
    check_count_at(spec, "spec", key, causes);
}

/* spec.selector: required and non-empty, matching the template's labels,
 * unchanged by an update. */
static void check_selector(const json_t *obj, const json_t *old, int required, json_t *causes)
{
    const json_t *spec = json_object_get(obj, "spec");
    const json_t *sel = json_object_get(spec, "selector");
    char err[256];
    if (!sel || json_is_null(sel)) {
        if (required) api_cause(causes, "FieldValueRequired", "spec.selector", "Required value");
        return;
    }
    sel_label_t *s = NULL;
    if (sel_label_from_json(sel, &s, err, sizeof err)) {
        api_cause(causes, "FieldValueInvalid", "spec.selector", "Invalid value: %s", err);
        return;
    }
    if (sel_label_empty(s)) {
        api_cause(causes, "FieldValueInvalid", "spec.selector",
                  "Invalid value: empty selector is invalid for deployment");
    } else {
        const json_t *labels = json_object_get(
            json_object_get(json_object_get(spec, "template"), "metadata"), "labels");
        if (!sel_label_match(s, labels))
            api_cause(causes, "FieldValueInvalid", "spec.template.metadata.labels",
                      "Invalid value: `selector` does not match template `labels`");
    }
    sel_label_free(s);
    if (old && !api_json_same(sel, json_object_get(json_object_get(old, "spec"), "selector")))
        api_cause(causes, "FieldValueInvalid", "spec.selector",
                  "Invalid value: field is immutable");
}

/* spec.template (at `path`, the spec's own path): present, a valid pod
 * spec, with one of the restart policies allowed. */
static void check_template_at(const json_t *spec, const char *path, json_t *causes,
                              const char *const *restart)
{
    const json_t *tmpl = json_object_get(spec, "template");
    char field[160];
    snprintf(field, sizeof field, "%s.template", path);
    if (!json_is_object(tmpl)) {
        api_cause(causes, "FieldValueRequired", field, "Required value");
        return;
    }
    const json_t *pspec = json_object_get(tmpl, "spec");
    snprintf(field, sizeof field, "%s.template.spec", path);
    api_pod_spec_validate(pspec, field, causes);
    const char *rp = json_string_value(json_object_get(pspec, "restartPolicy"));
    for (const char *const *a = restart; rp && *a; a++)
        if (!strcmp(rp, *a)) return;
    if (!rp && !restart[1]) return; /* defaulted to Always */
    char list[64] = "";
    for (const char *const *a = restart; *a; a++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s\"%s\"", n ? ", " : "", *a);
    }
    snprintf(field, sizeof field, "%s.template.spec.restartPolicy", path);
    api_cause(causes, rp ? "FieldValueNotSupported" : "FieldValueRequired", field,
              rp ? "Unsupported value: \"%s\": supported values: %s" : "Required value%s%s",
              rp ? rp : "", rp ? list : "");
}

static void check_template(const json_t *obj, json_t *causes, const char *const *restart)
{
    check_template_at(json_object_get(obj, "spec"), "spec", causes, restart);
}

static const char *const always[] = {"Always", NULL};

/* ---- Deployment ---- */

static void deployment_defaults(json_t *d)
{
    json_t *spec = child(d, "spec");
    set_default(spec, "replicas", json_integer(1));
    json_t *strategy = child(spec, "strategy");
    set_default(strategy, "type", json_string("RollingUpdate"));
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (type && !strcmp(type, "RollingUpdate")) {
        json_t *ru = child(strategy, "rollingUpdate");
        set_default(ru, "maxUnavailable", json_string("25%"));
        set_default(ru, "maxSurge", json_string("25%"));
    }
    set_default(spec, "revisionHistoryLimit", json_integer(10));
    set_default(spec, "progressDeadlineSeconds", json_integer(600));
    template_defaults(spec);
}

static int is_zero(const json_t *v)
{
    return !v || (json_is_integer(v) && json_integer_value(v) == 0) ||
           (json_is_string(v) && !strcmp(json_string_value(v), "0%"));
}

static void deployment_validate(const json_t *d, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(d, "spec");
    check_count(spec, "replicas", causes);
    check_selector(d, old, 1, causes);
    check_template(d, causes, always);
    const json_t *strategy = json_object_get(spec, "strategy");
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (type && strcmp(type, "RollingUpdate") && strcmp(type, "Recreate"))
        api_cause(causes, "FieldValueNotSupported", "spec.strategy.type",
                  "Unsupported value: \"%s\": supported values: \"Recreate\", \"RollingUpdate\"",
                  type);
    const json_t *ru = json_object_get(strategy, "rollingUpdate");
    if (type && !strcmp(type, "Recreate") && ru && !json_is_null(ru))
        api_cause(causes, "FieldValueForbidden", "spec.strategy.rollingUpdate",
                  "Forbidden: may not be specified when strategy `type` is 'Recreate'");
    if (ru && is_zero(json_object_get(ru, "maxSurge")) &&
        is_zero(json_object_get(ru, "maxUnavailable")))
        api_cause(causes, "FieldValueInvalid", "spec.strategy.rollingUpdate.maxUnavailable",
                  "Invalid value: may not be 0 when `maxSurge` is 0");
}

/* deploymentStatusStrategy: a status write keeps the old labels too. */
static void deployment_prepare_status_update(json_t *d, const json_t *old)
{
    json_t *meta = json_object_get(d, "metadata");
    json_t *labels = json_object_get(json_object_get(old, "metadata"), "labels");
    if (!json_is_object(meta)) return;
    if (labels) json_object_set(meta, "labels", labels);
    else json_object_del(meta, "labels");
}

const api_strategy_t api_strategy_deployment = {
    .defaults = deployment_defaults,
    .validate = deployment_validate,
    .generation = 1,
    .prepare_status_update = deployment_prepare_status_update,
};

/* ---- ReplicaSet ---- */

static void replicaset_defaults(json_t *rs)
{
    json_t *spec = child(rs, "spec");
    set_default(spec, "replicas", json_integer(1));
    template_defaults(spec);
}

static void replicaset_validate(const json_t *rs, const json_t *old, json_t *causes)
{
    check_count(json_object_get(rs, "spec"), "replicas", causes);
    check_selector(rs, old, 1, causes);
    check_template(rs, causes, always);
}

const api_strategy_t api_strategy_replicaset = {
    .defaults = replicaset_defaults,
    .validate = replicaset_validate,
    .generation = 1,
};

/* ---- StatefulSet ---- */

static void statefulset_defaults(json_t *sts)
{
    json_t *spec = child(sts, "spec");
    set_default(spec, "replicas", json_integer(1));
    set_default(spec, "podManagementPolicy", json_string("OrderedReady"));
    json_t *us = child(spec, "updateStrategy");
    set_default(us, "type", json_string("RollingUpdate"));
    const char *type = json_string_value(json_object_get(us, "type"));
    if (type && !strcmp(type, "RollingUpdate"))
        set_default(child(us, "rollingUpdate"), "partition", json_integer(0));
    set_default(spec, "revisionHistoryLimit", json_integer(10));
    /* StatefulSetAutoDeletePVC (on since 1.27): keep claims; kplane has no
     * claims to delete, the field is there for clients. */
    json_t *pvc = child(spec, "persistentVolumeClaimRetentionPolicy");
    set_default(pvc, "whenDeleted", json_string("Retain"));
    set_default(pvc, "whenScaled", json_string("Retain"));
    /* Optional in the API, but older Python clients refuse a spec without it. */
    set_default(spec, "serviceName", json_string(""));
    template_defaults(spec);
}

static void statefulset_validate(const json_t *sts, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(sts, "spec");
    check_count(spec, "replicas", causes);
    check_selector(sts, old, 1, causes);
    check_template(sts, causes, always);
    const char *pmp = json_string_value(json_object_get(spec, "podManagementPolicy"));
    if (pmp && strcmp(pmp, "OrderedReady") && strcmp(pmp, "Parallel"))
        api_cause(causes, "FieldValueNotSupported", "spec.podManagementPolicy",
                  "Unsupported value: \"%s\": supported values: \"OrderedReady\", \"Parallel\"",
                  pmp);
    const char *ut =
        json_string_value(json_object_get(json_object_get(spec, "updateStrategy"), "type"));
    if (ut && strcmp(ut, "RollingUpdate") && strcmp(ut, "OnDelete"))
        api_cause(causes, "FieldValueNotSupported", "spec.updateStrategy.type",
                  "Unsupported value: \"%s\": supported values: \"OnDelete\", \"RollingUpdate\"",
                  ut);
}

const api_strategy_t api_strategy_statefulset = {
    .defaults = statefulset_defaults,
    .validate = statefulset_validate,
    .generation = 1,
};

/* ---- DaemonSet ---- */

static void daemonset_defaults(json_t *ds)
{
    json_t *spec = child(ds, "spec");
    json_t *us = child(spec, "updateStrategy");
    set_default(us, "type", json_string("RollingUpdate"));
    const char *type = json_string_value(json_object_get(us, "type"));
    if (type && !strcmp(type, "RollingUpdate")) {
        json_t *ru = child(us, "rollingUpdate");
        set_default(ru, "maxUnavailable", json_integer(1));
        set_default(ru, "maxSurge", json_integer(0));
    }
    set_default(spec, "revisionHistoryLimit", json_integer(10));
    template_defaults(spec);
}

static void daemonset_validate(const json_t *ds, const json_t *old, json_t *causes)
{
    check_selector(ds, old, 1, causes);
    check_template(ds, causes, always);
}

const api_strategy_t api_strategy_daemonset = {
    .defaults = daemonset_defaults,
    .validate = daemonset_validate,
    .generation = 1,
};

/* ---- Job ---- */

/* Unless spec.manualSelector, the server picks the selector: the Job's uid,
 * which the template's labels then carry (with the Job's name). */
static void job_prepare_create(json_t *job)
{
    json_t *spec = child(job, "spec");
    if (json_is_true(json_object_get(spec, "manualSelector"))) return;
    const char *uid = json_string_value(json_object_get(json_object_get(job, "metadata"), "uid"));
    const char *name =
        json_string_value(json_object_get(json_object_get(job, "metadata"), "name"));
    if (!uid || !name) return;
    json_object_set_new(spec, "selector",
                        json_pack("{s:{s:s}}", "matchLabels", "batch.kubernetes.io/controller-uid",
                                  uid));
    json_t *labels = child(child(child(spec, "template"), "metadata"), "labels");
    json_object_set_new(labels, "batch.kubernetes.io/controller-uid", json_string(uid));
    json_object_set_new(labels, "batch.kubernetes.io/job-name", json_string(name));
    json_object_set_new(labels, "controller-uid", json_string(uid));
    json_object_set_new(labels, "job-name", json_string(name));
}

static void job_defaults(json_t *job)
{
    json_t *spec = child(job, "spec");
    if (!json_object_get(spec, "completions") && !json_object_get(spec, "parallelism")) {
        json_object_set_new(spec, "completions", json_integer(1));
        json_object_set_new(spec, "parallelism", json_integer(1));
    }
    set_default(spec, "parallelism", json_integer(1));
    set_default(spec, "backoffLimit", json_integer(6));
    set_default(spec, "completionMode", json_string("NonIndexed"));
    set_default(spec, "suspend", json_false());
    /* 1.29+: replace terminating pods at once, unless a podFailurePolicy
     * asks to wait for them to fail. */
    set_default(spec, "podReplacementPolicy",
                json_string(json_object_get(spec, "podFailurePolicy") ? "Failed"
                                                                      : "TerminatingOrFailed"));
    template_defaults(spec);
}

/* Kubernetes' validateJobSpec, for a Job's spec and a CronJob's
 * jobTemplate.spec alike (strategy.h). */
void api_job_spec_validate(const json_t *spec, const char *path, json_t *causes)
{
    static const char *const restart[] = {"OnFailure", "Never", NULL};
    char field[160];
    check_count_at(spec, path, "parallelism", causes);
    check_count_at(spec, path, "completions", causes);
    check_count_at(spec, path, "backoffLimit", causes);
    check_count_at(spec, path, "activeDeadlineSeconds", causes);
    check_template_at(spec, path, causes, restart);
    const char *mode = json_string_value(json_object_get(spec, "completionMode"));
    snprintf(field, sizeof field, "%s.completionMode", path);
    if (mode && strcmp(mode, "NonIndexed") && strcmp(mode, "Indexed"))
        api_cause(causes, "FieldValueNotSupported", field,
                  "Unsupported value: \"%s\": supported values: \"NonIndexed\", \"Indexed\"",
                  mode);
    snprintf(field, sizeof field, "%s.completions", path);
    if (mode && !strcmp(mode, "Indexed") && !json_is_integer(json_object_get(spec, "completions")))
        api_cause(causes, "FieldValueRequired", field,
                  "Required value: when completion mode is Indexed");
}

static void job_validate(const json_t *job, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(job, "spec");
    api_job_spec_validate(spec, "spec", causes);
    check_selector(job, old, 1, causes);
    if (old) {
        const json_t *ospec = json_object_get(old, "spec");
        if (!api_json_same(json_object_get(spec, "completions"), json_object_get(ospec, "completions")))
            api_cause(causes, "FieldValueInvalid", "spec.completions",
                      "Invalid value: field is immutable");
    }
}

const api_strategy_t api_strategy_job = {
    /* DefaultGarbageCollectionPolicy: OrphanDependents for batch/v1, kept
     * for compatibility (pkg/registry/batch/job/strategy.go). */
    .default_orphan = 1,
    .prepare_create = job_prepare_create,
    .defaults = job_defaults,
    .validate = job_validate,
    .generation = 1,
};
