/*
 * backend.h -- which store backend a contract test runs against.
 *
 * By default the embedded one: "lmdb:DIR". Under tests/store/with-etcd.sh run
 * (which sets KP_TEST_ETCD to its own path), a fresh single-node etcd cluster
 * with its data in DIR: every test case then starts from an empty store at
 * revision 0, as store.h numbers revisions, and the tests keep their exact
 * revision checks. The script kills every cluster still running when the
 * test binary ends, also when it crashes.
 */
#ifndef KP_TEST_BACKEND_H
#define KP_TEST_BACKEND_H

/* The store URL for a test whose files live in `dir` (caller frees). For
 * etcd this starts the cluster; aborts if it cannot. */
char *tb_store_url(const char *dir);

/* Stop what tb_store_url(dir) started (nothing for lmdb). */
void tb_store_stop(const char *dir);

/* Start the etcd stopped by tb_store_stop(dir) again, on its data and port. */
void tb_store_restart(const char *dir);

/* 1 when the tests run against etcd. */
int tb_is_etcd(void);

#endif
