/*
 * job.c -- the Job controller (batch/v1).
 *
 * INVARIANT: every unfinished Job runs min(parallelism, completions left)
 * active pods (none while suspended, none before its failure back-off has
 * passed), every pod of it that finished is counted exactly once in its
 * status (succeeded/failed, completedIndexes), and once it succeeded
 * enough, failed more than backoffLimit times or outlived
 * activeDeadlineSeconds it carries Complete or Failed -- after its active
 * pods are gone -- and nothing more is created for it.
 *
 * OWNS: the pods it creates (generateName "<job>-", Indexed "<job>-<i>-",
 * a controller ownerReference, the finalizer batch.kubernetes.io/job-tracking),
 * that finalizer on every pod (it removes it once the pod is counted, or
 * from pods whose Job is gone or finished), and the Job's /status. It
 * deletes only pods it controls.
 *
 * COUNTING (Kubernetes' job tracking with finalizers). A pod keeps the
 * finalizer until it has been counted, so that deleting it cannot lose the
 * count:
 *   1. a finished pod with the finalizer, not yet in
 *      status.uncountedTerminatedPods, is added there (status write, guarded
 *      by the Job's resourceVersion so that a stale cache cannot write);
 *   2. its finalizer is removed (strategic merge $deleteFromPrimitiveList);
 *   3. uids whose pod lost the finalizer (or is gone) move from the
 *      uncounted lists into succeeded/failed (status write).
 * Indexed Jobs count successes by index (completedIndexes), in step 1.
 * A removal sent but not yet seen in the cache is remembered by uid
 * (finalizer expectations) so that the pod is not counted twice.
 *
 * CONDITIONS (1.32, JobManagedBy/JobPodReplacementPolicy on): a failure
 * first adds FailureTarget (BackoffLimitExceeded, DeadlineExceeded) and
 * deletes the active pods; Failed follows once no pod is terminating and
 * nothing is uncounted. Success adds SuccessCriteriaMet (CompletionsReached)
 * then Complete, with completionTime. Suspended True/False (JobSuspended,
 * JobResumed); resuming resets startTime.
 *
 * EXPECTATIONS as in replicaset.c: creates and deletes a sync sent are
 * counted off by informer events; until then (or 5 minutes) no new
 * create/delete decision is made for that Job.
 *
 * BACK-OFF: after failures, new pods wait 10 s doubling per failure since
 * the last success, at most 6 minutes (job__backoff_delay_ms), from the
 * last failure's finish time. The record is in memory, per Job, as in
 * Kubernetes.
 *
 * Keys: "ns/name" is a Job; "pod:ns/name" is a pod whose finalizer may need
 * removing because its Job is gone or finished (namespaces hold no ':').
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "controllers/expectations.h"
#include "controllers/job_int.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"

#define BURST               500 /* creates or deletes per sync (MaxPodCreateDeletePerSync) */
#define MAX_UNCOUNTED       500 /* pods added to uncountedTerminatedPods per sync */
#define PARALLEL            64
#define POD_KEY             "pod:"

typedef struct job_ctl {
    ctrl_t *c;
    kc_informer_t *jobs, *pods;
    ctrl_exp_t *exp;    /* by job key */
    pthread_mutex_t mu; /* guards the three objects below */
    json_t *fin;        /* job key -> {uid: true}: finalizer removals not yet seen */
    json_t *backoff;    /* job key -> {"failures": n, "last": unix ms} */
    json_t *written;    /* job key -> the resourceVersion of our last status write */
} job_ctl_t;

/* ==== pure logic (job_int.h) ==== */

int64_t job__backoff_delay_ms(int failures)
{
    if (failures <= 0) return 0;
    int64_t d = JOB_BACKOFF_BASE_MS;
    for (int i = 1; i < failures && d < JOB_BACKOFF_MAX_MS; i++)
        d *= 2;
    return d > JOB_BACKOFF_MAX_MS ? JOB_BACKOFF_MAX_MS : d;
}

int64_t job__backoff_remaining_ms(int failures, int64_t elapsed_ms)
{
    int64_t d = job__backoff_delay_ms(failures);
    if (elapsed_ms < 0) elapsed_ms = 0;
    return d > elapsed_ms ? d - elapsed_ms : 0;
}

/* A decimal integer at *p (digits only); -1 if none or too big. */
static long parse_num(const char **p)
{
    const char *s = *p;
    long v = 0;
    if (*s < '0' || *s > '9') return -1;
    while (*s >= '0' && *s <= '9') {
        if (v > INT_MAX / 10) return -1;
        v = v * 10 + (*s - '0');
        s++;
    }
    *p = s;
    return v;
}

size_t job__indexes_parse(const char *s, int completions, unsigned char *set)
{
    if (s) {
        const char *p = s;
        while (*p) {
            const char *q = p;
            long first = parse_num(&q), last = first;
            if (first >= 0 && *q == '-') {
                q++;
                last = parse_num(&q);
            }
            if (first >= 0 && last >= first && (*q == ',' || !*q)) {
                for (long i = first; i <= last && i < completions; i++)
                    set[i] = 1;
            }
            while (*q && *q != ',') /* skip what is malformed */
                q++;
            p = *q ? q + 1 : q;
        }
    }
    size_t n = 0;
    for (int i = 0; i < completions; i++)
        n += set[i] != 0;
    return n;
}

char *job__indexes_format(const unsigned char *set, int n)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    out[0] = 0;
    for (int i = 0; i < n;) {
        if (!set[i]) {
            i++;
            continue;
        }
        int j = i;
        while (j + 1 < n && set[j + 1])
            j++;
        char part[32];
        int w;
        if (j == i)
            w = snprintf(part, sizeof part, "%s%d", len ? "," : "", i);
        else
            w = snprintf(part, sizeof part, "%s%d%c%d", len ? "," : "", i, j == i + 1 ? ',' : '-',
                         j);
        if (len + (size_t)w + 1 > cap) {
            while (len + (size_t)w + 1 > cap)
                cap *= 2;
            char *m = realloc(out, cap);
            if (!m) {
                free(out);
                return NULL;
            }
            out = m;
        }
        memcpy(out + len, part, (size_t)w + 1);
        len += (size_t)w;
        i = j + 1;
    }
    return out;
}

size_t job__first_pending(const unsigned char *done, const unsigned char *active, int completions,
                          size_t want, int *out)
{
    size_t n = 0;
    for (int i = 0; i < completions && n < want; i++)
        if (!(done && done[i]) && !(active && active[i])) out[n++] = i;
    return n;
}

int job__want_active(int completions, int parallelism, int succeeded, int active)
{
    if (completions < 0) return succeeded > 0 ? active : parallelism;
    int want = completions - succeeded;
    if (want > parallelism) want = parallelism;
    return want < 0 ? 0 : want;
}

int job__pod_index(const json_t *pod)
{
    const char *v = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "metadata"), "annotations"), JOB_INDEX_KEY));
    if (!v) return -1;
    const char *p = v;
    long n = parse_num(&p);
    return n >= 0 && !*p ? (int)n : -1;
}

