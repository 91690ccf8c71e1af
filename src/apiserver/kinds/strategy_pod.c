/*
 * strategy_pod.c -- pods: the defaults clients rely on, the status the server
 * owns at creation, validation of the pod spec, and what an update may change.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "lib/quantity.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"

static void set_default(json_t *obj, const char *key, json_t *value)
{
    if (!json_object_get(obj, key)) json_object_set_new(obj, key, value);
    else json_decref(value);
}

static json_t *child_object(json_t *obj, const char *key)
{
    json_t *c = json_object_get(obj, key);
    if (!json_is_object(c)) {
        c = json_object();
        json_object_set_new(obj, key, c);
    }
    return c;
}

/* Always for ":latest" or no tag, else IfNotPresent. */
static const char *pull_policy(const char *image)
{
    const char *slash = strrchr(image, '/');
    const char *name = slash ? slash + 1 : image;
    if (strchr(name, '@')) return "IfNotPresent";
    const char *colon = strrchr(name, ':');
    return !colon || !strcmp(colon, ":latest") ? "Always" : "IfNotPresent";
}

static void container_defaults(json_t *c)
{
    const char *image = json_string_value(json_object_get(c, "image"));
    if (image) set_default(c, "imagePullPolicy", json_string(pull_policy(image)));
    set_default(c, "terminationMessagePath", json_string("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json_string("File"));
    set_default(c, "resources", json_object());
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(c, "ports"), i, p) {
        if (json_is_object(p)) set_default(p, "protocol", json_string("TCP"));
    }
}

void api_pod_spec_defaults(json_t *spec)
{
    set_default(spec, "restartPolicy", json_string("Always"));
    set_default(spec, "dnsPolicy", json_string("ClusterFirst"));
    set_default(spec, "schedulerName", json_string("default-scheduler"));
    set_default(spec, "terminationGracePeriodSeconds", json_integer(30));
    set_default(spec, "securityContext", json_object());
    set_default(spec, "enableServiceLinks", json_true());
    const char *sa = json_string_value(json_object_get(spec, "serviceAccountName"));
    set_default(spec, "serviceAccountName", json_string(sa ? sa : "default"));
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), i, c) {
        if (json_is_object(c)) container_defaults(c);
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c) {
        if (json_is_object(c)) container_defaults(c);
    }
}

static int dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-';
        if (!ok || ((i == 0 || i == n - 1) && ch == '-')) return 0;
    }
    return 1;
}

static void validate_containers(const json_t *list, const char *path, int required,
                                json_t *causes, json_t *names)
{
    char field[256];
    if (!list || json_is_null(list)) {
        if (required) api_cause(causes, "FieldValueRequired", path, "Required value");
        return;
    }
    if (!json_is_array(list)) {
        api_cause(causes, "FieldValueTypeInvalid", path, "Invalid value: must be a list");
        return;
    }
    if (required && json_array_size(list) == 0)
        api_cause(causes, "FieldValueRequired", path, "Required value");
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c) {
        if (!json_is_object(c)) {
            snprintf(field, sizeof field, "%s[%zu]", path, i);
            api_cause(causes, "FieldValueTypeInvalid", field, "Invalid value: must be an object");
            continue;
        }
        const json_t *nm = json_object_get(c, "name");
        const char *name = json_string_value(nm);
        snprintf(field, sizeof field, "%s[%zu].name", path, i);
        if (!name || !*name) {
            api_cause(causes, "FieldValueRequired", field, "Required value");
        } else if (!dns_label(name)) {
            api_cause(causes, "FieldValueInvalid", field,
                      "Invalid value: \"%s\": a lowercase RFC 1123 label must consist of lower "
                      "case alphanumeric characters or '-', and must start and end with an "
                      "alphanumeric character",
                      name);
        } else if (json_object_get(names, name)) {
            api_cause(causes, "FieldValueDuplicate", field, "Duplicate value: \"%s\"", name);
        } else {
            json_object_set_new(names, name, json_true());
        }
        const json_t *img = json_object_get(c, "image");
        snprintf(field, sizeof field, "%s[%zu].image", path, i);
        if (img && !json_is_string(img))
            api_cause(causes, "FieldValueTypeInvalid", field, "Invalid value: must be a string");
        else if (!img || !*json_string_value(img))
            api_cause(causes, "FieldValueRequired", field, "Required value");
        size_t j;
        json_t *p;
        json_array_foreach(json_object_get(c, "ports"), j, p) {
            const json_t *cp = json_object_get(p, "containerPort");
            snprintf(field, sizeof field, "%s[%zu].ports[%zu].containerPort", path, i, j);
            if (!json_is_integer(cp) || json_integer_value(cp) < 1 ||
                json_integer_value(cp) > 65535)
                api_cause(causes, "FieldValueInvalid", field,
                          "Invalid value: must be between 1 and 65535, inclusive");
        }
    }
}

