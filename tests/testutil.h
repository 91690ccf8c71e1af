/*
 * testutil.h -- helpers shared by the unit tests.
 */
#ifndef KP_TESTUTIL_H
#define KP_TESTUTIL_H

#include <stddef.h>

/* Make a fresh empty directory under $TMPDIR (or /tmp) named after `tag`;
 * the caller frees the returned path and removes the tree with tu_rmtree(). */
char *tu_tmpdir(const char *tag);

/* Remove a directory tree (like rm -rf). */
void tu_rmtree(const char *path);

/* A TCP socket bound to 127.0.0.1 on a free port (not listening yet); *port
 * gets the port. Aborts when the system refuses (a test cannot go on). */
int tu_loopback_socket(int *port);

/* Sleep `ms` milliseconds. */
void tu_sleep_ms(int ms);

/* "lmdb:<dir>" in a static-free, caller-freed string. */
char *tu_lmdb_url(const char *dir);

#endif