/* ==== small readers ==== */

static const json_t *spec_of(const json_t *obj)
{
    return json_object_get(obj, "spec");
}

static const char *pod_phase(const json_t *pod)
{
    const char *p = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    return p ? p : "";
}

static int deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

static int has_finalizer(const json_t *pod)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "finalizers"), i, f) {
        const char *s = json_string_value(f);
        if (s && !strcmp(s, JOB_TRACKING_FINALIZER)) return 1;
    }
    return 0;
}

static int is_indexed(const json_t *job)
{
    const char *m = json_string_value(json_object_get(spec_of(job), "completionMode"));
    return m && !strcmp(m, "Indexed");
}

static int spec_int(const json_t *job, const char *field, int dflt)
{
    const json_t *v = json_object_get(spec_of(job), field);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* The condition of `type` in a status (NULL if none). */
static json_t *find_cond(const json_t *status, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type)) return c;
    }
    return NULL;
}

static int cond_true(const json_t *status, const char *type)
{
    const char *s = json_string_value(json_object_get(find_cond(status, type), "status"));
    return s && !strcmp(s, "True");
}

/* Complete or Failed is True: the Job is done for good. */
static int job_finished(const json_t *job)
{
    const json_t *st = json_object_get(job, "status");
    return cond_true(st, "Complete") || cond_true(st, "Failed");
}

static void now_rfc3339(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Set condition `type` as Kubernetes' ensureJobConditionStatus does: append
 * unless status is False; replace when status, reason or message differ.
 * Returns 1 if the list changed. */
static int ensure_cond(json_t *status, const char *type, const char *cstatus, const char *reason,
                       const char *msg)
{
    char now[32];
    now_rfc3339(now, sizeof now);
    json_t *c = find_cond(status, type);
    if (c) {
        const char *s = json_string_value(json_object_get(c, "status"));
        const char *r = json_string_value(json_object_get(c, "reason"));
        const char *m = json_string_value(json_object_get(c, "message"));
        if (s && !strcmp(s, cstatus) && !strcmp(r ? r : "", reason) && !strcmp(m ? m : "", msg))
            return 0;
    } else if (!strcmp(cstatus, "False")) {
        return 0;
    }
    json_t *nc = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", type, "status", cstatus,
                           "lastProbeTime", now, "lastTransitionTime", now, "reason", reason,
                           "message", msg);
    json_t *list = json_object_get(status, "conditions");
    if (!json_is_array(list)) {
        list = json_array();
        json_object_set_new(status, "conditions", list);
    }
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        if (x == c) {
            json_array_set_new(list, i, nc);
            return 1;
        }
    }
    json_array_append_new(list, nc);
    return 1;
}

/* ==== finalizer expectations ==== */

/* Finalizer removals: expect uid's (add) or count it seen. */
static void fin_expect(job_ctl_t *s, const char *key, const char *uid)
{
    pthread_mutex_lock(&s->mu);
    json_t *e = json_object_get(s->fin, key);
    if (!e) {
        e = json_object();
        json_object_set_new(s->fin, key, e);
    }
    json_object_set_new(e, uid, json_true());
    pthread_mutex_unlock(&s->mu);
}

static void fin_seen(job_ctl_t *s, const char *key, const char *uid)
{
    pthread_mutex_lock(&s->mu);
    json_t *e = json_object_get(s->fin, key);
    if (e && uid) {
        json_object_del(e, uid);
        if (!json_object_size(e)) json_object_del(s->fin, key);
    }
    pthread_mutex_unlock(&s->mu);
}

/* A copy of the uids whose finalizer removal is expected (caller's). */
static json_t *fin_expected(job_ctl_t *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    json_t *e = json_object_get(s->fin, key);
    json_t *copy = e ? json_copy(e) : json_object();
    pthread_mutex_unlock(&s->mu);
    return copy;
}

static void forget(job_ctl_t *s, const char *key)
{
    pthread_mutex_lock(&s->mu);
    ctrl_exp_forget(s->exp, key);
    json_object_del(s->fin, key);
    json_object_del(s->backoff, key);
    json_object_del(s->written, key);
    pthread_mutex_unlock(&s->mu);
}

/* A status write of ours at resourceVersion rv; and whether the cached Job
 * (at rv) is older than our last write: then its status is stale and a sync
 * would act on counts we already changed (the cache's update will queue the
 * Job again). kplane's resourceVersions are its store's revisions: one
 * counter, so they compare as numbers. */
static void written_at(job_ctl_t *s, const char *key, const char *rv)
{
    pthread_mutex_lock(&s->mu);
    json_object_set_new(s->written, key, json_integer(strtoll(rv, NULL, 10)));
    pthread_mutex_unlock(&s->mu);
}

static int stale(job_ctl_t *s, const char *key, const char *rv)
{
    pthread_mutex_lock(&s->mu);
    json_int_t w = json_integer_value(json_object_get(s->written, key));
    pthread_mutex_unlock(&s->mu);
    return w > 0 && strtoll(rv, NULL, 10) < w;
}

/* ==== handlers: only enqueue (and count expectations) ==== */

/* The key of the Job controlling pod, or 0. */
static int job_of(const json_t *pod, char *key, size_t n)
{
    const char *kind, *name;
    if (!ctrl_owner(pod, NULL, &kind, &name) || !kind || !name || strcmp(kind, "Job")) return 0;
    snprintf(key, n, "%s/%s", ctrl_meta_str(pod, "namespace"), name);
    return 1;
}

/* A pod that still has our finalizer but whose Job is not in the cache
 * (gone, or another uid under its name): queue the pod for the removal. */
static void check_orphan(job_ctl_t *s, const json_t *pod, const char *jobkey)
{
    if (!has_finalizer(pod)) return;
    const char *uid = ctrl_controller_uid(pod);
    json_t *job = jobkey ? kc_informer_get(s->jobs, jobkey) : NULL;
    int orphan = !job || !uid || strcmp(ctrl_meta_str(job, "uid"), uid) || job_finished(job);
    json_decref(job);
    if (!orphan) return;
    char key[600];
    snprintf(key, sizeof key, POD_KEY "%s/%s", ctrl_meta_str(pod, "namespace"),
             ctrl_meta_str(pod, "name"));
    ctrl_enqueue(s->c, key);
}

static void pod_added(void *arg, const json_t *pod)
{
    job_ctl_t *s = arg;
    char key[600];
    if (!job_of(pod, key, sizeof key)) {
        check_orphan(s, pod, NULL);
        return;
    }
    if (deleting(pod))
        ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    else
        ctrl_exp_add_seen(s->exp, key, 1);
    check_orphan(s, pod, key);
    ctrl_enqueue(s->c, key);
}

