/*
 * test_alloc.c -- apiserver/alloc.h on a real embedded store: range and
 * port-range parsing; ClusterIPs from a /29 (allocate, release, exhaustion,
 * requested, out of range, the network and broadcast addresses), the
 * IPAddress record and the hint surviving a reopen; NodePorts (requested,
 * taken twice, next, exhaustion, the RangeAllocation bitmap surviving a
 * reopen); transactions (end 0 undoes, end 1 gives back, dry runs record
 * nothing); and the repair pass (at start: leaks freed, Services' missing
 * records written; later: fresh orphans and held addresses kept, ports
 * freed only after three passes).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiserver/kinds/alloc.h"
#include "lib/err.h"
#include "store/store.h"
#include "testutil.h"

typedef struct fixture {
    char *dir;
    store_t *s;
    api_alloc_t *a;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir("alloc");
    char *url = tu_lmdb_url(f->dir);
    assert_int_equal(store_open(url, NULL, &f->s), 0);
    free(url);
    assert_int_equal(api_alloc_open(f->s, "10.0.0.0/29", "30000-30009", &f->a), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    api_alloc_close(f->a);
    store_close(f->s);
    tu_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static uint32_t ip_of(const char *s)
{
    uint32_t ip;
    assert_int_equal(api_alloc_ip_parse(s, &ip), 0);
    return ip;
}

static size_t count_keys(store_t *s, const char *prefix)
{
    store_range_t *r;
    assert_int_equal(store_range(s, prefix, NULL, 0, 0, &r), 0);
    size_t n = r->count;
    store_range_free(r);
    return n;
}

static void test_parse(void **state)
{
    (void)state;
    uint32_t net;
    int bits, base, size;
    char err[128];
    assert_int_equal(api_alloc_parse_cidr("10.96.0.0/12", &net, &bits, err, sizeof err), 0);
    assert_int_equal(net, ip_of("10.96.0.0"));
    assert_int_equal(bits, 12);
    assert_int_equal(api_alloc_parse_cidr("10.96.3.7/12", &net, &bits, err, sizeof err), 0);
    assert_int_equal(net, ip_of("10.96.0.0")); /* host bits cleared */
    assert_int_equal(api_alloc_parse_cidr("10.0.0.0/8", &net, &bits, err, sizeof err), KP_EINVAL);
    assert_non_null(strstr(err, "the mask must be >= 12"));
    assert_int_equal(api_alloc_parse_cidr("10.0.0.0/31", &net, &bits, err, sizeof err), KP_EINVAL);
    assert_int_equal(api_alloc_parse_cidr("fd00::/108", &net, &bits, err, sizeof err), KP_EINVAL);
    assert_int_equal(api_alloc_parse_cidr("10.0.0.0", &net, &bits, err, sizeof err), KP_EINVAL);
    assert_int_equal(api_alloc_parse_ports("30000-32767", &base, &size, err, sizeof err), 0);
    assert_int_equal(base, 30000);
    assert_int_equal(size, 2768);
    assert_int_equal(api_alloc_parse_ports("30000+10", &base, &size, err, sizeof err), 0);
    assert_int_equal(size, 11);
    assert_int_equal(api_alloc_parse_ports("32767-30000", &base, &size, err, sizeof err), KP_EINVAL);
    assert_int_equal(api_alloc_parse_ports("0-10", &base, &size, err, sizeof err), KP_EINVAL);
    assert_int_equal(api_alloc_parse_ports("1-65536", &base, &size, err, sizeof err), KP_EINVAL);
}

/* Take an IP for ns/name in a committed transaction. */
static int take_ip(api_alloc_t *a, const char *name, uint32_t want, uint32_t *got)
{
    api_alloc_txn_t *t;
    assert_int_equal(api_alloc_txn_begin(a, 0, "default", name, &t), 0);
    int rc = api_alloc_txn_ip(t, want, got);
    api_alloc_txn_end(t, rc == 0);
    return rc;
}

