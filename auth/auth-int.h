/* auth-int: what the files of auth/ share and nobody else sees. */
#pragma once

#include "auth/auth.h"

/* Copies len bytes of s into buf for a message or an audit line: '"' and
 * '\\' get a backslash, control and non-ASCII bytes become \xNN, and at
 * most max input bytes are read (a longer s ends in "..."). Always
 * terminated; cut to fit size. Returns the bytes written. */
size_t auth_escape(char *buf, size_t size, const char *s, size_t len, size_t max);
