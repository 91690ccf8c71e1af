/*
 * factory.c -- shared informers: one per (resource, namespace, selectors)
 * for every user in the process (informer.h). A short list under a mutex:
 * a process has a handful of informers, looked up when components start.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client/informer.h"
#include "lib/err.h"

typedef struct shared {
    const kc_resource_t *r;
    char *ns, *labels, *fields; /* NULL: none */
    kc_informer_t *inf;
} shared_t;

struct kc_factory {
    kc_client_t *c;
    int resync_ms;
    pthread_mutex_t mu; /* guards the list, transform and poll_ms */
    int poll_ms;
    kc_transform_fn transform;
    shared_t *list;
    size_t n;
};

int kc_factory_new(kc_client_t *c, int resync_ms, kc_factory_t **out)
{
    *out = NULL;
    if (!c || resync_ms < 0) return KP_EINVAL;
    kc_factory_t *f = calloc(1, sizeof *f);
    if (!f) return KP_ENOMEM;
    if (pthread_mutex_init(&f->mu, NULL)) {
        free(f);
        return KP_ENOMEM;
    }
    f->c = c;
    f->resync_ms = resync_ms;
    *out = f;
    return 0;
}

static int same_str(const char *a, const char *b)
{
    if (!a || !*a) return !b || !*b;
    return b && !strcmp(a, b);
}

static int same_res(const kc_resource_t *a, const kc_resource_t *b)
{
    return a == b || (same_str(a->group, b->group) && !strcmp(a->version, b->version) &&
                      !strcmp(a->resource, b->resource));
}

/* A copy of s, NULL for NULL or "" (*ok cleared when out of memory). */
static char *dup_opt(const char *s, int *ok)
{
    if (!s || !*s) return NULL;
    char *d = strdup(s);
    if (!d) *ok = 0;
    return d;
}

static void shared_free(shared_t *sh)
{
    kc_informer_free(sh->inf);
    free(sh->ns);
    free(sh->labels);
    free(sh->fields);
}

void kc_factory_set_transform(kc_factory_t *f, kc_transform_fn fn)
{
    pthread_mutex_lock(&f->mu);
    f->transform = fn;
    pthread_mutex_unlock(&f->mu);
}

/* The shared informer for these arguments, or NULL; needs f->mu. */
static kc_informer_t *find(kc_factory_t *f, const kc_resource_t *r, const char *ns,
                           const char *label_selector, const char *field_selector)
{
    for (size_t i = 0; i < f->n; i++) {
        shared_t *sh = &f->list[i];
        if (same_res(sh->r, r) && same_str(sh->ns, ns) && same_str(sh->labels, label_selector) &&
            same_str(sh->fields, field_selector))
            return sh->inf;
    }
    return NULL;
}

kc_informer_t *kc_factory_lookup(kc_factory_t *f, const kc_resource_t *r)
{
    if (!f || !r || !r->resource || !r->version) return NULL;
    pthread_mutex_lock(&f->mu);
    kc_informer_t *inf = find(f, r, NULL, NULL, NULL);
    pthread_mutex_unlock(&f->mu);
    return inf;
}

int kc_factory_informer(kc_factory_t *f, const kc_resource_t *r, const char *ns,
                        const char *label_selector, const char *field_selector,
                        kc_informer_t **out)
{
    *out = NULL;
    if (!r || !r->resource || !r->version) return KP_EINVAL;
    pthread_mutex_lock(&f->mu);
    if ((*out = find(f, r, ns, label_selector, field_selector))) {
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    int rc = KP_ENOMEM, ok = 1;
    shared_t sh = {.r = r};
    shared_t *grown = realloc(f->list, (f->n + 1) * sizeof *grown);
    if (grown) {
        f->list = grown;
        sh.ns = dup_opt(ns, &ok);
        sh.labels = dup_opt(label_selector, &ok);
        sh.fields = dup_opt(field_selector, &ok);
        rc = ok ? kc_informer_new(f->c, r, ns, label_selector, field_selector, f->resync_ms,
                                  &sh.inf)
                : KP_ENOMEM;
        if (!rc) rc = kc_informer_set_transform(sh.inf, f->transform, NULL);
        if (!rc) rc = kc_informer_set_poll(sh.inf, f->poll_ms);
        if (!rc) rc = kc_informer_start(sh.inf);
    }
    if (rc) {
        shared_free(&sh);
    } else {
        f->list[f->n++] = sh;
        *out = sh.inf;
    }
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void kc_factory_set_poll(kc_factory_t *f, int poll_ms)
{
    pthread_mutex_lock(&f->mu);
    f->poll_ms = poll_ms > 0 ? poll_ms : 0;
    pthread_mutex_unlock(&f->mu);
}

void kc_factory_stats(kc_factory_t *f, kc_informer_stats_t *out)
{
    *out = (kc_informer_stats_t){0};
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0; i < f->n; i++) {
        kc_informer_stats_t one;
        kc_informer_stats(f->list[i].inf, &one);
        out->lists += one.lists;
        out->lists_unchanged += one.lists_unchanged;
        out->events += one.events;
        out->objects += one.objects;
    }
    pthread_mutex_unlock(&f->mu);
}

void kc_factory_free(kc_factory_t *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->n; i++)
        shared_free(&f->list[i]);
    free(f->list);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