static void test_ips(void **state)
{
    fixture_t *f = *state;
    uint32_t got[6], ip;
    char name[16];
    /* A /29: 8 addresses, 6 usable (.1 to .6). */
    for (int i = 0; i < 6; i++) {
        snprintf(name, sizeof name, "s%d", i);
        assert_int_equal(take_ip(f->a, name, 0, &got[i]), 0);
        assert_true(got[i] > ip_of("10.0.0.0") && got[i] < ip_of("10.0.0.7"));
        for (int j = 0; j < i; j++) assert_int_not_equal(got[i], got[j]);
    }
    assert_int_equal(take_ip(f->a, "full", 0, &ip), KP_ENOSPC);
    assert_int_equal(api_alloc_ips_used(f->a), 6);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 6);
    /* The record names its Service. */
    char key[96], text[16];
    api_alloc_ip_text(got[2], text);
    snprintf(key, sizeof key, "%s%s", API_ALLOC_IP_KEY_PREFIX, text);
    store_kv_t *kv;
    assert_int_equal(store_get(f->s, key, 0, &kv), 0);
    assert_non_null(strstr(kv->value, "\"parentRef\":{\"resource\":\"services\",\"namespace\":"
                                      "\"default\",\"name\":\"s2\"}"));
    assert_non_null(strstr(kv->value, "\"ipaddress.kubernetes.io/managed-by\":\"ipallocator.k8s.io\""));
    free(kv);
    /* Release only by its owner. */
    api_alloc_release(f->a, "default", "other", got[2], NULL, 0);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 6);
    api_alloc_release(f->a, "default", "s2", got[2], NULL, 0);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 5);
    assert_int_equal(take_ip(f->a, "again", 0, &ip), 0);
    assert_int_equal(ip, got[2]);
    /* Requested addresses. */
    assert_int_equal(take_ip(f->a, "dup", got[0], &ip), KP_EEXIST);
    assert_int_equal(take_ip(f->a, "net", ip_of("10.0.0.0"), &ip), KP_EINVAL);
    assert_int_equal(take_ip(f->a, "bcast", ip_of("10.0.0.7"), &ip), KP_EINVAL);
    assert_int_equal(take_ip(f->a, "out", ip_of("10.0.1.1"), &ip), KP_EINVAL);
    api_alloc_release(f->a, "default", "s4", got[4], NULL, 0);
    assert_int_equal(take_ip(f->a, "want", got[4], &ip), 0);
    /* The hint comes back from the records after a reopen. */
    api_alloc_close(f->a);
    assert_int_equal(api_alloc_open(f->s, "10.0.0.0/29", "30000-30009", &f->a), 0);
    assert_int_equal(api_alloc_ips_used(f->a), 6);
    assert_int_equal(take_ip(f->a, "full", 0, &ip), KP_ENOSPC);
}

static void test_txn(void **state)
{
    fixture_t *f = *state;
    api_alloc_txn_t *t;
    uint32_t ip, ip2;
    int port;
    /* end(0) undoes what was taken. */
    assert_int_equal(api_alloc_txn_begin(f->a, 0, "default", "a", &t), 0);
    assert_int_equal(api_alloc_txn_ip(t, 0, &ip), 0);
    assert_int_equal(api_alloc_txn_ip(t, 0, &ip2), KP_ETOOLARGE);
    assert_int_equal(api_alloc_txn_port(t, 0, &port), 0);
    size_t used;
    assert_int_equal(api_alloc_ports_used(f->a, &used), 0);
    assert_int_equal(used, 1);
    api_alloc_txn_end(t, 0);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 0);
    assert_int_equal(api_alloc_ports_used(f->a, &used), 0);
    assert_int_equal(used, 0);
    /* Dry runs record nothing: the network address and a free port. */
    assert_int_equal(api_alloc_txn_begin(f->a, 1, "default", "dry", &t), 0);
    assert_int_equal(api_alloc_txn_ip(t, 0, &ip), 0);
    assert_int_equal(ip, ip_of("10.0.0.0"));
    assert_int_equal(api_alloc_txn_port(t, 0, &port), 0);
    assert_true(port >= 30000 && port <= 30009);
    api_alloc_txn_end(t, 1);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 0);
    assert_int_equal(api_alloc_ports_used(f->a, &used), 0);
    assert_int_equal(used, 0);
    /* end(1) gives back what was given, keeps what was taken. */
    assert_int_equal(api_alloc_txn_begin(f->a, 0, "default", "b", &t), 0);
    assert_int_equal(api_alloc_txn_ip(t, 0, &ip), 0);
    assert_int_equal(api_alloc_txn_port(t, 30005, &port), 0);
    api_alloc_txn_end(t, 1);
    assert_int_equal(api_alloc_txn_begin(f->a, 0, "default", "b", &t), 0);
    assert_int_equal(api_alloc_txn_port(t, 30006, &port), 0);
    assert_int_equal(api_alloc_txn_give_port(t, 30005), 0);
    assert_int_equal(api_alloc_txn_give_ip(t, ip), 0);
    api_alloc_txn_end(t, 1);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 0);
    assert_int_equal(api_alloc_ports_used(f->a, &used), 0);
    assert_int_equal(used, 1);
}

static int take_port(api_alloc_t *a, int want, int *got)
{
    api_alloc_txn_t *t;
    assert_int_equal(api_alloc_txn_begin(a, 0, "default", "p", &t), 0);
    int rc = api_alloc_txn_port(t, want, got);
    api_alloc_txn_end(t, rc == 0);
    return rc;
}

