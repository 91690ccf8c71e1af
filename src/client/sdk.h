/*
 * sdk.h -- the whole controller SDK in one include: see client.h for the
 * conventions (ownership, threads, errors) every part follows.
 */
#ifndef KP_CLIENT_SDK_H
#define KP_CLIENT_SDK_H

#include "client/client.h"
#include "client/discovery.h"
#include "client/events.h"
#include "client/informer.h"
#include "client/leader.h"
#include "client/queue.h"

#endif
