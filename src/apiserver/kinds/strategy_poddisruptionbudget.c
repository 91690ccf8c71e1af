/*
 * strategy_poddisruptionbudget.c -- PodDisruptionBudget (policy/v1):
 * Kubernetes' PDB strategy and validation, and the budget check of
 * pods/eviction (its EvictionREST's checkAndDecrement).
 *
 * The status is the disruption controller's (src/controllers/disruption.c),
 * except status.disruptedPods and disruptionsAllowed, which an eviction
 * updates before it deletes the pod, so that two evictions never spend one
 * allowed disruption.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "lib/err.h"
#include "apiserver/rest/rest_int.h"
#include "apiserver/schema/selector.h"
#include "store/store.h"
#include "apiserver/schema/strategy.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/watchcache.h"

#define PDB_MAX_DISRUPTED 2000 /* Kubernetes' MaxDisruptedPodSize */
#define PDB_RETRIES 5          /* its EvictionsRetry steps */

static void pdb_prepare_create(json_t *pdb)
{
    json_object_set_new(pdb, "status",
                        json_pack("{s:i, s:i, s:i, s:i}", "disruptionsAllowed", 0,
                                  "currentHealthy", 0, "desiredHealthy", 0, "expectedPods", 0));
}

/* minAvailable / maxUnavailable: a non-negative integer or a percentage of
 * at most 100%. */
static void int_or_percent(const json_t *v, const char *path, json_t *causes)
{
    if (!v) return;
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            api_cause(causes, "FieldValueInvalid", path,
                      "Invalid value: %lld: must be greater than or equal to 0",
                      (long long)json_integer_value(v));
        return;
    }
    const char *s = json_string_value(v);
    char *end = NULL;
    long pct = s && *s ? strtol(s, &end, 10) : -1;
    if (!s || !end || end == s || strcmp(end, "%") || pct < 0) {
        api_cause(causes, "FieldValueInvalid", path,
                  "Invalid value: \"%s\": a valid percent string must be a numeric string "
                  "followed by an ending '%%' (e.g. '1%%',  or '93%%', regex used for validation "
                  "is '[0-9]+%%')",
                  s ? s : "");
        return;
    }
    if (pct > 100)
        api_cause(causes, "FieldValueInvalid", path,
                  "Invalid value: \"%s\": must not be greater than 100%%", s);
}

static void pdb_validate(const json_t *pdb, const json_t *old, json_t *causes)
{
    (void)old;
    const json_t *spec = json_object_get(pdb, "spec");
    const json_t *min = json_object_get(spec, "minAvailable");
    const json_t *max = json_object_get(spec, "maxUnavailable");
    if (min && !json_is_null(min) && max && !json_is_null(max))
        api_cause(causes, "FieldValueInvalid", "spec",
                  "Invalid value: \"object\": minAvailable and maxUnavailable cannot be both "
                  "set");
    int_or_percent(json_is_null(min) ? NULL : min, "spec.minAvailable", causes);
    int_or_percent(json_is_null(max) ? NULL : max, "spec.maxUnavailable", causes);
    const json_t *sel = json_object_get(spec, "selector");
    if (json_is_object(sel)) {
        sel_label_t *ls = NULL;
        char err[256];
        if (sel_label_from_json(sel, &ls, err, sizeof err))
            api_cause(causes, "FieldValueInvalid", "spec.selector", "Invalid value: %s", err);
        sel_label_free(ls);
    }
    const char *p = api_json_str(spec, "unhealthyPodEvictionPolicy");
    if (*p && strcmp(p, "IfHealthyBudget") && strcmp(p, "AlwaysAllow"))
        api_cause(causes, "FieldValueNotSupported", "spec.unhealthyPodEvictionPolicy",
                  "Unsupported value: \"%s\": supported values: \"AlwaysAllow\", "
                  "\"IfHealthyBudget\"",
                  p);
}

const api_strategy_t api_strategy_poddisruptionbudget = {
    .generation = 1,
    .prepare_create = pdb_prepare_create,
    .validate = pdb_validate,
};

/* ---- pods/eviction ------------------------------------------------------ */