static void one_of(const json_t *spec, const char *key, const char *path,
                   const char *const *allowed, json_t *causes)
{
    const json_t *v = json_object_get(spec, key);
    if (!v) return;
    char field[256];
    snprintf(field, sizeof field, "%s.%s", path, key);
    const char *s = json_string_value(v);
    for (const char *const *a = allowed; s && *a; a++)
        if (!strcmp(s, *a)) return;
    char list[256] = "";
    for (const char *const *a = allowed; *a; a++) {
        size_t n = strlen(list);
        snprintf(list + n, sizeof list - n, "%s\"%s\"", n ? ", " : "", *a);
    }
    api_cause(causes, "FieldValueNotSupported", field,
              "Unsupported value: \"%s\": supported values: %s", s ? s : "?", list);
}

/* Kubernetes' IsValidSysctlName: at most 253 characters, segments of
 * [a-z0-9]([-_a-z0-9]*[a-z0-9])? joined by '.' or '/'. */
static int sysctl_name_ok(const char *name)
{
    size_t n = strlen(name), seg = 0;
    if (!n || n > 253) return 0;
    for (size_t i = 0; i <= n; i++) {
        char c = name[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (c == '.' || c == '/' || c == '\0') {
            char last = i ? name[i - 1] : '\0';
            if (!seg || !((last >= 'a' && last <= 'z') || (last >= '0' && last <= '9'))) return 0;
            seg = 0;
        } else if (alnum || (seg && (c == '-' || c == '_'))) {
            seg++;
        } else {
            return 0;
        }
    }
    return 1;
}

/* validateSysctls: each name given, valid, and not repeated. */
static void validate_sysctls(const json_t *sysctls, const char *path, json_t *causes)
{
    size_t i, j;
    const json_t *s, *t;
    char field[320];
    json_array_foreach(sysctls, i, s) {
        const char *name = json_string_value(json_object_get(s, "name"));
        snprintf(field, sizeof field, "%s.securityContext.sysctls[%zu].name", path, i);
        if (!name || !*name) {
            api_cause(causes, "FieldValueRequired", field, "Required value");
            continue;
        }
        if (!sysctl_name_ok(name)) {
            api_cause(causes, "FieldValueInvalid", field,
                      "Invalid value: \"%s\": must have at most 253 characters and match regex "
                      "([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?",
                      name);
            continue;
        }
        json_array_foreach(sysctls, j, t) {
            if (j >= i) break;
            const char *prev = json_string_value(json_object_get(t, "name"));
            if (prev && !strcmp(prev, name)) {
                api_cause(causes, "FieldValueDuplicate", field, "Duplicate value: \"%s\"", name);
                break;
            }
        }
    }
}

void api_pod_spec_validate(const json_t *spec, const char *path, json_t *causes)
{
    char field[256];
    if (!json_is_object(spec)) {
        api_cause(causes, "FieldValueRequired", path, "Required value");
        return;
    }
    json_t *names = json_object();
    snprintf(field, sizeof field, "%s.containers", path);
    validate_containers(json_object_get(spec, "containers"), field, 1, causes, names);
    snprintf(field, sizeof field, "%s.initContainers", path);
    validate_containers(json_object_get(spec, "initContainers"), field, 0, causes, names);
    json_decref(names);
    validate_sysctls(json_object_get(json_object_get(spec, "securityContext"), "sysctls"), path,
                     causes);
    static const char *const restart[] = {"Always", "OnFailure", "Never", NULL};
    static const char *const dns[] = {"ClusterFirstWithHostNet", "ClusterFirst", "Default",
                                      "None", NULL};
    one_of(spec, "restartPolicy", path, restart, causes);
    one_of(spec, "dnsPolicy", path, dns, causes);
    const json_t *grace = json_object_get(spec, "terminationGracePeriodSeconds");
    snprintf(field, sizeof field, "%s.terminationGracePeriodSeconds", path);
    if (grace && (!json_is_integer(grace) || json_integer_value(grace) < 0))
        api_cause(causes, "FieldValueInvalid", field,
                  "Invalid value: must be greater than or equal to 0");
}

/* ---- pods ---- */

/* Add one ResourceRequirements' cpu and memory (millicores, bytes) to the
 * sums, as defaulting leaves it (a missing request is the limit); *both is
 * cleared unless it limits both. Malformed quantities count as 0
 * (validation of quantities is not ours). */
static void qos_add(const json_t *res, int64_t req[2], int64_t lim[2], int *both)
{
    static const char *const names[2] = {"cpu", "memory"};
    const json_t *rq = json_object_get(res, "requests"), *lm = json_object_get(res, "limits");
    int found = 0;
    for (int k = 0; k < 2; k++) {
        const json_t *l = json_object_get(lm, names[k]), *r = json_object_get(rq, names[k]);
        int64_t lv = 0, rv = 0;
        if (l && kp_quantity_json(l, k == 0, &lv)) lv = 0;
        if (!r) rv = lv;
        else if (kp_quantity_json(r, k == 0, &rv)) rv = 0;
        if (rv > 0) req[k] = rv > INT64_MAX - req[k] ? INT64_MAX : req[k] + rv;
        if (lv > 0) lim[k] = lv > INT64_MAX - lim[k] ? INT64_MAX : lim[k] + lv;
        found += lv > 0;
    }
    if (found < 2) *both = 0;
}

/* Does the pod-level spec.resources name cpu or memory? */
static int qos_pod_level(const json_t *res)
{
    static const char *const names[2] = {"cpu", "memory"};
    for (int k = 0; k < 2; k++)
        if (json_object_get(json_object_get(res, "requests"), names[k]) ||
            json_object_get(json_object_get(res, "limits"), names[k]))
            return 1;
    return 0;
}

/* Kubernetes' ComputePodQOS (pkg/apis/core/helper/qos): from pod-level
 * resources when they name cpu or memory, else from the sums over the
 * containers and init containers. BestEffort: no request or limit above 0;
 * Guaranteed: every one limits cpu and memory and the summed requests equal
 * the summed limits; Burstable otherwise. */
static const char *pod_qos_class(const json_t *spec)
{
    int64_t req[2] = {0, 0}, lim[2] = {0, 0};
    int both = 1;
    const json_t *pod_res = json_object_get(spec, "resources");
    if (qos_pod_level(pod_res)) {
        qos_add(pod_res, req, lim, &both);
    } else {
        static const char *const lists[2] = {"containers", "initContainers"};
        for (int l = 0; l < 2; l++) {
            size_t i;
            const json_t *c;
            json_array_foreach(json_object_get(spec, lists[l]), i, c)
                qos_add(json_object_get(c, "resources"), req, lim, &both);
        }
    }
    if (!req[0] && !req[1] && !lim[0] && !lim[1]) return "BestEffort";
    return both && req[0] == lim[0] && req[1] == lim[1] ? "Guaranteed" : "Burstable";
}

static void pod_prepare_create(json_t *pod)
{
    const char *qos = pod_qos_class(json_object_get(pod, "spec"));
    json_t *status = json_pack("{s:s, s:s}", "phase", "Pending", "qosClass", qos);
    json_object_set_new(pod, "status", status);
}

/* Kubernetes' SetDefaults_Pod: a container with a limit and no request for
 * a resource requests its limit (pods only, not templates). */
static void requests_from_limits(json_t *containers)
{
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c) {
        json_t *res = json_object_get(c, "resources");
        const json_t *limits = json_object_get(res, "limits");
        if (!json_is_object(limits) || !json_object_size(limits)) continue;
        json_t *req = json_object_get(res, "requests");
        if (!json_is_object(req)) {
            req = json_object();
            json_object_set_new(res, "requests", req);
        }
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)limits, k, v) {
            if (!json_object_get(req, k)) json_object_set(req, k, v);
        }
    }
}

