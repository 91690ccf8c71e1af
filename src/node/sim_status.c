/*
 * sim_status.c -- the pod status a simulated kubelet reports for a stage:
 * phase, conditions, IPs, QoS class and container statuses, as one merge
 * patch {"status": {...}} of pods/<name>/status.
 *
 * INVARIANT: the patch is a pure function of the pod (read-only) and its
 * entry, so writing it twice is harmless, and it carries every field a
 * client requires (Python: ContainerStatus image, imageID, name, ready,
 * restartCount; terminated exitCode; condition type, status). Lists are
 * replaced whole by a merge patch, so each carries all its elements.
 *
 * OWNS nothing; the caller owns the returned patch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/buf.h"
#include "lib/err.h"
#include "node/sim_int.h"

#define NAMES_MAX 1024

void sim__ip_str(uint32_t ip, char buf[16])
{
    snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

/* ---- QoS class ---- */

/* A resource quantity ("500m", "1.5", "64Mi", "1e3", "2G") as a number, or
 * -1 when it cannot be read. Precise enough to compare requests and limits. */
static double quantity(const json_t *v)
{
    if (json_is_number(v)) return json_number_value(v);
    const char *q = json_string_value(v);
    if (!q || !*q) return -1;
    char *end;
    double x = strtod(q, &end);
    if (end == q) return -1;
    static const struct {
        const char *suffix;
        double mul;
    } sfx[] = {{"", 1},
               {"n", 1e-9},
               {"u", 1e-6},
               {"m", 1e-3},
               {"k", 1e3},
               {"M", 1e6},
               {"G", 1e9},
               {"T", 1e12},
               {"P", 1e15},
               {"E", 1e18},
               {"Ki", 1024.0},
               {"Mi", 1048576.0},
               {"Gi", 1073741824.0},
               {"Ti", 1099511627776.0},
               {"Pi", 1125899906842624.0},
               {"Ei", 1152921504606846976.0}};
    for (size_t i = 0; i < sizeof sfx / sizeof sfx[0]; i++)
        if (!strcmp(end, sfx[i].suffix)) return x * sfx[i].mul;
    return -1;
}

/* Kubernetes' GetPodQOS: the class the API server set at create
 * (status.qosClass); else its rule: BestEffort when no container requests or
 * limits cpu or memory; Guaranteed when every container has cpu and memory
 * limits and its requests (where set) equal them; Burstable otherwise. */
const char *sim__qos_class(const json_t *pod)
{
    const char *set =
        json_string_value(json_object_get(json_object_get(pod, "status"), "qosClass"));
    if (set && *set) return set;
    static const char *const lists[] = {"initContainers", "containers"};
    static const char *const names[] = {"cpu", "memory"};
    int any = 0, guaranteed = 1;
    const json_t *spec = json_object_get(pod, "spec");
    for (int l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c) {
            const json_t *res = json_object_get(c, "resources");
            const json_t *req = json_object_get(res, "requests");
            const json_t *lim = json_object_get(res, "limits");
            for (int k = 0; k < 2; k++) {
                double r = quantity(json_object_get(req, names[k]));
                double m = quantity(json_object_get(lim, names[k]));
                if (r > 0 || m > 0) any = 1;
                if (m <= 0 || (r > 0 && r != m)) guaranteed = 0;
            }
        }
    }
    if (!any) return "BestEffort";
    return guaranteed ? "Guaranteed" : "Burstable";
}

/* ---- pieces ---- */

static void wall_str(char *buf, int64_t wall)
{
    sim__time(buf, SIM_TIME_MAX, wall, 0);
}

static json_t *condition(const char *type, int ok, const char *when, const char *reason,
                         const char *message)
{
    json_t *c = json_pack("{s:s, s:s, s:n, s:s}", "type", type, "status", ok ? "True" : "False",
                          "lastProbeTime", "lastTransitionTime", when);
    if (c && reason) json_object_set_new(c, "reason", json_string(reason));
    if (c && message) json_object_set_new(c, "message", json_string(message));
    return c;
}

/* "[a b c]": the names of the pod's containers in list `which`. */
static void container_names(const json_t *pod, const char *which, char *out, size_t n)
{
    size_t len = 0, i;
    const json_t *c;
    out[len++] = '[';
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), which), i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        int w = snprintf(out + len, n - len, "%s%s", i ? " " : "", name ? name : "");
        if (w < 0 || (size_t)w >= n - len - 1) break;
        len += (size_t)w;
    }
    out[len++] = ']';
    out[len] = '\0';
}

