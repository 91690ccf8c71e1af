/*
 * proc_pod.c -- the process runtime's pod workers: each container of each
 * pod bound to the node runs as a local process, restarted as its pod's
 * restartPolicy says, probed, and stopped when the pod is deleted.
 *
 * INVARIANT: after proc__pod_sync(key), every container of the pod is in
 * one of the states a kubelet reports, and the API has that status:
 *   waiting (ContainerCreating before the first start; CrashLoopBackOff
 *     until restart_due; RunContainerError, never to start: no command;
 *     CreateContainerConfigError until its ConfigMap or Secret appears),
 *   running (a live process group; ready as its readiness probe says),
 *   terminated (exited, restartPolicy says no restart, or the pod stops).
 * A pod with a deletionTimestamp has its running containers SIGTERMed, then
 * SIGKILLed once the grace period is over, and when none runs, its final
 * status is written and it is deleted with grace 0 (uid precondition).
 *
 * OWNS the pod entries (proc_pod_t, one worker at a time per key, as in
 * sim_pod.c) and, through them, their children and log references.
 *
 * Transitions of a container (each from sync, which runs on informer
 * events, on the io thread's exit notice and on the timer it asks for):
 *
 *   new --start_ctr--> running --exit (on_exit)--> terminated
 *                         ^                    \--> waiting CrashLoopBackOff
 *                         +--- restart_due ---------/   (back-off 0, 10 s, 20 s ... 5 min)
 *   running --liveness fails--> killing (SIGTERM; SIGKILL at kill_due) --> exit
 *   running --pod deleted--> killing --> exit --> terminated --> final DELETE
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/clock.h"
#include "lib/err.h"
#include "lib/log.h"
#include "node/proc_int.h"

#define NS_PER_MS        1000000LL
#define BACKOFF_RESET_MS (600 * 1000) /* a run this long resets the back-off */
#define CONFIG_RETRY_MS  2000         /* CreateContainerConfigError retries */
#define ENV_MAX          4096         /* entries */
#define DEFAULT_PATH     "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- reading the pod (a read-only cache object) ---- */

static const char *meta_str(const json_t *pod, const char *key)
{
    return json_string_value(json_object_get(json_object_get(pod, "metadata"), key));
}

static const json_t *spec_of(const json_t *pod)
{
    return json_object_get(pod, "spec");
}

static const char *restart_policy(const json_t *pod)
{
    const char *p = json_string_value(json_object_get(spec_of(pod), "restartPolicy"));
    return p ? p : "Always";
}

static const json_t *container_spec(const json_t *pod, const proc_ctr_t *c)
{
    return json_array_get(json_object_get(spec_of(pod), c->init ? "initContainers" : "containers"),
                          (size_t)c->idx);
}

static int our_pod(node_proc_t *p, const json_t *pod)
{
    const char *n = json_string_value(json_object_get(spec_of(pod), "nodeName"));
    return n && !strcmp(n, p->name);
}

/* ---- string vectors (NULL-terminated, owned strings) ---- */

typedef struct strv {
    char **v;
    size_t n, cap;
} strv_t;

static int strv_push(strv_t *s, char *owned)
{
    if (!owned) return KP_ENOMEM;
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            free(owned);
            return KP_ENOMEM;
        }
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = owned;
    s->v[s->n] = NULL;
    return 0;
}

