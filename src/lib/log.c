#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int threshold(void)
{
    const char *v = getenv("KPLANE_LOG");
    if (!v) return LOG_INFO;
    if (!strcmp(v, "debug")) return LOG_DEBUG;
    if (!strcmp(v, "warn")) return LOG_WARN;
    if (!strcmp(v, "error")) return LOG_ERROR;
    return LOG_INFO;
}

void log_msg(int level, const char *component, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if (level < threshold()) return;

    char when[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);

    /* One buffer, one write: lines from different threads never interleave. */
    char line[1024];
    int n = snprintf(line, sizeof line, "%s.%03ldZ %s %s: ", when, ts.tv_nsec / 1000000,
                     names[level], component);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < sizeof line) n += vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line - 1) n = sizeof line - 2;
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
}

void log_thread_name(const char *component, const char *what)
{
    char name[16]; /* the kernel keeps 15 bytes and the NUL */
    snprintf(name, sizeof name, "%s%s%s", component, what ? ":" : "", what ? what : "");
    pthread_setname_np(pthread_self(), name);
}
