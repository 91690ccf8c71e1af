/* leader.c -- being written. */
#include "client/sdk.h"
