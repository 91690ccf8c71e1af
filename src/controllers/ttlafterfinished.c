/*
 * ttlafterfinished.c -- the TTL-after-finished controller (Kubernetes'
 * ttl-after-finished-controller), for Jobs.
 *
 * INVARIANT: a Job with spec.ttlSecondsAfterFinished that finished
 * (Complete or Failed True) does not outlive the condition's
 * lastTransitionTime + ttl by more than a sync: it is deleted, with
 * propagationPolicy Background (its pods go after it, through the garbage
 * collector).
 *
 * OWNS: nothing but that deletion. Before deleting, it reads the Job from
 * the API (not the cache) and checks again that it is finished and expired
 * with the TTL the user has now (it may have changed), and the DELETE
 * carries that read's uid and resourceVersion as preconditions, so that a
 * Job updated or recreated meanwhile is not deleted by mistake.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "lib/err.h"
#include "lib/log.h"

#define MAX_WAIT_S 3600 /* a far expiry is looked at again after this */

typedef struct ttl_ctl {
    ctrl_t *c;
    kc_informer_t *jobs;
} ttl_ctl_t;

/* The Unix time at which job expires, or -1 (no TTL, not finished). */
static int64_t expires_at(const json_t *job)
{
    const json_t *ttl = json_object_get(json_object_get(job, "spec"), "ttlSecondsAfterFinished");
    if (!json_is_integer(ttl)) return -1;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(job, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        if (!t || !s || strcmp(s, "True") || (strcmp(t, "Complete") && strcmp(t, "Failed")))
            continue;
        int64_t at = ctrl_time(json_string_value(json_object_get(c, "lastTransitionTime")));
        if (at < 0) return -1;
        return at + json_integer_value(ttl);
    }
    return -1;
}

static void job_changed(void *arg, const json_t *job)
{
    ttl_ctl_t *s = arg;
    if (!json_object_get(json_object_get(job, "metadata"), "deletionTimestamp") &&
        expires_at(job) >= 0)
        ctrl_enqueue_obj(s->c, job);
}

static void job_updated(void *arg, const json_t *old, const json_t *job)
{
    (void)old;
    job_changed(arg, job);
}

static int ttl_init(ctrl_t *c, void **self)
{
    ttl_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->c = c;
    s->jobs = ctrl_informer(c, &kc_jobs);
    if (!s->jobs) {
        free(s);
        return KP_ENOMEM;
    }
    kc_handlers_t h = {.on_add = job_changed, .on_update = job_updated, .arg = s};
    int rc = kc_informer_add_handlers(s->jobs, &h);
    if (rc) {
        kc_informer_remove_handlers(s->jobs, s);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void ttl_free(void *self)
{
    free(self);
}

/* Seconds until job expires (<= 0: expired), or 0 with *none set. */
static int64_t left_s(const json_t *job, int *none)
{
    int64_t at = expires_at(job);
    *none = at < 0 || json_object_get(json_object_get(job, "metadata"), "deletionTimestamp");
    return *none ? 0 : at - (int64_t)time(NULL);
}

static int ttl_sync(ctrl_t *c, void *self, const char *key)
{
    ttl_ctl_t *s = self;
    json_t *job = kc_informer_get(s->jobs, key);
    if (!job) return 0;
    int none, rc = 0;
    int64_t left = left_s(job, &none);
    if (none) goto out;
    if (left > 0) {
        ctrl_enqueue_after(c, key, (int)(left > MAX_WAIT_S ? MAX_WAIT_S : left) * 1000 + 100);
        goto out;
    }
    /* Expired in the cache: confirm with the API's copy. */
    json_t *fresh = NULL;
    rc = kc_get(ctrl_client(c), &kc_jobs, ctrl_meta_str(job, "namespace"),
                ctrl_meta_str(job, "name"), &fresh);
    if (rc == KP_ENOTFOUND) {
        rc = 0;
        goto out;
    }
    if (rc) goto out;
    left = left_s(fresh, &none);
    if (!none && left <= 0 && !strcmp(ctrl_meta_str(fresh, "uid"), ctrl_meta_str(job, "uid"))) {
        json_t *opts = json_pack("{s:s, s:{s:s, s:s}}", "propagationPolicy", "Background",
                                 "preconditions", "uid", ctrl_meta_str(fresh, "uid"),
                                 "resourceVersion", ctrl_meta_str(fresh, "resourceVersion"));
        rc = kc_delete(ctrl_client(c), &kc_jobs, ctrl_meta_str(fresh, "namespace"),
                       ctrl_meta_str(fresh, "name"), opts, NULL);
        json_decref(opts);
        if (rc == KP_ENOTFOUND) rc = 0;
        if (!rc) log_info("ttl-after-finished", "deleted finished job %s", key);
    } else if (!none && left > 0) {
        ctrl_enqueue_after(c, key, (int)(left > MAX_WAIT_S ? MAX_WAIT_S : left) * 1000 + 100);
    }
    json_decref(fresh);
out:
    json_decref(job);
    return rc;
}

const ctrl_ops_t ctrl_ttlafterfinished = {
    .name = "ttl-after-finished",
    .init = ttl_init,
    .sync = ttl_sync,
    .free = ttl_free,
};