static void pod_updated(void *arg, const json_t *old, const json_t *pod)
{
    job_ctl_t *s = arg;
    if (old == pod) return; /* a resync: the Jobs resync themselves */
    char key[600], oldkey[600];
    int has = job_of(pod, key, sizeof key), had = job_of(old, oldkey, sizeof oldkey);
    const char *uid = ctrl_meta_str(pod, "uid");
    if (has && deleting(pod) && !deleting(old)) ctrl_exp_del_seen(s->exp, key, uid);
    if (has && !has_finalizer(pod)) fin_seen(s, key, uid);
    check_orphan(s, pod, has ? key : NULL);
    if (has) ctrl_enqueue(s->c, key);
    if (had && (!has || strcmp(key, oldkey))) ctrl_enqueue(s->c, oldkey);
}

static void pod_deleted(void *arg, const json_t *pod)
{
    job_ctl_t *s = arg;
    char key[600];
    if (!job_of(pod, key, sizeof key)) return;
    ctrl_exp_del_seen(s->exp, key, ctrl_meta_str(pod, "uid"));
    fin_seen(s, key, ctrl_meta_str(pod, "uid"));
    ctrl_enqueue(s->c, key);
}

static void job_added(void *arg, const json_t *job)
{
    ctrl_enqueue_obj(((job_ctl_t *)arg)->c, job);
}

static void job_updated(void *arg, const json_t *old, const json_t *job)
{
    (void)old;
    job_added(arg, job);
}

/* A Job is gone: its pods that still carry the finalizer must lose it. */
static void job_deleted(void *arg, const json_t *job)
{
    job_ctl_t *s = arg;
    ctrl_enqueue_obj(s->c, job);
    json_t **pods;
    size_t n;
    if (kc_informer_list(s->pods, "controller", ctrl_meta_str(job, "uid"), &pods, &n)) return;
    for (size_t i = 0; i < n; i++) {
        if (!has_finalizer(pods[i])) continue;
        char key[600];
        snprintf(key, sizeof key, POD_KEY "%s/%s", ctrl_meta_str(pods[i], "namespace"),
                 ctrl_meta_str(pods[i], "name"));
        ctrl_enqueue(s->c, key);
    }
    kc_objs_free(pods, n);
}