static void container_id(char *buf, size_t n, const sim_pod_t *st, unsigned idx, int run)
{
    snprintf(buf, n, "sim://%016llx%04x%04x", (unsigned long long)st->cid, idx & 0xffff,
             (unsigned)run & 0xffff);
}

static json_t *terminated(int code, int64_t started, int64_t finished, const char *cid)
{
    char a[SIM_TIME_MAX], b[SIM_TIME_MAX];
    wall_str(a, started);
    wall_str(b, finished);
    return json_pack("{s:{s:i, s:s, s:s, s:s, s:s}}", "terminated", "exitCode", code, "reason",
                     code ? "Error" : "Completed", "startedAt", a, "finishedAt", b, "containerID",
                     cid);
}

/* One entry of containerStatuses (init 0) or initContainerStatuses (1). */
static json_t *container_status(const json_t *pod, const sim_pod_t *st, const json_t *c,
                                unsigned idx, int init)
{
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *image = json_string_value(json_object_get(c, "image"));
    char image_id[600], cid[64], last_cid[64], t[SIM_TIME_MAX];
    snprintf(image_id, sizeof image_id, "sim://%s", image ? image : "");
    container_id(cid, sizeof cid, st, idx, st->restarts);
    container_id(last_cid, sizeof last_cid, st, idx, st->restarts - 1);
    json_t *state = NULL, *last = NULL;
    int ready = 0, started = 0, restarts = init ? 0 : st->restarts;
    /* Before the first start there is no container (nor a pulled image);
     * after, containerID names the latest one, also while it waits to
     * restart. */
    int created = st->stage != SP_CREATING;
    if (st->stage == SP_CREATING) {
        const char *why =
            json_array_size(json_object_get(json_object_get(pod, "spec"), "initContainers"))
                ? "PodInitializing"
                : "ContainerCreating";
        state = json_pack("{s:{s:s}}", "waiting", "reason", why);
    } else if (init) {
        /* Init containers ran to completion before the first start. */
        container_id(cid, sizeof cid, st, idx, 0);
        state = terminated(0, st->first_wall, st->first_wall, cid);
        ready = 1;
    } else if (st->stage == SP_RUNNING) {
        wall_str(t, st->started_wall);
        state = json_pack("{s:{s:s}}", "running", "startedAt", t);
        ready = st->ready;
        started = 1;
        if (st->restarts > 0)
            last =
                terminated(st->last_exit, st->last_started_wall, st->last_finished_wall, last_cid);
    } else if (st->stage == SP_BACKOFF) {
        char msg[700], wait[32];
        if (st->backoff_ms % 1000)
            snprintf(wait, sizeof wait, "%dms", st->backoff_ms);
        else
            snprintf(wait, sizeof wait, "%ds", st->backoff_ms / 1000);
        snprintf(msg, sizeof msg, "back-off %s restarting failed container=%s pod=%s_%s(%s)", wait,
                 name ? name : "",
                 json_string_value(json_object_get(json_object_get(pod, "metadata"), "name")),
                 json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace")),
                 st->uid);
        state =
            json_pack("{s:{s:s, s:s}}", "waiting", "reason", "CrashLoopBackOff", "message", msg);
        last = terminated(st->exit_code, st->started_wall, st->finished_wall, cid);
    } else {
        /* DONE or STOPPED: the current run ended. */
        state = terminated(st->exit_code, st->started_wall, st->finished_wall, cid);
        if (st->restarts > 0)
            last =
                terminated(st->last_exit, st->last_started_wall, st->last_finished_wall, last_cid);
    }
    if (!last) last = json_object();
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:b, s:i, s:b, s:o, s:o}", "name", name ? name : "", "image",
                  image ? image : "", "imageID", created ? image_id : "", "ready", ready,
                  "restartCount", restarts, "started", started, "state", state, "lastState", last);
    if (o && created) json_object_set_new(o, "containerID", json_string(cid));
    return o;
}

static json_t *container_statuses(const json_t *pod, const sim_pod_t *st, const char *which,
                                  int init)
{
    json_t *a = json_array();
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), which), i, c) {
        unsigned idx = (unsigned)i + (init ? 0x8000u : 0);
        if (!a || json_array_append_new(a, container_status(pod, st, c, idx, init))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The PodScheduled condition's time, as the binding wrote it. */
static const char *scheduled_time(const json_t *pod)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        if (type && !strcmp(type, "PodScheduled"))
            return json_string_value(json_object_get(c, "lastTransitionTime"));
    }
    return NULL;
}

