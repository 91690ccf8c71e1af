/*
 * test_labrun.c -- apiserver/ui/labrun.c: one lab at a time as a child
 * process. The child here is /bin/sh standing in for `kplane lab run`
 * (a stub of this test only): its output kept and read from offsets, the
 * events variable set, a second start refused while one runs, the output
 * capped, the exit status, a new run after the last, and free() ending a
 * run that would go on (the child and its own children, by process group).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apiserver/ui/labrun.h"
#include "lib/err.h"

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Whether pid runs: a zombie (its parent gone, not yet reaped by whoever
 * adopted it) has ended. */
static int alive(pid_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *paren = strrchr(stat, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* Wait (up to 10 s) for the run to end; its status. */
static api_labrun_status_t wait_end(api_labrun_t *lr)
{
    api_labrun_status_t st;
    for (int i = 0; i < 1000; i++) {
        char *d;
        size_t n;
        assert_int_equal(api_labrun_read(lr, 0, 0, &d, &n, &st), 0);
        free(d);
        if (st.state == API_LABRUN_EXITED) return st;
        nap_ms(10);
    }
    fail_msg("the run did not end");
    return st;
}

static char *all_output(api_labrun_t *lr, size_t *len)
{
    char *d;
    api_labrun_status_t st;
    assert_int_equal(api_labrun_read(lr, 0, (size_t)-1, &d, len, &st), 0);
    return d;
}

static void test_output_and_offsets(void **state)
{
    (void)state;
    api_labrun_t *lr;
    assert_int_equal(api_labrun_new(0, &lr), 0);
    char *d;
    size_t n;
    api_labrun_status_t st;
    assert_int_equal(api_labrun_read(lr, 0, 100, &d, &n, &st), 0);
    assert_int_equal(st.state, API_LABRUN_NONE);
    assert_null(d);
    char *const argv[] = {"/bin/sh", "-c",
                          "echo \"events=$KPLANE_LAB_EVENTS\"; echo '@lab {\"say\":\"hi\"}'; "
                          "echo oops >&2; exit 3",
                          NULL};
    assert_int_equal(api_labrun_start(lr, "exercise", argv), 0);
    st = wait_end(lr);
    assert_int_equal(st.exit_code, 3);
    assert_string_equal(st.name, "exercise");
    assert_int_equal(st.truncated, 0);
    d = all_output(lr, &n);
    assert_non_null(d);
    assert_string_equal(d, "events=1\n@lab {\"say\":\"hi\"}\noops\n");
    assert_int_equal(st.total, n);
    free(d);
    /* From an offset, at most max bytes; past the end, nothing. */
    assert_int_equal(api_labrun_read(lr, 9, 4, &d, &n, &st), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(d, "@lab", 4);
    free(d);
    assert_int_equal(api_labrun_read(lr, 1000, 4, &d, &n, &st), 0);
    assert_null(d);
    assert_int_equal(n, 0);
    /* A new run forgets the last one's output. */
    char *const again[] = {"/bin/sh", "-c", "echo second", NULL};
    assert_int_equal(api_labrun_start(lr, "other", again), 0);
    st = wait_end(lr);
    assert_int_equal(st.exit_code, 0);
    d = all_output(lr, &n);
    assert_string_equal(d, "second\n");
    free(d);
    api_labrun_free(lr);
}

static void test_one_at_a_time(void **state)
{
    (void)state;
    api_labrun_t *lr;
    assert_int_equal(api_labrun_new(0, &lr), 0);
    char *const slow[] = {"/bin/sh", "-c", "echo started; sleep 1; echo ended", NULL};
    assert_int_equal(api_labrun_start(lr, "a", slow), 0);
    assert_int_equal(api_labrun_start(lr, "b", slow), KP_EBUSY);
    char *const bad_name[] = {"/bin/true", NULL};
    assert_int_equal(api_labrun_start(lr, "", bad_name), KP_EINVAL);
    api_labrun_status_t st = wait_end(lr);
    assert_string_equal(st.name, "a");
    assert_int_equal(st.exit_code, 0);
    assert_true(st.seconds >= 0.9);
    /* A program that does not exist: the child's exit status says so. */
    char *const missing[] = {"/nonexistent/kplane", "lab", NULL};
    int rc = api_labrun_start(lr, "c", missing);
    if (rc == 0) {
        st = wait_end(lr);
        assert_int_not_equal(st.exit_code, 0);
    } else {
        assert_int_equal(rc, KP_EIO);
    }
    api_labrun_free(lr);
}

static void test_cap(void **state)
{
    (void)state;
    api_labrun_t *lr;
    assert_int_equal(api_labrun_new(1000, &lr), 0);
    /* 200,000 bytes: the child is never blocked, 1,000 are kept. */
    char *const loud[] = {"/bin/sh", "-c", "head -c 200000 /dev/zero | tr '\\0' x; echo done",
                          NULL};
    assert_int_equal(api_labrun_start(lr, "loud", loud), 0);
    api_labrun_status_t st = wait_end(lr);
    assert_int_equal(st.exit_code, 0);
    assert_int_equal(st.total, 1000);
    assert_int_equal(st.truncated, 1);
    api_labrun_free(lr);
}

static void test_free_ends_the_run(void **state)
{
    (void)state;
    api_labrun_t *lr;
    assert_int_equal(api_labrun_new(0, &lr), 0);
    /* A child with a child of its own; SIGTERM ends the shell (SIGTERM's
     * default, not inherited as blocked from this process). */
    char *const forever[] = {"/bin/sh", "-c", "sleep 300 & echo $!; wait", NULL};
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, NULL); /* as kplane server's threads */
    assert_int_equal(api_labrun_start(lr, "forever", forever), 0);
    pthread_sigmask(SIG_UNBLOCK, &term, NULL);
    char *d = NULL;
    size_t n = 0;
    api_labrun_status_t st;
    for (int i = 0; i < 500 && !n; i++) {
        free(d);
        assert_int_equal(api_labrun_read(lr, 0, 100, &d, &n, &st), 0);
        if (!n) nap_ms(10);
    }
    assert_true(n > 0);
    pid_t grandchild = (pid_t)strtol(d, NULL, 10);
    free(d);
    assert_true(grandchild > 0);
    time_t t0 = time(NULL);
    api_labrun_free(lr); /* SIGTERM, then SIGKILL to the group after the grace */
    assert_true(time(NULL) - t0 <= API_LABRUN_GRACE_MS / 1000 + 3);
    /* The grandchild went with its group (or is going: give it a moment). */
    int gone = 0;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = !alive(grandchild);
        if (!gone) nap_ms(10);
    }
    if (!gone) {
        kill(grandchild, SIGKILL);
        fail_msg("the lab's own child outlived it");
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_and_offsets),
        cmocka_unit_test(test_one_at_a_time),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_free_ends_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