static int job_init(ctrl_t *c, void **self)
{
    job_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->exp = ctrl_exp_new();
    s->fin = json_object();
    s->backoff = json_object();
    s->written = json_object();
    s->c = c;
    pthread_mutex_init(&s->mu, NULL);
    s->jobs = ctrl_informer(c, &kc_jobs);
    s->pods = ctrl_informer(c, &kc_pods);
    int rc =
        (!s->exp || !s->fin || !s->backoff || !s->written || !s->jobs || !s->pods) ? KP_ENOMEM : 0;
    kc_handlers_t jh = {
        .on_add = job_added, .on_update = job_updated, .on_delete = job_deleted, .arg = s};
    kc_handlers_t ph = {
        .on_add = pod_added, .on_update = pod_updated, .on_delete = pod_deleted, .arg = s};
    if (!rc) rc = kc_informer_add_handlers(s->jobs, &jh);
    if (!rc) rc = kc_informer_add_handlers(s->pods, &ph);
    if (rc) {
        if (s->jobs) kc_informer_remove_handlers(s->jobs, s);
        if (s->pods) kc_informer_remove_handlers(s->pods, s);
        ctrl_exp_free(s->exp);
        json_decref(s->fin);
        json_decref(s->backoff);
        json_decref(s->written);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void job_free(void *self)
{
    job_ctl_t *s = self;
    ctrl_exp_free(s->exp);
    json_decref(s->fin);
    json_decref(s->backoff);
    json_decref(s->written);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ==== pod calls ==== */

typedef struct batch {
    job_ctl_t *s;
    const json_t *job;
    const char *key;
    const json_t *tmpl; /* the pod to create (creates) */
    const int *indexes; /* Indexed: the index of create i; NULL: NonIndexed */
    json_t **pods;      /* pods to delete or to strip of the finalizer */
    int strip;          /* deletes: remove the finalizer first (deleteJobPods) */
} batch_t;

/* The pod template with the finalizer (and, Indexed, the env var) added. */
static json_t *pod_template(const json_t *job)
{
    const json_t *tmpl = json_object_get(spec_of(job), "template");
    const json_t *tmeta = json_object_get(tmpl, "metadata");
    json_t *meta = json_object();
    static const char *const copy[] = {"labels", "annotations", "finalizers", NULL};
    for (const char *const *k = copy; *k; k++) {
        json_t *v = json_object_get(tmeta, *k);
        if (v) json_object_set_new(meta, *k, json_deep_copy(v));
    }
    json_t *fins = json_object_get(meta, "finalizers");
    if (!json_is_array(fins)) {
        fins = json_array();
        json_object_set_new(meta, "finalizers", fins);
    }
    int have = 0;
    size_t i;
    json_t *f;
    json_array_foreach(fins, i, f) {
        if (json_string_value(f) && !strcmp(json_string_value(f), JOB_TRACKING_FINALIZER)) have = 1;
    }
    if (!have) json_array_append_new(fins, json_string(JOB_TRACKING_FINALIZER));
    json_object_set_new(meta, "ownerReferences",
                        json_pack("[o]", ctrl_controller_ref(job, "batch/v1", "Job")));
    json_t *spec = json_deep_copy(json_object_get(tmpl, "spec"));
    if (!spec) spec = json_object();
    if (is_indexed(job)) {
        /* JOB_COMPLETION_INDEX from the downward API, in every container
         * that does not set it. */
        static const char *const lists[] = {"initContainers", "containers", NULL};
        for (const char *const *l = lists; *l; l++) {
            size_t ci;
            json_t *ctr;
            json_array_foreach(json_object_get(spec, *l), ci, ctr) {
                json_t *env = json_object_get(ctr, "env");
                if (!json_is_array(env)) {
                    env = json_array();
                    json_object_set_new(ctr, "env", env);
                }
                int found = 0;
                size_t ei;
                json_t *e;
                json_array_foreach(env, ei, e) {
                    const char *n = json_string_value(json_object_get(e, "name"));
                    if (n && !strcmp(n, JOB_INDEX_ENV)) found = 1;
                }
                if (!found)
                    json_array_append_new(
                        env, json_pack("{s:s, s:{s:{s:s, s:s}}}", "name", JOB_INDEX_ENV,
                                       "valueFrom", "fieldRef", "apiVersion", "v1", "fieldPath",
                                       "metadata.annotations['" JOB_INDEX_KEY "']"));
            }
        }
    }
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "v1", "kind", "Pod", "metadata", meta,
                     "spec", spec);
}

static int create_one(void *arg, size_t i)
{
    batch_t *b = arg;
    const char *jname = ctrl_meta_str(b->job, "name");
    json_t *pod = json_deep_copy(b->tmpl);
    if (!pod) {
        ctrl_exp_add_seen(b->s->exp, b->key, 1);
        return KP_ENOMEM;
    }
    json_t *meta = json_object_get(pod, "metadata");
    if (b->indexes) {
        int ix = b->indexes[i];
        char v[16];
        snprintf(v, sizeof v, "%d", ix);
        static const char *const maps[] = {"annotations", "labels", NULL};
        for (const char *const *m = maps; *m; m++) {
            json_t *o = json_object_get(meta, *m);
            if (!json_is_object(o)) {
                o = json_object();
                json_object_set_new(meta, *m, o);
            }
            json_object_set_new(o, JOB_INDEX_KEY, json_string(v));
        }
        json_object_set_new(json_object_get(pod, "spec"), "hostname",
                            json_sprintf("%s-%d", jname, ix));
        json_object_set_new(meta, "generateName", json_sprintf("%s-%d-", jname, ix));
    } else {
        json_object_set_new(meta, "generateName", json_sprintf("%s-", jname));
    }
    json_t *made = NULL;
    int rc = kc_create(ctrl_client(b->s->c), &kc_pods, ctrl_meta_str(b->job, "namespace"), pod,
                       &made, NULL);
    json_decref(pod);
    if (rc) {
        kc_event(ctrl_recorder(b->s->c), b->job, "Warning", "FailedCreate", "Error creating: %s",
                 err_str(rc));
        ctrl_exp_add_seen(b->s->exp, b->key, 1); /* will never be seen */
    } else {
        kc_event(ctrl_recorder(b->s->c), b->job, "Normal", "SuccessfulCreate", "Created pod: %s",
                 ctrl_meta_str(made, "name"));
    }
    json_decref(made);
    return rc;
}

/* Remove the tracking finalizer from pod. NOTFOUND counts as done. */
static int strip_finalizer(job_ctl_t *s, const json_t *pod)
{
    if (!has_finalizer(pod)) return 0;
    json_t *patch = json_pack("{s:{s:[s]}}", "metadata", "$deleteFromPrimitiveList/finalizers",
                              JOB_TRACKING_FINALIZER);
    int rc =
        kc_patch(ctrl_client(s->c), &kc_pods, ctrl_meta_str(pod, "namespace"),
                 ctrl_meta_str(pod, "name"), NULL, KC_PATCH_STRATEGIC, patch, NULL, NULL, NULL);
    json_decref(patch);
    return rc == KP_ENOTFOUND ? 0 : rc;
}

static int delete_one(void *arg, size_t i)
{
    batch_t *b = arg;
    const json_t *pod = b->pods[i];
    const char *uid = ctrl_meta_str(pod, "uid");
    int rc = b->strip ? strip_finalizer(b->s, pod) : 0;
    if (!rc) {
        json_t *opts = json_pack("{s:{s:s}}", "preconditions", "uid", uid);
        rc = kc_delete(ctrl_client(b->s->c), &kc_pods, ctrl_meta_str(pod, "namespace"),
                       ctrl_meta_str(pod, "name"), opts, NULL);
        json_decref(opts);
    }
    if (rc && b->key) ctrl_exp_del_seen(b->s->exp, b->key, uid); /* will never be seen */
    if (rc == KP_ENOTFOUND) rc = 0;
    if (rc)
        kc_event(ctrl_recorder(b->s->c), b->job, "Warning", "FailedDelete", "Error deleting: %s",
                 err_str(rc));
    else
        kc_event(ctrl_recorder(b->s->c), b->job, "Normal", "SuccessfulDelete", "Deleted pod: %s",
                 ctrl_meta_str(pod, "name"));
    return rc;
}

static int unfinalize_one(void *arg, size_t i)
{
    batch_t *b = arg;
    int rc = strip_finalizer(b->s, b->pods[i]);
    if (rc) fin_seen(b->s, b->key, ctrl_meta_str(b->pods[i], "uid"));
    return rc;
}

/* Deletion order (Kubernetes' ActivePods): unassigned, pending < unknown <
 * running, not ready, then newer first. */
static int rank_cmp(const void *pa, const void *pb)
{
    const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
    const char *na = json_string_value(json_object_get(spec_of(a), "nodeName"));
    const char *nb = json_string_value(json_object_get(spec_of(b), "nodeName"));
    int ua = !na || !*na, ub = !nb || !*nb;
    if (ua != ub) return ua ? -1 : 1;
    const char *pa_ = pod_phase(a), *pb_ = pod_phase(b);
    int ra = !strcmp(pa_, "Running") ? 2 : !strcmp(pa_, "Unknown") ? 1 : 0;
    int rb = !strcmp(pb_, "Running") ? 2 : !strcmp(pb_, "Unknown") ? 1 : 0;
    if (ra != rb) return ra - rb;
    int ya = ctrl_pod_ready(a), yb = ctrl_pod_ready(b);
    if (ya != yb) return ya - yb;
    int64_t ka = ctrl_time(ctrl_meta_str(a, "creationTimestamp"));
    int64_t kb = ctrl_time(ctrl_meta_str(b, "creationTimestamp"));
    if (ka != kb) return ka > kb ? -1 : 1;
    return strcmp(ctrl_meta_str(a, "name"), ctrl_meta_str(b, "name"));
}

/* ==== sync ==== */

/* What one sync of one Job knows. */
typedef struct jctx {
    job_ctl_t *s;
    const char *key;
    const json_t *job; /* the cached Job (read-only) */
    json_t *st;        /* the status being built (own) */
    char rv[32];       /* the Job's resourceVersion, for guarded writes */
    json_t **pods;     /* every pod it controls (refs) */
    size_t npods;
    json_t **active; /* the active ones (borrowed from pods) */
    size_t nactive;
    json_t *expected_rm;   /* uids whose finalizer removal is pending */
    json_t *unc_s, *unc_f; /* uncounted uids: {uid: true} (own) */
    int completions;       /* -1: unset */
    int succeeded, failed, ready, terminating;
    unsigned char *done;  /* Indexed: completed indexes (own), completions long */
    unsigned char *prev;  /* Indexed: those status.completedIndexes had */
    int new_failures;     /* failed pods seen first in this sync */
    int new_success;      /* a pod succeeded after them */
    int64_t last_fail_ms; /* finish time of the newest of them */
    int bo_failures;      /* the back-off record with them: failures since */
    int64_t bo_last_ms;   /* the last success, and the last failure's time */
} jctx_t;

static int in_set(const json_t *set, const char *uid)
{
    return json_object_get(set, uid) != NULL;
}

static int only_replace_failed(const json_t *job)
{
    const char *p = json_string_value(json_object_get(spec_of(job), "podReplacementPolicy"));
    return p && !strcmp(p, "Failed");
}

/* Kubernetes' isPodFailed: Failed, or being deleted without having
 * succeeded (unless only failed pods are replaced). */
static int pod_failed(const json_t *job, const json_t *pod)
{
    if (!strcmp(pod_phase(pod), "Failed")) return 1;
    if (only_replace_failed(job)) return 0;
    return deleting(pod) && strcmp(pod_phase(pod), "Succeeded");
}

/* When a pod finished (unix ms): its containers' latest finishedAt, else
 * its deletionTimestamp, else now. */
static int64_t finish_ms(const json_t *pod)
{
    int64_t best = -1;
    size_t i;
    json_t *cs;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "containerStatuses"), i,
                       cs) {
        int64_t t = ctrl_time(json_string_value(json_object_get(
            json_object_get(json_object_get(cs, "state"), "terminated"), "finishedAt")));
        if (t > best) best = t;
    }
    if (best < 0) best = ctrl_time(ctrl_meta_str(pod, "deletionTimestamp"));
    return best < 0 ? clock_wall_ns() / 1000000 : best * 1000;
}