static void strv_free(strv_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* "NAME=value" entries; a later NAME replaces an earlier one. */
static const char *env_get(const strv_t *env, const char *name, size_t len)
{
    for (size_t i = env->n; i-- > 0;)
        if (!strncmp(env->v[i], name, len) && env->v[i][len] == '=') return env->v[i] + len + 1;
    return NULL;
}

static int env_set(strv_t *env, const char *name, const char *value, size_t vlen)
{
    size_t nl = strlen(name);
    char *e = malloc(nl + vlen + 2);
    if (!e) return KP_ENOMEM;
    memcpy(e, name, nl);
    e[nl] = '=';
    memcpy(e + nl + 1, value, vlen);
    e[nl + 1 + vlen] = '\0';
    for (size_t i = 0; i < env->n; i++) {
        if (!strncmp(env->v[i], name, nl) && env->v[i][nl] == '=') {
            free(env->v[i]);
            env->v[i] = e;
            return 0;
        }
    }
    if (env->n >= ENV_MAX) {
        free(e);
        return KP_ETOOLARGE;
    }
    return strv_push(env, e);
}

/* Kubernetes' $(VAR) expansion: $(NAME) with NAME in env becomes its value,
 * $$ becomes $, anything else stays as written. Caller frees. */
static char *expand(const char *in, const strv_t *env)
{
    buf_t b;
    buf_init(&b, 1u << 20);
    int rc = 0;
    for (const char *s = in; *s && !rc;) {
        if (s[0] == '$' && s[1] == '$') {
            rc = buf_append(&b, "$", 1);
            s += 2;
        } else if (s[0] == '$' && s[1] == '(') {
            const char *end = strchr(s + 2, ')');
            const char *v = end ? env_get(env, s + 2, (size_t)(end - s - 2)) : NULL;
            if (v) {
                rc = buf_append(&b, v, strlen(v));
                s = end + 1;
            } else {
                rc = buf_append(&b, s, 2);
                s += 2;
            }
        } else {
            rc = buf_append(&b, s, 1);
            s++;
        }
    }
    if (!rc) rc = buf_append(&b, "", 0);
    size_t dlen = 0;
    char *out = rc ? NULL : buf_detach(&b, &dlen);
    if (!out && !rc) out = strdup("");
    buf_free(&b);
    return out;
}

/* metadata.labels['x'] and the like: the key inside ['...'], into out. */
static int bracket_key(const char *path, const char *prefix, char *out, size_t n)
{
    size_t pl = strlen(prefix);
    if (strncmp(path, prefix, pl) || path[pl] != '[') return 0;
    const char *k = path + pl + 1;
    char q = *k;
    if (q != '\'' && q != '"') return 0;
    const char *end = strchr(k + 1, q);
    if (!end || end[1] != ']' || end[2]) return 0;
    snprintf(out, n, "%.*s", (int)(end - k - 1), k + 1);
    return 1;
}

static const char *field_value(node_proc_t *p, const json_t *pod, const char *path, json_t **hold)
{
    const json_t *md = json_object_get(pod, "metadata");
    char key[320];
    *hold = NULL;
    if (!strcmp(path, "metadata.name")) return meta_str(pod, "name");
    if (!strcmp(path, "metadata.namespace")) return meta_str(pod, "namespace");
    if (!strcmp(path, "metadata.uid")) return meta_str(pod, "uid");
    if (!strcmp(path, "spec.nodeName")) return p->name;
    if (!strcmp(path, "spec.serviceAccountName"))
        return json_string_value(json_object_get(spec_of(pod), "serviceAccountName"));
    if (!strcmp(path, "status.hostIP") || !strcmp(path, "status.podIP") ||
        !strcmp(path, "status.hostIPs") || !strcmp(path, "status.podIPs"))
        return "127.0.0.1";
    if (bracket_key(path, "metadata.labels", key, sizeof key))
        return json_string_value(json_object_get(json_object_get(md, "labels"), key));
    if (bracket_key(path, "metadata.annotations", key, sizeof key))
        return json_string_value(json_object_get(json_object_get(md, "annotations"), key));
    if (!strcmp(path, "metadata.labels") || !strcmp(path, "metadata.annotations")) {
        /* key="value" lines, sorted, as the downward API writes them */
        const json_t *m = json_object_get(md, path + 9);
        buf_t b;
        buf_init(&b, 1u << 20);
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)m, k, v) {
            buf_printf(&b, "%s%s=\"%s\"", b.len ? "\n" : "", k, json_string_value(v));
        }
        *hold = json_string(b.p ? b.p : "");
        buf_free(&b);
        return json_string_value(*hold);
    }
    return NULL;
}

/* A ConfigMap's or Secret's key (decoded); *hold keeps it. 0, KP_ENOTFOUND
 * (object or key missing: msg says which), or the client's error. */
static int ref_value(node_proc_t *p, const char *ns, const json_t *ref, int secret,
                     const char **out, size_t *len, json_t **hold, char *msg, size_t msgn)
{
    const char *name = json_string_value(json_object_get(ref, "name"));
    const char *key = json_string_value(json_object_get(ref, "key"));
    json_t *obj = NULL;
    *hold = NULL;
    int rc = kc_get(p->client, secret ? &kc_secrets : &kc_configmaps, ns, name ? name : "", &obj);
    if (rc == KP_ENOTFOUND) {
        snprintf(msg, msgn, "%s \"%s\" not found", secret ? "secret" : "configmap",
                 name ? name : "");
        return rc;
    }
    if (rc) return rc;
    const json_t *v = json_object_get(json_object_get(obj, "data"), key ? key : "");
    if (!v && !secret) v = json_object_get(json_object_get(obj, "binaryData"), key ? key : "");
    if (!json_is_string(v)) {
        snprintf(msg, msgn, "couldn't find key %s in %s %s/%s", key ? key : "",
                 secret ? "Secret" : "ConfigMap", ns, name ? name : "");
        json_decref(obj);
        return KP_ENOTFOUND;
    }
    if (secret) {
        const char *t = json_string_value(v);
        size_t n = strlen(t), got = 0;
        char *d = malloc(n + 1);
        if (!d || base64_decode(t, n, d, n + 1, &got)) {
            free(d);
            json_decref(obj);
            snprintf(msg, msgn, "secret %s/%s: key %s is not base64", ns, name ? name : "",
                     key ? key : "");
            return KP_ENOTFOUND;
        }
        *hold = json_stringn_nocheck(d, got);
        free(d);
    } else {
        *hold = json_incref((json_t *)v);
    }
    json_decref(obj);
    if (!*hold) return KP_ENOMEM;
    *out = json_string_value(*hold);
    *len = json_string_length(*hold);
    return 0;
}

