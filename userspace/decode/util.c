// SPDX-License-Identifier: GPL-2.0
/*
 * libiptdecode, allocation: out of memory is the one error the library
 * does not return to its caller; it calls the application's handler
 * (dec_set_nomem), which must not return, and aborts if there is none.
 * The library itself never exits the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "internal.h"

static void (*nomem_handler)(void);

void dec_set_nomem(void (*fn)(void))
{
	nomem_handler = fn;
}

void dec_nomem(void)
{
	if (nomem_handler)
		nomem_handler();
	fprintf(stderr, "libiptdecode: out of memory\n");
	abort();
}

void *dec_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		dec_nomem();
	return p;
}

void *dec_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		dec_nomem();
	return p;
}

char *dec_xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		dec_nomem();
	return p;
}
