/*
 * test_expectations.c -- ControllerExpectations (src/controllers/
 * expectations.h): creates and deletions counted off, never below zero,
 * replaced by a new set, forgotten, and safe from several threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include "controllers/expectations.h"

static void test_counts(void **state)
{
    (void)state;
    ctrl_exp_t *e = ctrl_exp_new();
    assert_non_null(e);
    assert_true(ctrl_exp_met(e, "ns/a")); /* nothing set: met */
    ctrl_exp_set(e, "ns/a", 3, json_pack("{s:b, s:b}", "u1", 1, "u2", 1));
    assert_false(ctrl_exp_met(e, "ns/a"));
    assert_true(ctrl_exp_met(e, "ns/b")); /* keys are separate */
    ctrl_exp_add_seen(e, "ns/a", 2);
    ctrl_exp_del_seen(e, "ns/a", "u1");
    assert_false(ctrl_exp_met(e, "ns/a"));
    ctrl_exp_add_seen(e, "ns/a", 5); /* more than expected: stays at 0 */
    ctrl_exp_del_seen(e, "ns/a", "u9"); /* a uid never expected */
    ctrl_exp_del_seen(e, "ns/a", NULL);
    assert_false(ctrl_exp_met(e, "ns/a")); /* u2 still to go */
    ctrl_exp_del_seen(e, "ns/a", "u2");
    assert_true(ctrl_exp_met(e, "ns/a"));
    /* A new set replaces the old one, and a count seen before it does not
     * carry over. */
    ctrl_exp_set(e, "ns/a", 1, NULL);
    assert_false(ctrl_exp_met(e, "ns/a"));
    ctrl_exp_forget(e, "ns/a");
    assert_true(ctrl_exp_met(e, "ns/a"));
    ctrl_exp_add_seen(e, "ns/gone", 1); /* no entry: nothing happens */
    ctrl_exp_free(e);
    ctrl_exp_free(NULL);
}

typedef struct {
    ctrl_exp_t *e;
    char key[16];
} worker_t;

static void *seer(void *arg)
{
    worker_t *w = arg;
    for (int i = 0; i < 1000; i++) ctrl_exp_add_seen(w->e, w->key, 1);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    ctrl_exp_t *e = ctrl_exp_new();
    assert_non_null(e);
    worker_t w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i].e = e;
        snprintf(w[i].key, sizeof w[i].key, "ns/k%d", i % 2);
    }
    ctrl_exp_set(e, "ns/k0", 2001, NULL);
    ctrl_exp_set(e, "ns/k1", 2000, NULL);
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, seer, &w[i]), 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    assert_false(ctrl_exp_met(e, "ns/k0")); /* 2000 of 2001 seen: none lost */
    assert_true(ctrl_exp_met(e, "ns/k1"));
    ctrl_exp_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