/* envFrom: every key of a ConfigMap or Secret, with its prefix. */
static int env_from(node_proc_t *p, const char *ns, const json_t *src, strv_t *env, char *msg,
                    size_t msgn)
{
    const char *prefix = json_string_value(json_object_get(src, "prefix"));
    for (int secret = 0; secret < 2; secret++) {
        const json_t *ref = json_object_get(src, secret ? "secretRef" : "configMapRef");
        if (!ref) continue;
        const char *name = json_string_value(json_object_get(ref, "name"));
        json_t *obj = NULL;
        int rc =
            kc_get(p->client, secret ? &kc_secrets : &kc_configmaps, ns, name ? name : "", &obj);
        if (rc == KP_ENOTFOUND && json_is_true(json_object_get(ref, "optional"))) continue;
        if (rc == KP_ENOTFOUND)
            snprintf(msg, msgn, "%s \"%s\" not found", secret ? "secret" : "configmap",
                     name ? name : "");
        if (rc) return rc;
        const char *k;
        const json_t *v;
        json_object_foreach(json_object_get(obj, "data"), k, v) {
            char nm[512];
            snprintf(nm, sizeof nm, "%s%s", prefix ? prefix : "", k);
            const char *t = json_string_value(v);
            if (!t) continue;
            if (secret) {
                size_t n = strlen(t), got = 0;
                char *d = malloc(n + 1);
                if (d && !base64_decode(t, n, d, n + 1, &got)) rc = env_set(env, nm, d, got);
                free(d);
            } else {
                rc = env_set(env, nm, t, strlen(t));
            }
            if (rc) break;
        }
        json_decref(obj);
        if (rc) return rc;
    }
    return 0;
}

/* The container's environment: PATH and HOME from the node, HOSTNAME, then
 * envFrom and env in order. KP_ENOTFOUND with msg: a reference is missing. */
static int build_env(node_proc_t *p, const json_t *pod, const json_t *c, strv_t *env, char *msg,
                     size_t msgn)
{
    const char *ns = meta_str(pod, "namespace");
    const char *path = getenv("PATH"), *home = getenv("HOME");
    int rc = env_set(env, "PATH", path ? path : DEFAULT_PATH, strlen(path ? path : DEFAULT_PATH));
    if (!rc && home) rc = env_set(env, "HOME", home, strlen(home));
    const char *host = meta_str(pod, "name");
    if (!rc && host) rc = env_set(env, "HOSTNAME", host, strlen(host));
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(c, "envFrom"), i, e) {
        if (rc) break;
        rc = env_from(p, ns ? ns : "", e, env, msg, msgn);
    }
    json_array_foreach(json_object_get(c, "env"), i, e) {
        if (rc) break;
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!name || !*name) continue;
        const json_t *vf = json_object_get(e, "valueFrom");
        if (!vf) {
            const char *v = json_string_value(json_object_get(e, "value"));
            char *x = expand(v ? v : "", env);
            rc = x ? env_set(env, name, x, strlen(x)) : KP_ENOMEM;
            free(x);
            continue;
        }
        json_t *hold = NULL;
        const char *v = NULL;
        size_t vlen = 0;
        const json_t *fr = json_object_get(vf, "fieldRef");
        const json_t *cm = json_object_get(vf, "configMapKeyRef");
        const json_t *sk = json_object_get(vf, "secretKeyRef");
        if (fr) {
            v = field_value(p, pod, json_string_value(json_object_get(fr, "fieldPath")) ?: "",
                            &hold);
            vlen = v ? strlen(v) : 0;
        } else if (cm || sk) {
            const json_t *ref = cm ? cm : sk;
            rc = ref_value(p, ns ? ns : "", ref, !cm, &v, &vlen, &hold, msg, msgn);
            if (rc == KP_ENOTFOUND && json_is_true(json_object_get(ref, "optional"))) {
                rc = 0;
                continue;
            }
        }
        /* resourceFieldRef and unknown sources: the variable is empty. */
        if (!rc) rc = env_set(env, name, v ? v : "", v ? vlen : 0);
        json_decref(hold);
    }
    return rc;
}

/* ---- directories ---- */

static int mkdir_p(const char *path)
{
    char buf[PROC_PATH_MAX];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) return KP_EINVAL;
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST) return KP_EIO;
        *s = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST) return KP_EIO;
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    if (dir[0]) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- entries ---- */

static void probe_init(proc_probe_t *pr, const json_t *spec, int readiness)
{
    memset(pr, 0, sizeof *pr);
    pr->ok = !readiness;
    const json_t *exec = json_object_get(spec, "exec");
    if (!spec || !json_array_size(json_object_get(exec, "command"))) return;
    pr->on = 1;
    pr->ok = !readiness;
    json_int_t v;
    v = json_integer_value(json_object_get(spec, "periodSeconds"));
    pr->period_ms = (int)(v > 0 ? v : 10) * 1000;
    v = json_integer_value(json_object_get(spec, "initialDelaySeconds"));
    pr->initial_ms = (int)(v > 0 ? v : 0) * 1000;
    v = json_integer_value(json_object_get(spec, "timeoutSeconds"));
    pr->timeout_ms = (int)(v > 0 ? v : 1) * 1000;
    v = json_integer_value(json_object_get(spec, "failureThreshold"));
    pr->failure_thr = (int)(v > 0 ? v : 3);
    v = json_integer_value(json_object_get(spec, "successThreshold"));
    pr->success_thr = (int)(v > 0 ? v : 1);
}

