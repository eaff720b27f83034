// SPDX-License-Identifier: GPL-2.0
/* The speed measurement: a few million instructions of mixed flow. */
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)atoi(argv[1]) : 20000, i, *v;
	unsigned long s = 0;

	v = malloc(n * sizeof(*v));
	if (!v)
		return 1;
	for (i = 0; i < n; i++)
		v[i] = i * 2654435761u;
	qsort(v, n, sizeof(*v), cmp);
	for (i = 0; i < n; i++)
		s += v[i] >> 20;
	printf("%lu\n", s);
	free(v);
	return 0;
}