/* A pod's index if valid for this Job, else -1. */
static int valid_index(const jctx_t *x, const json_t *pod)
{
    int ix = job__pod_index(pod);
    return ix >= 0 && ix < x->completions ? ix : -1;
}

/* Write x->st if it differs from what the Job has, guarded by its
 * resourceVersion. */
static int flush_status(jctx_t *x, json_t **last)
{
    if (json_equal(*last, x->st)) return 0;
    /* UpdateStatus (the job-controller role may update jobs/status, not
     * patch it): the Job with x->st, at the resourceVersion last seen. */
    json_t *upd = json_deep_copy(x->job), *out = NULL;
    json_t *m = upd ? json_object_get(upd, "metadata") : NULL;
    if (!m) {
        json_decref(upd);
        return KP_ENOMEM;
    }
    json_object_set_new(m, "resourceVersion", json_string(x->rv));
    json_object_set_new(upd, "status", json_deep_copy(x->st));
    int rc = kc_update(ctrl_client(x->s->c), &kc_jobs, ctrl_meta_str(x->job, "namespace"), upd,
                       "status", &out, NULL);
    json_decref(upd);
    if (rc) return rc;
    snprintf(x->rv, sizeof x->rv, "%s", ctrl_meta_str(out, "resourceVersion"));
    written_at(x->s, x->key, x->rv);
    json_decref(*last);
    *last = json_deep_copy(x->st);
    json_decref(out);
    return 0;
}

/* status.uncountedTerminatedPods from the sets. */
static void put_uncounted(jctx_t *x)
{
    json_t *u = json_object();
    json_t *sets[2] = {x->unc_s, x->unc_f};
    static const char *const names[] = {"succeeded", "failed"};
    for (int i = 0; i < 2; i++) {
        if (!json_object_size(sets[i])) continue;
        json_t *a = json_array();
        const char *uid;
        json_t *v;
        json_object_foreach(sets[i], uid, v)
            json_array_append_new(a, json_string(uid));
        json_object_set_new(u, names[i], a);
    }
    json_object_set_new(x->st, "uncountedTerminatedPods", u);
}

static void put_count(json_t *st, const char *field, int n)
{
    if (n > 0)
        json_object_set_new(st, field, json_integer(n));
    else
        json_object_del(st, field); /* omitempty, as Kubernetes */
}

/* Move uncounted uids whose pod no longer has the finalizer (or is gone)
 * into the counters. with_fin: uids of pods that still have it. */
static void clean_uncounted(jctx_t *x, const json_t *with_fin)
{
    json_t *sets[2] = {x->unc_s, x->unc_f};
    for (int i = 0; i < 2; i++) {
        const char *uid;
        json_t *v, *tmp;
        int moved = 0;
        json_object_foreach_safe(sets[i], tmp, uid, v) {
            if (in_set(with_fin, uid)) continue;
            json_object_del(sets[i], uid);
            moved++;
        }
        if (!moved) continue;
        const char *field = i ? "failed" : "succeeded";
        int n = (int)json_integer_value(json_object_get(x->st, field)) + moved;
        put_count(x->st, field, n);
    }
    put_uncounted(x);
}

/* The condition that ends the Job, decided in this sync. */
typedef struct finish {
    const char *type; /* NULL: none; FailureTarget, Failed, SuccessCriteriaMet */
    char reason[64], msg[128];
} finish_t;

static void set_finish(finish_t *f, const char *type, const char *reason, const char *msg)
{
    f->type = type;
    snprintf(f->reason, sizeof f->reason, "%s", reason);
    snprintf(f->msg, sizeof f->msg, "%s", msg);
}

/* Count finished pods into the status (steps 1-3 above), then, when `fin`
 * holds and nothing is left uncounted or terminating, the final condition.
 * Writes the status when it changed. */