static proc_pod_t *pod_new(node_proc_t *p, const json_t *pod, const char *key)
{
    proc_pod_t *pp = calloc(1, sizeof *pp);
    if (!pp) return NULL;
    snprintf(pp->key, sizeof pp->key, "%s", key);
    snprintf(pp->ns, sizeof pp->ns, "%s", meta_str(pod, "namespace") ?: "");
    snprintf(pp->name, sizeof pp->name, "%s", meta_str(pod, "name") ?: "");
    snprintf(pp->uid, sizeof pp->uid, "%s", meta_str(pod, "uid") ?: "");
    snprintf(pp->dir, sizeof pp->dir, "%s/pods/%s_%s_%s", p->dir, pp->ns, pp->name, pp->uid);
    pp->start_wall = pp->ready_wall = clock_wall_ns();
    pp->cid_base = sim__rand(p->sim);
    const json_t *ics = json_object_get(spec_of(pod), "initContainers");
    const json_t *cs = json_object_get(spec_of(pod), "containers");
    pp->ninit = (int)json_array_size(ics);
    pp->nctr = pp->ninit + (int)json_array_size(cs);
    if (pp->nctr && !(pp->ctrs = calloc((size_t)pp->nctr, sizeof *pp->ctrs))) {
        free(pp);
        return NULL;
    }
    const json_t *status = json_object_get(pod, "status");
    const char *phase = json_string_value(json_object_get(status, "phase"));
    pp->frozen = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
    /* Found running (the node restarted): its init containers completed. */
    if (pp->frozen || (phase && !strcmp(phase, "Running"))) pp->init_next = pp->ninit;
    for (int i = 0; i < pp->nctr; i++) {
        proc_ctr_t *c = &pp->ctrs[i];
        c->init = i < pp->ninit;
        c->idx = c->init ? i : i - pp->ninit;
        const json_t *spec = container_spec(pod, c);
        const json_t *statuses =
            json_object_get(status, c->init ? "initContainerStatuses" : "containerStatuses");
        snprintf(c->name, sizeof c->name, "%s",
                 json_string_value(json_object_get(spec, "name")) ?: "");
        snprintf(c->reason, sizeof c->reason, "%s",
                 pp->ninit && !c->init ? "PodInitializing" : "ContainerCreating");
        if (!c->init) {
            probe_init(&c->live, json_object_get(spec, "livenessProbe"), 0);
            probe_init(&c->readiness, json_object_get(spec, "readinessProbe"), 1);
        }
        /* Init containers start one by one, then the containers together. */
        c->restart_due_ns = (c->init ? i == pp->init_next : pp->init_next == pp->ninit) ? 1 : 0;
        if (c->init && i < pp->init_next) {
            c->state = PC_TERMINATED;
            snprintf(c->reason, sizeof c->reason, "Completed");
            c->started = 1;
        }
        /* A pod found with status (the node restarted): keep its restart
         * count; its processes died with the old node, so a container that
         * ran is restarted (one more restart). */
        size_t k;
        const json_t *st;
        json_array_foreach(statuses, k, st) {
            const char *n = json_string_value(json_object_get(st, "name"));
            if (!n || strcmp(n, c->name)) continue;
            c->restarts = (int)json_integer_value(json_object_get(st, "restartCount"));
            const json_t *term = json_object_get(json_object_get(st, "state"), "terminated");
            if (pp->frozen) {
                c->state = PC_TERMINATED;
                c->exit_code = (int)json_integer_value(json_object_get(term, "exitCode"));
                snprintf(c->reason, sizeof c->reason, "%s",
                         json_string_value(json_object_get(term, "reason")) ?: "Completed");
                c->started = 1;
                c->restart_due_ns = 0;
            } else if (json_object_get(json_object_get(st, "state"), "running")) {
                c->started = 1;
            }
        }
    }
    return pp;
}

void proc__pod_free(node_proc_t *p, proc_pod_t *pp)
{
    if (!pp) return;
    for (int i = 0; i < pp->nctr; i++) {
        proc_ctr_t *c = &pp->ctrs[i];
        proc__child_release(p, c->child, 1);
        proc__child_release(p, c->live.child, 1);
        proc__child_release(p, c->readiness.child, 1);
        proc__log_unref(c->log);
        proc__log_unref(c->prev);
    }
    json_decref(pp->written);
    free(pp->ctrs);
    free(pp);
}

/* ---- containers ---- */