static void test_ports(void **state)
{
    fixture_t *f = *state;
    int port, seen[10] = {0};
    assert_int_equal(take_port(f->a, 30003, &port), 0);
    assert_int_equal(port, 30003);
    assert_int_equal(take_port(f->a, 30003, &port), KP_EEXIST);
    assert_int_equal(take_port(f->a, 29999, &port), KP_EINVAL);
    assert_int_equal(take_port(f->a, 30010, &port), KP_EINVAL);
    seen[3] = 1;
    for (int i = 0; i < 9; i++) {
        assert_int_equal(take_port(f->a, 0, &port), 0);
        assert_true(port >= 30000 && port <= 30009);
        assert_false(seen[port - 30000]);
        seen[port - 30000] = 1;
    }
    assert_int_equal(take_port(f->a, 0, &port), KP_ENOSPC);
    /* The bitmap is the store's: a reopen sees it, a release frees one. */
    api_alloc_close(f->a);
    assert_int_equal(api_alloc_open(f->s, "10.0.0.0/29", "30000-30009", &f->a), 0);
    size_t used;
    assert_int_equal(api_alloc_ports_used(f->a, &used), 0);
    assert_int_equal(used, 10);
    int rel[] = {30007};
    api_alloc_release(f->a, "default", "p", 0, rel, 1);
    assert_int_equal(take_port(f->a, 0, &port), 0);
    assert_int_equal(port, 30007);
}

static void put(store_t *s, const char *key, const char *value)
{
    assert_int_equal(store_create(s, key, value, strlen(value), NULL), 0);
}

static void test_repair(void **state)
{
    fixture_t *f = *state;
    /* A Service whose record is missing, one whose record is there, an
     * orphan record (a crash between the allocation and the Service write),
     * and a leaked port. */
    put(f->s, "/registry/core/services/default/lost",
        "{\"metadata\":{\"name\":\"lost\",\"namespace\":\"default\"},\"spec\":{\"type\":"
        "\"NodePort\",\"clusterIP\":\"10.0.0.3\",\"clusterIPs\":[\"10.0.0.3\"],\"ports\":[{\"port\":"
        "80,\"nodePort\":30004}]}}");
    uint32_t ip;
    assert_int_equal(take_ip(f->a, "ok", ip_of("10.0.0.4"), &ip), 0);
    put(f->s, "/registry/core/services/default/ok",
        "{\"metadata\":{\"name\":\"ok\",\"namespace\":\"default\"},\"spec\":{\"type\":"
        "\"ClusterIP\",\"clusterIP\":\"10.0.0.4\",\"clusterIPs\":[\"10.0.0.4\"]}}");
    assert_int_equal(take_ip(f->a, "ghost", ip_of("10.0.0.5"), &ip), 0);
    int port;
    assert_int_equal(take_port(f->a, 30008, &port), 0);
    /* Later passes keep the young orphan, and the port for three passes. */
    api_alloc_repair_stats_t st;
    assert_int_equal(api_alloc_repair(f->a, 0, &st), 0);
    assert_int_equal(st.ips_recorded, 1);
    assert_int_equal(st.ips_freed, 0);
    assert_int_equal(st.ports_recorded, 1);
    assert_int_equal(st.ports_freed, 0);
    assert_int_equal(api_alloc_repair(f->a, 0, &st), 0);
    assert_int_equal(st.ports_freed, 0);
    assert_int_equal(api_alloc_repair(f->a, 0, &st), 0);
    assert_int_equal(st.ports_freed, 1);
    assert_int_equal(st.ips_freed, 0);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 3);
    /* An open transaction's address is left alone even at start. */
    api_alloc_txn_t *t;
    assert_int_equal(api_alloc_txn_begin(f->a, 0, "default", "inflight", &t), 0);
    assert_int_equal(api_alloc_txn_ip(t, ip_of("10.0.0.6"), &ip), 0);
    /* At start every leak goes. */
    assert_int_equal(api_alloc_repair(f->a, 1, &st), 0);
    assert_int_equal(st.ips_freed, 1);
    assert_int_equal(count_keys(f->s, API_ALLOC_IP_KEY_PREFIX), 3); /* .3 .4 .6 */
    store_kv_t *kv;
    assert_int_equal(store_get(f->s, API_ALLOC_IP_KEY_PREFIX "10.0.0.3", 0, &kv), 0);
    assert_non_null(strstr(kv->value, "\"name\":\"lost\""));
    free(kv);
    assert_int_equal(store_get(f->s, API_ALLOC_IP_KEY_PREFIX "10.0.0.5", 0, &kv), KP_ENOTFOUND);
    api_alloc_txn_end(t, 0);
    size_t used;
    assert_int_equal(api_alloc_ports_used(f->a, &used), 0);
    assert_int_equal(used, 1); /* 30004, the Service's */
    assert_int_equal(api_alloc_ips_used(f->a), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test_setup_teardown(test_ips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_txn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repair, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