static int track(jctx_t *x, finish_t *fin, int *finished)
{
    job_ctl_t *s = x->s;
    const json_t *job = x->job;
    int indexed = is_indexed(job);
    json_t *last = json_deep_copy(json_object_get(job, "status"));
    if (!last) last = json_object();
    json_t *with_fin = json_object();
    for (size_t i = 0; i < x->npods; i++) {
        const char *uid = ctrl_meta_str(x->pods[i], "uid");
        if (has_finalizer(x->pods[i]) && !in_set(x->expected_rm, uid))
            json_object_set_new(with_fin, uid, json_true());
    }
    clean_uncounted(x, with_fin);
    json_t **rm = calloc(x->npods + 1, sizeof *rm);
    size_t nrm = 0;
    int full = 0, rc = 0;
    for (size_t i = 0; rm && i < x->npods; i++) {
        const json_t *pod = x->pods[i];
        const char *uid = ctrl_meta_str(pod, "uid");
        if (!has_finalizer(pod) || in_set(x->expected_rm, uid)) continue;
        int failed = pod_failed(job, pod);
        int succeeded = !strcmp(pod_phase(pod), "Succeeded");
        if (!(deleting(job) || fin->type || succeeded || failed)) continue;
        rm[nrm++] = x->pods[i];
        if (succeeded && !in_set(x->unc_f, uid)) {
            if (indexed) {
                int ix = valid_index(x, pod);
                if (ix >= 0) x->done[ix] = 1;
            } else if (!in_set(x->unc_s, uid)) {
                json_object_set_new(x->unc_s, uid, json_true());
            }
        } else if (failed || (fin->type && strcmp(fin->type, "SuccessCriteriaMet"))) {
            if (!in_set(x->unc_f, uid) && (!indexed || valid_index(x, pod) >= 0))
                json_object_set_new(x->unc_f, uid, json_true());
        }
        if (json_object_size(x->unc_s) + json_object_size(x->unc_f) >= MAX_UNCOUNTED) {
            full = 1;
            break;
        }
    }
    if (!rm) rc = KP_ENOMEM;
    put_uncounted(x);
    if (!rc && indexed) {
        char *ci = job__indexes_format(x->done, x->completions);
        if (!ci) {
            rc = KP_ENOMEM;
        } else {
            size_t n = 0;
            for (int i = 0; i < x->completions; i++)
                n += x->done[i];
            json_object_set_new(x->st, "completedIndexes", json_string(ci));
            put_count(x->st, "succeeded", (int)n);
            free(ci);
        }
    }
    /* The interim conditions go out with the first write. */
    if (!rc && fin->type && !strcmp(fin->type, "FailureTarget")) {
        ensure_cond(x->st, "FailureTarget", "True", fin->reason, fin->msg);
        fin->type = "Failed";
    }
    if (!rc && fin->type && !strcmp(fin->type, "SuccessCriteriaMet")) {
        if (!cond_true(x->st, "SuccessCriteriaMet"))
            ensure_cond(x->st, "SuccessCriteriaMet", "True", fin->reason, fin->msg);
        fin->type = "Complete";
    }
    if (!rc) rc = flush_status(x, &last);
    if (!rc && x->new_failures + x->new_success) {
        /* The back-off record follows what the status now counts. */
        pthread_mutex_lock(&s->mu);
        json_object_set_new(
            s->backoff, x->key,
            json_pack("{s:i, s:I}", "failures", x->bo_failures, "last", (json_int_t)x->bo_last_ms));
        pthread_mutex_unlock(&s->mu);
    }
    if (!rc && nrm) {
        for (size_t i = 0; i < nrm; i++)
            fin_expect(s, x->key, ctrl_meta_str(rm[i], "uid"));
        batch_t b = {.s = s, .job = job, .key = x->key, .pods = rm};
        int *rcs = calloc(nrm, sizeof *rcs);
        size_t ok = ctrl_parallel(nrm, PARALLEL, unfinalize_one, &b, rcs);
        for (size_t i = 0; i < nrm; i++) /* without rcs (ENOMEM), only if all went */
            if (rcs ? !rcs[i] : ok == nrm) json_object_del(with_fin, ctrl_meta_str(rm[i], "uid"));
        free(rcs);
        clean_uncounted(x, with_fin);
        if (ok < nrm) {
            rc = KP_EUNAVAILABLE;
            flush_status(x, &last); /* the partial progress */
        }
    }
    *finished = 0;
    if (!rc && !full && fin->type && !json_object_size(x->unc_s) && !json_object_size(x->unc_f) &&
        !x->terminating) {
        ensure_cond(x->st, fin->type, "True", fin->reason, fin->msg);
        if (!strcmp(fin->type, "Complete")) {
            json_t *c = find_cond(x->st, "Complete");
            json_object_set(x->st, "completionTime", json_object_get(c, "lastTransitionTime"));
        }
        *finished = 1;
    }
    if (!rc) rc = flush_status(x, &last);
    if (!rc && *finished) {
        kc_recorder_t *r = ctrl_recorder(s->c);
        if (!strcmp(fin->type, "Complete")) {
            if (x->completions >= 0 &&
                json_integer_value(json_object_get(x->st, "succeeded")) > x->completions)
                kc_event(r, job, "Warning", "TooManySucceededPods",
                         "Too many succeeded pods running after completion count reached");
            kc_event(r, job, "Normal", "Completed", "Job completed");
        } else {
            kc_event(r, job, "Warning", fin->reason, "%s", fin->msg);
        }
    }
    free(rm);
    json_decref(with_fin);
    json_decref(last);
    return rc;
}

/* Delete pods[0..n) in parallel; strip: remove the finalizer first (the
 * pods are not to be counted). Returns how many went; *rc the first error. */
static size_t delete_pods(jctx_t *x, json_t **pods, size_t n, int strip, int *rc)
{
    *rc = 0;
    if (!n) return 0;
    json_t *uids = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(uids, ctrl_meta_str(pods[i], "uid"), json_true());
    ctrl_exp_set(x->s->exp, x->key, 0, uids);
    batch_t b = {.s = x->s, .job = x->job, .key = x->key, .pods = pods, .strip = strip};
    size_t ok = ctrl_parallel(n, PARALLEL, delete_one, &b, NULL);
    if (ok < n) *rc = KP_EUNAVAILABLE;
    return ok;
}

/* Create or delete pods toward what the Job wants (Kubernetes' manageJob).
 * Returns the active count after it. */
static int manage(jctx_t *x, int *rc)
{
    const json_t *job = x->job;
    int active = (int)x->nactive;
    *rc = 0;
    if (json_is_true(json_object_get(spec_of(job), "suspend"))) {
        size_t gone = delete_pods(x, x->active, x->nactive, 1, rc);
        x->terminating += (int)gone;
        return active - (int)gone;
    }
    int indexed = is_indexed(job);
    int want =
        job__want_active(x->completions, spec_int(job, "parallelism", 1), x->succeeded, active);
    int rm_least = active - want > 0 ? active - want : 0;
    /* Indexed: pods without a valid index and duplicates go first. */
    json_t **victims = calloc(x->nactive + 1, sizeof *victims);
    if (!victims) {
        *rc = KP_ENOMEM;
        return active;
    }
    size_t nv = 0, nleft = 0;
    json_t **left = calloc(x->nactive + 1, sizeof *left);
    unsigned char *seen = indexed ? calloc((size_t)x->completions + 1, 1) : NULL;
    if (!left || (indexed && !seen)) {
        free(victims);
        free(left);
        free(seen);
        *rc = KP_ENOMEM;
        return active;
    }
    for (size_t i = 0; i < x->nactive; i++) {
        if (indexed) {
            int ix = valid_index(x, x->active[i]);
            if (ix < 0 || seen[ix]) {
                victims[nv++] = x->active[i];
                continue;
            }
            seen[ix] = 1;
        }
        left[nleft++] = x->active[i];
    }
    if ((int)nv < rm_least) {
        qsort(left, nleft, sizeof *left, rank_cmp);
        for (size_t i = 0; (int)nv < rm_least && i < nleft; i++)
            victims[nv++] = left[i];
    }
    if (nv > BURST) nv = BURST;
    if (nv) {
        size_t gone = delete_pods(x, victims, nv, 1, rc);
        x->terminating += (int)gone;
        free(victims);
        free(left);
        free(seen);
        return active - (int)gone;
    }
    free(victims);
    free(left);
    int diff = want - active - (only_replace_failed(job) ? x->terminating : 0);
    if (diff <= 0) {
        free(seen);
        return active;
    }
    /* The failure back-off. */
    int64_t wait =
        job__backoff_remaining_ms(x->bo_failures, clock_wall_ns() / 1000000 - x->bo_last_ms);
    if (wait > 0) {
        ctrl_enqueue_after(x->s->c, x->key, (int)wait + 50);
        free(seen);
        return active;
    }
    if (diff > BURST) diff = BURST;
    int *indexes = NULL;
    if (indexed) {
        indexes = calloc((size_t)diff, sizeof *indexes);
        if (!indexes) {
            free(seen);
            *rc = KP_ENOMEM;
            return active;
        }
        diff = (int)job__first_pending(x->done, seen, x->completions, (size_t)diff, indexes);
    }
    free(seen);
    if (!diff) {
        free(indexes);
        return active;
    }
    json_t *tmpl = pod_template(job);
    if (!tmpl) {
        free(indexes);
        *rc = KP_ENOMEM;
        return active;
    }
    ctrl_exp_set(x->s->exp, x->key, diff, NULL);
    /* Slow start: batches of 1, 2, 4, ...; a failed batch ends the sync. */
    batch_t b = {.s = x->s, .job = job, .key = x->key, .tmpl = tmpl};
    int done = 0, batch = 1, made = 0;
    while (done < diff) {
        int m = diff - done < batch ? diff - done : batch;
        b.indexes = indexes ? indexes + done : NULL;
        size_t ok = ctrl_parallel((size_t)m, PARALLEL, create_one, &b, NULL);
        made += (int)ok;
        done += m;
        if ((int)ok < m) {
            *rc = KP_EUNAVAILABLE;
            break;
        }
        batch *= 2;
    }
    if (done < diff) ctrl_exp_add_seen(x->s->exp, x->key, diff - done); /* not sent */
    json_decref(tmpl);
    free(indexes);
    return active + made;
}