static void event(node_proc_t *p, const json_t *pod, const char *type, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void event(node_proc_t *p, const json_t *pod, const char *type, const char *reason,
                  const char *fmt, ...)
{
    if (!p->sim->rec) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    kc_event(p->sim->rec, pod, type, reason, "%s", msg);
}

static void set_waiting(proc_ctr_t *c, const char *reason, const char *msg)
{
    c->state = PC_WAITING;
    snprintf(c->reason, sizeof c->reason, "%s", reason);
    snprintf(c->message, sizeof c->message, "%.500s", msg ? msg : "");
    c->ready = 0;
}

static void stop_probe(node_proc_t *p, proc_probe_t *pr)
{
    proc__child_release(p, pr->child, 1);
    pr->child = NULL;
    pr->successes = pr->failures = 0;
}

/* Swap in a new log for the run about to start (the current becomes the
 * previous; the one before is deleted). */
static proc_log_t *rotate_log(node_proc_t *p, proc_pod_t *pp, proc_ctr_t *c, int run)
{
    char dir[PROC_PATH_MAX + 80], path[PROC_PATH_MAX + 128];
    snprintf(dir, sizeof dir, "%s/%s", pp->dir, c->name);
    if (mkdir_p(dir)) return NULL;
    snprintf(path, sizeof path, "%s/%d.log", dir, run);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return NULL;
    close(fd);
    proc_log_t *l = proc__log_new(path);
    if (!l) return NULL;
    pthread_mutex_lock(&p->mu);
    proc_log_t *old = c->prev;
    if (c->log) {
        c->prev = c->log;
    } else {
        c->prev = NULL;
    }
    c->log = l;
    pthread_mutex_unlock(&p->mu);
    if (old && strcmp(old->path, path)) unlink(old->path);
    proc__log_unref(old);
    return l;
}

/* A run that could not start, or exited: record it and decide what next. */
static void on_exit_ctr(node_proc_t *p, const json_t *pod, proc_pod_t *pp, proc_ctr_t *c, int code,
                        const char *reason, const char *msg, int64_t finished, int64_t now)
{
    c->exit_code = code;
    c->finished_wall = finished;
    c->ready = 0;
    c->killing = 0;
    stop_probe(p, &c->live);
    stop_probe(p, &c->readiness);
    c->readiness.ok = 0;
    c->state = PC_TERMINATED;
    snprintf(c->reason, sizeof c->reason, "%s", reason);
    snprintf(c->message, sizeof c->message, "%.500s", msg ? msg : "");
    if (pp->stage != PP_ACTIVE) return;
    const char *rp = restart_policy(pod);
    int restart = !strcmp(rp, "Always") || (!strcmp(rp, "OnFailure") && code != 0);
    if (c->init) {
        /* An init container that completed lets the next one (or the
         * containers) start; one that failed is retried unless the pod's
         * restartPolicy is Never (then the pod fails). */
        if (code == 0) {
            pp->init_next = (int)(c - pp->ctrs) + 1;
            for (int i = pp->init_next; i < pp->nctr; i++) {
                proc_ctr_t *n = &pp->ctrs[i];
                if (n->init && i != pp->init_next) continue;
                n->restart_due_ns = 1;
                if (n->init) break;
            }
            return;
        }
        restart = strcmp(rp, "Never") != 0;
    }
    if (!restart) return;
    if ((now - c->started_mono) / NS_PER_MS >= (int64_t)(BACKOFF_RESET_MS * p->backoff_scale))
        c->backoff_n = 0;
    c->has_last = 1;
    c->last_exit = code;
    snprintf(c->last_reason, sizeof c->last_reason, "%s", reason);
    snprintf(c->last_cid, sizeof c->last_cid, "%s", c->cid);
    c->last_started_wall = c->started_wall;
    c->last_finished_wall = finished;
    c->backoff_ms = node_proc_backoff_ms(c->backoff_n, p->backoff_scale);
    c->backoff_n++;
    c->restart_due_ns = now + (int64_t)c->backoff_ms * NS_PER_MS;
    if (!c->restart_due_ns) c->restart_due_ns = 1;
    char wait[32], m[1024];
    if (c->backoff_ms % 1000)
        snprintf(wait, sizeof wait, "%dms", c->backoff_ms);
    else
        snprintf(wait, sizeof wait, "%ds", c->backoff_ms / 1000);
    snprintf(m, sizeof m, "back-off %s restarting failed container=%s pod=%s_%s(%s)", wait, c->name,
             pp->name, pp->ns, pp->uid);
    set_waiting(c, "CrashLoopBackOff", m);
    if (c->backoff_ms)
        event(p, pod, "Warning", "BackOff",
              "Back-off restarting failed container %s in pod %s_%s(%s)", c->name, pp->name, pp->ns,
              pp->uid);
}

/* Start container c (first run, or a restart after its back-off). */
static void start_ctr(node_proc_t *p, const json_t *pod, proc_pod_t *pp, proc_ctr_t *c, int64_t now)
{
    const json_t *spec = container_spec(pod, c);
    const json_t *cmd = json_object_get(spec, "command");
    c->restart_due_ns = 0;
    if (!json_array_size(cmd)) {
        char m[512];
        snprintf(m, sizeof m,
                 "container %s has no command: the process runtime pulls no image, so there is "
                 "no entrypoint to run; set spec.containers[].command (kubectl run --command)",
                 c->name);
        set_waiting(c, "RunContainerError", m);
        c->fatal = 1;
        event(p, pod, "Warning", "Failed", "Error: %s", m);
        return;
    }
    strv_t env = {0}, argv = {0};
    char msg[512] = "";
    int rc = build_env(p, pod, spec, &env, msg, sizeof msg);
    if (rc) {
        if (rc != KP_ENOTFOUND)
            snprintf(msg, sizeof msg, "reading the environment: %s", err_str(rc));
        set_waiting(c, "CreateContainerConfigError", msg);
        c->restart_due_ns = now + CONFIG_RETRY_MS * NS_PER_MS;
        event(p, pod, "Warning", "Failed", "Error: %s", msg);
        strv_free(&env);
        return;
    }
    static const char *const lists[] = {"command", "args"};
    for (int l = 0; l < 2 && !rc; l++) {
        size_t i;
        const json_t *a;
        json_array_foreach(json_object_get(spec, lists[l]), i, a) {
            if ((rc = strv_push(&argv, expand(json_string_value(a) ?: "", &env)))) break;
        }
    }
    char cwd[PROC_PATH_MAX + 16];
    const char *wd = json_string_value(json_object_get(spec, "workingDir"));
    if (wd && *wd)
        snprintf(cwd, sizeof cwd, "%s", wd);
    else
        snprintf(cwd, sizeof cwd, "%s/work", pp->dir);
    if (!rc && mkdir_p(cwd) && !(wd && *wd)) rc = KP_EIO;
    int run = c->started ? c->restarts + 1 : c->restarts;
    proc_log_t *log = rc ? NULL : rotate_log(p, pp, c, run);
    if (!rc && !log) rc = KP_EIO;
    int err = 0;
    proc_child_t *child = NULL;
    if (!rc) rc = proc__spawn(p, pp->key, argv.v, env.v, cwd, log, &child, &err);
    strv_free(&env);
    strv_free(&argv);
    if (c->started) c->restarts++;
    c->started = 1;
    c->started_wall = clock_wall_ns();
    c->started_mono = now;
    snprintf(c->cid, sizeof c->cid, "process://%016llx%04x", (unsigned long long)pp->cid_base,
             (unsigned)(c - pp->ctrs) * 256u + (unsigned)(c->restarts & 0xff));
    if (rc) {
        /* The kubelet's StartError: a container that never ran, exit 128. */
        char m[2048];
        if (rc == KP_EINVAL && err == ENOENT)
            snprintf(m, sizeof m,
                     "exec: \"%.200s\": executable file not found in $PATH (or "
                     "workingDir \"%s\" missing)",
                     json_string_value(json_array_get(cmd, 0)) ?: "", cwd);
        else
            snprintf(m, sizeof m, "starting the process: %s", err ? strerror(err) : err_str(rc));
        atomic_fetch_add(&p->start_errors, 1);
        event(p, pod, "Warning", "Failed", "Error: %s", m);
        if (log) atomic_store(&log->ended, 1);
        on_exit_ctr(p, pod, pp, c, 128, "StartError", m, clock_wall_ns(), now);
        return;
    }
    atomic_fetch_add(&p->starts, 1);
    c->child = child;
    c->state = PC_RUNNING;
    c->reason[0] = c->message[0] = '\0';
    c->ready = !c->readiness.on;
    c->live.failures = c->live.successes = 0;
    c->readiness.ok = 0;
    c->live.due_ns = now + (int64_t)c->live.initial_ms * NS_PER_MS;
    c->readiness.due_ns = now + (int64_t)c->readiness.initial_ms * NS_PER_MS;
    event(p, pod, "Normal", "Created", "Created container: %s", c->name);
    event(p, pod, "Normal", "Started", "Started container %s", c->name);
}

/* Begin stopping container c: SIGTERM its group; SIGKILL at now + grace. */
static void kill_ctr(node_proc_t *p, proc_ctr_t *c, int64_t grace_ms, int64_t now)
{
    if (!c->child || c->killing) return;
    c->killing = 1;
    c->kill_due_ns = now + grace_ms * NS_PER_MS;
    atomic_fetch_add(&p->kills, 1);
    proc__child_signal(p, c->child, grace_ms > 0 ? SIGTERM : SIGKILL);
    if (grace_ms <= 0) c->kill_due_ns = 0;
}

static int64_t grace_ms(const json_t *pod, int deleting)
{
    const json_t *g =
        deleting ? json_object_get(json_object_get(pod, "metadata"), "deletionGracePeriodSeconds")
                 : NULL;
    if (!json_is_integer(g)) g = json_object_get(spec_of(pod), "terminationGracePeriodSeconds");
    int64_t ms = json_is_integer(g) ? json_integer_value(g) * 1000 : 30000;
    return ms < 0 ? 0 : ms;
}

/* An exec probe of running container c: start it when due, collect it. */
static void probe_step(node_proc_t *p, const json_t *pod, proc_pod_t *pp, proc_ctr_t *c,
                       proc_probe_t *pr, int liveness, int64_t now)
{
    if (!pr->on || c->state != PC_RUNNING || c->killing) return;
    const json_t *spec = container_spec(pod, c);
    const char *what = liveness ? "Liveness" : "Readiness";
    int result = -1;
    char out[PROC_PROBE_OUT] = "";
    if (pr->child) {
        int st = 0;
        if (proc__child_exited(p, pr->child, &st)) {
            result = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            snprintf(out, sizeof out, "%s", pr->child->out);
            proc__child_release(p, pr->child, 0);
            pr->child = NULL;
        } else if (now >= pr->deadline_ns) {
            proc__child_release(p, pr->child, 1);
            pr->child = NULL;
            result = 0;
            snprintf(out, sizeof out, "command timed out");
        } else {
            return;
        }
    } else if (now >= pr->due_ns) {
        strv_t env = {0}, argv = {0};
        char msg[512];
        const json_t *cmd = json_object_get(
            json_object_get(json_object_get(spec, liveness ? "livenessProbe" : "readinessProbe"),
                            "exec"),
            "command");
        int rc = build_env(p, pod, spec, &env, msg, sizeof msg);
        size_t i;
        const json_t *a;
        json_array_foreach(cmd, i, a) {
            if (rc) break;
            rc = strv_push(&argv, strdup(json_string_value(a) ?: ""));
        }
        char cwd[PROC_PATH_MAX + 16];
        const char *wd = json_string_value(json_object_get(spec, "workingDir"));
        snprintf(cwd, sizeof cwd, "%s", wd && *wd ? wd : pp->dir);
        if (!(wd && *wd)) snprintf(cwd, sizeof cwd, "%s/work", pp->dir);
        int err = 0;
        atomic_fetch_add(&p->probe_runs, 1);
        if (!rc) rc = proc__spawn(p, pp->key, argv.v, env.v, cwd, NULL, &pr->child, &err);
        strv_free(&env);
        strv_free(&argv);
        pr->due_ns = now + (int64_t)pr->period_ms * NS_PER_MS;
        if (!rc) {
            pr->deadline_ns = now + (int64_t)pr->timeout_ms * NS_PER_MS;
            return;
        }
        result = 0;
        snprintf(out, sizeof out, "%s", err ? strerror(err) : err_str(rc));
    } else {
        return;
    }
    if (result) {
        pr->failures = 0;
        if (++pr->successes >= pr->success_thr) pr->ok = 1;
    } else {
        atomic_fetch_add(&p->probe_failures, 1);
        pr->successes = 0;
        size_t n = strlen(out);
        while (n && out[n - 1] == '\n')
            out[--n] = '\0';
        event(p, pod, "Warning", "Unhealthy", "%s probe failed: %s", what, out);
        if (++pr->failures >= pr->failure_thr) {
            pr->ok = 0;
            pr->failures = 0;
            if (liveness) {
                event(p, pod, "Normal", "Killing",
                      "Container %s failed liveness probe, will be restarted", c->name);
                c->liveness_kill = 1;
                kill_ctr(p, c, grace_ms(pod, 0), now);
            }
        }
    }
    if (!liveness) c->ready = pr->ok;
}

/* Collect c's exit, if it has exited. */
static void collect(node_proc_t *p, const json_t *pod, proc_pod_t *pp, proc_ctr_t *c, int64_t now)
{
    int st = 0;
    if (!c->child || !proc__child_exited(p, c->child, &st)) return;
    int64_t fin = c->child->exit_wall;
    proc__child_release(p, c->child, 0);
    c->child = NULL;
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    c->liveness_kill = 0;
    on_exit_ctr(p, pod, pp, c, code, code ? "Error" : "Completed", NULL, fin, now);
}

/* ---- API calls ---- */

static int write_status(node_proc_t *p, const json_t *pod, proc_pod_t *pp)
{
    if (pp->frozen) return 0;
    json_t *patch = proc__status_patch(p, pod, pp);
    if (!patch) return KP_ENOMEM;
    if (pp->written && json_equal(patch, pp->written)) {
        json_decref(patch);
        return 0;
    }
    int rc = kc_patch(p->client, &kc_pods, pp->ns, pp->name, "status", KC_PATCH_MERGE, patch, NULL,
                      NULL, NULL);
    atomic_fetch_add(rc ? &p->sim->pod_patch_errors : &p->sim->pod_patches, 1);
    if (rc) {
        json_decref(patch);
        return rc;
    }
    json_decref(pp->written);
    pp->written = patch;
    return 0;
}

static int final_delete(node_proc_t *p, proc_pod_t *pp)
{
    json_t *opts = json_pack("{s:s, s:s, s:i, s:{s:s}}", "kind", "DeleteOptions", "apiVersion",
                             "v1", "gracePeriodSeconds", 0, "preconditions", "uid", pp->uid);
    if (!opts) return KP_ENOMEM;
    int rc = kc_delete(p->client, &kc_pods, pp->ns, pp->name, opts, NULL);
    json_decref(opts);
    if (rc == KP_ENOTFOUND || rc == KP_ECONFLICT) rc = 0;
    atomic_fetch_add(rc ? &p->sim->pod_delete_errors : &p->sim->pod_deletes, 1);
    return rc;
}

/* ---- sync ---- */

static void min_due(int64_t *next, int64_t t)
{
    if (t > 0 && (!*next || t < *next)) *next = t;
}

static int step(node_proc_t *p, const json_t *pod, proc_pod_t *pp)
{
    int64_t now = clock_mono_ns();
    int deleting = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL;
    if (deleting && pp->stage == PP_STOPPING) {
        /* A second delete may shorten the grace period; never lengthen it. */
        int64_t due = pp->stop_ns + grace_ms(pod, 1) * NS_PER_MS;
        for (int i = 0; i < pp->nctr; i++) {
            proc_ctr_t *c = &pp->ctrs[i];
            if (c->killing && c->kill_due_ns && due < c->kill_due_ns)
                c->kill_due_ns = due > 0 ? due : 1;
        }
    }
    if (deleting && pp->stage == PP_ACTIVE) {
        pp->stage = PP_STOPPING;
        pp->stop_ns = now;
        int64_t g = grace_ms(pod, 1);
        for (int i = 0; i < pp->nctr; i++) {
            proc_ctr_t *c = &pp->ctrs[i];
            stop_probe(p, &c->live);
            stop_probe(p, &c->readiness);
            if (c->child) {
                event(p, pod, "Normal", "Killing", "Stopping container %s", c->name);
                c->killing = 0; /* a liveness kill in progress gets the pod's grace */
                kill_ctr(p, c, g, now);
            }
            c->restart_due_ns = 0;
        }
    }
    int64_t next = 0;
    int alive = 0;
    int init_at = pp->init_next;
again:
    next = 0;
    alive = 0;
    for (int i = 0; i < pp->nctr; i++) {
        proc_ctr_t *c = &pp->ctrs[i];
        collect(p, pod, pp, c, now);
        if (pp->stage == PP_ACTIVE && !pp->frozen && !c->fatal && c->state != PC_RUNNING &&
            c->restart_due_ns && c->restart_due_ns <= now)
            start_ctr(p, pod, pp, c, now);
        if (c->killing && c->child && c->kill_due_ns && now >= c->kill_due_ns) {
            proc__child_signal(p, c->child, SIGKILL);
            c->kill_due_ns = 0;
        }
        probe_step(p, pod, pp, c, &c->live, 1, now);
        probe_step(p, pod, pp, c, &c->readiness, 0, now);
        if (c->child) alive = 1;
        if (c->state != PC_RUNNING && !c->fatal && pp->stage == PP_ACTIVE)
            min_due(&next, c->restart_due_ns);
        if (c->killing) min_due(&next, c->kill_due_ns);
        if (c->state == PC_RUNNING && !c->killing) {
            for (int k = 0; k < 2; k++) {
                proc_probe_t *pr = k ? &c->readiness : &c->live;
                if (!pr->on) continue;
                min_due(&next, pr->child ? pr->deadline_ns : pr->due_ns);
            }
        }
    }
    if (pp->init_next != init_at) { /* an init container completed: start what follows */
        init_at = pp->init_next;
        now = clock_mono_ns();
        goto again;
    }
    int ready = pp->nctr > pp->ninit && pp->stage == PP_ACTIVE;
    for (int i = pp->ninit; i < pp->nctr; i++)
        if (pp->ctrs[i].state != PC_RUNNING || !pp->ctrs[i].ready) ready = 0;
    if (ready != pp->ready) pp->ready_wall = clock_wall_ns();
    pp->ready = ready;

    int rc = 0;
    if (pp->stage == PP_STOPPING && !alive) {
        if ((rc = write_status(p, pod, pp)) && rc != KP_ENOTFOUND) return rc;
        if ((rc = final_delete(p, pp))) return rc;
        pp->stage = PP_GONE;
        return 0;
    }
    if (pp->stage == PP_GONE) return 0;
    rc = write_status(p, pod, pp);
    if (rc == KP_ENOTFOUND) rc = 0; /* deleted meanwhile: the informer will tell */
    if (rc) return rc;
    if (next) {
        int64_t left = next - clock_mono_ns();
        int ms = left <= 0 ? 0 : (int)((left + NS_PER_MS - 1) / NS_PER_MS);
        rc = kc_queue_add_after(p->sim->queue, pp->key, ms);
        if (rc && rc != KP_ECLOSED) return rc;
    }
    return 0;
}

int proc__pod_sync(void *arg, const char *key)
{
    node_proc_t *p = arg;
    json_t *pod = kc_informer_get(p->sim->inf, key);
    proc_pod_t *pp = proc__pod_find(p, key);
    int ours = pod && our_pod(p, pod);
    const char *uid = pod ? meta_str(pod, "uid") : NULL;
    if (pp && (!ours || !uid || strcmp(pp->uid, uid))) {
        /* Gone, moved away, or another pod of that name: no process of it
         * may stay; its files go as a kubelet removes a deleted pod's. */
        proc__pod_remove(p, pp);
        char dir[PROC_PATH_MAX];
        snprintf(dir, sizeof dir, "%s", pp->dir);
        proc__pod_free(p, pp);
        remove_tree(dir);
        pp = NULL;
    }
    int rc = 0;
    if (!ours) goto out;
    if (!pp) {
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") &&
            !json_array_size(
                json_object_get(json_object_get(pod, "status"), "containerStatuses"))) {
            /* Deleted before it ever ran here: nothing to stop. */
            if (!(pp = pod_new(p, pod, key))) {
                rc = KP_ENOMEM;
                goto out;
            }
            pp->stage = PP_STOPPING;
            for (int i = 0; i < pp->nctr; i++)
                pp->ctrs[i].restart_due_ns = 0;
            proc__pod_insert(p, pp);
        } else {
            if (!(pp = pod_new(p, pod, key))) {
                rc = KP_ENOMEM;
                goto out;
            }
            if (mkdir_p(pp->dir)) {
                log_warn(PROC_COMPONENT, "pod %s: cannot make %s", key, pp->dir);
            }
            proc__pod_insert(p, pp);
        }
    }
    rc = step(p, pod, pp);
out:
    json_decref(pod);
    return rc;
}