static json_t *conditions(const json_t *pod, const sim_pod_t *st)
{
    char start[SIM_TIME_MAX], first[SIM_TIME_MAX], ready_t[SIM_TIME_MAX];
    char names[NAMES_MAX], msg[NAMES_MAX + 64];
    wall_str(start, st->start_wall);
    wall_str(first, st->first_wall ? st->first_wall : st->start_wall);
    wall_str(ready_t, st->ready_wall);
    int has_init =
        json_array_size(json_object_get(json_object_get(pod, "spec"), "initContainers")) > 0;
    int terminal = st->stage == SP_DONE || st->stage == SP_STOPPED;
    const char *sched = scheduled_time(pod);
    json_t *a = json_array();
    if (!a) return NULL;
    json_array_append_new(a, condition("PodReadyToStartContainers", 1, start, NULL, NULL));
    if (has_init && st->stage == SP_CREATING) {
        container_names(pod, "initContainers", names, sizeof names);
        snprintf(msg, sizeof msg, "containers with incomplete status: %s", names);
        json_array_append_new(a,
                              condition("Initialized", 0, start, "ContainersNotInitialized", msg));
    } else {
        json_array_append_new(a, condition("Initialized", 1, has_init ? first : start, NULL, NULL));
    }
    const char *reason = NULL;
    msg[0] = '\0';
    if (!st->ready && terminal) {
        reason = "PodCompleted";
    } else if (!st->ready) {
        reason = "ContainersNotReady";
        container_names(pod, "containers", names, sizeof names);
        snprintf(msg, sizeof msg, "containers with unready status: %s", names);
    }
    const char *m = msg[0] ? msg : NULL;
    json_array_append_new(a, condition("Ready", st->ready, ready_t, reason, m));
    json_array_append_new(a, condition("ContainersReady", st->ready, ready_t, reason, m));
    json_array_append_new(a, condition("PodScheduled", 1, sched ? sched : start, NULL, NULL));
    if (json_array_size(a) != 5) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* The pod phase the node reports for st. */
static const char *phase_of(const sim_pod_t *st)
{
    if (st->stage == SP_RUNNING || st->stage == SP_BACKOFF) return "Running";
    if (st->stage == SP_DONE || st->stage == SP_STOPPED) return st->exit_code ? "Failed" : "Succeeded";
    return "Pending";
}

int sim__pod_status_stale(const json_t *pod, const sim_pod_t *st)
{
    if (st->stage != SP_RUNNING && st->stage != SP_BACKOFF && st->stage != SP_DONE) return 0;
    const json_t *status = json_object_get(pod, "status");
    const char *phase = json_string_value(json_object_get(status, "phase"));
    if (!phase || strcmp(phase, phase_of(st))) return 1;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type"));
        const char *v = json_string_value(json_object_get(c, "status"));
        if (type && !strcmp(type, "Ready")) return !v || strcmp(v, st->ready ? "True" : "False");
    }
    return 1; /* no Ready condition */
}

json_t *sim__pod_status_patch(node_sim_t *s, const json_t *pod, const sim_pod_t *st)
{
    const char *phase = phase_of(st);
    char pod_ip[16], start[SIM_TIME_MAX];
    const char *host_ip = s->nodes[st->node].ip;
    sim__ip_str(st->ip, pod_ip);
    wall_str(start, st->start_wall);
    json_t *status = json_pack("{s:s, s:o, s:s, s:[{s:s}], s:s, s:[{s:s}], s:s, s:s, s:o}", "phase",
                               phase, "conditions", conditions(pod, st), "hostIP", host_ip,
                               "hostIPs", "ip", host_ip, "podIP", pod_ip, "podIPs", "ip", pod_ip,
                               "startTime", start, "qosClass", sim__qos_class(pod),
                               "containerStatuses", container_statuses(pod, st, "containers", 0));
    if (!status) return NULL;
    if (json_array_size(json_object_get(json_object_get(pod, "spec"), "initContainers"))) {
        json_t *init = container_statuses(pod, st, "initContainers", 1);
        if (!init || json_object_set_new(status, "initContainerStatuses", init)) {
            json_decref(status);
            return NULL;
        }
    }
    return json_pack("{s:o}", "status", status);
}
