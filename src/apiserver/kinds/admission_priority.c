/*
 * admission_priority.c -- Kubernetes' Priority admission plugin
 * (plugin/pkg/admission/priority), as the admission hook (strategy.h) of two
 * strategies: pods (strategy_pod.c) and PriorityClasses (strategy_cluster.c).
 *
 * Invariants it keeps, as Kubernetes does:
 *  1. A pod is created with spec.priority (and spec.preemptionPolicy) the
 *     value of its spec.priorityClassName; without a class, of the
 *     globalDefault class (whose name it then gets), else 0 and
 *     PreemptLowerPriority. A class that does not exist, or a priority or
 *     preemptionPolicy the pod sets that differs from the computed one, is
 *     403 Forbidden with Kubernetes' words.
 *  2. An update of a pod keeps the priority and preemptionPolicy it was
 *     created with when the new version leaves them out (validation refuses
 *     any other change).
 *  3. At most one PriorityClass has globalDefault: true: creating a second,
 *     or marking another one, is 403 Forbidden "PriorityClass X is already
 *     marked as default. Only one default can exist". Should two exist
 *     anyway (a race), the one with the lowest value is the default.
 *
 * The classes are read from the store, not the watch cache: a class created
 * a moment before a pod is seen (Kubernetes reads an informer, and may not
 * see it). At most PRIORITY_CLASSES_MAX classes are considered for the
 * default; the rest are not read.
 *
 * Runs on the request's thread; no state of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/strategy.h"
#include "lib/err.h"
#include "store/store.h"

#define PRIORITY_CLASSES_MAX 1000

/* Kubernetes' scheduling.DefaultPriorityWhenNoDefaultClassExists. */
#define PRIORITY_NO_DEFAULT 0

static const api_resource_t *classes_of(api_req_t *r)
{
    return api_view_find(r->view, "scheduling.k8s.io", "v1", "priorityclasses", NULL);
}

/* The class `name`: 0 with *out (caller owns), KP_ENOTFOUND, or an error. */
static int class_get(api_req_t *r, const api_resource_t *pcs, const char *name, json_t **out)
{
    char key[STORE_KEY_MAX + 1];
    store_kv_t *kv;
    *out = NULL;
    if (api_object_key(pcs, NULL, name, key, sizeof key)) return KP_ENOTFOUND;
    int rc = store_get(r->srv->cfg.store, key, 0, &kv);
    if (rc) return rc;
    *out = json_loadb(kv->value, kv->value_len, 0, NULL);
    free(kv);
    return *out ? 0 : KP_ECORRUPT;
}

/* The globalDefault class with the lowest value: 0 with *out (caller owns;
 * NULL when there is none), or an error. */
static int class_default(api_req_t *r, const api_resource_t *pcs, json_t **out)
{
    char prefix[STORE_KEY_MAX + 1];
    store_range_t *rg;
    *out = NULL;
    int rc = api_key_prefix(pcs, prefix, sizeof prefix);
    if (!rc) rc = store_range(r->srv->cfg.store, prefix, NULL, PRIORITY_CLASSES_MAX, 0, &rg);
    if (rc) return rc;
    for (size_t i = 0; i < rg->count; i++) {
        json_t *pc = json_loadb(rg->kvs[i].value, rg->kvs[i].value_len, 0, NULL);
        if (!pc) continue; /* a value that is not JSON defaults nothing */
        if (!json_is_true(json_object_get(pc, "globalDefault")) ||
            (*out && json_integer_value(json_object_get(*out, "value")) <=
                         json_integer_value(json_object_get(pc, "value")))) {
            json_decref(pc);
            continue;
        }
        json_decref(*out);
        *out = pc;
    }
    store_range_free(rg);
    return 0;
}

/* Invariant 2: what the pod was created with stays when left out. */
static void keep_priority(json_t *spec, const json_t *old_spec)
{
    static const char *const kept[] = {"priority", "preemptionPolicy"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *was = json_object_get(old_spec, kept[i]);
        const json_t *now = json_object_get(spec, kept[i]);
        if ((!now || json_is_null(now)) && was && !json_is_null(was))
            json_object_set(spec, kept[i], (json_t *)was);
    }
}

int api_priority_admit_pod(api_req_t *r, json_t *pod, const json_t *old, const char *name)
{
    json_t *spec = json_object_get(pod, "spec");
    if (!json_is_object(spec)) return 0; /* validation names it */
    if (old) {
        keep_priority(spec, json_object_get(old, "spec"));
        return 0;
    }
    const api_resource_t *pcs = classes_of(r);
    if (!pcs) return 0;
    const char *cname = json_string_value(json_object_get(spec, "priorityClassName"));
    json_t *pc = NULL;
    int rc;
    if (cname && *cname) {
        rc = class_get(r, pcs, cname, &pc);
        if (rc == KP_ENOTFOUND)
            return api__reply_forbidden(r, name, "no PriorityClass with name %s was found", cname);
        if (rc) {
            api_reply_error(r, rc, NULL, "failed to get PriorityClass with name %s: %s", cname,
                            err_str(rc));
            return -1;
        }
    } else if ((rc = class_default(r, pcs, &pc))) {
        api_reply_error(r, rc, NULL, "failed to get default priority class: %s", err_str(rc));
        return -1;
    }
    /* Without a class: the default's, else 0 and PreemptLowerPriority. */
    json_int_t priority =
        pc ? json_integer_value(json_object_get(pc, "value")) : PRIORITY_NO_DEFAULT;
    const char *policy = pc ? json_string_value(json_object_get(pc, "preemptionPolicy"))
                            : "PreemptLowerPriority";
    const json_t *given = json_object_get(spec, "priority");
    const char *given_policy = json_string_value(json_object_get(spec, "preemptionPolicy"));
    rc = 0;
    if (json_is_integer(given) && json_integer_value(given) != priority)
        rc = api__reply_forbidden(
            r, name,
            "the integer value of priority (%lld) must not be provided in pod spec; "
            "priority admission controller computed %lld from the given "
            "PriorityClass name",
            (long long)json_integer_value(given), (long long)priority);
    else if (policy && given_policy && strcmp(given_policy, policy))
        rc = api__reply_forbidden(
            r, name,
            "the string value of PreemptionPolicy (%s) must not be provided in pod "
            "spec; priority admission controller computed %s from the given "
            "PriorityClass name",
            given_policy, policy);
    if (!rc) {
        if (pc && (!cname || !*cname))
            json_object_set_new(spec, "priorityClassName",
                                json_string(rest_meta_str(pc, "name")));
        json_object_set_new(spec, "priority", json_integer(priority));
        if (policy) json_object_set_new(spec, "preemptionPolicy", json_string(policy));
    }
    json_decref(pc);
    return rc;
}

int api_priority_admit_class(api_req_t *r, json_t *pc, const json_t *old, const char *name)
{
    if (!json_is_true(json_object_get(pc, "globalDefault"))) return 0;
    json_t *dpc = NULL;
    int rc = class_default(r, r->route.res, &dpc);
    if (rc) {
        api_reply_error(r, rc, NULL, "failed to get default priority class: %s", err_str(rc));
        return -1;
    }
    /* A second default is refused, and so is marking another one; the
     * default itself may be updated. */
    const char *dname = dpc ? rest_meta_str(dpc, "name") : NULL;
    if (dname && (!old || strcmp(dname, name)))
        rc = api__reply_forbidden(
            r, name,
            "PriorityClass %s is already marked as default. Only one default can "
            "exist",
            dname);
    json_decref(dpc);
    return rc;
}
