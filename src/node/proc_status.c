/*
 * proc_status.c -- the status a process-runtime pod reports: phase (as a
 * kubelet computes it), conditions, IPs (the host's: pods share the node's
 * network), QoS class and one containerStatus per container.
 *
 * INVARIANT: the patch is a pure function of the pod (read-only) and its
 * entry, so the worker can compare it with the last one written and skip a
 * repeat. Lists carry all their elements (a merge patch replaces them).
 *
 * OWNS nothing; the caller owns the returned patch.
 */
#include <stdio.h>
#include <string.h>

#include "node/proc_int.h"

#define NAMES_MAX 1024

static void wall_str(char *buf, int64_t wall)
{
    sim__time(buf, SIM_TIME_MAX, wall, 0);
}

static int has_last_terminated(const proc_ctr_t *c)
{
    return c->has_last;
}

const char *proc__phase(const json_t *pod, const proc_pod_t *pp)
{
    /* kubelet getPhase: count containers running, waiting (never
     * terminated), and stopped (terminated, or waiting with a last
     * termination) of which succeeded exited 0. */
    int running = 0, waiting = 0, stopped = 0, succeeded = 0;
    const char *rp =
        json_string_value(json_object_get(json_object_get(pod, "spec"), "restartPolicy"));
    if (!rp) rp = "Always";
    if (pp->init_next < pp->ninit) {
        /* Initializing: Pending, unless an init container failed for good. */
        const proc_ctr_t *c = &pp->ctrs[pp->init_next];
        int failed = c->state == PC_TERMINATED && c->exit_code != 0;
        return failed && (!strcmp(rp, "Never") || pp->stage != PP_ACTIVE) ? "Failed" : "Pending";
    }
    for (int i = pp->ninit; i < pp->nctr; i++) {
        const proc_ctr_t *c = &pp->ctrs[i];
        if (c->state == PC_RUNNING) {
            running++;
        } else if (c->state == PC_TERMINATED) {
            stopped++;
            if (c->exit_code == 0) succeeded++;
        } else if (has_last_terminated(c)) {
            stopped++;
            if (c->last_exit == 0) succeeded++;
        } else {
            waiting++;
        }
    }
    if (waiting > 0) return "Pending";
    if (running > 0) return "Running";
    if (stopped > 0) {
        /* A pod being deleted whose containers all stopped is terminal. */
        if (pp->stage != PP_ACTIVE) return stopped == succeeded ? "Succeeded" : "Failed";
        if (!strcmp(rp, "Always")) return "Running";
        if (stopped == succeeded) return "Succeeded";
        if (!strcmp(rp, "Never")) return "Failed";
        return "Running";
    }
    return "Pending";
}

static json_t *terminated(int code, const char *reason, const char *msg, int64_t started,
                          int64_t finished, const char *cid)
{
    char a[SIM_TIME_MAX], b[SIM_TIME_MAX];
    wall_str(a, started);
    wall_str(b, finished);
    json_t *t = json_pack("{s:i, s:s, s:s, s:s, s:s}", "exitCode", code, "reason", reason,
                          "startedAt", a, "finishedAt", b, "containerID", cid);
    if (t && msg && *msg) json_object_set_new(t, "message", json_string(msg));
    return json_pack("{s:o}", "terminated", t);
}

static json_t *container_status(const json_t *spec, const proc_ctr_t *c)
{
    const char *image = json_string_value(json_object_get(spec, "image"));
    char image_id[600], t[SIM_TIME_MAX];
    snprintf(image_id, sizeof image_id, "process://%s", image ? image : "");
    json_t *state = NULL, *last = NULL;
    if (c->state == PC_RUNNING) {
        wall_str(t, c->started_wall);
        state = json_pack("{s:{s:s}}", "running", "startedAt", t);
    } else if (c->state == PC_TERMINATED) {
        state = terminated(c->exit_code, c->reason, c->message, c->started_wall, c->finished_wall,
                           c->cid);
    } else {
        state = json_pack("{s:{s:s}}", "waiting", "reason", c->reason);
        if (state && c->message[0])
            json_object_set_new(json_object_get(state, "waiting"), "message",
                                json_string(c->message));
    }
    if (c->has_last)
        last = terminated(c->last_exit, c->last_reason, NULL, c->last_started_wall,
                          c->last_finished_wall, c->last_cid);
    else
        last = json_object();
    json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:i, s:b, s:o, s:o}", "name", c->name, "image",
                          image ? image : "", "imageID", c->started ? image_id : "", "ready",
                          c->state == PC_RUNNING && c->ready, "restartCount", c->restarts,
                          "started", c->state == PC_RUNNING, "state", state, "lastState", last);
    if (o && c->started) json_object_set_new(o, "containerID", json_string(c->cid));
    return o;
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

