/*
 * test_lib.c -- src/lib building blocks: the capped buffer, the error table, the
 * heap, base64 and par_each.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>

#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/err.h"
#include "lib/heap.h"
#include "lib/par.h"
#include "testutil.h"

static void test_buf_grows_and_caps(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1000);
    assert_null(b.p);
    for (int i = 0; i < 100; i++) assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_int_equal(b.len, 1000);
    assert_int_equal(b.p[1000], '\0');
    /* Hitting the cap is an error that leaves the buffer as it was. */
    assert_int_equal(buf_append(&b, "x", 1), KP_ETOOLARGE);
    assert_int_equal(b.len, 1000);
    assert_memory_equal(b.p + 990, "0123456789", 10);
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.p, "");
    assert_int_equal(buf_append(&b, "", 0), 0);
    buf_free(&b);
    assert_null(b.p);
    assert_int_equal(b.max, 1000);
}

static void test_buf_reserve_and_detach(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 100);
    assert_int_equal(buf_reserve(&b, 101), KP_ETOOLARGE);
    assert_int_equal(buf_reserve(&b, 50), 0);
    assert_int_equal(b.cap, 51); /* exact: the bytes and the NUL */
    char *before = b.p;
    for (int i = 0; i < 5; i++) assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_ptr_equal(b.p, before); /* reserved: no move */
    assert_int_equal(b.len, 50);
    size_t len;
    char *p = buf_detach(&b, &len);
    assert_int_equal(len, 50);
    assert_int_equal(p[50], '\0');
    assert_null(b.p);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.max, 100);
    free(p);
    assert_null(buf_detach(&b, &len));
    assert_int_equal(len, 0);
}

static void test_err_str(void **state)
{
    (void)state;
    assert_string_equal(err_str(0), "ok");
    assert_string_equal(err_str(KP_ECONFLICT), "revision conflict");
    for (int rc = KP_ENOMEM; rc >= KP_EBUSY; rc--)
        assert_string_not_equal(err_str(rc), "unknown error");
    assert_string_equal(err_str(-9999), "unknown error");
}

/* The heap against a brute-force model: random adds, moves and removals
 * from the middle, then pops in key order; every node knows its place. */
static void test_heap_against_model(void **state)
{
    (void)state;
    enum { N = 500 };
    kp_heap_node_t nodes[N];
    int in[N] = {0};
    kp_heap_t h = {0};
    unsigned seed = 7;
    for (int i = 0; i < N; i++) kp_heap_node_init(&nodes[i]);
    for (int step = 0; step < 20000; step++) {
        seed = seed * 1103515245u + 12345u;
        int i = (int)((seed >> 8) % N), op = (int)((seed >> 20) % 3);
        int64_t key = (int64_t)((seed >> 4) % 1000);
        if (!in[i]) {
            assert_int_equal(kp_heap_add(&h, &nodes[i], key), 0);
            in[i] = 1;
        } else if (op == 0) {
            kp_heap_del(&h, &nodes[i]);
            assert_false(kp_heap_has(&nodes[i]));
            in[i] = 0;
        } else {
            kp_heap_set_key(&h, &nodes[i], key);
        }
        int64_t min = INT64_MAX;
        size_t n = 0;
        for (int k = 0; k < N; k++) {
            if (!in[k]) continue;
            n++;
            if (nodes[k].key < min) min = nodes[k].key;
            assert_ptr_equal(h.v[nodes[k].idx], &nodes[k]);
        }
        assert_int_equal(h.n, n);
        if (n) assert_int_equal(kp_heap_top(&h)->key, min);
    }
    int64_t last = INT64_MIN;
    for (kp_heap_node_t *e; (e = kp_heap_pop(&h));) {
        assert_true(e->key >= last);
        assert_false(kp_heap_has(e));
        last = e->key;
    }
    assert_null(kp_heap_top(&h));
    kp_heap_del(&h, &nodes[0]); /* not in it: nothing */
    kp_heap_free(&h);
}