static void pod_defaults(json_t *pod)
{
    json_t *spec = child_object(pod, "spec");
    api_pod_spec_defaults(spec);
    requests_from_limits(json_object_get(spec, "containers"));
    requests_from_limits(json_object_get(spec, "initContainers"));
}

/* Admission DefaultTolerationSeconds (kube-apiserver's plugin of that name):
 * a pod that does not tolerate node.kubernetes.io/not-ready:NoExecute
 * (resp. unreachable) -- a toleration with that key or no key, and effect
 * NoExecute or none -- gets one with operator Exists and tolerationSeconds
 * not_ready_s (resp. unreachable_s), so that the taint eviction controller
 * moves it off a failed node after that long rather than at once. */
void api_pod_default_tolerations(json_t *pod, int64_t not_ready_s, int64_t unreachable_s)
{
    static const char *const keys[2] = {"node.kubernetes.io/not-ready",
                                        "node.kubernetes.io/unreachable"};
    const int64_t secs[2] = {not_ready_s, unreachable_s};
    json_t *spec = json_object_get(pod, "spec");
    json_t *tols = json_object_get(spec, "tolerations");
    if (!json_is_object(spec) || (tols && !json_is_null(tols) && !json_is_array(tols)))
        return; /* validation names the bad field */
    int has[2] = {0, 0};
    size_t i;
    json_t *t;
    json_array_foreach(tols, i, t) {
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *e = json_string_value(json_object_get(t, "effect"));
        if (e && *e && strcmp(e, "NoExecute")) continue;
        for (int j = 0; j < 2; j++)
            if (!k || !*k || !strcmp(k, keys[j])) has[j] = 1;
    }
    for (int j = 0; j < 2; j++) {
        if (has[j]) continue;
        if (!json_is_array(tols)) {
            tols = json_array();
            json_object_set_new(spec, "tolerations", tols);
        }
        json_array_append_new(tols, json_pack("{s:s, s:s, s:s, s:I}", "key", keys[j], "operator",
                                              "Exists", "effect", "NoExecute",
                                              "tolerationSeconds", (json_int_t)secs[j]));
    }
}

