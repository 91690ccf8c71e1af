/*
 * bootstrap.c -- first start: the admin token and the kubeconfig next to it
 * (its user: the admin's client certificate, tls.c's, or the token).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apiserver/apiserver.h"
#include "lib/base64.h"
#include "lib/buf.h"
#include "lib/err.h"

int apiserver_random_token(char out[65])
{
    unsigned char rnd[32];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) return KP_EIO;
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(out + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

/* Write `text` to `path` through a temporary file: mode 0600, fsynced, renamed. */
static int write_file(const char *path, const char *text)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof tmp)
        return KP_EINVAL;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return KP_EIO;
    size_t n = strlen(text);
    int rc = write(fd, text, n) == (ssize_t)n && fsync(fd) == 0 ? 0 : KP_EIO;
    if (close(fd)) rc = KP_EIO;
    if (!rc && rename(tmp, path)) rc = KP_EIO;
    if (rc) unlink(tmp);
    return rc;
}

int apiserver_admin_token(const char *data_dir, char **token)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/admin-token", data_dir);
    FILE *f = fopen(path, "re");
    if (f) {
        char buf[256];
        int ok = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        buf[strcspn(buf, "\r\n")] = '\0';
        if (ok && strlen(buf) >= 16) return (*token = strdup(buf)) ? 0 : KP_ENOMEM;
    }
    char hex[65];
    if (apiserver_random_token(hex)) return KP_EIO;
    char line[80];
    snprintf(line, sizeof line, "%s\n", hex);
    int rc = write_file(path, line);
    if (rc) return rc;
    return (*token = strdup(hex)) ? 0 : KP_ENOMEM;
}

/* "    NAME: base64(pem)\n" into b (longer than buf_printf's line). */
static int b64_line(buf_t *b, const char *name, const char *pem)
{
    char *b64 = base64_encode(pem, strlen(pem));
    if (!b64) return KP_ENOMEM;
    int rc = buf_printf(b, "    %s: ", name);
    if (!rc) rc = buf_append(b, b64, strlen(b64));
    if (!rc) rc = buf_append(b, "\n", 1);
    free(b64);
    return rc;
}

int apiserver_write_kubeconfig(const char *data_dir, const char *host, int port, const char *ca_pem,
                               const char *token, const char *cert_pem, const char *key_pem)
{
    return apiserver_write_kubeconfig_as(data_dir, "kubeconfig", "kubernetes-admin", host, port,
                                         ca_pem, token, cert_pem, key_pem);
}

int apiserver_write_kubeconfig_as(const char *data_dir, const char *file, const char *user,
                                  const char *host, int port, const char *ca_pem, const char *token,
                                  const char *cert_pem, const char *key_pem)
{
    int cert = cert_pem && key_pem;
    if (!cert && !token) return KP_EINVAL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data_dir, file);
    buf_t b;
    buf_init(&b, 1u << 20);
    int rc = buf_printf(&b,
                        "apiVersion: v1\n"
                        "kind: Config\n"
                        "clusters:\n"
                        "- name: kplane\n"
                        "  cluster:\n"
                        "    server: %s://%s:%d\n",
                        ca_pem ? "https" : "http", host, port);
    if (!rc && ca_pem) rc = b64_line(&b, "certificate-authority-data", ca_pem);
    if (!rc) rc = buf_printf(&b, "users:\n- name: %s\n  user:\n", user);
    if (!rc && cert) rc = b64_line(&b, "client-certificate-data", cert_pem);
    if (!rc && cert) rc = b64_line(&b, "client-key-data", key_pem);
    if (!rc && !cert) rc = buf_printf(&b, "    token: %s\n", token);
    if (!rc)
        rc = buf_printf(&b,
                        "contexts:\n"
                        "- name: %s@kplane\n"
                        "  context:\n"
                        "    cluster: kplane\n"
                        "    user: %s\n"
                        "    namespace: default\n"
                        "current-context: %s@kplane\n",
                        user, user, user);
    if (!rc) rc = write_file(path, b.p);
    buf_free(&b);
    return rc;
}