/* OnFailure pods: restarts of pending and running pods reach backoffLimit. */
static int past_backoff_on_failure(const jctx_t *x)
{
    const json_t *tspec = json_object_get(json_object_get(spec_of(x->job), "template"), "spec");
    const char *rp = json_string_value(json_object_get(tspec, "restartPolicy"));
    if (!rp || strcmp(rp, "OnFailure")) return 0;
    long n = 0;
    for (size_t i = 0; i < x->npods; i++) {
        const char *ph = pod_phase(x->pods[i]);
        if (strcmp(ph, "Running") && strcmp(ph, "Pending")) continue;
        static const char *const lists[] = {"initContainerStatuses", "containerStatuses", NULL};
        for (const char *const *l = lists; *l; l++) {
            size_t j;
            json_t *cs;
            json_array_foreach(json_object_get(json_object_get(x->pods[i], "status"), *l), j, cs)
                n += (long)json_integer_value(json_object_get(cs, "restartCount"));
        }
    }
    int limit = spec_int(x->job, "backoffLimit", 6);
    return limit == 0 ? n > 0 : n >= limit;
}

static json_t *uid_set(const json_t *list)
{
    json_t *set = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v) {
        if (json_is_string(v)) json_object_set_new(set, json_string_value(v), json_true());
    }
    return set;
}

static int sync_job(job_ctl_t *s, const char *key, const json_t *job)
{
    jctx_t x = {.s = s, .key = key, .job = job};
    int rc = 0;
    const json_t *spec = spec_of(job);
    const char *mode = json_string_value(json_object_get(spec, "completionMode"));
    if (mode && strcmp(mode, "NonIndexed") && strcmp(mode, "Indexed")) {
        kc_event(ctrl_recorder(s->c), job, "Warning", "UnknownCompletionMode",
                 "Skipped Job sync because completion mode is unknown");
        return 0;
    }
    int indexed = is_indexed(job);
    x.completions = spec_int(job, "completions", -1);
    if (indexed && (x.completions < 0 || x.completions > JOB_MAX_INDEXES)) return 0;
    snprintf(x.rv, sizeof x.rv, "%s", ctrl_meta_str(job, "resourceVersion"));
    x.st = json_deep_copy(json_object_get(job, "status"));
    if (!json_is_object(x.st)) {
        json_decref(x.st);
        x.st = json_object();
    }
    const json_t *unc = json_object_get(x.st, "uncountedTerminatedPods");
    x.unc_s = uid_set(json_object_get(unc, "succeeded"));
    x.unc_f = uid_set(json_object_get(unc, "failed"));
    x.expected_rm = fin_expected(s, key);
    int met = ctrl_exp_met(s->exp, key);
    if ((rc =
             kc_informer_list(s->pods, "controller", ctrl_meta_str(job, "uid"), &x.pods, &x.npods)))
        goto out;
    x.active = calloc(x.npods + 1, sizeof *x.active);
    if (indexed) {
        x.done = calloc((size_t)x.completions + 1, 1);
        x.prev = calloc((size_t)x.completions + 1, 1);
    }
    if (!x.active || (indexed && (!x.done || !x.prev))) {
        rc = KP_ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < x.npods; i++) {
        const json_t *pod = x.pods[i];
        if (ctrl_pod_active(pod)) {
            x.active[x.nactive++] = x.pods[i];
            x.ready += ctrl_pod_ready(pod);
        } else if (deleting(pod) && strcmp(pod_phase(pod), "Succeeded") &&
                   strcmp(pod_phase(pod), "Failed")) {
            x.terminating++;
        }
    }
    /* Pods finished and not yet counted anywhere. */
    int new_s = 0, new_f = 0;
    int64_t last_success = -1;
    for (size_t i = 0; i < x.npods; i++) {
        const json_t *pod = x.pods[i];
        const char *uid = ctrl_meta_str(pod, "uid");
        if (!has_finalizer(pod) || in_set(x.expected_rm, uid)) continue;
        if (indexed && valid_index(&x, pod) < 0) continue;
        if (!strcmp(pod_phase(pod), "Succeeded") && !in_set(x.unc_s, uid)) {
            new_s++;
            int64_t t = finish_ms(pod);
            if (t > last_success) last_success = t;
        } else if (pod_failed(job, pod) && !in_set(x.unc_f, uid)) {
            new_f++;
        }
    }
    /* The back-off record's update: failures after the newest success. */
    for (size_t i = 0; i < x.npods; i++) {
        const json_t *pod = x.pods[i];
        const char *uid = ctrl_meta_str(pod, "uid");
        if (!has_finalizer(pod) || in_set(x.expected_rm, uid) || in_set(x.unc_f, uid)) continue;
        if (indexed && valid_index(&x, pod) < 0) continue;
        if (strcmp(pod_phase(pod), "Succeeded") && pod_failed(job, pod)) {
            int64_t t = finish_ms(pod);
            if (t >= last_success) x.new_failures++;
            if (t > x.last_fail_ms) x.last_fail_ms = t;
        }
    }
    x.new_success = new_s > 0;
    pthread_mutex_lock(&s->mu);
    json_t *rec = json_object_get(s->backoff, key);
    x.bo_failures = (int)json_integer_value(json_object_get(rec, "failures"));
    x.bo_last_ms = json_integer_value(json_object_get(rec, "last"));
    pthread_mutex_unlock(&s->mu);
    x.bo_failures = x.new_success ? x.new_failures : x.bo_failures + x.new_failures;
    if (x.last_fail_ms > x.bo_last_ms) x.bo_last_ms = x.last_fail_ms;
    const json_t *st0 = json_object_get(job, "status");
    x.succeeded = (int)json_integer_value(json_object_get(st0, "succeeded")) + new_s +
                  (int)json_object_size(x.unc_s);
    x.failed = (int)json_integer_value(json_object_get(st0, "failed")) + new_f +
               (int)json_object_size(x.unc_f);
    int suspended = json_is_true(json_object_get(spec, "suspend"));
    char now[32];
    now_rfc3339(now, sizeof now);
    if (!json_object_get(x.st, "startTime") && !suspended)
        json_object_set_new(x.st, "startTime", json_string(now));

    finish_t fin = {0};
    if (cond_true(x.st, "SuccessCriteriaMet")) {
        json_t *c = find_cond(x.st, "SuccessCriteriaMet");
        const char *r = json_string_value(json_object_get(c, "reason"));
        const char *m = json_string_value(json_object_get(c, "message"));
        set_finish(&fin, "SuccessCriteriaMet", r ? r : "", m ? m : "");
    } else if (cond_true(x.st, "FailureTarget")) {
        json_t *c = find_cond(x.st, "FailureTarget");
        const char *r = json_string_value(json_object_get(c, "reason"));
        const char *m = json_string_value(json_object_get(c, "message"));
        set_finish(&fin, "Failed", r ? r : "", m ? m : "");
    } else if (x.failed > spec_int(job, "backoffLimit", 6) || past_backoff_on_failure(&x)) {
        set_finish(&fin, "FailureTarget", "BackoffLimitExceeded",
                   "Job has reached the specified backoff limit");
    } else {
        int64_t start = ctrl_time(json_string_value(json_object_get(x.st, "startTime")));
        const json_t *ads = json_object_get(spec, "activeDeadlineSeconds");
        if (json_is_integer(ads) && start >= 0 && !suspended) {
            int64_t left = start + json_integer_value(ads) - (int64_t)time(NULL);
            if (left <= 0)
                set_finish(&fin, "FailureTarget", "DeadlineExceeded",
                           "Job was active longer than specified deadline");
            else
                ctrl_enqueue_after(s->c, key, (int)(left > 86400 ? 86400 : left) * 1000 + 100);
        }
    }
    if (indexed) {
        job__indexes_parse(json_string_value(json_object_get(st0, "completedIndexes")),
                           x.completions, x.prev);
        memcpy(x.done, x.prev, (size_t)x.completions);
        for (size_t i = 0; i < x.npods; i++) {
            const json_t *pod = x.pods[i];
            int ix = valid_index(&x, pod);
            if (ix >= 0 && !strcmp(pod_phase(pod), "Succeeded") && has_finalizer(pod) &&
                !in_set(x.expected_rm, ctrl_meta_str(pod, "uid")))
                x.done[ix] = 1;
        }
        x.succeeded = 0;
        for (int i = 0; i < x.completions; i++)
            x.succeeded += x.done[i];
    }
    int active = (int)x.nactive, mrc = 0;
    if (fin.type) {
        /* Ending: the active pods go (keeping the finalizer: they count as
         * failed); the end waits until they did and the cache caught up. */
        size_t gone = delete_pods(&x, x.active, x.nactive, 0, &mrc);
        if ((int)gone != active || !met) fin.type = NULL;
        active -= (int)gone;
        x.terminating += (int)gone;
    } else {
        int called = 0;
        if (met && !deleting(job)) {
            active = manage(&x, &mrc);
            called = 1;
        }
        int complete = x.completions < 0 ? x.succeeded > 0 && active == 0
                                         : x.succeeded >= x.completions && active == 0;
        if (complete) {
            set_finish(&fin, "SuccessCriteriaMet", "CompletionsReached",
                       "Reached expected number of succeeded pods");
        } else if (called && suspended) {
            if (ensure_cond(x.st, "Suspended", "True", "JobSuspended", "Job suspended")) {
                kc_event(ctrl_recorder(s->c), job, "Normal", "Suspended", "Job suspended");
            }
        } else if (called) {
            if (ensure_cond(x.st, "Suspended", "False", "JobResumed", "Job resumed")) {
                kc_event(ctrl_recorder(s->c), job, "Normal", "Resumed", "Job resumed");
                /* activeDeadlineSeconds counts continuous activity. */
                json_object_set_new(x.st, "startTime", json_string(now));
            }
        }
    }
    put_count(x.st, "active", active);
    json_object_set_new(x.st, "ready", json_integer(x.ready));
    json_object_set_new(x.st, "terminating", json_integer(x.terminating));
    int finished = 0;
    rc = track(&x, &fin, &finished);
    if (finished) {
        pthread_mutex_lock(&s->mu);
        json_object_del(s->backoff, key);
        pthread_mutex_unlock(&s->mu);
    }
    if (!rc) rc = mrc;
    if (rc == KP_ECONFLICT) log_debug("job", "%s: status conflict, retrying", key);
out:
    kc_objs_free(x.pods, x.npods);
    free(x.active);
    free(x.done);
    free(x.prev);
    json_decref(x.unc_s);
    json_decref(x.unc_f);
    json_decref(x.expected_rm);
    json_decref(x.st);
    return rc;
}