/* What an update may change in a pod's spec: images, activeDeadlineSeconds,
 * tolerations (additions), terminationGracePeriodSeconds (on delete). Compare
 * with those masked out. nodeName is set once, through pods/binding. */
static json_t *masked_spec(const json_t *spec)
{
    json_t *m = json_deep_copy(spec);
    if (!m) return NULL;
    static const char *const lists[] = {"containers", "initContainers", NULL};
    for (const char *const *l = lists; *l; l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(m, *l), i, c) json_object_del(c, "image");
    }
    json_object_del(m, "activeDeadlineSeconds");
    json_object_del(m, "tolerations");
    json_object_del(m, "terminationGracePeriodSeconds");
    return m;
}

static void pod_validate(const json_t *pod, const json_t *old, json_t *causes)
{
    const json_t *spec = json_object_get(pod, "spec");
    api_pod_spec_validate(spec, "spec", causes);
    if (!old) return;
    const json_t *ospec = json_object_get(old, "spec");
    json_t *a = masked_spec(spec), *b = masked_spec(ospec);
    if (!api_json_same(a, b))
        api_cause(causes, "FieldValueForbidden", "spec",
                  "Forbidden: pod updates may not change fields other than "
                  "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                  "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
                  "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if "
                  "it was previously negative)");
    json_decref(a);
    json_decref(b);
}

