/*
 * lab_central_brain.c -- investigation 003's cases 02 ("The Feature That
 * Broke Another Feature") and 05 (a failure in one responsibility), run:
 * a controller failing alone.
 *
 * The seed's central brain holds every rule in one process, so a fault in
 * one rule is a fault in all. kplane's controllers are narrow owners that
 * share nothing but the API: this lab runs them as two processes and kills
 * one.
 *
 * What it measures: `kplane server --no-controllers` (API, store,
 * scheduler, 2 simulated nodes) and two `kplane controller-manager`s on its
 * admin kubeconfig, "cm-rest" with every controller but `job` and "cm-job"
 * with `job` alone. Three invariants are checked before, while cm-job is
 * killed (SIGKILL), and after it is started again:
 *   - a Deployment's replicas follow its spec (deployment and replicaset
 *     controllers): scaled, time to converge;
 *   - a ReplicaSet replaces a deleted pod (replicaset controller): time
 *     until the pods are back, under new names;
 *   - a Job runs its pod to completion (job controller): time to
 *     status.succeeded 1; while cm-job is down, a new Job's pods and status
 *     are watched for several seconds (none, nothing: no progress), and
 *     after the restart, how long the new job controller takes to catch up
 *     from what the API holds (it never saw that Job created).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab/lab.h"
#include "lab/lab_int.h"
#include "lib/err.h"

#define NS       "default"
#define WAIT_MS  90000
#define STUCK_MS 6000 /* how long a Job is watched for no progress */

/* Every controller of `kplane controller-manager --help` but job (and
 * csrsigning, which needs the cluster CA's key). */
static const char REST[] = "replicaset,replicationcontroller,deployment,namespace,"
                           "ttl-after-finished,statefulset,nodelifecycle,taint-eviction,"
                           "daemonset,disruption,serviceaccount,root-ca-cert-publisher,"
                           "clusterrole-aggregation,garbagecollector";

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int create_deployment(kc_client_t *c, int replicas)
{
    json_t *d = json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:{s:{s:s}}, s:{s:{s:{s:s}}, "
                          "s:{s:[{s:s, s:s}]}}}}",
                          "apiVersion", "apps/v1", "kind", "Deployment", "metadata", "name", "web",
                          "spec", "replicas", replicas, "selector", "matchLabels", "app", "web",
                          "template", "metadata", "labels", "app", "web", "spec", "containers",
                          "name", "web", "image", "nginx:1.25");
    if (!d) return KP_ENOMEM;
    int rc = kc_create(c, &kc_deployments, NS, d, NULL, NULL);
    json_decref(d);
    return rc;
}

static int scale(kc_client_t *c, int replicas)
{
    json_t *p = json_pack("{s:{s:i}}", "spec", "replicas", replicas);
    if (!p) return KP_ENOMEM;
    int rc = kc_patch(c, &kc_deployments, NS, "web", NULL, KC_PATCH_MERGE, p, NULL, NULL, NULL);
    json_decref(p);
    return rc;
}

static int create_job(kc_client_t *c, const char *name)
{
    json_t *j = json_pack("{s:s, s:s, s:{s:s}, s:{s:i, s:i, s:{s:{s:{s:s}}, s:{s:s, "
                          "s:[{s:s, s:s}]}}}}",
                          "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name, "spec",
                          "completions", 1, "parallelism", 1, "template", "metadata", "annotations",
                          "sim.kplane.io/run-ms", "300", "spec", "restartPolicy", "Never",
                          "containers", "name", "work", "image", "busybox");
    if (!j) return KP_ENOMEM;
    int rc = kc_create(c, &kc_jobs, NS, j, NULL, NULL);
    json_decref(j);
    return rc;
}

/* Pods (not terminating) of a label selector query; names into `names`
 * ("a b c") when not NULL. -1 on error. */
static int pods_of(kc_client_t *c, const char *query, char *names, size_t size)
{
    json_t *l = NULL;
    if (kc_list(c, &kc_pods, NS, query, &l)) return -1;
    int n = 0;
    size_t i;
    const json_t *p;
    if (names) names[0] = '\0';
    json_array_foreach(json_object_get(l, "items"), i, p) {
        if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp")) continue;
        n++;
        if (names) {
            size_t len = strlen(names);
            snprintf(names + len, size - len, "%s%s ", len ? "" : " ",
                     lab__jstr(p, "metadata.name"));
        }
    }
    json_decref(l);
    return n;
}

/* Is there a name in `names` (" a b c ") that is not in `before`? */
static int has_new(const char *names, const char *before)
{
    for (const char *p = names; *p == ' ' && p[1];) {
        size_t n = strcspn(p + 1, " ");
        char needle[300];
        snprintf(needle, sizeof needle, " %.*s ", (int)n, p + 1);
        if (n && !strstr(before, needle)) return 1;
        p += n + 1;
    }
    return 0;
}

/* Delete one pod of web (once exactly `replicas` are there) and wait until
 * the Deployment has all its pods again: the deleted one gone, a new one
 * in its place. *ms from the delete. */
