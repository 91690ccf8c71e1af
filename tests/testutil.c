#include "testutil.h"

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

char *tu_tmpdir(const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    size_t n = strlen(base) + strlen(tag) + 32;
    char *p = malloc(n);
    if (!p) abort();
    snprintf(p, n, "%s/kp-%s-XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        perror("mkdtemp");
        abort();
    }
    return p;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *path)
{
    if (path) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

char *tu_lmdb_url(const char *dir)
{
    size_t n = strlen(dir) + 8;
    char *u = malloc(n);
    if (!u) abort();
    snprintf(u, n, "lmdb:%s", dir);
    return u;
}

void tu_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int tu_loopback_socket(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) ||
        getsockname(fd, (struct sockaddr *)&sa, &sl)) {
        perror("a loopback socket");
        abort();
    }
    *port = ntohs(sa.sin_port);
    return fd;
}
