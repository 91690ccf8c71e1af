/*
 * kpserver.h -- a real `kplane server` for SDK tests: started on a free
 * loopback port in a fresh data dir, stopped (by pid) and removed again.
 * The binary comes from KPLANE_BIN (set by CMake), or the environment's
 * KP_KPLANE_BIN where set (a benchmark driving another build).
 */
#ifndef KP_TEST_KPSERVER_H
#define KP_TEST_KPSERVER_H

#include <sys/types.h>

#include "client/client.h"

typedef struct kpserver {
    pid_t pid;
    int port;
    char *dir;          /* the data dir (removed by kpserver_stop) */
    char kubeconfig[700];
} kpserver_t;

/* Start and wait until it serves (abort()s the test on failure). Extra
 * command-line flags in `extra` (NULL-terminated, may be NULL). */
void kpserver_start(kpserver_t *s, const char *const *extra);
/* Start another server of the same "cluster" as `peer`: its data dir
 * starts with peer's CA, server certificate and key and admin token, so
 * one kubeconfig's CA and token work for both (its store is its own). */
void kpserver_start_sharing(kpserver_t *s, const kpserver_t *peer, const char *const *extra);
/* SIGTERM, wait (SIGKILL after 10 s), remove the data dir. */
void kpserver_stop(kpserver_t *s);
/* SIGKILL now (a crash), reap it; the data dir stays for a restart. */
void kpserver_kill(kpserver_t *s);

/* An API client from s's kubeconfig. *storage holds the strings cfg points
 * into (json_decref it after kc_client_free(*c)); cfg may be NULL. Prints
 * why on failure; returns 0 or a KP_* code. */
int kpserver_client(const kpserver_t *s, kc_config_t *cfg, json_t **storage, kc_client_t **c);

#endif