static int replace_pod(lab_t *lab, kc_client_t *c, int replicas, double *ms, char *victim,
                       size_t vsize)
{
    char before[4096], names[4096];
    double t0 = lab_elapsed_ms(lab);
    while (pods_of(c, "labelSelector=app%3Dweb", before, sizeof before) != replicas) {
        if (lab_elapsed_ms(lab) - t0 > WAIT_MS) {
            lab_say(lab, "Deployment web never had exactly %d pods", replicas);
            return KP_ETIMEDOUT;
        }
        sleep_ms(50);
    }
    snprintf(victim, vsize, "%.*s", (int)strcspn(before + 1, " "), before + 1);
    json_t *opts = json_pack("{s:i}", "gracePeriodSeconds", 0);
    t0 = lab_elapsed_ms(lab);
    int rc = kc_delete(c, &kc_pods, NS, victim, opts, NULL);
    json_decref(opts);
    if (rc) {
        lab_say(lab, "deleting pod %s: %s", victim, err_str(rc));
        return rc;
    }
    char needle[300];
    snprintf(needle, sizeof needle, " %s ", victim);
    for (;;) {
        int n = pods_of(c, "labelSelector=app%3Dweb", names, sizeof names);
        if (n == replicas && !strstr(names, needle) && has_new(names, before) &&
            lab__deployment_converged(c, NS, "web", replicas, NULL, 0) == 1) {
            *ms = lab_elapsed_ms(lab) - t0;
            return 0;
        }
        if (lab_elapsed_ms(lab) - t0 > WAIT_MS) {
            lab_say(lab, "pod %s was not replaced within %d ms", victim, WAIT_MS);
            return KP_ETIMEDOUT;
        }
        sleep_ms(50);
    }
}

/* Job name's succeeded count, pods and whether it has started. */
static int job_state(kc_client_t *c, const char *name, long long *succeeded, int *pods,
                     int *started)
{
    json_t *j = NULL;
    int rc = kc_get(c, &kc_jobs, NS, name, &j);
    if (rc) return rc;
    *succeeded = lab__jint(j, "status.succeeded", 0);
    *started = *lab__jstr(j, "status.startTime") != '\0';
    json_decref(j);
    char q[128];
    snprintf(q, sizeof q, "labelSelector=job-name%%3D%s", name);
    *pods = pods_of(c, q, NULL, 0);
    return 0;
}

/* Wait until Job `name` succeeded; *ms since `t0`. */
static int job_done(lab_t *lab, kc_client_t *c, const char *name, double t0, double *ms)
{
    for (;;) {
        long long ok = 0;
        int pods = 0, started = 0;
        int rc = job_state(c, name, &ok, &pods, &started);
        if (rc && rc != KP_EUNAVAILABLE) {
            lab_say(lab, "reading Job %s: %s", name, err_str(rc));
            return rc;
        }
        if (!rc && ok >= 1) {
            *ms = lab_elapsed_ms(lab) - t0;
            return 0;
        }
        if (lab_elapsed_ms(lab) - t0 > WAIT_MS) {
            lab_say(lab, "Job %s did not complete within %d ms", name, WAIT_MS);
            return KP_ETIMEDOUT;
        }
        sleep_ms(50);
    }
}

typedef struct phase {
    char deploy[512], pod[512], job[512];
} phase_t;

/* The Deployment and ReplicaSet invariants in one phase. */
static int workload_checks(lab_t *lab, kc_client_t *c, int replicas, int create, phase_t *ph)
{
    double ms = 0, t0 = lab_elapsed_ms(lab);
    int rc = create ? create_deployment(c, replicas) : scale(c, replicas);
    if (rc) {
        lab_say(lab, "%s Deployment web: %s", create ? "creating" : "scaling", err_str(rc));
        return rc;
    }
    if ((rc = lab__wait_deployment(lab, c, NS, "web", replicas, WAIT_MS, NULL))) return rc;
    ms = lab_elapsed_ms(lab) - t0;
    snprintf(ph->deploy, sizeof ph->deploy, "held: %s to %d, converged in %.0f ms",
             create ? "created" : "scaled", replicas, ms);
    lab_say(lab, "Deployment web %s to %d: converged in %.0f ms", create ? "created" : "scaled",
            replicas, ms);
    char victim[256];
    if ((rc = replace_pod(lab, c, replicas, &ms, victim, sizeof victim))) return rc;
    snprintf(ph->pod, sizeof ph->pod, "held: %s replaced in %.0f ms", victim, ms);
    lab_say(lab, "pod %s deleted: replaced in %.0f ms", victim, ms);
    return 0;
}

static int start_cm(lab_t *lab, const lab_server_t *s, const char *name, const char *which,
                    pid_t *pid)
{
    const char *args[] = {"--controllers", which, NULL};
    return lab_component_start(lab, name, "controller-manager", s, NULL, args, pid);
}

