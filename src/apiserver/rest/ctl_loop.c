/*
 * ctl_loop.c -- the loop of the API server's own controllers (the CRD and
 * APIService controllers): one thread that runs a pass, then waits for a
 * change in one watch cache or for the resync period, whichever is first,
 * and drains what else arrived (one pass covers them all).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "apiserver/http/http.h"
#include "apiserver/rest/rest.h"
#include "lib/err.h"
#include "apiserver/rest/watchcache.h"

struct api_loop {
    wc_watcher_t *w;
    int resync_ms;
    void (*pass)(void *arg);
    void *arg;
    pthread_t thread;
    pthread_mutex_t mu;
    int stop;
};

static void *loop_run(void *arg)
{
    api_loop_t *l = arg;
    for (;;) {
        pthread_mutex_lock(&l->mu);
        int stop = l->stop;
        pthread_mutex_unlock(&l->mu);
        if (stop) break;
        l->pass(l->arg);
        wc_event_t ev;
        int rc = wc_watcher_next(l->w, l->resync_ms, &ev);
        if (!rc) {
            wc_event_clear(&ev);
            while (!wc_watcher_next(l->w, 0, &ev))
                wc_event_clear(&ev);
        } else if (rc != KP_ETIMEDOUT) {
            break; /* closed */
        }
    }
    return NULL;
}

int api_loop_start(wc_t *cache, int resync_ms, void (*pass)(void *arg), void *arg,
                   api_loop_t **out)
{
    *out = NULL;
    api_loop_t *l = calloc(1, sizeof *l);
    if (!l) return KP_ENOMEM;
    l->resync_ms = resync_ms;
    l->pass = pass;
    l->arg = arg;
    pthread_mutex_init(&l->mu, NULL);
    /* In-process and prompt: bounded by count, not by bytes. */
    wc_watch_opts_t wo = {.backlog = 100000, .backlog_bytes = SIZE_MAX};
    int rc = wc_watch(cache, "", -1, &wo, &l->w);
    if (!rc && pthread_create(&l->thread, NULL, loop_run, l)) rc = KP_ENOMEM;
    if (rc) {
        if (l->w) wc_watcher_close(l->w);
        pthread_mutex_destroy(&l->mu);
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void api_loop_stop(api_loop_t *l)
{
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_mutex_unlock(&l->mu);
    wc_watcher_cancel(l->w);
    pthread_join(l->thread, NULL);
    wc_watcher_close(l->w);
    pthread_mutex_destroy(&l->mu);
    free(l);
}
