/*
 * expectations.c -- ControllerExpectations (expectations.h).
 *
 * INVARIANT: an owner is "met" only when every create and deletion its last
 * ctrl_exp_set() announced has been counted off (or 5 minutes have passed),
 * so a controller never decides twice on one observation; a count never
 * goes below 0, so an event seen twice (a resync, a relist) cannot make a
 * later expectation look met early.
 *
 * OWNS: nothing in the API; only this in-memory table, one JSON object under
 * one mutex: key -> {"adds": n, "dels": {uid: true}, "t": monotonic ns of the
 * set}.
 */
#include "controllers/expectations.h"

#include <pthread.h>
#include <stdlib.h>

#include "lib/clock.h"

struct ctrl_exp {
    pthread_mutex_t mu;
    json_t *map;
};

ctrl_exp_t *ctrl_exp_new(void)
{
    ctrl_exp_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    if (!(e->map = json_object()) || pthread_mutex_init(&e->mu, NULL)) {
        json_decref(e->map);
        free(e);
        return NULL;
    }
    return e;
}

void ctrl_exp_free(ctrl_exp_t *e)
{
    if (!e) return;
    pthread_mutex_destroy(&e->mu);
    json_decref(e->map);
    free(e);
}

void ctrl_exp_set(ctrl_exp_t *e, const char *key, int adds, json_t *dels)
{
    pthread_mutex_lock(&e->mu);
    json_object_set_new(e->map, key,
                        json_pack("{s:i, s:o, s:I}", "adds", adds, "dels",
                                  dels ? dels : json_object(), "t", (json_int_t)clock_mono_ns()));
    pthread_mutex_unlock(&e->mu);
}

void ctrl_exp_add_seen(ctrl_exp_t *e, const char *key, int n)
{
    pthread_mutex_lock(&e->mu);
    json_t *x = json_object_get(e->map, key);
    if (x) {
        json_int_t a = json_integer_value(json_object_get(x, "adds")) - n;
        json_object_set_new(x, "adds", json_integer(a > 0 ? a : 0));
    }
    pthread_mutex_unlock(&e->mu);
}

void ctrl_exp_del_seen(ctrl_exp_t *e, const char *key, const char *uid)
{
    pthread_mutex_lock(&e->mu);
    json_t *x = json_object_get(e->map, key);
    if (x && uid) json_object_del(json_object_get(x, "dels"), uid);
    pthread_mutex_unlock(&e->mu);
}

int ctrl_exp_met(ctrl_exp_t *e, const char *key)
{
    pthread_mutex_lock(&e->mu);
    json_t *x = json_object_get(e->map, key);
    int met = !x ||
              (json_integer_value(json_object_get(x, "adds")) <= 0 &&
               json_object_size(json_object_get(x, "dels")) == 0) ||
              clock_mono_ns() - json_integer_value(json_object_get(x, "t")) > CTRL_EXP_TTL_NS;
    pthread_mutex_unlock(&e->mu);
    return met;
}

void ctrl_exp_forget(ctrl_exp_t *e, const char *key)
{
    pthread_mutex_lock(&e->mu);
    json_object_del(e->map, key);
    pthread_mutex_unlock(&e->mu);
}