static int run(lab_t *lab)
{
    lab_server_opts_t o = {.name = "server", .nodes = 2, .no_controllers = 1};
    lab_server_t *s;
    int rc = lab_server_start(lab, &o, &s);
    if (rc) return rc;
    kc_client_t *c = s->client;
    if ((rc = lab__wait_nodes(lab, c, 2, 60000))) return rc;
    pid_t rest, job;
    if ((rc = start_cm(lab, s, "cm-rest", REST, &rest)) ||
        (rc = start_cm(lab, s, "cm-job", "job", &job)))
        return rc;
    lab_say(lab, "two controller managers: cm-rest (every controller but job), cm-job (job)");
    /* Pods need their namespace's default ServiceAccount: cm-rest makes it. */
    if ((rc = lab__wait_object(lab, c, &kc_serviceaccounts, NS, "default", 60000))) return rc;

    phase_t ph[3];
    memset(ph, 0, sizeof ph);
    double ms;

    /* Before: both running. */
    if ((rc = workload_checks(lab, c, 2, 1, &ph[0]))) return rc;
    double t0 = lab_elapsed_ms(lab);
    if ((rc = create_job(c, "before")) || (rc = job_done(lab, c, "before", t0, &ms))) return rc;
    snprintf(ph[0].job, sizeof ph[0].job, "held: Job before completed in %.0f ms", ms);
    lab_say(lab, "Job before completed in %.0f ms", ms);

    /* The job controller fails alone. */
    lab_say(lab, "kill -9 cm-job (pid %d): the job controller is gone, nothing else", (int)job);
    if ((rc = lab_signal(lab, job, SIGKILL))) return rc;
    double job_created = lab_elapsed_ms(lab);
    if ((rc = create_job(c, "during"))) {
        lab_say(lab, "creating Job during: %s", err_str(rc));
        return rc;
    }
    lab_say(lab, "Job during created while the job controller is down");
    if ((rc = workload_checks(lab, c, 4, 0, &ph[1]))) return rc;
    /* Watch the Job for no progress until STUCK_MS after its creation. */
    long long ok = 0;
    int pods = 0, started = 0, max_pods = 0, ever_started = 0;
    long long max_ok = 0;
    do {
        if (!job_state(c, "during", &ok, &pods, &started)) {
            if (pods > max_pods) max_pods = pods;
            if (ok > max_ok) max_ok = ok;
            ever_started |= started;
        }
        sleep_ms(100);
    } while (lab_elapsed_ms(lab) - job_created < STUCK_MS);
    int progressed = max_pods || max_ok || ever_started;
    snprintf(ph[1].job, sizeof ph[1].job,
             "%s: Job during: %d pods, succeeded %lld, %s after %.1f s",
             progressed ? "held?" : "NOT held", max_pods, max_ok,
             ever_started ? "started" : "no startTime", (lab_elapsed_ms(lab) - job_created) / 1e3);
    lab_say(lab, "Job during after %.1f s: %d pods, succeeded %lld (cm-rest still runs: pid %d)",
            (lab_elapsed_ms(lab) - job_created) / 1e3, max_pods, max_ok, (int)rest);

    /* The job controller again: it catches up from what the API holds. */
    double back = lab_elapsed_ms(lab);
    if ((rc = start_cm(lab, s, "cm-job", "job", &job))) return rc;
    if ((rc = job_done(lab, c, "during", back, &ms))) return rc;
    double waited = lab_elapsed_ms(lab) - job_created;
    lab_say(lab,
            "Job during completed %.0f ms after cm-job started again (%.1f s after it was "
            "created)",
            ms, waited / 1e3);
    char caught[256];
    snprintf(caught, sizeof caught,
             "caught up: Job during completed %.0f ms after the restart "
             "(%.1f s after its creation)",
             ms, waited / 1e3);

    /* After: all three again. */
    if ((rc = workload_checks(lab, c, 3, 0, &ph[2]))) return rc;
    t0 = lab_elapsed_ms(lab);
    if ((rc = create_job(c, "after")) || (rc = job_done(lab, c, "after", t0, &ms))) return rc;
    snprintf(ph[2].job, sizeof ph[2].job, "held: Job after completed in %.0f ms; %s", ms, caught);
    lab_say(lab, "Job after completed in %.0f ms", ms);

    lab_table(lab, "Invariants while one controller failed alone (cases 02 and 05)",
              (const char *const[]){"invariant (its owner)", "both managers up",
                                    "job controller killed", "after its restart", NULL});
    lab_row(lab, (const char *const[]){"controllers running", "all (cm-rest + cm-job)",
                                       "all but job (cm-rest)", "all (cm-rest + a new cm-job)"});
    lab_row(lab, (const char *const[]){"Deployment replicas follow spec (deployment, replicaset)",
                                       ph[0].deploy, ph[1].deploy, ph[2].deploy});
    lab_row(lab, (const char *const[]){"a deleted pod is replaced (replicaset)", ph[0].pod,
                                       ph[1].pod, ph[2].pod});
    lab_row(lab, (const char *const[]){"a Job runs to completion (job)", ph[0].job, ph[1].job,
                                       ph[2].job});
    lab_table_end(lab);
    return 0;
}

const lab_def_t lab_central_brain = {
    .name = "central-brain",
    .seed = "003",
    .title = "kill one controller (job): the other invariants hold; it catches up on restart",
    .run = run,
};