/* A pod that may keep our finalizer for nothing: its Job is gone, another
 * Job of that name replaced it, or the Job finished. */
static int sync_orphan(job_ctl_t *s, const char *podkey)
{
    json_t *pod = kc_informer_get(s->pods, podkey);
    if (!pod) return 0;
    int rc = 0;
    if (has_finalizer(pod)) {
        char jobkey[600];
        json_t *job = NULL;
        const char *uid = ctrl_controller_uid(pod);
        if (job_of(pod, jobkey, sizeof jobkey)) job = kc_informer_get(s->jobs, jobkey);
        int adopted = job && uid && !strcmp(ctrl_meta_str(job, "uid"), uid) && !job_finished(job);
        /* A Job the cache misses may be new: ask the API before acting. */
        if (!job && uid && job_of(pod, jobkey, sizeof jobkey)) {
            json_t *live = NULL;
            const char *slash = strchr(jobkey, '/');
            int grc = kc_get(ctrl_client(s->c), &kc_jobs, ctrl_meta_str(pod, "namespace"),
                             slash + 1, &live);
            if (!grc && !strcmp(ctrl_meta_str(live, "uid"), uid) && !job_finished(live))
                adopted = 1;
            else if (grc && grc != KP_ENOTFOUND)
                rc = grc;
            json_decref(live);
        }
        json_decref(job);
        if (!adopted && !rc) rc = strip_finalizer(s, pod);
    }
    json_decref(pod);
    return rc;
}

static int job_sync(ctrl_t *c, void *self, const char *key)
{
    job_ctl_t *s = self;
    (void)c;
    if (!strncmp(key, POD_KEY, strlen(POD_KEY))) return sync_orphan(s, key + strlen(POD_KEY));
    json_t *job = kc_informer_get(s->jobs, key);
    if (!job) {
        forget(s, key);
        return 0;
    }
    int rc = 0;
    if (stale(s, key, ctrl_meta_str(job, "resourceVersion"))) {
        /* Not yet our last write: wait for the cache (its event requeues). */
    } else if (job_finished(job)) {
        pthread_mutex_lock(&s->mu);
        json_object_del(s->backoff, key);
        pthread_mutex_unlock(&s->mu);
    } else {
        rc = sync_job(s, key, job);
    }
    json_decref(job);
    return rc;
}

const ctrl_ops_t ctrl_job = {
    .name = "job",
    .init = job_init,
    .sync = job_sync,
    .free = job_free,
};