int api_pod_eviction_skips_budget(const json_t *pod)
{
    const char *phase =
        json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ||
                  !strcmp(phase, "Pending")))
        return 1;
    return json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL;
}

/* podStatusStrategy: pods/status may not change ownerReferences (old
 * kubelets corrupted them), and a status without qosClass keeps the one set
 * at create. */
static void pod_prepare_status_update(json_t *pod, const json_t *old)
{
    json_t *meta = json_object_get(pod, "metadata");
    json_t *owners = json_object_get(json_object_get(old, "metadata"), "ownerReferences");
    if (json_is_object(meta)) {
        if (owners) json_object_set(meta, "ownerReferences", owners);
        else json_object_del(meta, "ownerReferences");
    }
    json_t *status = json_object_get(pod, "status");
    const char *qos = json_string_value(json_object_get(status, "qosClass"));
    json_t *old_qos = json_object_get(json_object_get(old, "status"), "qosClass");
    if (json_is_object(status) && (!qos || !*qos) && old_qos)
        json_object_set(status, "qosClass", old_qos);
}


/* The admit hook: DefaultTolerationSeconds with the server's flags (both
 * 300 unless given). */
static void pod_admit(const api_ctx_t *c, json_t *pod, const json_t *old)
{
    (void)old;
    const apiserver_config_t *cfg = &c->srv->cfg;
    int set = cfg->toleration_seconds_set;
    api_pod_default_tolerations(pod, set ? cfg->not_ready_toleration_s : 300,
                                set ? cfg->unreachable_toleration_s : 300);
}

/* Admission that reads other objects, in Kubernetes' order: ServiceAccount,
 * then Priority. */
static int pod_admission(api_req_t *r, json_t *pod, const json_t *old, const char *name)
{
    if (api_serviceaccount_admit_pod(r, pod, old, name)) return -1;
    return api_priority_admit_pod(r, pod, old, name);
}

/* CheckGracefulDelete: a bound pod stops on its node first, which then
 * deletes it; an unbound one, one that already ended (Succeeded, Failed:
 * nothing to stop) or a grace period of 0 goes at once. The period is the
 * request's, else spec.terminationGracePeriodSeconds, else 30. */
static int pod_graceful(const json_t *pod, long long requested, long long *grace)
{
    const json_t *spec = json_object_get(pod, "spec");
    long long g = requested;
    if (g < 0) {
        const json_t *t = json_object_get(spec, "terminationGracePeriodSeconds");
        g = json_is_integer(t) ? json_integer_value(t) : 30;
    }
    *grace = g;
    const char *phase =
        json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))) return 0;
    const char *node = json_string_value(json_object_get(spec, "nodeName"));
    return node && *node && g > 0;
}

/* pods/binding, pods/eviction (strategy_pod_sub.c) and pods/log
 * (strategy_pod_log.c), in discovery's order. */
static const char *const create_verbs[] = {"create", NULL};
static const char *const get_verbs[] = {"get", NULL};
static const api_sub_t pod_subs[] = {
    {"binding", NULL, NULL, "Binding", create_verbs, api_pod_binding, NULL, NULL},
    {"log", NULL, NULL, NULL, get_verbs, api_pod_log, NULL, NULL},
    {"eviction", "policy", "v1", "Eviction", create_verbs, api_pod_eviction, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const api_strategy_t api_strategy_pod = {
    .delete_returns_object = 1,
    .prepare_create = pod_prepare_create,
    .defaults = pod_defaults,
    .admit = pod_admit,
    .admission = pod_admission,
    .validate = pod_validate,
    .graceful = pod_graceful,
    .subs = pod_subs,
    .prepare_status_update = pod_prepare_status_update,
};
