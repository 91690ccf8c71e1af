/*
 * lab_kit.c -- what several labs read and wait for (lab_int.h): fields of
 * objects, a Deployment that converged, Ready nodes.
 */
#include "lab/lab_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/err.h"

static const json_t *at(const json_t *o, const char *path)
{
    char key[128];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key) return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        o = json_object_get(o, key);
        path += n;
        if (*path == '.') path++;
    }
    return o;
}

const char *lab__jstr(const json_t *o, const char *path)
{
    const char *s = json_string_value(at(o, path));
    return s ? s : "";
}

long long lab__jint(const json_t *o, const char *path, long long dflt)
{
    const json_t *v = at(o, path);
    if (json_is_integer(v)) return json_integer_value(v);
    const char *s = json_string_value(v);
    if (!s || !*s) return dflt;
    char *end;
    long long n = strtoll(s, &end, 10);
    return *end ? dflt : n;
}

const json_t *lab__controller_ref(const json_t *obj)
{
    const json_t *refs = at(obj, "metadata.ownerReferences");
    size_t i;
    const json_t *r;
    json_array_foreach(refs, i, r)
        if (json_is_true(json_object_get(r, "controller"))) return r;
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int lab__deployment_converged(kc_client_t *c, const char *ns, const char *name, int replicas,
                              char *why, size_t size)
{
    json_t *d = NULL;
    int rc = kc_get(c, &kc_deployments, ns, name, &d);
    if (rc) {
        if (why) snprintf(why, size, "%s", err_str(rc));
        return rc;
    }
    long long want = replicas >= 0 ? replicas : lab__jint(d, "spec.replicas", 1);
    long long gen = lab__jint(d, "metadata.generation", 0),
              og = lab__jint(d, "status.observedGeneration", -1),
              upd = lab__jint(d, "status.updatedReplicas", 0),
              tot = lab__jint(d, "status.replicas", 0),
              avail = lab__jint(d, "status.availableReplicas", 0);
    json_decref(d);
    if (why)
        snprintf(why, size,
                 "generation %lld observed %lld, replicas %lld, updated %lld, available %lld "
                 "(want %lld)",
                 gen, og, tot, upd, avail, want);
    return og >= gen && upd == want && tot == want && avail == want;
}

int lab__wait_deployment(lab_t *lab, kc_client_t *c, const char *ns, const char *name, int replicas,
                         int timeout_ms, double *ms)
{
    double t0 = lab_elapsed_ms(lab);
    char last[256] = "never read";
    for (;;) {
        int r = lab__deployment_converged(c, ns, name, replicas, last, sizeof last);
        if (r < 0 && r != KP_EUNAVAILABLE && r != KP_ETIMEDOUT) {
            lab_say(lab, "reading Deployment %s/%s: %s", ns, name, err_str(r));
            return r;
        }
        if (r == 1) {
            if (ms) *ms = lab_elapsed_ms(lab) - t0;
            return 0;
        }
        if (lab_elapsed_ms(lab) - t0 > timeout_ms) {
            lab_say(lab, "Deployment %s/%s did not converge within %d ms: %s", ns, name, timeout_ms,
                    last);
            return KP_ETIMEDOUT;
        }
        sleep_ms(50);
    }
}

int lab__wait_nodes(lab_t *lab, kc_client_t *c, int n, int timeout_ms)
{
    double t0 = lab_elapsed_ms(lab);
    int ready = 0;
    for (;;) {
        json_t *l = NULL;
        ready = 0;
        if (!kc_list(c, &kc_nodes, NULL, NULL, &l)) {
            size_t i, j;
            const json_t *node, *cond;
            json_array_foreach(json_object_get(l, "items"), i, node)
                json_array_foreach(at(node, "status.conditions"), j, cond)
                    ready += !strcmp(lab__jstr(cond, "type"), "Ready") &&
                             !strcmp(lab__jstr(cond, "status"), "True");
        }
        json_decref(l);
        if (ready >= n) return 0;
        if (lab_elapsed_ms(lab) - t0 > timeout_ms) {
            lab_say(lab, "%d of %d nodes Ready after %d ms", ready, n, timeout_ms);
            return KP_ETIMEDOUT;
        }
        sleep_ms(50);
    }
}

int lab__wait_object(lab_t *lab, kc_client_t *c, const kc_resource_t *r, const char *ns,
                     const char *name, int timeout_ms)
{
    double t0 = lab_elapsed_ms(lab);
    for (;;) {
        json_t *o = NULL;
        int rc = kc_get(c, r, ns, name, &o);
        json_decref(o);
        if (!rc) return 0;
        if (lab_elapsed_ms(lab) - t0 > timeout_ms) {
            lab_say(lab, "%s %s/%s: not there after %d ms (%s)", r->kind, ns ? ns : "", name,
                    timeout_ms, err_str(rc));
            return KP_ETIMEDOUT;
        }
        sleep_ms(50);
    }
}