static void test_buf_append_file(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("buf"), path[512];
    snprintf(path, sizeof path, "%s/f", dir);
    buf_t b;
    buf_init(&b, 8);
    assert_int_equal(buf_append_file(&b, path), KP_ENOTFOUND);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(buf_append_file(&b, path), 0); /* empty: still a string */
    assert_non_null(b.p);
    assert_int_equal(b.len, 0);
    f = fopen(path, "w");
    fputs("abcdefgh", f);
    fclose(f);
    assert_int_equal(buf_append_file(&b, path), 0);
    assert_string_equal(b.p, "abcdefgh");
    buf_reset(&b);
    f = fopen(path, "a");
    fputs("i", f);
    fclose(f);
    assert_int_equal(buf_append_file(&b, path), KP_ETOOLARGE); /* 9 bytes, cap 8 */
    buf_free(&b);
    tu_rmtree(dir);
    free(dir);
}

/* par_each: every index once, calls at once, never more than PAR_MAX. */
typedef struct {
    atomic_int calls[3 * PAR_MAX];
    atomic_int inflight, most;
} par_probe_t;

static void par_probe(void *arg, size_t i)
{
    par_probe_t *p = arg;
    atomic_fetch_add(&p->calls[i], 1);
    int now = atomic_fetch_add(&p->inflight, 1) + 1;
    for (int most = atomic_load(&p->most); now > most;)
        if (atomic_compare_exchange_weak(&p->most, &most, now)) break;
    /* Wait (up to 5 s) for a second call to be under way at the same time:
     * run one after the other, this never ends early. */
    for (int t = 0; t < 5000 && atomic_load(&p->most) < 2; t++)
        tu_sleep_ms(1);
    atomic_fetch_sub(&p->inflight, 1);
}

static void test_par_each(void **state)
{
    (void)state;
    static par_probe_t p; /* 3 * PAR_MAX counters: off the stack */
    memset(&p, 0, sizeof p);
    size_t n = 2 * PAR_MAX + 5; /* three rounds, the last one short */
    par_each(n, par_probe, &p);
    for (size_t i = 0; i < 3 * PAR_MAX; i++)
        assert_int_equal(atomic_load(&p.calls[i]), i < n ? 1 : 0);
    assert_true(atomic_load(&p.most) >= 2);
    assert_true(atomic_load(&p.most) <= PAR_MAX);
    assert_int_equal(atomic_load(&p.inflight), 0);
    par_each(0, par_probe, &p); /* nothing to do */
    assert_int_equal(atomic_load(&p.calls[0]), 1);
}

/* RFC 4648's vectors, both alphabets; base64url unpadded; round trips of
 * every length 0..40 over all byte values; bad input refused. */
static void test_base64(void **state)
{
    (void)state;
    static const char *const in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const std[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    static const char *const url[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char *a = base64_encode(in[i], strlen(in[i])), *b = base64url_encode(in[i], strlen(in[i]));
        assert_string_equal(a, std[i]);
        assert_string_equal(b, url[i]);
        free(a);
        free(b);
    }
    unsigned char data[40], back[40];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 37 + 250);
    for (size_t n = 0; n <= sizeof data; n++) {
        char *a = base64_encode(data, n), *b = base64url_encode(data, n);
        size_t la = 0, lb = 0;
        assert_int_equal(base64_decode(a, strlen(a), back, sizeof back, &la), 0);
        assert_int_equal(la, n);
        assert_memory_equal(back, data, n);
        assert_int_equal(base64url_decode(b, strlen(b), back, sizeof back, &lb), 0);
        assert_int_equal(lb, n);
        assert_memory_equal(back, data, n);
        assert_null(strchr(b, '=')); /* unpadded */
        assert_null(strpbrk(b, "+/"));
        free(a);
        free(b);
    }
    size_t l;
    assert_int_equal(base64url_decode("Zg==", 4, back, sizeof back, &l), KP_EINVAL);
    assert_int_equal(base64url_decode("Z", 1, back, sizeof back, &l), KP_EINVAL);
    assert_int_equal(base64url_decode("Zm+v", 4, back, sizeof back, &l), KP_EINVAL);
    assert_int_equal(base64url_decode("Zm9vYmFy", 8, back, 5, &l), KP_ETOOLARGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_grows_and_caps), cmocka_unit_test(test_buf_reserve_and_detach),
        cmocka_unit_test(test_buf_append_file),    cmocka_unit_test(test_err_str),
        cmocka_unit_test(test_heap_against_model), cmocka_unit_test(test_base64),
        cmocka_unit_test(test_par_each),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
