/*
 * rootcapublisher.c -- the root CA publisher (Kubernetes'
 * pkg/controller/certificates/rootcacertpublisher).
 *
 * INVARIANT: every namespace that is not being deleted has a ConfigMap
 * named "kube-root-ca.crt" whose data is exactly {"ca.crt": the cluster's
 * root CA, PEM}, so that a pod can verify the API server it talks to.
 *
 * OWNS: that ConfigMap in each namespace. It creates it when missing (also
 * after someone deleted it), puts its data back when someone changed it,
 * and sets its kubernetes.io/description annotation. It touches no other
 * ConfigMap: its informer lists and watches that name only.
 *
 * The CA is ctrl_manager_config_t.root_ca_pem (kplane server: the cluster
 * CA; kplane controller-manager: --root-ca-file, else the kubeconfig's CA).
 * Without one the controller does not run. Keys are namespace names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "lib/err.h"

#define CA_CONFIGMAP    "kube-root-ca.crt"
#define CA_KEY          "ca.crt"
#define DESCRIPTION_KEY "kubernetes.io/description"
#define DESCRIPTION                                                                                \
    "The CA bundle of the cluster, to verify the API server from inside it (the kubernetes "       \
    "Service, kubernetes.default.svc)."

typedef struct ca_ctl {
    ctrl_t *c;
    kc_informer_t *ns, *cms;
    const char *ca; /* PEM, borrowed from the manager's configuration */
} ca_ctl_t;

static void ns_changed(void *arg, const json_t *ns)
{
    ctrl_enqueue(((ca_ctl_t *)arg)->c, ctrl_meta_str(ns, "name"));
}

static void ns_updated(void *arg, const json_t *old, const json_t *ns)
{
    (void)old;
    ns_changed(arg, ns);
}

static void cm_changed(void *arg, const json_t *cm)
{
    ctrl_enqueue(((ca_ctl_t *)arg)->c, ctrl_meta_str(cm, "namespace"));
}

static void cm_updated(void *arg, const json_t *old, const json_t *cm)
{
    (void)old;
    cm_changed(arg, cm);
}

static int ca_init(ctrl_t *c, void **self)
{
    const char *ca = ctrl_config(c)->root_ca_pem;
    if (!ca || !*ca) return KP_ENOTFOUND; /* no CA to publish */
    ca_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->c = c;
    s->ca = ca;
    s->ns = ctrl_informer(c, &kc_namespaces);
    s->cms = ctrl_informer_selected(c, &kc_configmaps, "metadata.name=" CA_CONFIGMAP);
    if (!s->ns || !s->cms) {
        free(s);
        return KP_ENOMEM;
    }
    kc_handlers_t nh = {.on_add = ns_changed, .on_update = ns_updated, .arg = s};
    kc_handlers_t ch = {.on_update = cm_updated, .on_delete = cm_changed, .arg = s};
    int rc = kc_informer_add_handlers(s->ns, &nh);
    if (!rc) rc = kc_informer_add_handlers(s->cms, &ch);
    if (rc) {
        kc_informer_remove_handlers(s->ns, s);
        kc_informer_remove_handlers(s->cms, s);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void ca_free(void *self)
{
    free(self);
}

/* Does cm say what it should? */
static int as_wanted(const ca_ctl_t *s, const json_t *cm)
{
    const json_t *data = json_object_get(cm, "data");
    const char *have = json_string_value(json_object_get(data, CA_KEY));
    return json_object_size(data) == 1 && have && !strcmp(have, s->ca) &&
           !json_object_size(json_object_get(cm, "binaryData")) &&
           json_object_get(json_object_get(json_object_get(cm, "metadata"), "annotations"),
                           DESCRIPTION_KEY);
}

static int ca_sync(ctrl_t *c, void *self, const char *key)
{
    ca_ctl_t *s = self;
    json_t *ns = kc_informer_get(s->ns, key), *cm = NULL, *body = NULL;
    int rc = 0;
    if (ctrl_namespace_terminating(ns)) goto out;
    char cmkey[320];
    snprintf(cmkey, sizeof cmkey, "%s/%s", key, CA_CONFIGMAP);
    cm = kc_informer_get(s->cms, cmkey);
    if (cm && as_wanted(s, cm)) goto out;
    /* Made afresh, or the cached one with the data put back (an update
     * guarded by its resourceVersion: a conflict retries on the newer). */
    body = cm ? json_deep_copy(cm)
              : json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                          "metadata", "name", CA_CONFIGMAP);
    json_t *md = json_object_get(body, "metadata");
    json_t *ann = json_object_get(md, "annotations");
    if (md && !json_is_object(ann) && json_object_set_new(md, "annotations", json_object()))
        md = NULL;
    ann = json_object_get(md, "annotations");
    if (!ann || json_object_set_new(ann, DESCRIPTION_KEY, json_string(DESCRIPTION)) ||
        json_object_set_new(body, "data", json_pack("{s:s}", CA_KEY, s->ca))) {
        rc = KP_ENOMEM;
        goto out;
    }
    json_object_del(body, "binaryData");
    if (cm)
        rc = kc_update(ctrl_client(c), &kc_configmaps, key, body, NULL, NULL, NULL);
    else
        rc = kc_create(ctrl_client(c), &kc_configmaps, key, body, NULL, NULL);
    if (rc == KP_EEXIST) rc = 0; /* made meanwhile: its event queues the namespace again */
out:
    json_decref(body);
    json_decref(cm);
    json_decref(ns);
    return rc;
}

const ctrl_ops_t ctrl_rootcapublisher = {
    .name = "root-ca-cert-publisher",
    .service_account = "root-ca-cert-publisher",
    .init = ca_init,
    .sync = ca_sync,
    .free = ca_free,
};
