/*
 * serviceaccount.c -- the ServiceAccount controller (Kubernetes'
 * pkg/controller/serviceaccount, ServiceAccountsController).
 *
 * INVARIANT: every namespace that is not being deleted has a ServiceAccount
 * named "default" (pods that name no ServiceAccount run as it; the
 * conformance suite waits for it in every namespace it makes).
 *
 * OWNS: the "default" ServiceAccount of each namespace, which it creates
 * when it is missing, also after someone deleted it. It never changes or
 * deletes one.
 *
 * Keys are namespace names: a namespace added or changed queues itself, a
 * deleted "default" ServiceAccount queues its namespace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/controller.h"
#include "controllers/ctrl_util.h"
#include "lib/err.h"

#define SA_DEFAULT "default"

typedef struct sa_ctl {
    ctrl_t *c;
    kc_informer_t *ns, *sas;
} sa_ctl_t;

static void ns_changed(void *arg, const json_t *ns)
{
    ctrl_enqueue(((sa_ctl_t *)arg)->c, ctrl_meta_str(ns, "name"));
}

static void ns_updated(void *arg, const json_t *old, const json_t *ns)
{
    (void)old;
    ns_changed(arg, ns);
}

static void sa_deleted(void *arg, const json_t *sa)
{
    if (!strcmp(ctrl_meta_str(sa, "name"), SA_DEFAULT))
        ctrl_enqueue(((sa_ctl_t *)arg)->c, ctrl_meta_str(sa, "namespace"));
}

static int sa_init(ctrl_t *c, void **self)
{
    sa_ctl_t *s = calloc(1, sizeof *s);
    if (!s) return KP_ENOMEM;
    s->c = c;
    s->ns = ctrl_informer(c, &kc_namespaces);
    s->sas = ctrl_informer(c, &kc_serviceaccounts);
    if (!s->ns || !s->sas) {
        free(s);
        return KP_ENOMEM;
    }
    kc_handlers_t nh = {.on_add = ns_changed, .on_update = ns_updated, .arg = s};
    kc_handlers_t sh = {.on_delete = sa_deleted, .arg = s};
    int rc = kc_informer_add_handlers(s->ns, &nh);
    if (!rc) rc = kc_informer_add_handlers(s->sas, &sh);
    if (rc) {
        kc_informer_remove_handlers(s->ns, s);
        kc_informer_remove_handlers(s->sas, s);
        free(s);
        return rc;
    }
    *self = s;
    return 0;
}

static void sa_free(void *self)
{
    free(self);
}

static int sa_sync(ctrl_t *c, void *self, const char *key)
{
    sa_ctl_t *s = self;
    json_t *ns = kc_informer_get(s->ns, key);
    int rc = 0;
    if (ctrl_namespace_terminating(ns)) goto out;
    char sakey[320];
    snprintf(sakey, sizeof sakey, "%s/%s", key, SA_DEFAULT);
    json_t *sa = kc_informer_get(s->sas, sakey);
    if (sa) {
        json_decref(sa);
        goto out;
    }
    json_t *body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
                             "metadata", "name", SA_DEFAULT);
    rc = body ? kc_create(ctrl_client(c), &kc_serviceaccounts, key, body, NULL, NULL) : KP_ENOMEM;
    json_decref(body);
    if (rc == KP_EEXIST) rc = 0; /* made meanwhile: the cache has yet to show it */
out:
    json_decref(ns);
    return rc;
}

const ctrl_ops_t ctrl_serviceaccount = {
    .name = "serviceaccount",
    .service_account = "service-account-controller",
    .event_source = "service-account-controller",
    .init = sa_init,
    .sync = sa_sync,
    .free = sa_free,
};