static int pod_ready(const json_t *pod)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
        if (!strcmp(api_json_str(c, "type"), "Ready"))
            return !strcmp(api_json_str(c, "status"), "True");
    return 0;
}

#define REPLIED 1 /* an answer was sent */

/* 429 "Cannot evict ..." with a DisruptionBudget cause; returns REPLIED. */
static int too_many(api_req_t *r, int retry_s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int too_many(api_req_t *r, int retry_s, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *d = json_pack("{s:[{s:s, s:s}]}", "causes", "reason", "DisruptionBudget", "message",
                          msg);
    if (d && retry_s) json_object_set_new(d, "retryAfterSeconds", json_integer(retry_s));
    api_reply_status(r, 429, "TooManyRequests", d,
                     "Cannot evict pod as it would violate the pod's disruption budget.");
    json_decref(d);
    return REPLIED;
}

/* The budgets in the pod's namespace whose (non-empty) selector matches it:
 * their names into names[] (at most 2: more than one is refused anyway). */
static int matching_budgets(api_req_t *r, const json_t *pod, wc_t *cache, char names[2][256])
{
    char prefix[STORE_KEY_MAX + 1];
    snprintf(prefix, sizeof prefix, "/registry/policy/poddisruptionbudgets/%s/", r->route.ns);
    wc_list_t *l;
    int rc = wc_list(cache, prefix, NULL, 0, 0, 0, &l);
    if (rc) return rc;
    const json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
    int n = 0;
    for (size_t i = 0; i < l->count && n < 2; i++) {
        json_t *pdb;
        if ((rc = wc_obj_copy(l->objs[i], &pdb))) break;
        const json_t *sel = json_object_get(json_object_get(pdb, "spec"), "selector");
        sel_label_t *ls = NULL;
        char err[64];
        if (json_is_object(sel) && !sel_label_from_json(sel, &ls, err, sizeof err) &&
            !sel_label_empty(ls) && sel_label_match(ls, labels))
            snprintf(names[n++], 256, "%s", l->objs[i]->name);
        sel_label_free(ls);
        json_decref(pdb);
    }
    wc_list_free(l);
    return rc ? rc : n;
}

/* One try of checkAndDecrement on budget `name`, read fresh from the store:
 * 0 when the disruption is recorded (or dryRun), KP_ECONFLICT to try again,
 * REPLIED, or a store error. */
static int check_and_decrement(api_req_t *r, const char *name, const char *pod_name)
{
    char key[STORE_KEY_MAX + 1];
    snprintf(key, sizeof key, "/registry/policy/poddisruptionbudgets/%s/%s", r->route.ns, name);
    store_kv_t *kv;
    int rc = store_get(r->srv->cfg.store, key, 0, &kv);
    if (rc) return rc;
    json_t *pdb = json_loadb(kv->value, kv->value_len, 0, NULL);
    int64_t rev = kv->mod_rev;
    free(kv);
    if (!pdb) return KP_ECORRUPT;
    json_t *st = json_object_get(pdb, "status");
    json_int_t gen = json_integer_value(json_object_get(json_object_get(pdb, "metadata"), "generation"));
    json_int_t observed = json_integer_value(json_object_get(st, "observedGeneration"));
    json_int_t allowed = json_integer_value(json_object_get(st, "disruptionsAllowed"));
    json_t *disrupted = json_object_get(st, "disruptedPods");
    rc = 0;
    if (observed < gen) {
        rc = too_many(r, 10, "The disruption budget %s is still being processed by the server.",
                      name);
    } else if (allowed < 0 || json_object_size(disrupted) > PDB_MAX_DISRUPTED) {
        json_t *d = json_pack("{s:s, s:s, s:s}", "name", name, "group", "policy", "kind",
                              "poddisruptionbudget");
        api_reply_status(r, 403, "Forbidden", d, "poddisruptionbudget.policy \"%s\" is forbidden: %s",
                         name,
                         allowed < 0 ? "pdb disruptions allowed is negative"
                                     : "DisruptedPods map too big - too many evictions not "
                                       "confirmed by PDB controller");
        json_decref(d);
        rc = REPLIED;
    } else if (allowed == 0) {
        rc = too_many(r, 0, "The disruption budget %s needs %lld healthy pods and has %lld currently",
                      name, (long long)json_integer_value(json_object_get(st, "desiredHealthy")),
                      (long long)json_integer_value(json_object_get(st, "currentHealthy")));
    } else if (!r->dry_run) {
        json_object_set_new(st, "disruptionsAllowed", json_integer(allowed - 1));
        if (!json_is_object(disrupted)) json_object_set_new(st, "disruptedPods", disrupted = json_object());
        char now[32];
        api_now_rfc3339(now);
        json_object_set_new(disrupted, pod_name, json_string(now));
        if (allowed - 1 == 0) { /* Kubernetes' UpdateDisruptionAllowedCondition */
            size_t i;
            json_t *c;
            json_array_foreach(json_object_get(st, "conditions"), i, c) {
                if (strcmp(api_json_str(c, "type"), "DisruptionAllowed")) continue;
                if (strcmp(api_json_str(c, "status"), "False"))
                    json_object_set_new(c, "lastTransitionTime", json_string(now));
                json_object_set_new(c, "status", json_string("False"));
                json_object_set_new(c, "reason", json_string("InsufficientPods"));
            }
        }
        char *text = json_dumps(pdb, JSON_COMPACT);
        int64_t out;
        rc = text ? store_update(r->srv->cfg.store, key, text, strlen(text), rev, &out) : KP_ENOMEM;
        free(text);
    }
    json_decref(pdb);
    return rc;
}

int api_pdb_admit_eviction(api_req_t *r, const json_t *pod)
{
    size_t idx;
    if (!api_view_find(r->view, "policy", "v1", "poddisruptionbudgets", &idx)) return 0;
    char names[2][256];
    int n = matching_budgets(r, pod, r->view->caches[idx], names);
    if (n < 0) {
        api_reply_error(r, n, NULL, "listing PodDisruptionBudgets: %s", err_str(n));
        return -1;
    }
    if (n > 1) {
        api_reply_status(r, 500, "", NULL,
                         "This pod has more than one PodDisruptionBudget, which the eviction "
                         "subresource does not support.");
        return -1;
    }
    if (n == 0) return 0;
    if (!pod_ready(pod)) {
        /* An unready pod does not count as healthy: it goes without spending
         * a disruption when the policy says so or the budget is met. */
        char key[STORE_KEY_MAX + 1];
        snprintf(key, sizeof key, "/registry/policy/poddisruptionbudgets/%s/%s", r->route.ns,
                 names[0]);
        const wc_obj_t *o = NULL;
        json_t *pdb = NULL;
        int free_pass = 0;
        if (!wc_get(r->view->caches[idx], key, &o) && !wc_obj_copy(o, &pdb)) {
            const json_t *st = json_object_get(pdb, "status");
            const char *policy =
                api_json_str(json_object_get(pdb, "spec"), "unhealthyPodEvictionPolicy");
            json_int_t cur = json_integer_value(json_object_get(st, "currentHealthy"));
            json_int_t want = json_integer_value(json_object_get(st, "desiredHealthy"));
            free_pass = !strcmp(policy, "AlwaysAllow") || (cur >= want && want > 0);
            json_decref(pdb);
        }
        wc_obj_unref(o);
        if (free_pass) return 0;
    }
    const char *pod_name = api_json_str(json_object_get(pod, "metadata"), "name");
    for (int i = 0; i < PDB_RETRIES; i++) {
        int rc = check_and_decrement(r, names[0], pod_name);
        if (rc == KP_ECONFLICT) continue;
        if (rc == REPLIED) return -1;
        if (rc) {
            api_reply_error(r, rc, NULL, "updating PodDisruptionBudget %s: %s", names[0],
                            err_str(rc));
            return -1;
        }
        return 0;
    }
    api_reply_status(r, 504, "Timeout", NULL,
                     "couldn't update PodDisruptionBudget \"%s\" due to conflicts", names[0]);
    return -1;
}