json_t *proc__status_patch(node_proc_t *p, const json_t *pod, const proc_pod_t *pp)
{
    (void)p;
    const char *phase = proc__phase(pod, pp);
    int terminal = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
    char start[SIM_TIME_MAX], ready_t[SIM_TIME_MAX], names[NAMES_MAX], msg[NAMES_MAX + 64];
    wall_str(start, pp->start_wall);
    wall_str(ready_t, pp->ready_wall);
    /* "[a b]": the containers that are not ready */
    char inits[NAMES_MAX];
    size_t len = 0;
    inits[len++] = '[';
    for (int i = pp->init_next; i < pp->ninit; i++) {
        int w = snprintf(inits + len, sizeof inits - len - 2, "%s%s", len > 1 ? " " : "",
                         pp->ctrs[i].name);
        if (w < 0 || (size_t)w >= sizeof inits - len - 2) break;
        len += (size_t)w;
    }
    inits[len++] = ']';
    inits[len] = '\0';
    len = 0;
    names[len++] = '[';
    for (int i = pp->ninit; i < pp->nctr; i++) {
        const proc_ctr_t *c = &pp->ctrs[i];
        if (c->state == PC_RUNNING && c->ready) continue;
        int w = snprintf(names + len, sizeof names - len - 2, "%s%s", len > 1 ? " " : "", c->name);
        if (w < 0 || (size_t)w >= sizeof names - len - 2) break;
        len += (size_t)w;
    }
    names[len++] = ']';
    names[len] = '\0';
    const char *reason = NULL, *m = NULL;
    if (!pp->ready && terminal) {
        reason = "PodCompleted";
    } else if (!pp->ready) {
        reason = "ContainersNotReady";
        snprintf(msg, sizeof msg, "containers with unready status: %s", names);
        m = msg;
    }
    const char *sched = scheduled_time(pod);
    json_t *conds = json_array();
    if (conds) {
        json_array_append_new(conds,
                              condition("PodReadyToStartContainers", !terminal, start, NULL, NULL));
        char imsg[NAMES_MAX + 64];
        snprintf(imsg, sizeof imsg, "containers with incomplete status: %s", inits);
        int initialized = pp->init_next >= pp->ninit;
        json_array_append_new(conds, condition("Initialized", initialized, start,
                                               initialized ? NULL : "ContainersNotInitialized",
                                               initialized ? NULL : imsg));
        json_array_append_new(conds, condition("Ready", pp->ready, ready_t, reason, m));
        json_array_append_new(conds, condition("ContainersReady", pp->ready, ready_t, reason, m));
        json_array_append_new(conds,
                              condition("PodScheduled", 1, sched ? sched : start, NULL, NULL));
    }
    json_t *cs = json_array(), *ics = json_array();
    const json_t *specs = json_object_get(json_object_get(pod, "spec"), "containers");
    const json_t *ispecs = json_object_get(json_object_get(pod, "spec"), "initContainers");
    int bad = !cs || !ics;
    for (int i = 0; !bad && i < pp->nctr; i++) {
        const proc_ctr_t *c = &pp->ctrs[i];
        json_t *spec = json_array_get(c->init ? ispecs : specs, (size_t)c->idx);
        bad = json_array_append_new(c->init ? ics : cs, container_status(spec, c)) != 0;
    }
    if (bad || !conds || json_array_size(conds) != 5) {
        json_decref(conds);
        json_decref(cs);
        json_decref(ics);
        return NULL;
    }
    if (!pp->ninit) {
        json_decref(ics);
        ics = NULL;
    }
    return json_pack("{s:{s:s, s:o, s:s, s:[{s:s}], s:s, s:[{s:s}], s:s, s:s, s:o, s:o*}}",
                     "status", "phase", phase, "conditions", conds, "hostIP", "127.0.0.1",
                     "hostIPs", "ip", "127.0.0.1", "podIP", "127.0.0.1", "podIPs", "ip",
                     "127.0.0.1", "startTime", start, "qosClass", sim__qos_class(pod),
                     "containerStatuses", cs, "initContainerStatuses", ics);
}
