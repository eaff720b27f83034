// SPDX-License-Identifier: GPL-2.0
/*
 * Threads: ptgen traces the main thread only; the worker runs untraced
 * beside it and must not disturb the main thread's trace.
 */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned long counter;

static void *worker(void *arg)
{
	unsigned long i;

	for (i = 0; i < 100000; i++)
		counter += (unsigned long)arg;
	return NULL;
}

int main(void)
{
	pthread_t t;
	unsigned long i, s = 0;

	if (pthread_create(&t, NULL, worker, (void *)1))
		return 1;
	for (i = 0; i < 2000; i++)
		s += i & 7 ? i : 1;
	pthread_join(t, NULL);
	printf("%lu %lu\n", s, counter);
	return 0;
}
