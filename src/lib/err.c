#include "err.h"

const char *err_str(int rc)
{
    switch (rc) {
    case KP_OK: return "ok";
    case KP_ENOMEM: return "out of memory";
    case KP_EINVAL: return "invalid argument";
    case KP_ENOTFOUND: return "not found";
    case KP_EEXIST: return "already exists";
    case KP_ECONFLICT: return "revision conflict";
    case KP_ECOMPACTED: return "revision has been compacted";
    case KP_EFUTURE: return "revision is in the future";
    case KP_EIO: return "I/O error";
    case KP_ENOSPC: return "no space left";
    case KP_EPOISONED: return "store refuses writes after a failed commit; reopen it";
    case KP_ECLOSED: return "closed";
    case KP_ETIMEDOUT: return "timed out";
    case KP_ETOOLARGE: return "too large";
    case KP_EUNAVAILABLE: return "unavailable";
    case KP_ECORRUPT: return "corrupt data";
    case KP_EBUSY: return "busy";
    case KP_EAGAIN: return "nothing yet";
    }
    return "unknown error";
}
