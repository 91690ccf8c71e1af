/*
 * log.h -- one line per message on stderr: "<time> <level> <component>: text".
 *
 * The threshold comes from the environment (KPLANE_LOG=debug|info|warn|error,
 * default info) and is read once per call site; there is no global state to set.
 */
#ifndef KP_LOG_H
#define KP_LOG_H

enum { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

void log_msg(int level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_debug(comp, ...) log_msg(LOG_DEBUG, comp, __VA_ARGS__)
#define log_info(comp, ...) log_msg(LOG_INFO, comp, __VA_ARGS__)
#define log_warn(comp, ...) log_msg(LOG_WARN, comp, __VA_ARGS__)
#define log_error(comp, ...) log_msg(LOG_ERROR, comp, __VA_ARGS__)

/* Name the calling thread "<component>:<what>" (cut to the 15 bytes Linux
 * keeps), so that `top -H`, `ps -L` and `perf` say which worker is busy.
 * `what` may be NULL. Best effort: a name that cannot be set is left. */
void log_thread_name(const char *component, const char *what);

#endif
