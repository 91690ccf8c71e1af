/*
 * admission_serviceaccount.c -- Kubernetes' ServiceAccount admission plugin
 * (plugin/pkg/admission/serviceaccount) for pods, on create:
 *
 *   - a pod that names no ServiceAccount runs as "default" (mirror pods,
 *     a kubelet's own, are left alone);
 *   - unless the pod or its ServiceAccount opts out
 *     (automountServiceAccountToken: false; the pod's word wins), every
 *     container and init container without a mount at
 *     /var/run/secrets/kubernetes.io/serviceaccount gets one of a projected
 *     volume "kube-api-access-XXXXX": a bound token (3607 s, path token),
 *     the kube-root-ca.crt ConfigMap's ca.crt, and the namespace from the
 *     downward API, as Kubernetes builds it. A node runtime mounts it.
 *
 * One difference, on purpose: Kubernetes refuses a pod whose ServiceAccount
 * does not exist (yet). kplane admits it, as if the ServiceAccount had no
 * opinion on automounting: `kplane server --no-controllers` runs no
 * ServiceAccount controller to make "default", and the pods of a new
 * namespace would otherwise race it.
 */
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "apiserver/http/http.h"
#include "apiserver/kinds/strategy_int.h"
#include "apiserver/rest/rest.h"
#include "apiserver/rest/watchcache.h"
#include "apiserver/schema/resource.h"
#include "lib/jsonspan.h"

#define SA_MOUNT_PATH    "/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_VOLUME_PREFIX "kube-api-access-"

/* The ServiceAccount's automountServiceAccountToken: 1 true, 0 false, -1
 * not said (or no such ServiceAccount in the cache). */
static int sa_automount(api_req_t *r, const char *ns, const char *name)
{
    const wc_obj_t *o = NULL;
    if (api_view_cached(r->view, "", "v1", "serviceaccounts", ns, name, &o)) return -1;
    const char *vb, *ve;
    int v = -1;
    if (!jspan_member(o->json, o->json + o->json_len, "automountServiceAccountToken", NULL, &vb,
                      &ve))
        v = ve - vb == 4 && !strncmp(vb, "true", 4) ? 1 : ve - vb == 5 ? 0 : -1;
    wc_obj_unref(o);
    return v;
}

/* utilrand.String(5): five of Kubernetes' alphanumerics without vowels and
 * look-alikes. */
static void suffix(char out[6])
{
    static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
    unsigned char rnd[5] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        memset(rnd, 0, sizeof rnd); /* not a secret: a name */
    for (int i = 0; i < 5; i++)
        out[i] = alnum[rnd[i] % (sizeof alnum - 1)];
    out[5] = '\0';
}

static json_t *token_volume(const char *name)
{
    return json_pack(
        "{s:s,s:{s:i,s:[{s:{s:i,s:s}},{s:{s:s,s:[{s:s,s:s}]}},{s:{s:[{s:{s:s,s:s},s:s}]}}]}}",
        "name", name, "projected", "defaultMode", 420, "sources", "serviceAccountToken",
        "expirationSeconds", 3607, "path", "token", "configMap", "name", "kube-root-ca.crt",
        "items", "key", "ca.crt", "path", "ca.crt", "downwardAPI", "items", "fieldRef",
        "apiVersion", "v1", "fieldPath", "metadata.namespace", "path", "namespace");
}

/* Mount `volume` in every container of spec[list] that has nothing at the
 * token's path: 1 when one got it. */
static int mount_all(json_t *spec, const char *list, const char *volume)
{
    int needed = 0;
    size_t i, j;
    json_t *c, *m;
    json_array_foreach(json_object_get(spec, list), i, c) {
        json_t *mounts = json_object_get(c, "volumeMounts");
        int has = 0;
        json_array_foreach(mounts, j, m)
            has |= !strcmp(api_json_str(m, "mountPath"), SA_MOUNT_PATH);
        if (has) continue;
        if (!json_is_array(mounts)) json_object_set_new(c, "volumeMounts", mounts = json_array());
        json_array_append_new(mounts, json_pack("{s:s,s:b,s:s}", "name", volume, "readOnly", 1,
                                                "mountPath", SA_MOUNT_PATH));
        needed = 1;
    }
    return needed;
}

int api_serviceaccount_admit_pod(api_req_t *r, json_t *pod, const json_t *old, const char *name)
{
    (void)name;
    json_t *spec = json_object_get(pod, "spec");
    if (old || !json_is_object(spec)) return 0; /* create only; validation names a bad spec */
    /* A mirror pod (a kubelet's static pod) is left as it is. */
    if (json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                        "kubernetes.io/config.mirror"))
        return 0;
    const char *sa = api_json_str(spec, "serviceAccountName");
    if (!*sa) {
        json_object_set_new(spec, "serviceAccountName", json_string("default"));
        sa = "default";
    }
    /* The pod's word, else its ServiceAccount's, else mount. */
    const json_t *pa = json_object_get(spec, "automountServiceAccountToken");
    int mount = json_is_boolean(pa) ? json_is_true(pa) : sa_automount(r, r->route.ns, sa) != 0;
    if (!mount) return 0;
    /* A volume made before (kube-api-access-*) is used again. */
    char vol[64] = "";
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(spec, "volumes"), i, v) {
        const char *n = api_json_str(v, "name");
        if (!strncmp(n, SA_VOLUME_PREFIX, strlen(SA_VOLUME_PREFIX))) {
            snprintf(vol, sizeof vol, "%s", n);
            break;
        }
    }
    int have = *vol != '\0';
    if (!have) {
        char sfx[6];
        suffix(sfx);
        snprintf(vol, sizeof vol, SA_VOLUME_PREFIX "%s", sfx);
    }
    int needed = mount_all(spec, "initContainers", vol);
    needed |= mount_all(spec, "containers", vol);
    if (needed && !have) {
        json_t *vols = json_object_get(spec, "volumes");
        if (!json_is_array(vols)) json_object_set_new(spec, "volumes", vols = json_array());
        json_array_append_new(vols, token_volume(vol));
    }
    return 0;
}
