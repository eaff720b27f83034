// SPDX-License-Identifier: GPL-2.0
/*
 * Threads: ptgen follows every thread (one trace each).  Two workers run
 * beside the main thread, calling through function pointers with
 * data-dependent branches, and hand results back through a mutex.
 */
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long total;

static unsigned long odd(unsigned long x) { return 3 * x + 1; }
static unsigned long even(unsigned long x) { return x / 2; }

static void *worker(void *arg)
{
	unsigned long (*const step[2])(unsigned long) = { even, odd };
	unsigned long seed = (unsigned long)arg, i, x, n = 0;

	for (i = 0; i < 60; i++)
		for (x = seed + i; x > 1; n++)
			x = step[x & 1](x);
	pthread_mutex_lock(&lock);
	total += n;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	unsigned long i, s = 0;

	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(27 + 100 * i)))
			return 1;
	for (i = 0; i < 2000; i++)
		s += i & 7 ? i : 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%lu %lu\n", s, total);
	return 0;
}
